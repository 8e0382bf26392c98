/*
 * The variables a match pattern binds, in order, with an explicit stack:
 * patterns nest as deep as they are written, and generated programs write
 * them deep. Analysis and the verifier each bind them to the matched data.
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"

int dp__pattern_vars(dp_pattern *root, int (*fn)(void *ud, dp_var *v), void *ud) {
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
