/*
 * The device planner (PlanDevices): decides the virtual device of every
 * sub-expression of a module and inserts the copies between devices
 * (docs/planner.md, docs/planner-semantics.md). It is a set of separate phases so
 * that a script can run them one by one and change the domains between
 * analysis and capture:
 *
 *   phase 0   dp_plan_rewrite    on_device at a function body's top or as a
 *                                let value becomes fixed; on_device(e).0
 *                                becomes on_device(e.0); call_lowered
 *                                arguments and result may be copied
 *   phase 0b  dp_plan_conflicts  (TVM 2023) a copy allowed where a value nobody
 *                                annotated is demanded on two devices
 *   phase 1   dp_plan_analyze    domains: union-find over first-order and
 *                                function domains, from the constraints
 *   phase 2   dp_plan_default    free on_device unification, then defaulting
 *   phase 3   dp_plan_capture    the result written back: parameter and
 *                                function virtual devices, fixed on_device,
 *                                device_copy, primfn buffer scopes
 *
 * dp_plan_devices is exactly these phases in order. Five readings differ
 * from planner.md's wording, on purpose (docs/planner-semantics.md):
 * - phase 0's fixed let value or function body is read as fixed by
 *   analysis where it stands, and phase 0 rewrites only where that would
 *   not say the same (an annotation with other references, of an operator,
 *   of another on_device, of a function): rewriting it would rebuild the
 *   whole spine above it, every let of a let chain, for the same plan. So
 *   dp_plan_rewrite returns its module unchanged where only such forms
 *   occur, and analysis expects phase 0's module;
 * - phase 0b asks each argument of a call of a function (a global, a
 *   function value) for its parameter's annotation instead of passing the
 *   call's demand on (planner.md passed it on, which made PlanDevices' own
 *   output, whose arguments carry fixed on_device calls, a conflict when
 *   planned again);
 * - phase 0b marks the argument where the copy goes with an unconstrained
 *   on_device (phase 0's "a copy is allowed here"), not a device_copy
 *   whose ends are the two demands: analysis gives the value and its
 *   consumer those devices anyway (each demand is a constraint it
 *   applies), so the plans are the same, but a device_copy the user never
 *   wrote, at the position of the value it copies, would be named in the
 *   conflicts that remain; and a value's own
 *   device (a parameter's virtual_device, a device_copy's destination) is
 *   its first demand;
 * - an on_device of a function value is where its body is (no copy can
 *   move a function): a call through the annotation calls the function
 *   itself, its parameters take the call's arguments (reading the
 *   annotation's result as free let such a call pass an argument on one
 *   device to a parameter on another, with no copy and no error);
 * - computed here, read anywhere: a plain on_device (its body on its
 *   device, its result free) whose result phase 0b finds demanded on
 *   devices that cannot join, which TVM's rules make a conflict, is fixed
 *   where it is, and each reader on another device reads a copy, one per
 *   destination device (opts.tvm_conflicts, strict planning and
 *   constrain_result=True keep the conflict); where TVM's rules plan, the
 *   plan is theirs.
 *
 * Every phase walks the IR with explicit stacks (1,000,000-deep programs
 * are fine) and never depends on addresses or hash order. Defaulting, the
 * one phase whose result depends on the order it meets functions in, visits
 * them callers first (a function nobody calls, such as @main, before those
 * it calls) and by name where calls do not decide (unrelated functions; a
 * cycle of calls is entered at its smallest name): the same program gives
 * the same plan whatever the order of its definitions. (The rules stay order
 * dependent by design, as TVM's: the first rule to reach a free value
 * decides it; what devplan fixes is the order.) A conflict (two
 * constraints that cannot both hold) is a DP_ERR_CONFLICT error whose message names both constraints with their
 * positions and whose notes give the chain of unifications between them.
 */
#ifndef DEVPLAN_PLAN_H
#define DEVPLAN_PLAN_H

#include "module.h"

/* The planner's state between analysis and capture (dp_domains_objtype(),
   reference counted; holds its module and configuration). */
typedef struct dp_domains dp_domains;
/* The object type of dp_domains (dp_obj.type), registered on first use. */
int dp_domains_objtype(void);

/* Phase 0: new module (the same functions where nothing changed). */
dp_module *dp_plan_rewrite(dp_module *m, const dp_config *cfg, dp_err **err);
/* Phase 0b: insert copies for conflicting demands on unannotated values. */
dp_module *dp_plan_conflicts(dp_module *m, const dp_config *cfg, dp_err **err);
/* Phase 1: the domains of every expression of m (m is retained). The
   explanations of the domains (and of a conflict) are built when asked, by
   replaying analysis and whatever changed the domains since. */
dp_domains *dp_plan_analyze(dp_module *m, const dp_config *cfg, dp_err **err);
/* Phase 2: free on_device unification, then TVM's defaulting rules with
   the configuration's default virtual device. 0, or -1 + error. */
int dp_plan_default(dp_domains *d, dp_err **err);
/* Phase 3: the planned module. Every domain must be constrained (after
   dp_plan_default). */
dp_module *dp_plan_capture(dp_domains *d, dp_err **err);
/* All phases in order: rewrite, conflicts, analyze, default, capture. The
   output carries checked types where the input did. */
dp_module *dp_plan_devices(dp_module *m, const dp_config *cfg, dp_err **err);

/* ---- options: where devplan goes further than TVM ----
   PlanDevices' default (all zero) is TVM's output; each option changes
   what it does on purpose. */

enum { DP_PLACE_TVM = 0, DP_PLACE_MIN_BYTES = 1,
       DP_PLACE_LATENCY = 2 };   /* the smallest modelled makespan (latency.h) */
struct dp_sched_costs;           /* schedule.h */

/* What placement by cost may ask of its caller (the Lua binding sets them
   from Lua functions). Each returns 0, or -1 with *err set (an error a
   user's function threw: planning stops with it). */
typedef struct dp_place_hooks {
  void *ud;
  /* May call (an operator call) run on vd? *ok 0 or 1. NULL: everywhere. */
  int (*can_run)(void *ud, dp_expr *call, dp_vdev *vd, int *ok, dp_err **err);
  /* The seconds call takes on vd (>= 0). NULL: no compute cost. */
  int (*compute)(void *ud, dp_expr *call, dp_vdev *vd, double *seconds, dp_err **err);
  /* Bytes per second copied from src to dst (> 0). NULL: the configuration's
     (dp_config_bandwidth), else 1e10. The objective is time when compute,
     this or the configuration's bandwidths are given, else bytes. */
  int (*bandwidth)(void *ud, dp_vdev *src, dp_vdev *dst, double *bytes_per_second,
                   dp_err **err);
  /* Will a copy of value be recomputed on its destination instead (so it
     costs nothing)? NULL: no (move.h's recompute option sets it). */
  int (*recomputable)(void *ud, dp_expr *value);
} dp_place_hooks;

typedef struct dp_plan_opts {
  int strict;          /* skip phase 0b: a value demanded on two devices is a conflict */
  int tvm_conflicts;   /* phase 0b as TVM: copies only for values nobody annotated; a plain
                          on_device whose result is demanded on two devices stays a conflict
                          (default: computed there, read anywhere: readers elsewhere get a
                          copy, one per destination device) */
  int all_conflicts;   /* analysis goes on after a conflict: every one is reported */
  int placement;       /* DP_PLACE_TVM: TVM's defaulting; DP_PLACE_MIN_BYTES: every value
                          nobody constrained where it minimises the bytes copied (one
                          copy per value and destination device), or with compute costs
                          the time (compute + bytes / bandwidth); annotations stay hard */
  const dp_place_hooks *hooks;  /* for placement; NULL: bytes, every device runs everything */
  const struct dp_sched_costs *costs; /* DP_PLACE_LATENCY: what calls cost (NULL: the hooks'
                          compute and capability, else the default model); min_bytes with
                          soft annotations or memory budgets is placed by the same search
                          (latency.h), by bytes */
  int consume;         /* the caller gives the module up (dp_plan_devices_opts; ignored by
                          the latency search; not for dp_plan_polymorphic): the plan may reuse its calls and lets that nothing
                          else holds, changed in place, instead of copies of them. The
                          module stays valid memory (and held), its content unspecified:
                          the plan's nodes, or some of them after an error. Lowers the
                          memory of planning: the input and the plan are not side by side */
} dp_plan_opts;

/* Every independent conflict of a module (all_conflicts): errors
   (DP_ERR_CONFLICT, each naming both constraints with positions, the chain
   in its notes, worded as PlanDevices words it when it stops there), in
   source order (where the two sides meet). After a conflict analysis keeps
   the two sides apart and goes on; a later conflict between the same two
   classes (groups of values unification joined, each bound to its device)
   is that one again, not reported. */
typedef struct dp_conflicts { uint32_t n; dp_err **v; } dp_conflicts;
void dp_conflicts_clear(dp_conflicts *c);

/* Phases 0, 0b (not when strict or placing: placement puts those copies),
   1, placement (min_bytes), 2: the domains capture writes back. NULL +
   error; with all_conflicts the error sums up every conflict ("N conflicts:
   " the first's message, the next 19 as notes, then "and N more"; one
   conflict: its own error), each of which goes to *all (NULL: not wanted).
   o NULL: TVM's PlanDevices. */
dp_domains *dp_plan_domains(dp_module *m, const dp_config *cfg, const dp_plan_opts *o,
                            dp_conflicts *all, dp_err **err);
/* dp_plan_domains, then capture. */
dp_module *dp_plan_devices_opts(dp_module *m, const dp_config *cfg, const dp_plan_opts *o,
                                dp_conflicts *all, dp_err **err);

/* ---- ShareCopies ---- */

/* One device_copy per value and pair of devices in each function of a
   planned module: the copies of one value between the same two devices
   (the user's too) become one node, which the text format binds where it
   dominates its uses (the scope that holds them all: before two branches
   or closures that each copied the value). Copies without both ends
   written are kept. The result plans to itself. New reference, or NULL +
   error. */
dp_module *dp_plan_share_copies(dp_module *planned, dp_err **err);

/* ---- the verifier ---- */

/* One inconsistency of a planned module. */
typedef struct dp_violation {
  const char *kind;   /* "argument", "context", "copy", "annotation", "input", "scope" (static) */
  char *msg;          /* one sentence naming the expression and its position (owned) */
  dp_span span;       /* the expression's position (line 0 if none) */
  dp_expr *expr;      /* the expression (retained); NULL for a missing function */
  dp_vdev *expected;  /* the device its context or annotation asks for (retained), or NULL */
  dp_vdev *actual;    /* the device it lives on (retained), or NULL */
} dp_violation;

typedef struct dp_violations {
  uint32_t n;         /* kept (at most the limit) */
  uint64_t total;     /* found */
  dp_violation *v;
} dp_violations;

/* Checks a planned module from the module alone, reading its devices as a
   later pass does (function and parameter virtual_device, fixed on_device,
   device_copy ends), independently of the planner's domains: every operator
   call's arguments live where the call runs; every device_copy's source is
   its argument's device, its destination its consumer's, and the two
   differ; function and parameter annotations agree with the bodies; every
   expression that is not a variable, global, function or on_device lives
   where its context says (else a reader would misplace it). With input
   (the module that was planned; NULL: none), every annotation of the input
   is respected: on_device, device_copy ends, parameter and function
   virtual_device. And every variable is read inside the scope of what binds
   it ("scope", visit.h). Devices are compared canonicalised by cfg. Keeps the first
   `limit` violations (0: all) and counts all. One walk of each function,
   linear in the module, any depth. 0 (out filled, n == 0 when consistent),
   or -1 + error (out of memory). */
int dp_plan_verify(dp_module *planned, const dp_config *cfg, dp_module *input, uint32_t limit,
                   dp_violations *out, dp_err **err);
void dp_violations_clear(dp_violations *v);

/* ---- the domains, for scripts between analysis and capture ---- */

dp_module *dp_domains_module(const dp_domains *d);        /* borrowed */
const dp_config *dp_domains_config(const dp_domains *d);  /* borrowed */
/* Is e an expression of the analysed module (it has a domain)? */
int dp_domains_has(const dp_domains *d, const dp_expr *e);
/* The virtual device e lives on (for a function value: its result's), as a
   new reference; the fully unconstrained device while still free. An
   on_device call is looked through (its body's device, as capture does).
   NULL + error when e is not part of the module. */
dp_vdev *dp_domains_lookup(dp_domains *d, dp_expr *e, dp_err **err);
/* Unify the domains of a and b (a user decision: reason "unified by the
   script"). A conflict leaves the domains unchanged. 0, or -1 + error. */
int dp_domains_unify(dp_domains *d, dp_expr *a, dp_expr *b, dp_err **err);
/* Constrain e to vd (canonicalised through the configuration). */
int dp_domains_constrain(dp_domains *d, dp_expr *e, dp_vdev *vd, dp_err **err);
/* TVM's SetDefault: every unconstrained field of e's domain (all the
   parameter and result domains of a function) takes vd's. */
int dp_domains_set_default(dp_domains *d, dp_expr *e, dp_vdev *vd, dp_err **err);
/* Does every field of e's domain have a value? */
int dp_domains_fully_constrained(dp_domains *d, dp_expr *e);

/* ---- explaining ---- */

/* Why an expression has its device: the constraint that decided it (an
   annotation, a callee rule, a defaulting rule) with its position, and the
   unification steps that carried it to the expression (notes, from the
   expression towards the constraint). */
typedef struct dp_explain {
  dp_vdev *vdev;      /* the device (owned reference) */
  char *rule;         /* "on_device", "default for function result", ...; "free" when unconstrained */
  char *text;         /* one sentence a user reads */
  dp_span span;       /* position of the constraint (line 0 if none) */
  dp_expr *why;       /* the expression behind the constraint (an on_device, a
                         parameter, ...; retained), or NULL */
  uint32_t nsteps;
  dp_note *steps;     /* owned */
} dp_explain;

dp_explain *dp_domains_explain(dp_domains *d, dp_expr *e, dp_err **err);
void dp_explain_free(dp_explain *x);

/* The decisions of placement by cost (placement = min_bytes), in the order
   made: per class of values the optimiser placed, its first expression, the
   device it chose and what that weighed either way (one sentence: "the
   placement by cost (min_bytes), which chose cpu: its values and inputs
   cost 140 bytes copied there, 280 bytes copied on cuda"). None for TVM's
   placement. The callback returns 0 to go on, non-zero to stop (returned);
   -1 + error when out of memory. */
typedef int (*dp_place_fn)(void *ud, dp_expr *e, dp_vdev *vd, const char *text);
int dp_domains_placements(dp_domains *d, dp_place_fn fn, void *ud, dp_err **err);

/* Every sub-expression of the module with its device, in definition order
   and pre order (each distinct node once; operators and constructors are
   skipped). The callback returns 0 to go on, non-zero to stop (returned). */
typedef int (*dp_vdev_fn)(void *ud, const char *global, dp_expr *e, dp_vdev *vd);
int dp_domains_each(dp_domains *d, dp_vdev_fn fn, void *ud, dp_err **err);

/* ---- the placement optimiser on its own (src/planner/place_solve.c) ---- */

/* A placement problem apart from the IR (min_bytes placement builds one
   from the domains): variables (free classes), labels (devices), unary
   costs (compute), forbidden labels, and nets: a value made by one
   variable and read by others, which costs its weight (bytes) times the
   pair factor once per label among its readers other than its maker's
   (one copy per value and destination). Costs are integers >= 0;
   DP_PLACE_INF is "cannot". */
#define DP_PLACE_INF (INT64_MAX / 4)
typedef struct dp_place_pin_range { uint32_t src, off, n; int64_t w; } dp_place_pin_range;
typedef struct dp_place_problem {
  uint32_t nvars, nlabels;     /* nlabels in [1, 64] */
  uint32_t dflt;               /* the label free variables start from (ties keep it) */
  uint32_t *fixed;             /* per variable: its label, or UINT32_MAX (free) */
  uint64_t *allowed;           /* per variable: the labels it may take (bit mask) */
  int64_t *unary;              /* nvars * nlabels (malloc'd by the caller), or NULL */
  double *pair;                /* nlabels * nlabels: cost of a unit of weight copied from
                                  a to b (malloc'd by the caller), or NULL: 1 */
  dp_place_pin_range *nets; uint32_t nnets, capnets;  /* a net: maker, its readers in pins[off..off+n), weight */
  uint32_t *pins; uint32_t npins, cappins;
  uint32_t *stamp;             /* (scratch) */
  int oom;
} dp_place_problem;

/* 0, or -1 (out of memory, or nlabels outside [1, 64]). */
int dp_place_init(dp_place_problem *p, uint32_t nvars, uint32_t nlabels, uint32_t dflt);
void dp_place_free(dp_place_problem *p);                 /* frees unary and pair too */
/* A net: src's value, of weight w, read by readers[0..n) (repeats and src
   itself are dropped). 0, or -1 (out of memory). */
int dp_place_net(dp_place_problem *p, uint32_t src, const uint32_t *readers, uint32_t n, int64_t w);
int64_t dp_place_copy_cost(const dp_place_problem *p, int64_t w, uint32_t a, uint32_t b);
/* The cost of a labelling (DP_PLACE_INF when a variable has a label it may
   not take). */
int64_t dp_place_energy(const dp_place_problem *p, const uint32_t *label);
/* The cost of variable v's nets and unary cost under label, with v on l
   instead: what v's placement weighs either way (explanations). */
int64_t dp_place_energy_at(const dp_place_problem *p, const uint32_t *label, uint32_t v, uint32_t l);
/* Minimises the cost: with two labels exactly (one minimum s-t cut), with
   more by alpha-expansion (place_solve.c states the bound). label[v] is
   filled; returns 0, 1 (some variable may take no label: UINT32_MAX for
   it) or -1 (out of memory); *cost gets the total (cost may be NULL: not
   counted). */
int dp_place_solve(dp_place_problem *p, uint32_t *label, int64_t *cost);

/* --- testing aid: capture's index cuts without consume ---
   PlanDevices' capture cuts the index behind it without `consume` only
   from 2^21 ids on (src/planner/capture.c: there a cut gives huge pages
   back). dp_debug_capture_cut_ids(n) lowers that threshold to n ids (0:
   back to 2^21), so that a test runs the path at small sizes (the plan
   must be the same); it returns the cuts made without consume since the
   last call. Not thread-safe (a test aid). */
uint64_t dp_debug_capture_cut_ids(uint32_t n);

/* The cuts since the last call that moved the index's post order down
   behind its cut child slots (src/planner/index.c: only where that gives
   a huge page back, as at a million let calls): a test that plans such a
   module sees that path ran. */
uint64_t dp_debug_capture_post_moves(void);

#endif
