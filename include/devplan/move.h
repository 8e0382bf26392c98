/*
 * Copies where they belong (issue 20): after PlanDevices, copies are
 * counted the way a program pays for them, per execution. A copy inside a
 * function runs once per call, inside an if branch once when the branch
 * runs, inside a recursive function once per iteration; a node shared by
 * several places runs once, at the innermost scope that holds all its uses
 * (where the printer binds it, visit.h).
 *
 * MoveCopies (dp_plan_move_copies) moves the copies of a planned module to
 * where they run least, never more often on any execution path:
 *
 *   out of functions  a copy of a parameter made on every call (at the top
 *                     of the body) goes to the callers, which copy once per
 *                     call (nothing when they hold the value there already:
 *                     a copy of a copy back is the value); a copy of what a
 *                     function returns goes to its callers (the function
 *                     then runs where it computes, device_planner.cc's
 *                     worked example), where a caller that copied it back
 *                     copies nothing; functions other than @main, called
 *                     only directly (globals, let-bound and called function
 *                     literals) change their signature so;
 *   out of loops      a recursive function that copies a parameter it
 *                     passes on unchanged (or a closure a variable it
 *                     captures) before each recursive call is peeled: the
 *                     first iteration copies it and calls a specialisation
 *                     (@loop_cuda) that takes it on the destination, so the
 *                     copy runs once per loop instead of once per
 *                     iteration, and not at all when the loop does not;
 *   cancelled         a copy from D1 to D2 of a copy from D2 to D1 of x is x;
 *   out of branches   copies of one value to one device that every arm of
 *   and merged        an if or match makes, or that one copy dominates,
 *                     become one copy, made where it runs once whenever one
 *                     of them would have; copies only some arms make stay;
 *   dead              a let bound to a copy nobody reads goes.
 *
 * The result passes dp_plan_verify and plans to itself (it is normalised
 * by PlanDevices' TVM rules at the end). Each move is reported with a
 * sentence saying what moved where and why.
 */
#ifndef DEVPLAN_MOVE_H
#define DEVPLAN_MOVE_H

#include "module.h"
#include "plan.h"

enum {
  DP_MOVE_PARAM = 1,   /* a parameter's copy went to the callers */
  DP_MOVE_RESULT,      /* a result's copy went to the callers */
  DP_MOVE_LOOP,        /* a loop invariant's copy runs in the first iteration only */
  DP_MOVE_MERGED,      /* copies of one value became one (out of branches, dominated) */
  DP_MOVE_CANCELLED,   /* a copy of a copy back is the value */
  DP_MOVE_DEAD,        /* a let bound to a copy nobody reads */
  DP_MOVE_CAPTURED,    /* a closure's copy of what it captures went to where it is made */
};

/* One move. */
typedef struct dp_move {
  int kind;            /* DP_MOVE_* */
  char *fn;            /* the function the copy was in (malloc'd) */
  char *to;            /* where it went: a function name, or NULL (malloc'd) */
  char *value;         /* what is copied, as the text names it ("%w", "the result"; malloc'd) */
  char *text;          /* one sentence (malloc'd) */
  dp_span span;        /* the copy's or its value's position (line 0: none) */
  dp_vdev *src, *dst;  /* retained */
  uint32_t count;      /* copies it stands for (merged, cancelled) */
} dp_move;

typedef struct dp_moves {
  uint32_t n, cap;
  dp_move *v;
  uint32_t functions_added;   /* specialisations the loop peeling added */
  uint32_t rounds;            /* rounds of moves made */
} dp_moves;

typedef struct dp_move_opts {
  /* At most this many functions added (loop peeling); 0: the default, 16.
     A loop over which peeling would exceed it keeps its copies. */
  uint32_t max_new_functions;
} dp_move_opts;

/* MoveCopies on a planned module: a new module (NULL + error), the moves
   in *out (may be NULL; dp_moves_clear frees it). o may be NULL. */
dp_module *dp_plan_move_copies(dp_module *planned, const dp_config *cfg, const dp_move_opts *o,
                               dp_moves *out, dp_err **err);
void dp_moves_clear(dp_moves *m);

/* ---- device-polymorphic functions ----

   PlanDevices with every global function specialised per distinct device
   signature its callers give it: each call gets a copy of the function of
   its own, the copies are planned, and those whose planned functions are
   the same (devices included) are one again, so a function called with one
   signature stays one function and one called from two devices becomes
   two, named after the device their result is on (@f and @f_cuda). A
   recursive cycle of functions is copied whole per call from outside it
   (its recursive calls stay in the copy: a recursion that would call
   itself with another signature keeps one, with copies, as without this
   option; specialising it could not end). A function used as a value, or
   @main, is not copied; past the budget of new functions the remaining
   calls share the function as it is. */
typedef struct dp_poly_opts {
  uint32_t max_new_functions;   /* copies made while expanding; 0: the default, 64 */
} dp_poly_opts;

typedef struct dp_poly_report {
  uint32_t specialised;         /* functions planned with more than one signature */
  uint32_t functions_added;     /* functions the specialisations added */
  int64_t copies_before;        /* device_copy calls PlanDevices makes without it (-1: a conflict) */
  uint32_t copies_after;        /* and with it */
} dp_poly_report;

/* PlanDevices (with o, as dp_plan_devices_opts) with device-polymorphic
   functions; rep may be NULL. NULL + error. */
dp_module *dp_plan_polymorphic(dp_module *m, const dp_config *cfg, const dp_plan_opts *o,
                               const dp_poly_opts *po, dp_poly_report *rep, dp_conflicts *all,
                               dp_err **err);

/* ---- recompute instead of copy ----

   In a planned module, a copy of a value cheaper to compute again on the
   destination than to copy there is replaced by that computation: a
   constant; zeros, ones, full; a reshape, expand_dims, squeeze,
   broadcast_to, reshape_like, zeros_like, ones_like or shape_of of what is
   already there (a variable living on the destination, or copied away from
   there) or is itself recomputed; at most 4 operator calls per copy
   (src/planner/recompute.c).
   The recomputation stands where the copy stood. The result is planned by
   TVM's rules again (it plans to itself). */
typedef struct dp_recompute {
  char *value;         /* what was recomputed: "%c", "ones", "a constant" (malloc'd) */
  char *fn;            /* the function (malloc'd) */
  dp_span span;        /* its position */
  dp_vdev *src, *dst;  /* the copy it replaced (retained) */
  uint32_t calls;      /* operator calls computed again */
} dp_recompute;
typedef struct dp_recomputes { uint32_t n, cap; dp_recompute *v; } dp_recomputes;

dp_module *dp_plan_recompute(dp_module *planned, const dp_config *cfg, dp_recomputes *out,
                             dp_err **err);
void dp_recomputes_clear(dp_recomputes *r);
/* Placement by cost's view (dp_place_hooks.recomputable): is value computed
   from nothing (a constant; zeros, ones, full of such), so that a copy of
   it costs nothing once recomputed? */
int dp_recompute_free(dp_expr *value);

#endif
