/*
 * C checks of the IR core: types, attributes, every expression kind,
 * modules, traversals, and million-deep let and call chains (build, visit,
 * rewrite, free). Run under valgrind with DEVPLAN_QUICK=1 (smaller chains).
 * Prints "N passed, N failed" last; exits 1 on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "devplan/devplan.h"

static int passed, failed;

#define CHECK(cond) check((cond), #cond, __FILE__, __LINE__)
static void check(int ok, const char *what, const char *file, int line) {
  if (ok) {
    passed++;
  } else {
    failed++;
    printf("FAIL %s:%d: %s\n", file, line, what);
  }
}

/* Checks a malloc'd string against the expected text and frees it. */
#define CHECK_STR(got, want) check_str((got), (want), __FILE__, __LINE__)
static void check_str(char *got, const char *want, const char *file, int line) {
  int ok = got && strcmp(got, want) == 0;
  if (!ok) printf("  got \"%s\", want \"%s\"\n", got ? got : "(null)", want);
  check(ok, want, file, line);
  free(got);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---------------- types ---------------- */

static void test_dtypes(void) {
  char buf[24];
  CHECK(dp_dtype_parse("float32") == DP_FLOAT32);
  CHECK(dp_dtype_parse("int64") == DP_INT64);
  CHECK(dp_dtype_parse("bool") == DP_BOOL);
  CHECK(dp_dtype_parse("uint8") == DP_DTYPE(DP_DT_UINT, 8, 1));
  CHECK(dp_dtype_parse("float32x4") == DP_DTYPE(DP_DT_FLOAT, 32, 4));
  CHECK(dp_dtype_parse("bfloat16") == DP_DTYPE(DP_DT_BFLOAT, 16, 1));
  CHECK(dp_dtype_parse("float") == 0 || dp_dtype_parse("float") == DP_FLOAT32);
  CHECK(dp_dtype_parse("floaty") == 0);
  CHECK(dp_dtype_parse("int65") == 0);
  CHECK(dp_dtype_parse("") == 0);
  CHECK(dp_dtype_parse(NULL) == 0);
  CHECK(strcmp(dp_dtype_name(DP_FLOAT32, buf), "float32") == 0);
  CHECK(strcmp(dp_dtype_name(DP_BOOL, buf), "bool") == 0);
  CHECK(strcmp(dp_dtype_name(DP_DTYPE(DP_DT_FLOAT, 16, 4), buf), "float16x4") == 0);
  CHECK(strcmp(dp_dtype_name(DP_DTYPE(DP_DT_UINT, 8, 1), buf), "uint8") == 0);
  CHECK(dp_dtype_bytes(DP_FLOAT32) == 4);
  CHECK(dp_dtype_bytes(DP_BOOL) == 1);
  CHECK(dp_dtype_bytes(DP_INT64) == 8);
  CHECK(dp_dtype_bytes(DP_DTYPE(DP_DT_FLOAT, 32, 4)) == 16);
}

static void test_types(dp_ctx *ctx) {
  int64_t d57[] = {5, 7}, dq[] = {-1, 3}, d5[] = {5};
  dp_type *a = dp_type_tensor(ctx, DP_FLOAT32, 2, d57);
  dp_type *b = dp_type_tensor(ctx, DP_FLOAT32, 2, d57);
  dp_type *s = dp_type_tensor(ctx, DP_INT64, 0, NULL);
  dp_type *q = dp_type_tensor(ctx, DP_FLOAT32, 2, dq);
  dp_type *v1 = dp_type_tensor(ctx, DP_FLOAT32, 1, d5);
  CHECK(a && a == b);
  CHECK(a != q);
  CHECK(a->h.rc == 2);
  CHECK_STR(dp_type_str(a), "Tensor[(5, 7), float32]");
  CHECK_STR(dp_type_str(s), "int64");
  CHECK_STR(dp_type_str(q), "Tensor[(?, 3), float32]");
  CHECK_STR(dp_type_str(v1), "Tensor[(5), float32]");
  CHECK(dp_type_tensor(ctx, 0, 0, NULL) == NULL);

  dp_type *f2[] = {a, s};
  dp_type *t = dp_type_tuple(ctx, 2, f2), *t2 = dp_type_tuple(ctx, 2, f2);
  dp_type *t1 = dp_type_tuple(ctx, 1, f2), *t0 = dp_type_tuple(ctx, 0, NULL);
  CHECK(t && t == t2);
  CHECK_STR(dp_type_str(t), "(Tensor[(5, 7), float32], int64)");
  CHECK_STR(dp_type_str(t1), "(Tensor[(5, 7), float32],)");
  CHECK_STR(dp_type_str(t0), "()");

  dp_type *fn = dp_type_func(ctx, 0, NULL, 2, f2, t);
  dp_type *fn0 = dp_type_func(ctx, 0, NULL, 0, NULL, s);
  CHECK(fn && fn == dp_type_func(ctx, 0, NULL, 2, f2, t));
  dp_release(fn); /* the second reference */
  CHECK_STR(dp_type_str(fn), "fn (Tensor[(5, 7), float32], int64) -> (Tensor[(5, 7), float32], int64)");
  CHECK_STR(dp_type_str(fn0), "fn () -> int64");

  dp_type *va = dp_type_var_new(ctx, "A"), *va2 = dp_type_var_new(ctx, "A");
  CHECK(va && va2 && va != va2);
  dp_type *list = dp_type_adt(ctx, "List", 1, &va);
  CHECK(list && list == dp_type_adt(ctx, "List", 1, &va));
  dp_release(list);
  dp_type *list2 = dp_type_adt(ctx, "List", 1, &va2);
  CHECK(list2 && list != list2); /* distinct type variables: distinct types */
  dp_release(list2);
  CHECK_STR(dp_type_str(list), "List[A]");
  dp_type *poly = dp_type_func(ctx, 1, &va, 1, &va, list);
  CHECK_STR(dp_type_str(poly), "fn [A](A) -> List[A]");
  CHECK(dp_type_func(ctx, 1, &a, 1, &va, list) == NULL); /* type param must be a var */
  dp_type *r = dp_type_ref(ctx, a), *st = dp_type_storage(ctx), *st2 = dp_type_storage(ctx);
  CHECK(st == st2);
  CHECK_STR(dp_type_str(r), "ref(Tensor[(5, 7), float32])");
  CHECK_STR(dp_type_str(st), "Storage[]");

  /* Deeply nested type: printing must not recurse on the C stack. */
  int depth = getenv("DEVPLAN_QUICK") ? 20000 : 200000;
  dp_type *deep = dp_retain(s);
  for (int i = 0; i < depth; i++) {
    dp_type *n = dp_type_tuple(ctx, 1, &deep);
    dp_release(deep);
    deep = n;
  }
  char *ds = dp_type_str(deep);
  CHECK(ds && strlen(ds) == (size_t)depth * 3 + 5);
  free(ds);
  dp_release(deep);

  dp_type *all[] = {a, b, s, q, v1, t, t2, t1, t0, fn, fn0, va, va2, list, poly, r, st, st2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) dp_release(all[i]);
}

/* ---------------- attributes ---------------- */

static void test_attrs(dp_ctx *ctx) {
  dp_aval items[] = {dp_av_int(1), dp_av_int(2)};
  dp_aval *list = malloc(sizeof items);
  memcpy(list, items, sizeof items);
  dp_attr kv[] = {
    {"padding", dp_av_list(2, list)}, {"eps", dp_av_float(2e-05, DP_FLOAT32)},
    {"layout", dp_av_string("NC\"HW")}, {"flag", dp_av_bool(1)}, {"none", dp_av_none()},
    {"x", dp_av_float(1.0, 0)}, {"big", dp_av_int(-3)},
  };
  dp_err *err = NULL;
  dp_attrs *a = dp_attrs_make(7, kv, &err);
  CHECK(a && !err);
  CHECK(dp_attrs_get(a, "eps") && dp_attrs_get(a, "eps")->u.f == 2e-05);
  CHECK(dp_attrs_get(a, "nope") == NULL);
  CHECK_STR(dp_av_str(dp_attrs_get(a, "padding")), "[1, 2]");
  CHECK_STR(dp_av_str(dp_attrs_get(a, "eps")), "2e-05f");
  CHECK_STR(dp_av_str(dp_attrs_get(a, "layout")), "\"NC\\\"HW\"");
  CHECK_STR(dp_av_str(dp_attrs_get(a, "flag")), "True");
  CHECK_STR(dp_av_str(dp_attrs_get(a, "none")), "None");
  CHECK_STR(dp_av_str(dp_attrs_get(a, "x")), "1.0");
  CHECK_STR(dp_av_str(dp_attrs_get(a, "big")), "-3");
  dp_aval c = dp_av_copy(dp_attrs_get(a, "padding"));
  CHECK(dp_av_equal(&c, dp_attrs_get(a, "padding")));
  CHECK(!dp_av_equal(&c, dp_attrs_get(a, "eps")));
  dp_av_clear(&c);

  /* duplicate keys: error, values consumed */
  dp_attr dup[] = {{"k", dp_av_string("a")}, {"k", dp_av_string("b")}};
  CHECK(dp_attrs_make(2, dup, &err) == NULL && err && err->code == DP_ERR_VALUE);
  dp_err_free(err);

  /* a constant scalar as a value */
  float one = 1.5f;
  dp_const *k = dp_const_new(DP_FLOAT32, 0, NULL, &one, DP_NOSPAN, NULL);
  dp_attr ek[] = {{"c", dp_av_expr(&k->e)}};
  dp_release(k);
  dp_attrs *ea = dp_attrs_make(1, ek, NULL);
  CHECK_STR(dp_av_str(dp_attrs_get(ea, "c")), "1.5f");
  dp_release(ea);
  dp_release(a);
  (void)ctx;
}

/* ---------------- expressions ---------------- */

static dp_span sp(uint32_t line) { return (dp_span){1, line, 2}; }

static void test_exprs(dp_ctx *ctx) {
  int64_t d57[] = {5, 7};
  dp_type *tt = dp_type_tensor(ctx, DP_FLOAT32, 2, d57);
  dp_var *x = dp_var_new("x", tt, NULL, sp(1)), *y = dp_var_new("y", NULL, NULL, sp(2));
  CHECK(x && strcmp(x->name, "x") == 0 && dp_var_annot(x) == tt && x->e.span.line == 1);
  CHECK(strcmp(dp_exprkind_name(x->e.h.kind), "var") == 0);
  dp_global *g = dp_global_new("f", DP_NOSPAN);
  CHECK(g && strcmp(g->name, "f") == 0);

  float data[35];
  for (int i = 0; i < 35; i++) data[i] = (float)i;
  dp_err *err = NULL;
  dp_const *c = dp_const_new(DP_FLOAT32, 2, d57, data, DP_NOSPAN, &err);
  CHECK(c && c->nbytes == 140 && ((float *)c->data)[34] == 34.0f && c->shape[1] == 7);
  int64_t bad[] = {-2};
  CHECK(dp_const_new(DP_FLOAT32, 1, bad, NULL, DP_NOSPAN, &err) == NULL && err);
  dp_err_free(err);

  dp_expr *args[] = {&x->e, &y->e};
  dp_call *call = dp_call_new(&g->e, 2, args, NULL, sp(3));
  CHECK(call && sizeof(dp_call) + 2 * sizeof(dp_expr *) < 100);
  CHECK(dp_expr_nchildren(&call->e) == 3 && dp_expr_child(&call->e, 0) == &g->e &&
        dp_expr_child(&call->e, 2) == &y->e && dp_expr_child(&call->e, 3) == NULL);
  CHECK(dp_call_new(NULL, 0, NULL, NULL, DP_NOSPAN) == NULL);

  dp_var *params[] = {x, y};
  dp_func *fn = dp_func_new(2, params, &call->e, tt, NULL, NULL, sp(4));
  CHECK(fn && dp_expr_nchildren(&fn->e) == 3 && dp_expr_child(&fn->e, 1) == &y->e &&
        dp_expr_child(&fn->e, 2) == &call->e);
  dp_var *z = dp_var_new("z", NULL, NULL, DP_NOSPAN);
  dp_let *let = dp_let_new(z, &call->e, &z->e, DP_NOSPAN);
  CHECK(let && dp_expr_child(&let->e, 0) == &z->e && dp_expr_child(&let->e, 2) == &z->e);
  CHECK(dp_let_new((dp_var *)g, &call->e, &z->e, DP_NOSPAN) == NULL);
  dp_tuple *tup = dp_tuple_new(2, args, DP_NOSPAN);
  dp_proj *proj = dp_proj_new(&tup->e, 1, DP_NOSPAN);
  CHECK(tup && proj && proj->index == 1 && dp_expr_child(&proj->e, 0) == &tup->e);
  dp_if *ife = dp_if_new(&x->e, &y->e, &c->e, DP_NOSPAN);
  CHECK(ife && dp_expr_child(&ife->e, 2) == &c->e);
  dp_ref_create *rn = dp_ref_create_new(&x->e, DP_NOSPAN);
  dp_ref_read *rr = dp_ref_read_new(&rn->e, DP_NOSPAN);
  dp_ref_write *rw = dp_ref_write_new(&rn->e, &y->e, DP_NOSPAN);
  CHECK(rn && rr && rw && dp_expr_nchildren(&rw->e) == 2 &&
        strcmp(dp_exprkind_name(rw->e.h.kind), "ref_write") == 0);

  /* ADT, constructor, match */
  dp_type *va = dp_type_var_new(ctx, "A");
  dp_type *lista = dp_type_adt(ctx, "List", 1, &va);
  dp_type *cons_in[] = {va, lista};
  dp_ctor *cons = dp_ctor_new("Cons", "List", 0, 1, &va, 2, cons_in, DP_NOSPAN);
  dp_ctor *nil = dp_ctor_new("Nil", "List", 1, 1, &va, 0, NULL, DP_NOSPAN);
  CHECK(cons && nil && strcmp(cons->adt_name, "List") == 0 && cons->items[2] == lista);
  dp_var *h = dp_var_new("h", NULL, NULL, DP_NOSPAN), *tl = dp_var_new("t", NULL, NULL, DP_NOSPAN);
  dp_pattern *ph = dp_pat_var(h, DP_NOSPAN), *pt = dp_pat_var(tl, DP_NOSPAN);
  dp_pattern *subs[] = {ph, pt};
  dp_pattern *pcons = dp_pat_ctor(cons, 2, subs, DP_NOSPAN);
  dp_pattern *pnil = dp_pat_ctor(nil, 0, NULL, DP_NOSPAN), *pw = dp_pat_wild(DP_NOSPAN);
  dp_pattern *ptup = dp_pat_tuple(2, subs, DP_NOSPAN);
  CHECK(pcons && pnil && pw && ptup && pcons->n == 2);
  dp_clause cl[] = {{pcons, &h->e}, {pnil, &y->e}};
  dp_match *m = dp_match_new(&x->e, 2, cl, 0, DP_NOSPAN);
  CHECK(m && !m->complete && dp_expr_nchildren(&m->e) == 3 && dp_expr_child(&m->e, 1) == &h->e);

  /* free vars: h and t are bound by the pattern, x by nothing */
  uint32_t nfv = 0;
  dp_var **fv = dp_free_vars(&m->e, &nfv);
  CHECK(fv && nfv == 2 && fv[0] == x && fv[1] == y);
  free(fv);
  fv = dp_free_vars(&fn->e, &nfv);
  CHECK(fv && nfv == 0);
  free(fv);
  fv = dp_free_vars(&let->e, &nfv);
  CHECK(fv && nfv == 2 && fv[0] == x && fv[1] == y);
  free(fv);

  /* with_children: identical kids give e back; changed kids keep attrs and span */
  dp_expr *kids[] = {&g->e, &x->e, &y->e};
  dp_expr_set_type(&call->e, tt);
  CHECK(call->e.type == tt && tt->h.rc >= 2);
  dp_expr *same = dp_expr_with_children(&call->e, kids);
  CHECK(same == &call->e && same->type == tt);
  dp_release(same);
  kids[2] = &c->e;
  dp_expr *changed = dp_expr_with_children(&call->e, kids);
  CHECK(changed && changed != &call->e && changed->span.line == 3 &&
        ((dp_call *)changed)->args[1] == &c->e && changed->type == NULL);
  dp_release(changed);
  dp_expr *mk[] = {&y->e, &y->e, &x->e};
  dp_expr *m2 = dp_expr_with_children(&m->e, mk);
  CHECK(m2 && ((dp_match *)m2)->clauses[0].pat == pcons && ((dp_match *)m2)->data == &y->e);
  dp_release(m2);
  dp_expr *lk[] = {&call->e, &x->e, &x->e};
  CHECK(dp_expr_with_children(&let->e, lk) == NULL); /* var slot must hold a var */

  dp_typedef *td = dp_typedef_new("List", 1, &va, 2, (dp_ctor *[]){cons, nil}, DP_NOSPAN);
  CHECK(td && td->nctors == 2 && strcmp(td->name, "List") == 0);

  void *objs[] = {tt, x, y, g, c, call, fn, z, let, tup, proj, ife, rn, rr, rw, va, lista, cons,
                  nil, h, tl, ph, pt, pcons, pnil, pw, ptup, m, td};
  for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) dp_release(objs[i]);
}

/* ---------------- operator calls ---------------- */

static void test_op_calls(void) {
  dp_ctx *ctx = dp_ctx_new();
  CHECK(ctx && dp_op_count(ctx) == 0); /* a context is empty: operators are a layer above */
  CHECK(dp_register_builtin_ops(ctx, NULL) == 0 && dp_op_count(ctx) > 0);
  dp_op *neg = dp_op_get(ctx, "negative");
  CHECK(neg && neg->e.h.kind == DP_OP);
  if (!neg) {
    dp_release(ctx);
    return;
  }
  dp_var *x = dp_var_new("x", NULL, NULL, DP_NOSPAN);
  dp_vdev *vd = dp_vdev_make(ctx, DP_DEV_CUDA, 0, NULL, "global", NULL);
  dp_attr kv[] = {{"virtual_device", dp_av_vdev(vd)}};
  dp_attrs *attrs = dp_attrs_make(1, kv, NULL);
  CHECK_STR(dp_av_str(dp_attrs_get(attrs, "virtual_device")),
            "VirtualDevice(device_type=cuda, virtual_device_id=0, memory_scope=\"global\")");
  dp_expr *arg = &x->e;
  dp_call *c = dp_call_new(&neg->e, 1, &arg, attrs, DP_NOSPAN);
  CHECK(c && c->attrs == attrs && dp_is_op_call(&c->e, "negative") &&
        !dp_is_op_call(&c->e, "add") && !dp_is_op_call(&x->e, "negative"));
  dp_release(attrs);
  dp_release(vd);
  dp_release(c); /* its attrs held the vdev, which holds the context */
  /* A call outlives the context: the op is freed with the call. */
  c = dp_call_new(&neg->e, 1, &arg, NULL, DP_NOSPAN);
  dp_release(x);
  dp_release(ctx);
  CHECK(c && ((dp_op *)c->fn)->ctx == NULL);
  dp_release(c);
}

/* ---------------- modules ---------------- */

static void test_modules(dp_ctx *ctx) {
  dp_module *m = dp_module_new(ctx);
  dp_var *x = dp_var_new("x", NULL, NULL, DP_NOSPAN);
  dp_func *f = dp_func_new(1, &x, &x->e, NULL, NULL, NULL, DP_NOSPAN);
  dp_func *f2 = dp_func_new(0, NULL, &x->e, NULL, NULL, NULL, DP_NOSPAN);
  dp_err *err = NULL;
  char name[16];
  for (int i = 0; i < 10; i++) {
    snprintf(name, sizeof name, "f%d", i);
    dp_global *g = dp_global_new(name, DP_NOSPAN);
    CHECK(dp_module_add_func(m, g, f, &err) == 0);
    dp_release(g);
  }
  dp_global *g3 = dp_global_new("f3", DP_NOSPAN);
  CHECK(dp_module_add_func(m, g3, f, &err) < 0 && err && err->code == DP_ERR_NAME);
  dp_err_free(err);
  err = NULL;
  CHECK(m->nfuncs == 10 && strcmp(m->funcs[9].global->name, "f9") == 0);
  CHECK(dp_module_func(m, "f3") == f && dp_module_global(m, "f3") != g3);
  dp_module *c = dp_module_copy(m);
  CHECK(c && c->nfuncs == 10 && dp_module_set_func(c, "f3", f2, NULL) == 0);
  CHECK(dp_module_func(c, "f3") == f2 && dp_module_func(m, "f3") == f);
  CHECK(dp_module_set_func(c, "nope", f2, &err) < 0 && err);
  dp_err_free(err);
  err = NULL;

  int64_t d[] = {128, 128};
  dp_type *t = dp_type_tensor(ctx, DP_FLOAT32, 2, d);
  dp_buffer args[] = {{t, "scopeA"}, {t, NULL}};
  dp_primfn *pf = dp_primfn_new("gem", 2, args, (dp_buffer){t, "scopeB"}, DP_NOSPAN);
  CHECK(pf && strcmp(pf->args[0].scope, "scopeA") == 0 && strcmp(pf->args[1].scope, "") == 0 &&
        strcmp(pf->result.scope, "scopeB") == 0);
  CHECK(dp_module_add_primfn(m, pf, NULL) == 0 && dp_module_primfn(m, "gem") == pf);
  dp_primfn *pf2 = dp_primfn_new("gem", 0, NULL, (dp_buffer){t, ""}, DP_NOSPAN);
  CHECK(dp_module_add_primfn(m, pf2, &err) < 0 && err);
  dp_err_free(err);
  err = NULL;
  CHECK(dp_module_set_primfn(m, pf2, NULL) == 0 && dp_module_primfn(m, "gem") == pf2);
  dp_global *gg = dp_global_new("gem", DP_NOSPAN);
  CHECK(dp_module_add_func(m, gg, f, NULL) < 0); /* @gem is a primfn */

  dp_type *va = dp_type_var_new(ctx, "A");
  dp_ctor *nil = dp_ctor_new("Nil", "List", 0, 1, &va, 0, NULL, DP_NOSPAN);
  dp_typedef *td = dp_typedef_new("List", 1, &va, 1, &nil, DP_NOSPAN);
  CHECK(dp_module_add_typedef(m, td, NULL) == 0 && dp_module_typedef(m, "List") == td &&
        dp_module_ctor(m, "Nil") == nil);
  CHECK(dp_module_add_typedef(m, td, NULL) < 0);

  void *objs[] = {m, c, x, f, f2, g3, t, pf, pf2, gg, va, nil, td};
  for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) dp_release(objs[i]);
}

/* ---------------- traversals ---------------- */

typedef struct counter {
  int pre, post, stop_at;
  dp_expr *order[16];
} counter;

static int count_pre(void *ud, dp_expr *e) {
  counter *c = ud;
  c->pre++;
  return 1;
}

static int count_post(void *ud, dp_expr *e) {
  counter *c = ud;
  if (c->post < 16) c->order[c->post] = e;
  c->post++;
  return c->stop_at && c->post >= c->stop_at ? -1 : 0;
}

/* Rewrites every var named "x" to a fixed replacement; fails on "boom". */
typedef struct renamer {
  dp_var *to;
  int posts;
} renamer;

static dp_expr *rename_post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  renamer *r = ud;
  r->posts++;
  if (orig->h.kind == DP_VAR && strcmp(((dp_var *)orig)->name, "x") == 0)
    return dp_retain(&r->to->e);
  if (orig->h.kind == DP_GLOBAL && strcmp(((dp_global *)orig)->name, "boom") == 0) {
    *err = dp_err_new(DP_ERR_CALLBACK, orig->span, "boom");
    return NULL;
  }
  return dp_retain(rebuilt);
}

static dp_expr *skip_tuples_pre(void *ud, dp_expr *orig, dp_err **err) {
  return orig->h.kind == DP_TUPLE ? dp_retain(orig) : NULL;
}

static void test_traversals(dp_ctx *ctx) {
  dp_var *x = dp_var_new("x", NULL, NULL, DP_NOSPAN), *w = dp_var_new("w", NULL, NULL, DP_NOSPAN);
  dp_global *g = dp_global_new("g", DP_NOSPAN);
  dp_expr *a1[] = {&x->e};
  dp_call *shared = dp_call_new(&g->e, 1, a1, NULL, DP_NOSPAN);      /* g(x) */
  dp_expr *a2[] = {&shared->e, &shared->e};
  dp_tuple *top = dp_tuple_new(2, a2, DP_NOSPAN);                   /* (g(x), g(x)) */

  counter c = {0};
  dp_visitor v = {count_pre, count_post, &c};
  CHECK(dp_visit(&top->e, &v) == 0);
  CHECK(c.pre == 4 && c.post == 4); /* g, x, g(x), tuple: the shared call once */
  CHECK(c.order[0] == &g->e && c.order[1] == &x->e && c.order[2] == &shared->e &&
        c.order[3] == &top->e);
  counter stop = {0, 0, 2, {0}};
  dp_visitor vs = {count_pre, count_post, &stop};
  CHECK(dp_visit(&top->e, &vs) == -1 && stop.post == 2);

  renamer r = {w, 0};
  dp_rewriter rw = {NULL, rename_post, &r};
  dp_err *err = NULL;
  dp_expr *out = dp_rewrite(&top->e, &rw, &err);
  CHECK(out && !err && out != &top->e && r.posts == 4);
  dp_tuple *ot = (dp_tuple *)out;
  CHECK(ot->fields[0] == ot->fields[1]); /* sharing kept */
  CHECK(((dp_call *)ot->fields[0])->args[0] == &w->e && ((dp_call *)ot->fields[0])->fn == &g->e);
  dp_release(out);

  /* nothing to change: the same node comes back */
  renamer r2 = {x, 0};
  dp_rewriter rw2 = {NULL, rename_post, &r2};
  out = dp_rewrite(&top->e, &rw2, NULL);
  CHECK(out == &top->e);
  dp_release(out);
  out = dp_rewrite(&top->e, NULL, NULL);
  CHECK(out == &top->e);
  dp_release(out);

  /* pre replaces (and skips) tuples */
  dp_rewriter rw3 = {skip_tuples_pre, rename_post, &r};
  r.posts = 0;
  out = dp_rewrite(&top->e, &rw3, NULL);
  CHECK(out == &top->e && r.posts == 0);
  dp_release(out);

  /* a failing callback stops the rewrite with its error, nothing leaked */
  dp_global *boom = dp_global_new("boom", DP_NOSPAN);
  dp_call *bc = dp_call_new(&boom->e, 2, a2, NULL, DP_NOSPAN);
  out = dp_rewrite(&bc->e, &rw, &err);
  CHECK(out == NULL && err && err->code == DP_ERR_CALLBACK && strcmp(err->msg, "boom") == 0);
  dp_err_free(err);

  /* match binders follow the renaming of their uses:
     match (%w) { Cons(%x, _) => g(%x) }  ->  match (%w) { Cons(%w, _) => g(%w) } */
  dp_type *va = dp_type_var_new(ctx, "A");
  dp_ctor *cons = dp_ctor_new("Cons", "List", 0, 1, &va, 2, (dp_type *[]){va, va}, DP_NOSPAN);
  dp_pattern *px = dp_pat_var(x, DP_NOSPAN), *pw = dp_pat_wild(DP_NOSPAN);
  dp_pattern *pc = dp_pat_ctor(cons, 2, (dp_pattern *[]){px, pw}, DP_NOSPAN);
  dp_clause cl = {pc, &shared->e};
  dp_match *m = dp_match_new(&w->e, 1, &cl, 1, DP_NOSPAN);
  out = dp_rewrite(&m->e, &rw, NULL);
  dp_match *om = (dp_match *)out;
  CHECK(out && out != &m->e && om->clauses[0].pat != pc && om->clauses[0].pat->sub[0]->var == w &&
        om->clauses[0].pat->sub[1] == pw && om->clauses[0].pat->ctor == cons &&
        ((dp_call *)om->clauses[0].rhs)->args[0] == &w->e);
  CHECK(pc->sub[0]->var == x); /* the input is untouched */
  dp_release(out);

  void *objs[] = {x, w, g, shared, top, boom, bc, va, cons, px, pw, pc, m};
  for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) dp_release(objs[i]);
}

/* ---------------- million-deep chains ---------------- */

static int count_only(void *ud, dp_expr *e) {
  (*(long *)ud)++;
  return 0;
}

/* Renames the global @f to @g (shared: done once, memoized). */
static dp_expr *retarget_post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  if (orig->h.kind == DP_GLOBAL) return dp_retain(ud);
  return dp_retain(rebuilt);
}

static void test_deep(long n) {
  dp_global *f = dp_global_new("f", DP_NOSPAN), *g2 = dp_global_new("g", DP_NOSPAN);
  dp_var *x = dp_var_new("x", NULL, NULL, DP_NOSPAN);
  double t0 = now();

  /* call chain: f(f(...f(x))) */
  dp_expr *e = dp_retain(&x->e);
  for (long i = 0; i < n && e; i++) {
    dp_expr *c = (dp_expr *)dp_call_new(&f->e, 1, &e, NULL, DP_NOSPAN);
    dp_release(e);
    e = c;
  }
  CHECK(e != NULL);
  double t1 = now();
  long count = 0;
  dp_visitor v = {NULL, count_only, &count};
  CHECK(dp_visit(e, &v) == 0 && count == n + 2);
  double t2 = now();
  dp_rewriter rw = {NULL, retarget_post, g2};
  dp_expr *r = dp_rewrite(e, &rw, NULL);
  CHECK(r && r != e && ((dp_call *)r)->fn == &g2->e);
  double t3 = now();
  uint32_t nfv = 0;
  dp_var **fv = dp_free_vars(r, &nfv);
  CHECK(fv && nfv == 1 && fv[0] == x);
  free(fv);
  dp_release(r);
  dp_release(e);
  double t4 = now();
  printf("call chain %ld: build %.3fs visit %.3fs rewrite %.3fs free %.3fs\n", n, t1 - t0,
         t2 - t1, t3 - t2, t4 - t3);

  /* let chain: let %v1 = f(%x); let %v2 = f(%v1); ... %vn */
  dp_var **vars = malloc((size_t)(n + 1) * sizeof *vars);
  vars[0] = dp_retain(x);
  for (long i = 1; i <= n; i++) vars[i] = dp_var_new("v", NULL, NULL, DP_NOSPAN);
  e = dp_retain(&vars[n]->e);
  for (long i = n; i >= 1 && e; i--) {
    dp_expr *arg = &vars[i - 1]->e;
    dp_call *val = dp_call_new(&f->e, 1, &arg, NULL, DP_NOSPAN);
    dp_expr *l = (dp_expr *)dp_let_new(vars[i], &val->e, e, DP_NOSPAN);
    dp_release(val);
    dp_release(e);
    e = l;
  }
  for (long i = 0; i <= n; i++) dp_release(vars[i]);
  free(vars);
  CHECK(e != NULL);
  double t5 = now();
  count = 0;
  CHECK(dp_visit(e, &v) == 0 && count == 3 * n + 2); /* n lets, n calls, n+1 vars, f */
  double t6 = now();
  r = dp_rewrite(e, &rw, NULL);
  CHECK(r && r != e && ((dp_call *)((dp_let *)r)->value)->fn == &g2->e);
  double t7 = now();
  fv = dp_free_vars(r, &nfv);
  CHECK(fv && nfv == 1 && fv[0] == x);
  free(fv);
  double t8 = now();
  dp_release(r);
  dp_release(e);
  printf("let chain %ld: build %.3fs visit %.3fs rewrite %.3fs free_vars %.3fs free %.3fs\n",
         n, t5 - t4, t6 - t5, t7 - t6, t8 - t7, now() - t8);
  dp_release(f);
  dp_release(g2);
  dp_release(x);
}

void dp_test_infer(int *passed, int *failed);    /* tests/c/infer_test.c */
void dp_test_contexts(int *passed, int *failed); /* tests/c/context_test.c */
void dp_test_objtypes(int *passed, int *failed); /* tests/c/context_test.c */
void dp_test_grow(int *passed, int *failed);     /* tests/c/context_test.c */
void dp_test_suggest(int *passed, int *failed);  /* tests/c/suggest_test.c */
void dp_test_context_close(int *passed, int *failed); /* tests/c/context_test.c */
void dp_test_parse(int *passed, int *failed);    /* tests/c/parse_test.c */
void dp_test_independent(int *passed, int *failed); /* tests/c/independent_test.c */
void dp_test_maxflow(int *passed, int *failed);  /* tests/c/maxflow_test.c */
void dp_test_target_kinds(int *passed, int *failed); /* tests/c/target_kind_test.c */
void dp_test_arena(int *passed, int *failed);    /* tests/c/arena_test.c */
void dp_test_alloc(int *passed, int *failed);    /* tests/c/alloc_test.c */
void dp_test_sizes(int *passed, int *failed);    /* tests/c/sizes_test.c */
void dp_test_post(int *passed, int *failed);     /* tests/c/post_test.c */
void dp_test_var_layout(int *passed, int *failed); /* tests/c/var_test.c */

/* ---------------- printing: the marks of shared nodes ---------------- */

/* The printer's one walk finds a shared node again by its mark (its index
   in the walk's table, checked against the node): a mark another walk
   left, even one that names a slot of the table, must not change the text,
   and every mark is as it was once the text is made. */
static void test_print_marks(dp_ctx *ctx) {
  dp_op *add = dp_op_get(ctx, "add"), *mul = dp_op_get(ctx, "multiply");
  dp_var *a = dp_var_new("a", NULL, NULL, DP_NOSPAN), *b = dp_var_new("b", NULL, NULL, DP_NOSPAN);
  CHECK(add && mul && a && b);
  if (!add || !mul || !a || !b) return;
  /* two shared nodes, p and r, the second met once the first printed */
  dp_expr *ab[] = {&a->e, &b->e}, *ba[] = {&b->e, &a->e};
  dp_call *p = dp_call_new(&add->e, 2, ab, NULL, DP_NOSPAN);
  dp_call *r = dp_call_new(&add->e, 2, ba, NULL, DP_NOSPAN);
  dp_expr *pp[] = {&p->e, &p->e}, *rr[] = {&r->e, &r->e};
  dp_call *q = dp_call_new(&mul->e, 2, pp, NULL, DP_NOSPAN);
  dp_call *s = dp_call_new(&mul->e, 2, rr, NULL, DP_NOSPAN);
  dp_expr *qs[] = {&q->e, &s->e};
  dp_call *t = dp_call_new(&add->e, 2, qs, NULL, DP_NOSPAN);
  dp_var *params[] = {a, b};
  dp_func *fn = dp_func_new(2, params, &t->e, NULL, NULL, NULL, DP_NOSPAN);
  CHECK(p && r && q && s && t && fn);
  /* (the function holds them: a node held once more is not printed by
     the one walk) */
  dp_call *mine[] = {t, s, q, r, p};
  for (int i = 0; i < 5; i++) dp_release(mine[i]);
  dp_release(a);
  dp_release(b);
  if (!fn) return;
  const char *want = "fn (%a, %b) {\n"
                     "  %0 = add(%a, %b);\n"
                     "  %1 = multiply(%0, %0);\n"
                     "  %2 = add(%b, %a);\n"
                     "  %3 = multiply(%2, %2);\n"
                     "  add(%1, %3)\n"
                     "}";
  /* marks as another walk may leave them (p's, r's): r's naming the slot
     p takes, crossed, past the table */
  static const uint32_t marks[][2] = {{0, 0}, {5, 0}, {1, 0}, {UINT32_MAX, 1}};
  for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++) {
    p->e.mark = marks[k][0];
    r->e.mark = marks[k][1];
    CHECK_STR(dp_print_expr(&fn->e, 0, NULL), want);
    CHECK(p->e.mark == marks[k][0] && r->e.mark == marks[k][1]);
  }
  dp_release(fn);
}

int main(void) {
  long n = getenv("DEVPLAN_QUICK") ? 20000 : 1000000;
  dp_ctx *ctx = dp_ctx_new();
  CHECK(ctx != NULL && dp_register_builtin_ops(ctx, NULL) == 0);
  if (!ctx) return 1;
  test_dtypes();
  test_types(ctx);
  test_attrs(ctx);
  test_exprs(ctx);
  test_modules(ctx);
  test_op_calls();
  test_traversals(ctx);
  test_deep(n);
  test_print_marks(ctx);
  dp_release(ctx);
  dp_test_infer(&passed, &failed);
  dp_test_contexts(&passed, &failed);
  dp_test_objtypes(&passed, &failed);
  dp_test_grow(&passed, &failed);
  dp_test_suggest(&passed, &failed);
  dp_test_context_close(&passed, &failed);
  dp_test_parse(&passed, &failed);
  dp_test_independent(&passed, &failed);
  dp_test_maxflow(&passed, &failed);
  dp_test_target_kinds(&passed, &failed);
  dp_test_arena(&passed, &failed);
  dp_test_alloc(&passed, &failed);
  dp_test_sizes(&passed, &failed);
  dp_test_post(&passed, &failed);
  dp_test_var_layout(&passed, &failed);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
