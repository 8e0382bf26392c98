/*
 * The text of diagnostics: an expression and its position ("add at 3:5";
 * an annotation a pass inserted, which has none, by what it wraps:
 * "on_device of tanh at 4:8"), a device in short ("cuda", "cpu (memory
 * scope \"a\")"). Conflicts,
 * explanations, capture's errors, the domains API and the verifier all
 * name expressions and devices the same way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"

/* An on_device call with no position of its own (a pass inserted it): the
   annotation is named by the expression it wraps (its first body with a
   position, looking through nested ones), else NULL. */
static const dp_expr *wrapped(const dp_expr *e) {
  const dp_expr *b = e;
  while (b && !b->span.line && b->h.kind == DP_CALL && ((const dp_call *)b)->nargs == 1 &&
         ((const dp_call *)b)->fn->h.kind == DP_OP &&
         strcmp(((const dp_op *)((const dp_call *)b)->fn)->name, "on_device") == 0)
    b = ((const dp_call *)b)->args[0];
  return b != e && b && b->span.line ? b : NULL;
}

dp_span dp__span_of(const dp_expr *e) {
  if (!e) return DP_NOSPAN;
  const dp_expr *w = wrapped(e);
  return w ? w->span : e->span;
}

char *dp__describe(dp_ctx *ctx, const dp_expr *e) {
  char what[200], buf[320];
  if (!e) return dp_strdup("(no expression)");
  const dp_expr *w = wrapped(e);
  if (w) { /* "on_device of tanh at 4:8" */
    char *inner = dp__describe(ctx, w);
    if (!inner) return NULL;
    snprintf(buf, sizeof buf, "on_device of %s", inner);
    free(inner);
    return dp_strdup(buf);
  }
  switch (e->h.kind) {
  case DP_VAR: snprintf(what, sizeof what, "%%%s", ((const dp_var *)e)->name); break;
  case DP_GLOBAL: snprintf(what, sizeof what, "@%s", ((const dp_global *)e)->name); break;
  case DP_CALL: {
    const dp_expr *fn = ((const dp_call *)e)->fn;
    if (fn->h.kind == DP_OP) snprintf(what, sizeof what, "%s", ((const dp_op *)fn)->name);
    else if (fn->h.kind == DP_GLOBAL) snprintf(what, sizeof what, "call of @%s", ((const dp_global *)fn)->name);
    else if (fn->h.kind == DP_VAR) snprintf(what, sizeof what, "call of %%%s", ((const dp_var *)fn)->name);
    else snprintf(what, sizeof what, "call");
    break;
  }
  case DP_FUNC: snprintf(what, sizeof what, "fn"); break;
  default: snprintf(what, sizeof what, "%s", dp_exprkind_name(e->h.kind)); break;
  }
  if (e->span.line)
    snprintf(buf, sizeof buf, "%s at %s%s%u:%u", what,
             e->span.source ? dp_ctx_source_name(ctx, e->span.source) : "",
             e->span.source ? ":" : "", e->span.line, e->span.col);
  else
    snprintf(buf, sizeof buf, "%s", what);
  return dp_strdup(buf);
}

char *dp__vdev_short(const dp_vdev *v) {
  char buf[256];
  if (!v || dp_vdev_is_fully_unconstrained(v)) return dp_strdup("an unconstrained device");
  const char *dt = v->device_type ? dp_device_type_name(v->device_type) : NULL;
  int n = snprintf(buf, sizeof buf, "%s", dt ? dt : (v->device_type ? "?" : "any device"));
  if (v->virtual_device_id > 0)
    n += snprintf(buf + n, sizeof buf - n, ":%d", v->virtual_device_id);
  if (v->memory_scope && v->memory_scope[0])
    snprintf(buf + n, sizeof buf - n, " (memory scope \"%s\")", v->memory_scope);
  return dp_strdup(buf);
}
