/*
 * The log of what changed the domains after analysis, and its replay.
 *
 * Analysis keeps no proofs (they would be more than half of the domains'
 * memory): when a conflict or an explanation asks for them, explain.c
 * makes new domains over the same index and replays on them analysis and
 * then, in order, what changed the domains since: defaulting, placement
 * by cost's decisions, a script's unify, constrain and default. The
 * planner's state (domains_api.c) keeps that log; each entry is applied
 * the same way the first time and on a replay (dp__log_apply), so the two
 * say the same.
 */
#include <stdlib.h>
#include "planner.h"

int dp__log_add(dp__log *l, dp__op_log op) {
  if (dp_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v) < 0) return -1;
  l->v[l->n++] = op;
  return 0;
}

void dp__log_free(dp__log *l) {
  free(l->v);
  *l = (dp__log){0};
}

int dp__log_apply(dp__domains *d, const dp__op_log *op, const struct dp__placement *pl,
                  dp_err **err) {
  switch (op->op) {
  case LOG_DEFAULT: return dp__default(d, err);
  case LOG_UNIFY:
    return dp__unify(d, dp__dom_of(d, op->a), dp__dom_of(d, op->b), R_USER_UNIFY, op->a, err);
  case LOG_CONSTRAIN: return dp__constrain(d, op->a, op->vdev, R_USER_CONSTRAIN, err);
  case LOG_SET_DEFAULT: return dp__set_default(d, dp__dom_of(d, op->a), op->vdev, R_USER_DEFAULT, op->a, err);
  case LOG_PLACE: return dp__place_replay(d, pl, err);
  default: return 0;
  }
}
