/*
 * The latency placement (issue 24): the placement whose modelled schedule
 * (schedule.h) finishes first. PlanDevices' placement = "latency", reached
 * through dp_plan_devices_opts; dp_plan_latency gives the plan with what
 * the search found.
 *
 * What it does (docs/latency.md, "The latency placement"):
 * - the problem: the module's calls and @main's parameters that no
 *   annotation fixes are decisions, each on one of the configuration's
 *   devices that can run it (a cost model's nil: hard); annotations stay
 *   hard, soft annotations (on_device(..., soft=W)) are preferences: the
 *   objective is the makespan plus the weight (seconds) of each broken one;
 * - candidates: HEFT, serial per-call choice, every single device, a
 *   minimum cut of compute plus copy time, and TVM's and min_bytes' plans;
 *   each scored by an inner model (the task graph with one copy per value
 *   and destination device, list-scheduled as a plan is), then improved by
 *   moves of one call, of a chain (a call run straight into its only
 *   reader) or of two chains swapping devices, rescheduling after each,
 *   with an iterated local search from the best; modules of at most
 *   `exact` decisions are searched exactly by branch and bound;
 * - the answer: the best candidates are written as annotations
 *   (dp_sched_annotate), planned by TVM's rules, ShareCopies, and
 *   scheduled by dp_sched_list: the plan of the smallest makespan wins,
 *   and dp.planner.schedule of it gives that makespan.
 *
 * Guarantees: below `full` calls every baseline (HEFT, serial per-call
 * choice, each single device) is planned and scored exactly as the answer
 * is, so the answer's makespan is never larger than any of theirs (nor
 * than the serial schedule of the per-call choice). Memory budgets
 * (CompilationConfig memory) come first: the answer fits when a candidate
 * found fits, else the error names the device, its peak and what is live
 * then.
 */
#ifndef DEVPLAN_LATENCY_H
#define DEVPLAN_LATENCY_H

#include "schedule.h"
#include "plan.h"

enum { DP_LATENCY_TIME = 0,   /* the makespan (+ broken soft weights, seconds) */
       DP_LATENCY_BYTES = 1 }; /* bytes copied (+ broken soft weights, bytes), then the makespan */

typedef struct dp_latency_opts {
  const dp_sched_costs *costs;  /* NULL: the default model */
  int objective;                /* DP_LATENCY_* */
  uint32_t exact;               /* branch and bound up to this many decisions (0: 16; at most 64) */
  uint32_t full;                /* plan and score every baseline below this many calls (0: 50,000) */
  double effort;                /* scales the search's work (0: 1) */
  const dp_plan_opts *plan;     /* the module's own annotations are planned with these (strict,
                                   all_conflicts, resolve_conflicts) to find conflicts; NULL: TVM's */
  dp_conflicts *all;            /* all_conflicts' errors (may be NULL) */
} dp_latency_opts;

#define DP_LATENCY_MAXCAND 24

/* One plan the placement planned and scored. */
typedef struct dp_latency_candidate {
  const char *name;             /* "search", "exact", "heft", "cheapest", "single", "mincut",
                                   "tvm", "min_bytes" (static) */
  uint32_t device;              /* single: its device's index in the configuration's */
  double makespan, bytes, soft, excess, objective;
  double model;                 /* the inner model's makespan of its placement (-1: none) */
} dp_latency_candidate;

typedef struct dp_latency_result {
  dp_module *planned;           /* the answer (owned) */
  dp_module *from;              /* the module it was planned from (owned): the placement
                                   written as annotations, or the module itself */
  int from_placement;           /* what planned it: DP_PLACE_TVM or DP_PLACE_MIN_BYTES */
  double makespan, bytes;       /* its schedule's makespan, the bytes it copies */
  uint32_t soft_broken, nsoft;  /* soft annotations broken, of nsoft */
  double soft_weight;           /* their weight */
  double bound;                 /* the lower bound (dp_sched_lower_bound) */
  uint32_t calls, decisions;    /* calls of the module; calls and parameters placed */
  uint32_t evaluations;         /* placements the inner model scored */
  int exact;                    /* 1: branch and bound completed (optimal under the inner model) */
  uint32_t winner;              /* index in cand */
  uint32_t ncand;
  dp_latency_candidate cand[DP_LATENCY_MAXCAND];
} dp_latency_result;

/* The latency placement's plan of m (placement = "latency"; with
   objective DP_LATENCY_BYTES: min_bytes with soft annotations or memory
   budgets). 0 (out filled; dp_latency_result_clear frees it), or -1 +
   error (a conflict of the module's own annotations, a call no device can
   run, no candidate within the memory budgets, out of memory). */
int dp_plan_latency(dp_module *m, const dp_config *cfg, const dp_latency_opts *o,
                    dp_latency_result *out, dp_err **err);
void dp_latency_result_clear(dp_latency_result *r);

#endif
