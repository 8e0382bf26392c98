/*
 * lexical.c's reading of a body's graph, the part its caller's graph build
 * does (PartitionByVirtualDevice, partition.c): each on_device is read
 * while the build has the node in the cache, so that the reading over the
 * graph (dp__lexical_graph_read, planner.h) does not read the IR of every
 * on_device again (at a million calls each read of a node is a miss). The
 * rest of lexical.c is declared in planner.h, section lexical.c.
 */
#ifndef DEVPLAN_PLANNER_LEXICAL_H
#define DEVPLAN_PLANNER_LEXICAL_H
#include "planner.h"

/* On_device e (a call of on_device) readable: fixed, on a settled device,
   which goes to *dev (for dp__lexical_graph_read's dev[] of its node).
   1, 0 not readable (the body does not say its devices so: the caller
   plans the module), -1 out of memory. */
int dp__lexical_on_device(dp__lexical *lx, dp_expr *e, dp_vdev **dev);

#endif
