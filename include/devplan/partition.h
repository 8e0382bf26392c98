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
 * - a piece without a call (a lone tuple or projection) stays in the caller.
 * A hoisted function is named <function>_<device type>_<n>; its parameters
 * carry the devices of the values passed in.
 */
#ifndef DEVPLAN_PARTITION_H
#define DEVPLAN_PARTITION_H

#include "plan.h"

typedef enum dp_partition_by {
  DP_PART_VIRTUAL_DEVICE = 0,
  DP_PART_TARGET,
  DP_PART_DEVICE_TYPE
} dp_partition_by;

/* The partitioned module (new reference; typed when m was), or NULL +
   error. cfg is the configuration m was planned with (the devices are
   read back through the planner's phases 0-2). */
dp_module *dp_partition_by_device(dp_module *m, const dp_config *cfg, dp_partition_by by,
                                  dp_err **err);

#endif
