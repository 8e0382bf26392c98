/*
 * Match patterns: wildcard, variable binder, constructor and tuple
 * patterns. Immutable and reference counted like expressions; a pattern
 * retains its variable, constructor and sub-patterns.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "devplan/expr.h"

static dp_pattern *new_pat(int kind, uint32_t n, dp_pattern *const *sub, dp_span span) {
  if (n && !sub) return NULL;
  for (uint32_t i = 0; i < n; i++)
    if (!sub[i]) return NULL;
  dp_pattern *p = dp_calloc(1, sizeof *p + n * sizeof(dp_pattern *));
  if (!p) return NULL;
  p->h = (dp_obj){.rc = 1, .type = DP_OBJ_PATTERN, .kind = (uint8_t)kind};
  p->span = span;
  p->n = n;
  for (uint32_t i = 0; i < n; i++) p->sub[i] = dp_retain(sub[i]);
  return p;
}

dp_pattern *dp_pat_wild(dp_span span) { return new_pat(DP_PAT_WILD, 0, NULL, span); }

dp_pattern *dp_pat_var(dp_var *var, dp_span span) {
  if (!var || var->e.h.kind != DP_VAR) return NULL;
  dp_pattern *p = new_pat(DP_PAT_VAR, 0, NULL, span);
  if (p) p->var = dp_retain(var);
  return p;
}

dp_pattern *dp_pat_ctor(dp_ctor *ctor, uint32_t n, dp_pattern *const *sub, dp_span span) {
  if (!ctor || ctor->e.h.kind != DP_CTOR) return NULL;
  dp_pattern *p = new_pat(DP_PAT_CTOR, n, sub, span);
  if (p) p->ctor = dp_retain(ctor);
  return p;
}

dp_pattern *dp_pat_tuple(uint32_t n, dp_pattern *const *sub, dp_span span) {
  return new_pat(DP_PAT_TUPLE, n, sub, span);
}

void dp__pattern_free_fn(dp_obj *o, dp_worklist *wl) {
  dp_pattern *p = (dp_pattern *)o;
  dp_release_deferred(wl, p->var);
  dp_release_deferred(wl, p->ctor);
  for (uint32_t i = 0; i < p->n; i++) dp_release_deferred(wl, p->sub[i]);
  free(p);
}

/* An explicit stack: patterns nest as deep as they are written, and
   generated programs write them deep. */
int dp_pattern_vars(dp_pattern *root, int (*fn)(void *ud, dp_var *v), void *ud) {
  dp_pattern *small[32], **stack = small;
  uint32_t n = 0, cap = 32;
  int rc = 0;
  stack[n++] = root;
  while (n && rc == 0) {
    dp_pattern *p = stack[--n];
    if (p->h.kind == DP_PAT_VAR && p->var) rc = fn(ud, p->var);
    if (rc == 0 && n + p->n > cap) {
      dp_pattern **s = dp_malloc((size_t)(n + p->n) * 2 * sizeof *s);
      if (!s) {
        rc = -1;
        break;
      }
      memcpy(s, stack, n * sizeof *s);
      if (stack != small) free(stack);
      stack = s;
      cap = (n + p->n) * 2;
    }
    for (uint32_t i = p->n; rc == 0 && i-- > 0;) stack[n++] = p->sub[i];
  }
  if (stack != small) free(stack);
  return rc;
}
