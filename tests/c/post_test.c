/*
 * C checks of the index's post order (src/planner/index.c, dp__post): the
 * ids dp__post reads back from its byte stream are the order the
 * numbering's walk finished them in, found here again from the child
 * slots alone (a child was numbered where its parent reached it exactly
 * where its id is the next one the walk gave), on modules whose
 * differences take one, two and three bytes (a tuple whose first field is
 * a chain of calls 300,000 deep: its last id, then the tuple's, are that
 * far apart), over two functions, and from a range of them. And the
 * child slots themselves: a call of an operator has none for its callee.
 */
#include <stdio.h>
#include <stdlib.h>
#include "../../src/planner/planner.h"

#define CHECK(cond) do { if (cond) (*passed)++; else { (*failed)++; \
  printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

void dp_test_post(int *passed, int *failed);

/* The post order of function fn's ids from the child slots (the walk
   replayed with a stack of (id, next slot)); n of them written to out. */
static uint32_t replayed(const dp__index *ix, uint32_t fn, uint32_t *out) {
  uint32_t (*st)[2] = malloc((size_t)(ix->fnid[fn + 1] - ix->fnid[fn] + 1) * sizeof *st);
  uint32_t n = 0, sp = 0, next = ix->fnid[fn] + 1;
  if (!st) return 0;
  st[sp][0] = ix->fnid[fn], st[sp][1] = ix->koff[ix->fnid[fn]], sp++;
  while (sp) {
    uint32_t *t = st[sp - 1];
    while (t[1] < ix->koff[t[0] + 1] && ix->kid[t[1]] != next) t[1]++;
    if (t[1] < ix->koff[t[0] + 1]) {
      uint32_t k = ix->kid[t[1]++];
      st[sp][0] = k, st[sp][1] = ix->koff[k], sp++;
      next = k + 1;
      continue;
    }
    out[n++] = t[0];
    sp--;
  }
  free(st);
  return n;
}

/* def @main(%x, %y) { (add(...add(%x, %y)..., %y), %y, multiply(%x, %y)) }
   with depth calls in the chain; def @g(%a) { %a }. */
static dp_module *module(dp_ctx *C, long depth) {
  dp_type *t = dp_type_tensor(C, DP_FLOAT32, 1, (int64_t[]){4});
  dp_var *x = dp_var_new("x", t, NULL, DP_NOSPAN), *y = dp_var_new("y", t, NULL, DP_NOSPAN);
  dp_var *a = dp_var_new("a", t, NULL, DP_NOSPAN);
  dp_release(t);
  dp_op *add = dp_op_get(C, "add"), *mul = dp_op_get(C, "multiply");
  dp_expr *chain = dp_retain(&x->e);
  for (long i = 0; i < depth; i++) {
    dp_expr *c = (dp_expr *)dp_call_new(&add->e, 2, (dp_expr *[]){chain, &y->e}, NULL, DP_NOSPAN);
    dp_release(chain);
    chain = c;
  }
  dp_expr *small = (dp_expr *)dp_call_new(&mul->e, 2, (dp_expr *[]){&x->e, &y->e}, NULL, DP_NOSPAN);
  dp_expr *body = (dp_expr *)dp_tuple_new(3, (dp_expr *[]){chain, &y->e, small}, DP_NOSPAN);
  dp_func *f = dp_func_new(2, (dp_var *[]){x, y}, body, NULL, NULL, NULL, DP_NOSPAN);
  dp_func *g = dp_func_new(1, (dp_var *[]){a}, &a->e, NULL, NULL, NULL, DP_NOSPAN);
  dp_global *gm = dp_global_new("main", DP_NOSPAN), *gg = dp_global_new("g", DP_NOSPAN);
  dp_module *m = dp_module_new(C);
  dp_err *err = NULL;
  if (m && (dp_module_add_func(m, gm, f, &err) < 0 || dp_module_add_func(m, gg, g, &err) < 0)) {
    dp_err_free(err);
    dp_release(m);
    m = NULL;
  }
  dp_release(gm), dp_release(gg), dp_release(f), dp_release(g);
  dp_release(body), dp_release(small), dp_release(chain);
  dp_release(x), dp_release(y), dp_release(a);
  return m;
}

/* Whether dp__post over functions [fn, end) gives want's n ids, then
   DP__NONE_ID. */
static int reads(const dp__index *ix, uint32_t fn, uint32_t end, const uint32_t *want, uint32_t n) {
  dp__post p;
  dp__post_start(&p, ix, fn, end);
  for (uint32_t i = 0; i < n; i++)
    if (dp__post_next(&p) != want[i]) return 0;
  return dp__post_next(&p) == DP__NONE_ID && dp__post_next(&p) == DP__NONE_ID;
}

void dp_test_post(int *passed, int *failed) {
  dp_ctx *C = dp_ctx_new();
  dp_err *err = NULL;
  CHECK(C != NULL && dp_register_builtin_ops(C, NULL) == 0);
  if (!C) return;
  dp_target *ts[] = {dp_target_parse(C, "llvm", &err), dp_target_parse(C, "cuda", &err)};
  dp_config *cfg = ts[0] && ts[1] ? dp_config_make(C, ts, 2, NULL, DP_DEV_CUDA, &err) : NULL;
  CHECK(cfg != NULL);
  const long depths[] = {3, 100, 10000, 300000};
  for (int d = 0; cfg && d < 4; d++) {
    dp_module *m = module(C, depths[d]);
    CHECK(m != NULL);
    dp__index *ix = m ? dp__index_new(m, cfg, &err) : NULL;
    CHECK(ix != NULL && ix->nfn == 2);
    if (ix) { /* no slot for an operator's callee: a call of add has two (its arguments) */
      CHECK(ix->nkid == 10 + 2 * (uint32_t)depths[d]);
      uint32_t tup = dp__kid(ix, 0, 2), sm = tup != DP__NONE_ID ? dp__kid(ix, tup, 2) : DP__NONE_ID;
      CHECK(sm != DP__NONE_ID && dp__kid(ix, sm, 0) == DP__NONE_ID && dp__kid(ix, sm, 1) == 1 &&
            dp__kid(ix, sm, 2) == 2 && dp__slot(ix, sm, 1) == 2 && dp__kid(ix, sm, 3) == DP__NONE_ID);
    }
    uint32_t *want = ix ? malloc((size_t)ix->n * sizeof *want) : NULL;
    if (ix && want) {
      uint32_t n0 = replayed(ix, 0, want), n1 = replayed(ix, 1, want + n0);
      CHECK(n0 == ix->fnid[1] && n1 == ix->n - ix->fnid[1]);
      CHECK(want[n0 - 1] == 0);                   /* the root last */
      CHECK(reads(ix, 0, 2, want, ix->n));        /* both functions */
      CHECK(reads(ix, 0, 1, want, n0));           /* each */
      CHECK(reads(ix, 1, 2, want + n0, n1));
      CHECK(reads(ix, 2, 2, want, 0));            /* none */
      /* the differences' widths: a byte an id where the chain is short;
         past 2^20 / 2 apart (zigzag), three bytes */
      if (depths[d] == 300000) CHECK(ix->npost >= ix->n + 4 && ix->npost < ix->n + 16);
      if (depths[d] == 3) CHECK(ix->npost == ix->n);
    }
    free(want);
    dp__index_free(ix);
    dp_release(m);
  }
  dp_release(cfg);
  dp_release(ts[0]);
  dp_release(ts[1]);
  dp_release(C);
}
