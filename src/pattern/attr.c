/*
 * The attribute test of a pattern (`p:has_attr{...}`, TVM's AttrPattern):
 * what the keys are compared with depends on what matched:
 * - an operator: its operator attributes (devplan has one table,
 *   TOpPattern, the operator pattern kind);
 * - a call of an operator with a schema: the call's attributes with the
 *   schema's defaults filled in (devplan drops defaults when it builds a
 *   call; TVM's attribute objects always hold them); a key the operator
 *   does not have never matches;
 * - any other call: the attributes written on it;
 * - a function literal: its attributes;
 * - anything else: never, not even the empty set.
 * Values compare as TVM's MatchRetValue does, numbers by value.
 */
#include <string.h>
#include "internal.h"

static int number(const dp_aval *v, double *out) {
  if (v->kind == DP_AV_INT || v->kind == DP_AV_BOOL) *out = (double)v->u.i;
  else if (v->kind == DP_AV_FLOAT) *out = v->u.f;
  else return 0;
  return 1;
}

static int value_matches(const dp_aval *want, const dp_aval *have) {
  double a, b;
  switch (want->kind) {
  case DP_AV_INT: case DP_AV_FLOAT: case DP_AV_BOOL: /* a bool attribute is an integer in TVM */
    return number(want, &a) && number(have, &b) && a == b;
  case DP_AV_STR: return have->kind == DP_AV_STR && strcmp(want->u.s, have->u.s) == 0;
  case DP_AV_LIST:
    if (have->kind != DP_AV_LIST || have->n != want->n) return 0;
    for (uint32_t i = 0; i < want->n; i++)
      if (!value_matches(&want->u.items[i], &have->u.items[i])) return 0;
    return 1;
  case DP_AV_EXPR:
    return have->kind == DP_AV_EXPR && dp_expr_equal(want->u.expr, have->u.expr, NULL) == 1;
  default:
    return dp_av_equal(want, have);
  }
}

/* Operator attribute tables: TOpPattern. */
static const dp_aval *op_attr(const dp_op *op, const char *key, dp_aval *scratch) {
  if (strcmp(key, "TOpPattern") != 0 || op->pattern == DP_OPP_NONE) return NULL;
  *scratch = dp_av_int(op->pattern);
  return scratch;
}

/* The value a call has for key (schema defaults included), or NULL. */
static const dp_aval *call_attr(const dp_call *c, const char *key) {
  const dp_op *op = c->fn->h.kind == DP_OP ? (const dp_op *)c->fn : NULL;
  if (op && op->fields) return dp_op_attr(op, c->attrs, key);
  return c->attrs ? dp_attrs_get(c->attrs, key) : NULL;
}

int dp__dfp_attrs_hold(const dp_attrs *want, const dp_expr *e) {
  uint32_t n = want ? want->n : 0;
  int kind = e->h.kind;
  if (kind != DP_OP && kind != DP_CALL && kind != DP_FUNC) return 0;
  for (uint32_t i = 0; i < n; i++) {
    const char *key = want->items[i].key;
    dp_aval scratch;
    const dp_aval *have;
    if (kind == DP_OP) have = op_attr((const dp_op *)e, key, &scratch);
    else if (kind == DP_CALL) have = call_attr((const dp_call *)e, key);
    else have = ((const dp_func *)e)->attrs ? dp_attrs_get(((const dp_func *)e)->attrs, key) : NULL;
    if (!have || !value_matches(&want->items[i].val, have)) return 0;
  }
  return 1;
}
