/*
 * The modelled schedule of a module: when each operator call and each copy
 * runs, on which device or link, if devices run side by side. A layer above
 * the planner: it reads a planned module (or, for the baselines, a module
 * not yet planned) and changes no planning phase.
 *
 * The cost model (issue 24, fixed):
 * - a task per operator call (not on_device, tuples, projections, lets,
 *   parameters, constants) and per device_copy; a call of a primitive
 *   function (Primitive=1, a fused kernel) is one task, its body's calls
 *   are the kernel's and no tasks of their own;
 * - a call runs on its virtual device for cost(call, vd) seconds; a device
 *   runs one call at a time, never preempted ("device": the physical
 *   device, device type and id: two memory scopes of one GPU are one
 *   processor); a cost model may say a device cannot run a call (a hard
 *   constraint: an error where a plan puts the call there);
 * - a copy of B bytes from D1 to D2 takes B / bandwidth(D1, D2) seconds on
 *   the link D1 -> D2 (one per ordered pair of physical devices), one copy
 *   at a time per link; copies run while devices compute;
 * - a task starts when every value it reads is finished, looking through
 *   tuples, projections, lets and annotations; @main's parameters are
 *   ready at time 0 on the device the plan gives them;
 * - the makespan is the latest finish; 0 without tasks.
 *
 * What the rules leave open, devplan reads so (schedule_graph.c says why):
 * - a function called at exactly one place, not through itself, is read as
 *   if inlined there: its parameters are ready when that call's arguments
 *   are, the call's value when the body's is. Any other function (called
 *   from several places, passed as a value, recursive, never called) is
 *   scheduled once, apart: its parameters ready at 0, and a call of it
 *   gives its value when its arguments (and callee) are ready;
 * - an if or match is ready when its condition (data) and every branch
 *   are: both branches' tasks are scheduled (every call once);
 * - constructors, references and function values carry the readiness of
 *   what they hold; constants and function literals are ready at 0.
 *
 * The pieces, one file each: schedule_graph.c (module -> task graph),
 * schedule_cost.c (the default cost model), schedule_list.c (list
 * scheduling of a placed graph), schedule_heft.c (HEFT), schedule_bound.c
 * (lower bound, single device and per-call choices), schedule_annotate.c
 * (a placement written as annotations PlanDevices plans).
 */
#ifndef DEVPLAN_SCHEDULE_H
#define DEVPLAN_SCHEDULE_H

#include "module.h"

#define DP_SCHED_NONE UINT32_MAX

/* ---- the default cost model (schedule_cost.c) ----

   seconds = overhead + flops / flops_per_second + bytes / bytes_per_second
   per device type, where flops and bytes are estimated from the call's
   operator, attributes and checked types (dp_call_flops, dp_call_bytes). */
typedef struct dp_cost_rate {
  int device_type;           /* 0: any device type (the model's fallback) */
  double flops_per_second;   /* > 0 */
  double bytes_per_second;   /* > 0: memory traffic (arguments read, result written) */
  double overhead;           /* >= 0 seconds per call (launch, dispatch) */
} dp_cost_rate;

typedef struct dp_cost_model {
  uint32_t n;
  dp_cost_rate *rates;       /* by device type; the entry of type 0 (or DP_COST_RATE_DEFAULT) for the rest */
} dp_cost_model;

/* What a device type nobody gave a rate gets: 1e10 flop/s, 1e10 byte/s, 1e-6 s. */
extern const dp_cost_rate DP_COST_RATE_DEFAULT;

/* The rate of a device type under m (m NULL: the default). */
const dp_cost_rate *dp_cost_rate_of(const dp_cost_model *m, int device_type);
/* Floating point operations of a call (estimated: nn.conv2d and its
   transpose, dense, batch_matmul, matmul from shapes; pooling by window;
   elementwise and anything else one per output element; a call of a
   primitive function the sum over its body). Unknown dimensions count 1. */
double dp_call_flops(const dp_expr *call);
/* Bytes a call reads and writes: its tensor arguments and its result. */
double dp_call_bytes(const dp_expr *call);
/* Bytes of a value of type t; *unknown set to 1 when a dimension is
   unknown (counted as 1) or t is not a tensor or tuple of them. */
double dp_sched_type_bytes(const dp_type *t, int *unknown);
/* The default model's seconds for call on a device of device_type. */
double dp_cost_model_seconds(const dp_cost_model *m, const dp_expr *call, int device_type);

/* ---- what scheduling asks of its caller ---- */

typedef struct dp_sched_costs {
  void *ud;
  /* The seconds call takes on vd (>= 0): 0, 1 when vd cannot run it, -1 +
     *err (an error a user's function threw). NULL: the model below. */
  int (*call)(void *ud, dp_expr *call, dp_vdev *vd, double *seconds, dp_err **err);
  /* Bytes per second from src to dst (> 0): 0 or -1 + *err. NULL: the
     configuration's (dp_config_bandwidth), else DP_SCHED_BANDWIDTH. */
  int (*bandwidth)(void *ud, dp_vdev *src, dp_vdev *dst, double *bytes_per_second, dp_err **err);
  const dp_cost_model *model;  /* when call is NULL (NULL: the default rates) */
} dp_sched_costs;

#define DP_SCHED_BANDWIDTH 1e10   /* bytes per second when nothing gives one */

/* ---- the task graph (schedule_graph.c) ---- */

enum { DP_TASK_CALL = 1, DP_TASK_COPY = 2, DP_TASK_JOIN = 3 };
enum { DP_GRAPH_PLANNED = 0,  /* a planned module: devices from the plan, copies are tasks */
       DP_GRAPH_DAG = 1,      /* any module: calls only (copies looked through), devices free
                                 but where an annotation fixes them */
       DP_GRAPH_PARAMS = 4 }; /* or-ed with either: @main's parameters are nodes too (joins
                                 without predecessors, ready at 0: param0 .., with their
                                 bytes and, planned or annotated, their device), and soft
                                 annotations are read (DAG mode: preferences, not fixes) */

/* Nodes are tasks (calls, copies) and joins (zero-time points where
   several values meet: a tuple read whole, a call of a function, an if),
   numbered in the order the walk makes them. */
typedef struct dp_sched_graph {
  dp_module *mod;            /* retained */
  dp_config *cfg;            /* retained */
  int mode;                  /* DP_GRAPH_* */
  uint32_t n;                /* nodes */
  uint32_t ntasks;           /* calls and copies */
  uint8_t *kind;             /* per node: DP_TASK_* */
  dp_expr **expr;            /* per node: the call or device_copy (borrowed; NULL for joins) */
  uint32_t *dev;             /* per node: a call's device, a copy's destination (index in
                                devs); DAG mode: a call's fixed device or DP_SCHED_NONE */
  uint32_t *src;             /* per node: a copy's source device (else DP_SCHED_NONE) */
  double *bytes;             /* per node: a copy's bytes; DAG mode: a call's result bytes */
  uint8_t *approx;           /* per node: bytes counted an unknown dimension as 1 */
  uint32_t *poff, *pred;     /* predecessors: pred[poff[v] .. poff[v+1]) */
  uint32_t *soff, *succ;     /* successors */
  dp_vdev **devs;            /* the device table: canonical devices (retained) */
  uint32_t ndevs;
  uint32_t *phys;            /* device index -> physical device (index of its first
                                device of the same type and id) */
  uint32_t nchoice;          /* DAG mode: devs[0 .. nchoice) are the configuration's
                                (its default first, then one per primitive target) */
  /* with DP_GRAPH_PARAMS: */
  uint32_t param0, nparams;  /* @main's parameters: nodes param0 .. + nparams (expr: the
                                parameter; dev: its device, or NONE where free) */
  uint32_t result;           /* the node whose finish makes @main's result ready (NONE) */
  uint32_t nsoft;            /* DAG mode: soft annotations (on_device(..., soft=W)) of a
                                call or parameter, each (node, device, weight) */
  uint32_t *soft_node, *soft_dev;
  double *soft_weight;
} dp_sched_graph;

/* The task graph of m under cfg. PLANNED: every call's device is where the
   plan runs it (its lexical context: function virtual_device, fixed
   on_device, device_copy source), an error naming the call when the plan
   gives none. DAG: calls fixed where an on_device that constrains its
   body wraps them directly (or a device_copy's source names where they
   are made); the memory and VM operators and call_lowered on the host.
   One explicit-stack walk, linear, any depth. 0, or -1 + error. */
int dp_sched_graph_build(dp_sched_graph *g, dp_module *m, const dp_config *cfg, int mode,
                         dp_err **err);
void dp_sched_graph_free(dp_sched_graph *g);
/* A topological order of the nodes (Kahn's, first in first out from the
   lowest numbers) into order[0 .. g->n): 0, or -1 when the graph has a
   cycle (never for a graph dp_sched_graph_build made: that is a bug), -2
   when out of memory. */
int dp_sched_order(const dp_sched_graph *g, uint32_t *order);

/* Bytes per second of every ordered pair of devices (ndevs * ndevs, the
   diagonal unused), from the hook, the configuration or the default. */
int dp_sched_bandwidths(const dp_sched_graph *g, const dp_sched_costs *c, double *bw,
                        dp_err **err);
/* PLANNED: the duration of every node (calls on their device, copies by
   bandwidth, joins 0); an error naming the call and device where the cost
   model says the device cannot run it. */
int dp_sched_durations(const dp_sched_graph *g, const dp_sched_costs *c, double *dur,
                       dp_err **err);
/* DAG: the cost of every node on each of the devices devs[0 .. g->nchoice)
   and, for a fixed call, on its own device alone (cost[v * nchoice + d];
   INFINITY where the device cannot run it or the call is fixed elsewhere;
   joins 0). A fixed device outside the configuration's counts as the
   configuration device of the same type and id. An error names a call no
   device can run. */
int dp_sched_cost_matrix(const dp_sched_graph *g, const dp_sched_costs *c, double *cost,
                         dp_err **err);

/* ---- list scheduling of a placed graph (schedule_list.c) ----

   Resources: the physical devices (calls), then one link per ordered pair
   of physical devices that a copy uses. Priority: the upward rank (the
   longest path of durations from the node to the end, itself included);
   ties by node number. Whenever a resource is idle and a task of it is
   ready, the ready task of highest priority starts (no unforced idle
   time); all events at one time are taken before anything starts. With
   serial, one resource runs every task: one at a time, as a runtime that
   runs operators one after another. Deterministic: a function of the graph
   and the durations alone. O((n + edges) log n). */
typedef struct dp_schedule {
  uint32_t n;                /* nodes */
  double *start, *finish;    /* per node (joins: when their values are all ready) */
  uint32_t *res;             /* per node: resource (DP_SCHED_NONE for joins) */
  uint32_t *prev;            /* per node: the task before it on its resource, or NONE */
  double makespan;
  uint32_t nres;             /* resources: physical devices first, then links */
  uint32_t *res_src, *res_dst; /* per resource: device index (a device: both its own) */
  uint8_t *res_link;         /* per resource: 1 for a link */
  double *busy;              /* per resource: the sum of its tasks' durations */
  uint32_t *ntask;           /* per resource: its tasks */
} dp_schedule;

int dp_sched_list(const dp_sched_graph *g, const double *dur, int serial, dp_schedule *out,
                  dp_err **err);
void dp_schedule_free(dp_schedule *s);
/* The critical path of a schedule: from a task that ends at the makespan
   back to time 0, each task's start is the finish of the task it waited
   for (a value it reads, else the task before it on its resource). Tasks
   in time order into *path (malloc'd), with why[i] 1 when path[i] waited
   for its resource, 0 for data (or nothing, at time 0). 0, or -1 + error. */
int dp_sched_critical(const dp_sched_graph *g, const dp_schedule *s, uint32_t **path,
                      uint8_t **why, uint32_t *n, dp_err **err);

/* ---- memory (schedule_memory.c) ----

   A value occupies its bytes on its device (a call's: where it runs; a
   copy's: its destination; a parameter of @main, with DP_GRAPH_PARAMS:
   its device) from the start of the task that makes it (a parameter: 0)
   to the finish of its last reader (through joins), or to the makespan
   when it is part of @main's result; a value nobody reads while it is
   made. Intervals are half-open: one freed at t and one made at t do not
   meet. Devices are physical (memory scopes of one device share it). */
typedef struct dp_sched_memory {
  uint32_t ndevs;            /* g->ndevs */
  double *peak;              /* per device index: the peak bytes (a physical device's own
                                index; the others 0) */
  double *at;                /* per device index: when the peak is first reached */
  double *begin, *end;       /* per node: the interval its value occupies (end < 0: none) */
} dp_sched_memory;

int dp_sched_memory_profile(const dp_sched_graph *g, const dp_schedule *s, dp_sched_memory *out,
                            dp_err **err);
void dp_sched_memory_free(dp_sched_memory *m);
/* The nodes whose values occupy physical device d at time t (begin <= t <
   end), in node order, into *nodes (malloc'd). 0, or -1 + error. */
int dp_sched_memory_live(const dp_sched_graph *g, const dp_sched_memory *m, uint32_t d, double t,
                         uint32_t **nodes, uint32_t *n, dp_err **err);

/* ---- baselines on a DAG-mode graph (schedule_heft.c, schedule_bound.c) ----

   A placement gives each call node a device index (in devs[0 ..
   nchoice)); other nodes DP_SCHED_NONE. Fixed calls keep their device. */

/* HEFT (Topcuoglu, Hariri, Wu 2002): upward ranks of mean costs (mean
   over the devices that can run a call, mean copy time over the ordered
   pairs of devices), then in rank order each call on the device where it
   finishes first, inserted in the earliest gap of that device (a search of
   at most 4096 gaps, then after the last). Copies are each value's bytes
   over the pair's bandwidth, without link contention (HEFT's own model);
   @main's parameters are ready everywhere at 0. */
int dp_sched_heft(const dp_sched_graph *g, const double *cost, const double *bw,
                  uint32_t *placement, dp_err **err);
/* Every call that is not fixed on device d (or, where d cannot run it, on
   its cheapest device). */
void dp_sched_single(const dp_sched_graph *g, const double *cost, uint32_t d, uint32_t *placement);
/* Every call that is not fixed on its cheapest device (ties: the lower index). */
void dp_sched_cheapest(const dp_sched_graph *g, const double *cost, uint32_t *placement);
/* The lower bound of any plan's makespan: max(critical path of per-call
   minima, sum of per-call minima / K) for K devices (copies free). */
typedef struct dp_sched_bound { double bound, critical_path, work; uint32_t devices; } dp_sched_bound;
int dp_sched_lower_bound(const dp_sched_graph *g, const double *cost, dp_sched_bound *out,
                         dp_err **err);

/* ---- a placement as annotations (schedule_annotate.c) ----

   m (the module g was built from, DAG mode) with each placed call pinned
   to its device by annotations PlanDevices then keeps: each use of the
   call wrapped in an on_device(call, vd) of its own, and, where that
   position fixes the value (a let value, a function body), each use of
   the let variable (on_device(%x, vd)) and each call of the global
   function alike, so that a reader elsewhere gets a copy, not a conflict.
   Calls with placement DP_SCHED_NONE or fixed already are left as they
   are. With DP_GRAPH_PARAMS, a free parameter of @main with a placement is
   pinned the same way (each use on_device(%p, vd)), placement[g->n] (one
   past the nodes), when not NONE, becomes @main's virtual_device (its
   result's device: values made elsewhere are copied there), and soft
   annotations go (each becomes what it wraps: the placement decides). */
dp_module *dp_sched_annotate(const dp_sched_graph *g, const uint32_t *placement, dp_err **err);
/* The same placement with fewer annotations, planned by PlanDevices to the
   same plan: none on a use TVM's rules put on the device it would name
   anyway (an ordinary operator's argument, the operator running on the
   very device the value is fixed on; a let value or function body that is
   an on_device of that device already). Where the module names a memory
   scope (or has primfns), every annotation is written: a placed device
   leaves its scope open there. The latency placement plans its answers
   from this form (a million-call chain: 3x less planning). */
dp_module *dp_sched_annotate_lean(const dp_sched_graph *g, const uint32_t *placement, dp_err **err);

#endif
