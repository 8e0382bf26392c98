/*
 * Partitioning a planned module by device (RFC 0038's PartitionBySEScope,
 * which TVM never built; its rules come from TVM's BYOC partitioning
 * tests, ../shared/conformance/patterns/partition_cases.md).
 *
 * After PlanDevices every call, tuple and projection has a virtual device.
 * The maximal connected pieces of code on one device (compared by the
 * whole virtual device, its target, or its device type) become global
 * functions whose virtual_device says where they run; each original
 * function calls them instead, and computes what it computed before:
 * - pieces grow only along dataflow edges (producer to consumer, through
 *   on_device); device_copy and everything that is not a call, tuple or
 *   projection (let, if, function literals, ...) stay in the caller and
 *   bound the pieces, and a piece never spans two let bodies or branches;
 * - a piece is never merged where that would make a cycle between pieces
 *   (TVM's MergeCompilerRegions: in topological order, a node joins its
 *   producer's piece unless a path from that piece reaches it through
 *   another piece), so the pieces can always be called in order;
 * - a piece returns each value used outside it once (several: a tuple,
 *   which the caller projects); constants it reads stay inside;
 * - a piece without a call (a lone tuple or projection) stays in the caller;
 * - a piece's call is evaluated where all its uses meet, and never reads a
 *   let's variable outside that let's scope: where merging would make it,
 *   the let bounds the pieces;
 * - the bodies of function literals are partitioned too (a loop's body
 *   written as a recursive closure); a Composite or Primitive function
 *   literal is one unit (its calls are pieces' members, and it moves into
 *   the hoisted function that calls it).
 * A hoisted function is named <function>_<target kind>_<n> (its device
 * type's name when partitioning by device type: main_ccompiler_0,
 * main_cuda_0), n counting per name in each function; its virtual_device
 * says where it runs, and its parameters carry the devices of the values
 * passed in.
 */
#ifndef DEVPLAN_PARTITION_H
#define DEVPLAN_PARTITION_H

#include "plan.h"

typedef enum dp_partition_by {
  DP_PART_VIRTUAL_DEVICE = 0,
  DP_PART_TARGET,
  DP_PART_DEVICE_TYPE
} dp_partition_by;

/* One hoisted piece, as data. Nodes are the module's own (as planned: the
   devices are read from its annotations, or back through the planner's
   phases 0-2, which leave a planned module as it is). */
typedef struct dp_region {
  dp_global *global;   /* the hoisted function (retained) */
  char *caller;        /* the global function it was hoisted from (in a block of the regions') */
  dp_vdev *vdev;       /* where it runs (retained) */
  uint32_t nnodes, ninputs, noutputs;
  /* the lists lie in a block of the regions' (one a body) */
  dp_expr **nodes;     /* what it computes, in post order (kept alive by the regions' bodies) */
  dp_expr **inputs;    /* the values it reads, in parameter order (likewise) */
  dp_expr **outputs;   /* the values it gives, in result order (likewise) */
} dp_region;

typedef struct dp_regions {
  uint32_t n, cap;
  dp_region *r;        /* in the order the functions were added */
  uint32_t nbodies, capbodies;
  dp_expr **bodies;    /* the partitioned bodies the nodes are in (retained: one
                          reference per body, not one per node, which would
                          write to every hoisted node) */
  uint32_t nblocks, capblocks;
  void **blocks;       /* the regions' lists and callers' names (owned) */
} dp_regions;

/* The partitioned module (new reference; typed when m was), or NULL +
   error. cfg is the configuration m was planned with: the devices are
   read from m's own annotations (as PlanDevices' capture leaves them,
   src/planner/lexical.c), which are what planning m again by cfg finds;
   where m does not say them all so (not planned, or planned otherwise),
   they are read back through the planner's phases 0-2 instead. regions
   (may be NULL) receives the pieces; free with dp_regions_clear. */
dp_module *dp_partition_by_device(dp_module *m, const dp_config *cfg, dp_partition_by by,
                                  dp_regions *regions, dp_err **err);
/* As dp_partition_by_device, the devices always from planning m again
   (what reading them from m itself is checked against). */
dp_module *dp_partition_by_device_replanned(dp_module *m, const dp_config *cfg, dp_partition_by by,
                                            dp_regions *regions, dp_err **err);
void dp_regions_clear(dp_regions *regions);

#endif
