/*
 * The latency placement's internals (include/devplan/latency.h is the
 * public side): the state one placement works on, the inner model that
 * scores a placement without planning it (latency_model.c), the search
 * (latency_search.c) and the exact search (latency_exact.c). latency.c
 * drives them and plans the answer.
 */
#ifndef DEVPLAN_LATENCY_INTERNAL_H
#define DEVPLAN_LATENCY_INTERNAL_H

#include "planner.h"
#include "devplan/schedule.h"
#include "devplan/latency.h"

#define LAT_NONE DP_SCHED_NONE

/* The weight of a soft annotation (on_device(..., soft=W)), or -1 when e
   is not one (an ordinary on_device, or no on_device). */
double dp__soft_weight(const struct dp__plan_ops *ops, const dp_expr *e);
/* m with each soft annotation made its body (harden 0: the placement
   decides) or an ordinary on_device (harden 1); *found counts them (m
   itself, retained, when none). NULL + error. */
dp_module *dp__soft_rewrite(dp_module *m, int harden, uint32_t *found, dp_err **err);
/* The soft annotations of m into *found: 0, or -1 + error. */
int dp__soft_count(dp_module *m, uint32_t *found, dp_err **err);

/* PlanDevices' hook (plan.c): placement = "latency", and min_bytes with
   soft annotations or memory budgets, are placed by the search: 1, 0 (not),
   or -1 + error (out of memory). */
int dp__placed_by_search(dp_module *m, const dp_config *cfg, const dp_plan_opts *o, dp_err **err);
dp_module *dp__plan_search(dp_module *m, const dp_config *cfg, const dp_plan_opts *o, dp_conflicts *all,
                           dp_err **err);
dp_domains *dp__search_domains(dp_module *m, const dp_config *cfg, const dp_plan_opts *o,
                               dp_conflicts *all, dp_err **err);

/* What a placement scores: memory over the budgets first, then the
   objective (makespan or bytes copied, plus the weights of the soft
   annotations it breaks), then the makespan, then the sum of the tasks'
   finish times (the inner model's: a move that lets work finish earlier
   without changing the makespan yet is progress), then the bytes copied. */
typedef struct dp__score {
  double excess;      /* bytes over the budgets, summed over devices */
  double primary;     /* the objective */
  double makespan, bytes, soft;
  double flow;        /* the sum of the tasks' finish times (0 for a plan's score) */
} dp__score;

/* Is a strictly better than b (relative tolerance 1e-9)? */
int dp__score_better(const dp__score *a, const dp__score *b);

/* One placement problem: the module's task graph (DAG mode, with @main's
   parameters), the costs, which nodes are decisions, and scratch for the
   inner model. */
typedef struct dp__lat {
  dp_sched_graph g;           /* DP_GRAPH_DAG | DP_GRAPH_PARAMS */
  const dp_config *cfg;
  int objective;              /* DP_LATENCY_TIME, DP_LATENCY_BYTES */
  uint32_t n, K;              /* nodes; devices to choose from (g.devs[0 .. K)) */
  uint32_t nphys;             /* physical devices among them */
  double *cost;               /* n * K: a call's seconds (INFINITY: cannot); others 0 */
  double *bw;                 /* g.ndevs * g.ndevs bytes per second */
  double *minc;               /* per node: a call's cheapest cost (0 for the others) */
  uint32_t *fixed;            /* per node: the device of a fixed call or parameter, else NONE */
  uint64_t *allowed;          /* per node: the devices a decision may take */
  uint32_t *dec, ndec;        /* the decisions the search moves (free calls, and parameters
                                 that do not move with a call), in topological order */
  uint32_t *all, nall;        /* every decision (calls and parameters), in topological order:
                                 the exact search's (a parameter copied to its only reader can
                                 be better: it lets another task go first) */
  int rdec;                   /* @main's result device is a decision: place[n] holds it (its
                                 result is a join, a tuple of values: those made elsewhere are
                                 copied there, as TVM's rules copy them to @main's device) */
  uint32_t *topo;             /* a topological order of the graph */
  uint32_t *chain;            /* per node: the first node of its chain (a call run straight
                                 into its only reader), itself otherwise; NONE for non-decisions */
  uint32_t *chain_next;       /* per decision: the next node of its chain, NONE at its end */
  uint32_t *xoff, *xpar;      /* per call: the free parameters only it reads, xpar[xoff[v] ..
                                 xoff[v + 1]) (they move with it) */
  uint32_t *tied;             /* per node: the call a parameter moves with (not a decision of
                                 its own), else NONE */
  uint32_t *soft_choice;      /* per soft annotation: the device it prefers (NONE: none of K) */
  double budget[64];          /* per device: bytes (INFINITY: none) */
  int budgets;                /* any budget given */
  double soft_scale;          /* a soft weight in the objective's unit */
  uint32_t *heads, nheads;    /* the first call of each chain (of two calls or more) */
  /* the inner model's scratch (latency_model.c) */
  struct dp__xg *xg;
  double *tstart, *tfinish;   /* per node: its start and finish in the last evaluation (calls) */
  /* counters */
  uint64_t work, work_budget; /* node-evaluations spent and allowed in the search */
  uint32_t evals;
  int oom;
  dp_err *err;
} dp__lat;

/* dp_sched_list with ties of rank broken by key[v] (the order the
   nodes of a plan would have), then by node number (schedule_list.c). */
int dp__sched_list_keyed(const dp_sched_graph *g, const double *dur, int serial, const uint64_t *key,
                         dp_schedule *out, dp_err **err);

/* latency_model.c: the score of a placement (a device per node: calls and
   parameters; others ignored) without planning it: the task graph with a
   copy per value and destination device, scheduled by dp_sched_list as a
   plan's would be. *crit (optional) gets the decisions on its critical
   path (malloc'd, *ncrit of them). 0, or -1 (l->err). */
int dp__lat_eval(dp__lat *l, const uint32_t *place, dp__score *out, uint32_t **crit, uint32_t *ncrit);
void dp__lat_model_free(dp__lat *l);
/* The soft annotations a placement breaks: their count and weight (in
   the annotations' own unit). */
void dp__lat_soft(const dp__lat *l, const uint32_t *place, uint32_t *broken, double *weight);

/* latency_search.c: starting placements and local search. */
int dp__lat_mincut(dp__lat *l, uint32_t *place);            /* serial time or bytes, min cut */
void dp__lat_params(dp__lat *l, uint32_t *place);           /* each free parameter by its readers */
void dp__lat_result(dp__lat *l, uint32_t *place);           /* @main's result where most of it is made */
int dp__lat_improve(dp__lat *l, uint32_t *place, dp__score *score); /* to a local optimum */
int dp__lat_perturb(dp__lat *l, uint32_t *place, dp__score *score); /* iterated local search */

/* latency_exact.c: branch and bound over the decisions (at most 64), with
   the inner model at the leaves. place/score hold the incumbent and get
   the optimum; returns 1 when the search was complete (optimal under the
   inner model), 0 when it stopped at its node limit, -1 on error. */
int dp__lat_exact(dp__lat *l, uint32_t *place, dp__score *score, uint64_t node_limit);

#endif
