/*
 * C checks of a module's sizes (dp_module.sizes): type inference counts
 * the nodes, child slots and deepest path of every function it walks;
 * adding or replacing a function clears them, a copy keeps them; and the
 * planner, which sizes its arrays by them, plans the same with the counts,
 * without them, with counts that fall short (its arrays grow as they did
 * before) and with counts far too large.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/devplan.h"

static int passed, failed;

#define CHECK(cond) check((cond), #cond, __FILE__, __LINE__)
static void check(int ok, const char *what, const char *file, int line) {
  if (ok) passed++;
  else {
    failed++;
    printf("FAIL %s:%d: %s\n", file, line, what);
  }
}

static dp_ctx *C;

static dp_type *vec(void) { return dp_type_tensor(C, DP_FLOAT32, 1, (int64_t[]){4}); }

/* def @main(%x, %y) { let %v1 = add(%x, %y); let %v2 = multiply(%v1, %y);
   ...; %vn } with n lets: 3n + 4 nodes (the global, the function, its two
   parameters, and a let, its variable and its call each), 6n + 3 child slots (a
   function's parameters and body, a let's three, a call's operator and
   arguments), and a path n + 2 deep (the function, the lets, the last
   let's body). */
static dp_module *lets(long n) {
  dp_type *t = vec();
  dp_var *x = dp_var_new("x", t, NULL, DP_NOSPAN), *y = dp_var_new("y", t, NULL, DP_NOSPAN);
  dp_release(t);
  dp_var **vs = malloc(n * sizeof *vs);
  dp_expr **vals = malloc(n * sizeof *vals);
  dp_expr *prev = &x->e;
  for (long i = 0; i < n; i++) {
    vs[i] = dp_var_new("v", NULL, NULL, DP_NOSPAN);
    dp_op *op = dp_op_get(C, i % 2 ? "multiply" : "add");
    vals[i] = (dp_expr *)dp_call_new(&op->e, 2, (dp_expr *[]){prev, &y->e}, NULL, DP_NOSPAN);
    prev = &vs[i]->e;
  }
  dp_expr *body = dp_retain(prev);
  for (long i = n; i-- > 0;) {
    dp_let *l = dp_let_new(vs[i], vals[i], body, DP_NOSPAN);
    dp_release(body);
    dp_release(vals[i]);
    dp_release(vs[i]);
    body = &l->e;
  }
  free(vs);
  free(vals);
  dp_func *f = dp_func_new(2, (dp_var *[]){x, y}, body, NULL, NULL, NULL, DP_NOSPAN);
  dp_global *g = dp_global_new("main", DP_NOSPAN);
  dp_module *m = dp_module_new(C);
  dp_err *err = NULL;
  CHECK(dp_module_add_func(m, g, f, &err) == 0);
  dp_release(g);
  dp_release(f);
  dp_release(body);
  dp_release(x);
  dp_release(y);
  return m;
}

static void test_counted(void) {
  long n = 1000;
  dp_module *m = lets(n);
  dp_err *err = NULL;
  CHECK(m->sizes.nodes == 0 && m->sizes.kids == 0 && m->sizes.depth == 0);
  CHECK(dp_infer_module(m, &err) == 0);
  CHECK(m->sizes.nodes == 3 * n + 4);
  CHECK(m->sizes.kids == 6 * n + 3);
  CHECK(m->sizes.depth == n + 2);
  dp_module *c = dp_module_copy(m);
  CHECK(c && c->sizes.nodes == m->sizes.nodes && c->sizes.kids == m->sizes.kids &&
        c->sizes.depth == m->sizes.depth);
  /* another function: no longer the graphs inference walked */
  CHECK(c && dp_module_set_func(c, "main", m->funcs[0].fn, &err) == 0);
  CHECK(c && c->sizes.nodes == 0 && c->sizes.kids == 0 && c->sizes.depth == 0);
  dp_release(c);
  dp_release(m);
}

static char *planned(dp_module *m, const dp_config *cfg, struct dp_module_sizes sizes) {
  dp_err *err = NULL;
  m->sizes = sizes;
  dp_module *p = dp_plan_devices(m, cfg, &err);
  CHECK(p != NULL);
  if (!p) {
    printf("  %s\n", err->msg);
    dp_err_free(err);
    return NULL;
  }
  char *s = dp_print_module(p, 0, NULL);
  dp_release(p);
  return s;
}

static void test_planned(void) {
  dp_err *err = NULL;
  dp_target *ts[] = {dp_target_parse(C, "llvm", &err), dp_target_parse(C, "cuda", &err)};
  dp_config *cfg = ts[0] && ts[1] ? dp_config_make(C, ts, 2, NULL, DP_DEV_CUDA, &err) : NULL;
  CHECK(cfg != NULL);
  /* (past the few thousand entries where the walk's and capture's stacks
     jump to the counted sizes) */
  dp_module *m = lets(6000);
  CHECK(dp_infer_module(m, &err) == 0);
  struct dp_module_sizes counted = m->sizes;
  char *want = cfg ? planned(m, cfg, counted) : NULL;
  CHECK(want && strstr(want, "on_device"));
  const struct dp_module_sizes other[] = {{0, 0, 0}, {8, 8, 2}, {5000, 100, 4097}, {200000, 400000, 100000}};
  for (int i = 0; want && i < 4; i++) {
    char *got = planned(m, cfg, other[i]);
    CHECK(got && !strcmp(got, want));
    free(got);
  }
  free(want);
  dp_release(m);
  dp_release(cfg);
  dp_release(ts[0]);
  dp_release(ts[1]);
}

void dp_test_sizes(int *npassed, int *nfailed);
void dp_test_sizes(int *npassed, int *nfailed) {
  passed = failed = 0;
  C = dp_ctx_new();
  CHECK(C != NULL && dp_register_builtin_ops(C, NULL) == 0);
  if (C) {
    test_counted();
    test_planned();
    dp_release(C);
  }
  *npassed += passed;
  *nfailed += failed;
}
