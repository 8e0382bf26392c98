/*
 * C checks of the operator registry, the built-in type relations and type
 * inference (op.h, infer.h): schemas and attribute normalisation, shape
 * rules, unannotated parameters, higher-order functions, ADTs, refs,
 * errors that name the expression, and million-deep chains.
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

#define CHECK_TYPE(t, want) check_type((t), (want), __FILE__, __LINE__)
static void check_type(const dp_type *t, const char *want, const char *file, int line) {
  char *s = t ? dp_type_str(t) : NULL;
  int ok = s && strcmp(s, want) == 0;
  if (!ok) printf("  got \"%s\", want \"%s\"\n", s ? s : "(null)", want);
  check(ok, want, file, line);
  free(s);
}

static dp_ctx *C;

static dp_type *T(uint32_t n, const int64_t *dims) { return dp_type_tensor(C, DP_FLOAT32, n, dims); }
/* A tuple type of two new references (released here). */
static dp_type *TUP2(dp_type *a, dp_type *b) {
  dp_type *t = dp_type_tuple(C, 2, (dp_type *[]){a, b});
  dp_release(a);
  dp_release(b);
  return t;
}
#define TT(...) T(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), (int64_t[]){__VA_ARGS__})

static dp_var *V(const char *name, dp_type *t) {
  dp_var *v = dp_var_new(name, t, NULL, DP_NOSPAN);
  dp_release(t);
  return v;
}

static dp_aval ints(int n, const int64_t *v) {
  dp_aval *items = malloc(n * sizeof *items);
  for (int i = 0; i < n; i++) items[i] = dp_av_int(v[i]);
  return dp_av_list(n, items);
}
#define INTS(...) ints(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), (int64_t[]){__VA_ARGS__})

/* A call of a named operator; takes the attribute values; args borrowed. */
static dp_expr *call(const char *op, uint32_t n, dp_expr *const *args, uint32_t na, dp_attr *attrs,
                     dp_err **err) {
  dp_op *o = dp_op_get(C, op);
  if (!o) return NULL;
  dp_attrs *a = dp_op_attrs(o, na, attrs, err);
  if (!a) return NULL;
  dp_call *c = dp_call_new(&o->e, n, args, a, DP_NOSPAN);
  dp_release(a);
  return &c->e;
}

/* Infers e alone and returns its type as text (malloc'd) or the error. */
static char *infer_str(dp_expr *e) {
  dp_err *err = NULL;
  if (dp_infer_expr(NULL, e, &err) < 0) {
    char *s = dp_err_format(err);
    dp_err_free(err);
    return s;
  }
  return dp_type_str(e->type);
}

#define CHECK_INFER(e, want) do { char *s_ = infer_str(e); int ok_ = s_ && strstr(s_, want) != NULL; \
  if (!ok_) printf("  got \"%s\", want \"%s\"\n", s_ ? s_ : "(null)", want); \
  check(ok_, want, __FILE__, __LINE__); free(s_); } while (0)

/* ---------------- registry and attributes ---------------- */

static void test_registry(void) {
  CHECK(dp_op_count(C) > 60);
  dp_op *conv = dp_op_get(C, "nn.conv2d");
  CHECK(conv && conv->num_inputs == 2 && conv->nfields == 10);
  CHECK(dp_op_at(C, conv->id) == conv);
  CHECK(dp_op_get(C, "no.such.op") == NULL);
  const char *names[] = {"on_device", "device_copy", "memory.alloc_storage", "memory.alloc_tensor",
                         "vm.shape_of", "vm.reshape_tensor", "vm.invoke_tvm_op", "call_lowered",
                         "nn.conv2d_transpose", "nn.conv3d", "nn.dense", "nn.batch_norm",
                         "nn.dropout", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d",
                         "nn.adaptive_avg_pool3d", "nn.batch_flatten", "nn.bias_add", "nn.softmax",
                         "concatenate", "split", "reshape", "reshape_like", "zeros", "ones",
                         "transpose", "squeeze", "expand_dims", "sum", "mean", "layout_transform",
                         "cast", "clip", "equal", "less", "greater", "sigmoid", "tanh", "nn.relu"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    int ok = dp_op_get(C, names[i]) != NULL;
    if (!ok) printf("  missing %s\n", names[i]);
    CHECK(ok);
  }
  CHECK(dp_op_get(C, "on_device")->flags & DP_OPF_IDENTITY);
  CHECK(dp_op_get(C, "device_copy")->flags & DP_OPF_IDENTITY);
  dp_err *err = NULL;
  CHECK(dp_op_register(C, "add", 2, 0, NULL, 0, NULL, NULL, NULL, &err) == NULL);
  CHECK(err && err->code == DP_ERR_NAME);
  dp_err_free(err);
}

static void test_attrs(void) {
  dp_op *conv = dp_op_get(C, "nn.conv2d");
  dp_err *err = NULL;
  /* defaults dropped, schema order kept */
  dp_attr in[] = {{"kernel_size", INTS(3, 3)}, {"channels", dp_av_int(64)},
                  {"strides", INTS(1, 1)}, {"padding", INTS(1, 1, 1, 1)}, {"groups", dp_av_int(1)}};
  dp_attrs *a = dp_op_attrs(conv, 5, in, &err);
  CHECK(a && a->n == 3);
  if (a && a->n == 3) {
    CHECK(strcmp(a->items[0].key, "padding") == 0);
    CHECK(strcmp(a->items[1].key, "channels") == 0);
    CHECK(strcmp(a->items[2].key, "kernel_size") == 0);
  }
  CHECK(dp_op_attr(conv, a, "groups")->u.i == 1);
  CHECK(strcmp(dp_op_attr(conv, a, "data_layout")->u.s, "NCHW") == 0);
  CHECK(dp_op_attr(conv, a, "no_such") == NULL);
  dp_release(a);
  /* unknown attribute */
  dp_attr bad[] = {{"stride", INTS(2, 2)}};
  CHECK(dp_op_attrs(conv, 1, bad, &err) == NULL);
  CHECK(err && strstr(err->msg, "'stride'") && strstr(err->msg, "nn.conv2d"));
  dp_err_free(err);
  err = NULL;
  /* wrong kind */
  dp_attr bad2[] = {{"groups", dp_av_string("two")}};
  CHECK(dp_op_attrs(conv, 1, bad2, &err) == NULL);
  CHECK(err && strstr(err->msg, "'groups'") && strstr(err->msg, "nn.conv2d"));
  dp_err_free(err);
  err = NULL;
  /* float default equal by value; suffix does not matter */
  dp_op *bn = dp_op_get(C, "nn.batch_norm");
  dp_attr eps[] = {{"epsilon", dp_av_float(1e-5, 0)}, {"scale", dp_av_bool(0)}};
  a = dp_op_attrs(bn, 2, eps, &err);
  CHECK(a && a->n == 1 && strcmp(a->items[0].key, "scale") == 0);
  dp_release(a);
  dp_attr eps2[] = {{"epsilon", dp_av_float(2e-5, DP_FLOAT32)}};
  a = dp_op_attrs(bn, 1, eps2, &err);
  CHECK(a && a->n == 1);
  dp_release(a);
  /* an op with no attributes rejects any */
  dp_attr x[] = {{"axis", dp_av_int(1)}};
  CHECK(dp_op_attrs(dp_op_get(C, "add"), 1, x, &err) == NULL);
  dp_err_free(err);
  err = NULL;
  /* units=None (the default) dropped; units=10 kept */
  dp_attr u[] = {{"units", dp_av_none()}};
  a = dp_op_attrs(dp_op_get(C, "nn.dense"), 1, u, &err);
  CHECK(a && a->n == 0);
  dp_release(a);
  /* call_lowered has no schema: kept as written */
  dp_attr md[] = {{"metadata", dp_av_int(1)}};
  a = dp_op_attrs(dp_op_get(C, "call_lowered"), 1, md, &err);
  CHECK(a && a->n == 1);
  dp_release(a);
}

/* ---------------- relations ---------------- */

static dp_type *rel(const char *op, uint32_t n, dp_type **args, uint32_t na, dp_attr *attrs) {
  dp_op *o = dp_op_get(C, op);
  dp_err *err = NULL;
  dp_attrs *a = dp_op_attrs(o, na, attrs, &err);
  dp_type *r = a ? o->rel(C, args, n, a, o->ud, &err) : NULL;
  if (!r && err) printf("  (%s: %s)\n", op, err->msg);
  dp_err_free(err);
  dp_release(a);
  for (uint32_t i = 0; i < n; i++) dp_release(args[i]);
  return r;
}

static char *rel_err(const char *op, uint32_t n, dp_type **args, uint32_t na, dp_attr *attrs) {
  dp_op *o = dp_op_get(C, op);
  dp_err *err = NULL;
  dp_attrs *a = dp_op_attrs(o, na, attrs, &err);
  dp_type *r = a ? o->rel(C, args, n, a, o->ud, &err) : NULL;
  char *s = err ? dp_strdup(err->msg) : NULL;
  dp_err_free(err);
  dp_release(a);
  dp_release(r);
  for (uint32_t i = 0; i < n; i++) dp_release(args[i]);
  return s;
}

#define REL(want, op, na, attrs, ...) do { dp_type *a_[] = {__VA_ARGS__}; \
  dp_type *r_ = rel(op, sizeof a_ / sizeof a_[0], a_, na, attrs); CHECK_TYPE(r_, want); dp_release(r_); } while (0)
#define REL_ERR(want, op, na, attrs, ...) do { dp_type *a_[] = {__VA_ARGS__}; \
  char *s_ = rel_err(op, sizeof a_ / sizeof a_[0], a_, na, attrs); int ok_ = s_ && strstr(s_, want); \
  if (!ok_) printf("  got \"%s\", want \"%s\"\n", s_ ? s_ : "(no error)", want); \
  check(ok_, want, __FILE__, __LINE__); free(s_); } while (0)

static void test_relations(void) {
  REL("Tensor[(5, 7), float32]", "add", 0, NULL, TT(5, 7), TT(5, 7));
  REL("Tensor[(2, 5, 7), float32]", "add", 0, NULL, TT(2, 1, 7), TT(5, 1));
  REL("Tensor[(5, 7), float32]", "multiply", 0, NULL, TT(5, 7), TT());
  REL("Tensor[(?, 7), float32]", "add", 0, NULL, TT(-1, 7), TT(1, 7));
  REL("Tensor[(5, 7), float32]", "add", 0, NULL, TT(-1, 7), TT(5, 7));
  REL("Tensor[(?, ?), float32]", "add", 0, NULL, TT(-1, -1), TT(-1, -1));
  REL("Tensor[(5, 7), bool]", "less", 0, NULL, TT(5, 7), TT(5, 7));
  REL_ERR("add: shapes Tensor[(5, 7), float32] and Tensor[(3), float32] do not broadcast", "add", 0, NULL,
          TT(5, 7), TT(3));
  REL_ERR("argument 2 must be a tensor", "add", 0, NULL, TT(5), dp_type_tuple(C, 0, NULL));
  REL("Tensor[(5, 7), float32]", "nn.relu", 0, NULL, TT(5, 7));
  dp_attr cast[] = {{"dtype", dp_av_string("int32")}};
  REL("Tensor[(5, 7), int32]", "cast", 1, cast, TT(5, 7));

  dp_attr c1[] = {{"strides", INTS(2, 2)}, {"padding", INTS(3, 3, 3, 3)}, {"channels", dp_av_int(64)},
                  {"kernel_size", INTS(7, 7)}};
  REL("Tensor[(1, 64, 112, 112), float32]", "nn.conv2d", 4, c1, TT(1, 3, 224, 224), TT(64, 3, 7, 7));
  dp_attr c2[] = {{"padding", INTS(1, 1)}};
  REL("Tensor[(1, 8, 56, 56), float32]", "nn.conv2d", 1, c2, TT(1, 4, 56, 56), TT(8, 4, 3, 3));
  dp_attr dw[] = {{"groups", dp_av_int(32)}, {"padding", INTS(1, 1)}, {"channels", dp_av_int(32)}};
  REL("Tensor[(1, 32, 20, 20), float32]", "nn.conv2d", 3, dw, TT(1, 32, 20, 20), TT(32, 1, 3, 3));
  dp_attr nhwc[] = {{"data_layout", dp_av_string("NHWC")}, {"kernel_layout", dp_av_string("HWIO")}};
  REL("Tensor[(1, 222, 222, 16), float32]", "nn.conv2d", 2, nhwc, TT(1, 224, 224, 3), TT(3, 3, 3, 16));
  REL_ERR("channels", "nn.conv2d", 0, NULL, TT(1, 3, 8, 8), TT(4, 5, 3, 3));
  REL("Tensor[(1, 16, ?, 8), float32]", "nn.conv2d", 0, NULL, TT(1, 3, -1, 10), TT(16, 3, 3, 3));
  dp_attr ct[] = {{"channels", dp_av_int(512)}, {"kernel_size", INTS(4, 4)}, {"strides", INTS(2, 2)},
                  {"padding", INTS(1, 1, 1, 1)}};
  REL("Tensor[(1, 512, 8, 8), float32]", "nn.conv2d_transpose", 4, ct, TT(1, 1024, 4, 4), TT(1024, 512, 4, 4));
  dp_attr c3[] = {{"padding", INTS(1, 1, 1)}, {"strides", INTS(2, 2, 2)}};
  REL("Tensor[(1, 8, 4, 8, 8), float32]", "nn.conv3d", 2, c3, TT(1, 3, 8, 16, 16), TT(8, 3, 3, 3, 3));
  dp_attr units[] = {{"units", dp_av_int(1000)}};
  REL("Tensor[(1, 1000), float32]", "nn.dense", 1, units, TT(1, 512), TT(1000, 512));
  REL_ERR("input features", "nn.dense", 0, NULL, TT(1, 500), TT(1000, 512));
  REL("(Tensor[(1, 64, 56, 56), float32], Tensor[(64), float32], Tensor[(64), float32])", "nn.batch_norm", 0,
      NULL, TT(1, 64, 56, 56), TT(64), TT(64), TT(64), TT(64));
  REL_ERR("argument 3 must be Tensor[(64), float32]", "nn.batch_norm", 0, NULL, TT(1, 64, 56, 56), TT(64),
          TT(32), TT(64), TT(64));
  REL("(Tensor[(3, 4), float32], Tensor[(3, 4), float32])", "nn.dropout", 0, NULL, TT(3, 4));
  dp_attr mp[] = {{"pool_size", INTS(3, 3)}, {"strides", INTS(2, 2)}, {"padding", INTS(1, 1, 1, 1)}};
  REL("Tensor[(1, 64, 56, 56), float32]", "nn.max_pool2d", 3, mp, TT(1, 64, 112, 112));
  dp_attr ap[] = {{"pool_size", INTS(3, 3)}, {"strides", INTS(2, 2)}, {"ceil_mode", dp_av_bool(1)}};
  REL("Tensor[(1, 8, 4, 4), float32]", "nn.avg_pool2d", 3, ap, TT(1, 8, 8, 8));
  REL("Tensor[(1, 512, 1, 1), float32]", "nn.global_avg_pool2d", 0, NULL, TT(1, 512, 7, 7));
  dp_attr os[] = {{"output_size", INTS(1, 1, 1)}};
  REL("Tensor[(1, 512, 1, 1, 1), float32]", "nn.adaptive_avg_pool3d", 1, os, TT(1, 512, 4, 7, 7));
  REL("Tensor[(1, 512), float32]", "nn.batch_flatten", 0, NULL, TT(1, 512, 1, 1));
  dp_attr ba[] = {{"axis", dp_av_int(-1)}};
  REL("Tensor[(1, 1000), float32]", "nn.bias_add", 1, ba, TT(1, 1000), TT(1000));
  REL_ERR("argument 2 must be Tensor[(1000), float32]", "nn.bias_add", 0, NULL, TT(1, 1000), TT(5));
  REL("Tensor[(1, 1000), float32]", "nn.softmax", 0, NULL, TT(1, 1000));
  dp_attr cat[] = {{"axis", dp_av_int(1)}};
  REL("Tensor[(2, 7), float32]", "concatenate", 1, cat, TUP2(TT(2, 3), TT(2, 4)));
  REL_ERR("concatenate", "concatenate", 1, cat, TUP2(TT(2, 3), TT(3, 4)));
  dp_attr sp[] = {{"indices_or_sections", dp_av_int(3)}};
  REL("(Tensor[(1, 3, 4), float32], Tensor[(1, 3, 4), float32], Tensor[(1, 3, 4), float32])", "split", 1, sp,
      TT(3, 3, 4));
  dp_attr sp2[] = {{"indices_or_sections", INTS(1, 3)}, {"axis", dp_av_int(1)}};
  REL("(Tensor[(2, 1), float32], Tensor[(2, 2), float32], Tensor[(2, 2), float32])", "split", 2, sp2, TT(2, 5));
  dp_attr rs[] = {{"newshape", INTS(-1, 1024, 4, 4)}};
  REL("Tensor[(1, 1024, 4, 4), float32]", "reshape", 1, rs, TT(1, 16384));
  dp_attr rs0[] = {{"newshape", INTS(0, -1)}};
  REL("Tensor[(2, 12), float32]", "reshape", 1, rs0, TT(2, 3, 4));
  dp_attr rsbad[] = {{"newshape", INTS(5, 5)}};
  REL_ERR("reshape", "reshape", 1, rsbad, TT(2, 3, 4));
  REL("Tensor[(6, 4), float32]", "reshape_like", 0, NULL, TT(2, 3, 4), TT(6, 4));
  dp_attr z[] = {{"shape", INTS(2, 3)}, {"dtype", dp_av_string("float32")}};
  { dp_type *r = rel("zeros", 0, NULL, 2, z); CHECK_TYPE(r, "Tensor[(2, 3), float32]"); dp_release(r); }
  REL("Tensor[(4, 3, 2), float32]", "transpose", 0, NULL, TT(2, 3, 4));
  dp_attr tp[] = {{"axes", INTS(0, 2, 1)}};
  REL("Tensor[(2, 4, 3), float32]", "transpose", 1, tp, TT(2, 3, 4));
  REL("Tensor[(3), float32]", "squeeze", 0, NULL, TT(1, 3, 1));
  dp_attr ed[] = {{"axis", dp_av_int(1)}};
  REL("Tensor[(3, 1, 4), float32]", "expand_dims", 1, ed, TT(3, 4));
  dp_attr sm[] = {{"axis", INTS(1)}, {"keepdims", dp_av_bool(1)}};
  REL("Tensor[(3, 1, 5), float32]", "sum", 2, sm, TT(3, 4, 5));
  REL("float32", "mean", 0, NULL, TT(3, 4, 5));
  dp_attr lt[] = {{"src_layout", dp_av_string("NCHW")}, {"dst_layout", dp_av_string("NCHW4c")}};
  REL("Tensor[(1, 8, 40, 40, 4), float32]", "layout_transform", 2, lt, TT(1, 32, 40, 40));
  dp_attr lt2[] = {{"src_layout", dp_av_string("NCHW4c")}, {"dst_layout", dp_av_string("NCHW")}};
  REL("Tensor[(1, 32, 40, 40), float32]", "layout_transform", 2, lt2, TT(1, 8, 40, 40, 4));
  dp_attr so[] = {{"dtype", dp_av_string("int64")}};
  REL("Tensor[(2), int64]", "vm.shape_of", 1, so, TT(-1, -1));
  REL("Storage[]", "memory.alloc_storage", 0, NULL, dp_type_tensor(C, DP_INT64, 0, NULL),
      dp_type_tensor(C, DP_INT64, 1, (int64_t[]){2}), dp_type_tensor(C, DP_INT64, 0, NULL));
}

/* ---------------- inference ---------------- */

static void test_infer_basic(void) {
  dp_var *x = V("x", TT(5, 7)), *y = V("y", TT(5, 7));
  dp_err *err = NULL;
  dp_expr *add = call("add", 2, (dp_expr *[]){&x->e, &y->e}, 0, NULL, &err);
  CHECK_INFER(add, "Tensor[(5, 7), float32]");
  CHECK_TYPE(x->e.type, "Tensor[(5, 7), float32]");
  /* on_device keeps the type */
  dp_expr *od = call("on_device", 1, &add, 0, NULL, &err);
  CHECK_INFER(od, "Tensor[(5, 7), float32]");
  /* fn (%a, %b) { add(%a, %b) } applied: %a, %b inferred from the call */
  dp_var *a = V("a", NULL), *b = V("b", NULL);
  dp_expr *body = call("add", 2, (dp_expr *[]){&a->e, &b->e}, 0, NULL, &err);
  dp_func *f = dp_func_new(2, (dp_var *[]){a, b}, body, NULL, NULL, NULL, DP_NOSPAN);
  dp_call *app = dp_call_new(&f->e, 2, (dp_expr *[]){&x->e, &y->e}, NULL, DP_NOSPAN);
  CHECK_INFER(&app->e, "Tensor[(5, 7), float32]");
  CHECK_TYPE(a->e.type, "Tensor[(5, 7), float32]");
  CHECK_TYPE(f->e.type, "fn (Tensor[(5, 7), float32], Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32]");
  dp_release(app);
  /* shapes that don't broadcast: names the call and the operator */
  dp_var *z = V("z", TT(3));
  dp_expr *bad = call("add", 2, (dp_expr *[]){&x->e, &z->e}, 0, NULL, &err);
  CHECK_INFER(bad, "call of add `add(%x, %z)`: add: shapes");
  CHECK(bad->type == NULL);
  CHECK(z->e.type == NULL); /* nothing written on error */
  /* a lone unannotated parameter cannot be inferred */
  dp_var *u = V("u", NULL);
  dp_func *idf = dp_func_new(1, &u, &u->e, NULL, NULL, NULL, DP_NOSPAN);
  CHECK_INFER(&idf->e, "variable %u: cannot infer");
  dp_release(idf);
  dp_release(u);
  dp_release(bad);
  dp_release(z);
  dp_release(od);
  dp_release(add);
  dp_release(f);
  dp_release(body);
  dp_release(a);
  dp_release(b);
  dp_release(x);
  dp_release(y);
}

/* let %f = fn (%g) { fn (%a) { add(%g(%a), %x) } }; let %h = fn (%b) { negative(%b) };
   %f(%h)(%y) */
static void test_higher_order(void) {
  dp_err *err = NULL;
  dp_var *x = V("x", TT(5, 7)), *y = V("y", TT(5, 7));
  dp_var *g = V("g", NULL), *a = V("a", NULL), *b = V("b", NULL), *f = V("f", NULL), *h = V("h", NULL);
  dp_expr *od = call("on_device", 1, (dp_expr *[]){&a->e}, 0, NULL, &err);
  dp_call *ga = dp_call_new(&g->e, 1, &od, NULL, DP_NOSPAN);
  dp_expr *add = call("add", 2, (dp_expr *[]){&ga->e, &x->e}, 0, NULL, &err);
  dp_func *inner = dp_func_new(1, &a, add, NULL, NULL, NULL, DP_NOSPAN);
  dp_func *outer = dp_func_new(1, &g, &inner->e, NULL, NULL, NULL, DP_NOSPAN);
  dp_expr *neg = call("negative", 1, (dp_expr *[]){&b->e}, 0, NULL, &err);
  dp_func *hf = dp_func_new(1, &b, neg, NULL, NULL, NULL, DP_NOSPAN);
  dp_call *c2 = dp_call_new(&f->e, 1, (dp_expr *[]){&h->e}, NULL, DP_NOSPAN);
  dp_call *c3 = dp_call_new(&c2->e, 1, (dp_expr *[]){&y->e}, NULL, DP_NOSPAN);
  dp_expr *sub = call("subtract", 2, (dp_expr *[]){&x->e, &c3->e}, 0, NULL, &err);
  dp_let *l2 = dp_let_new(h, &hf->e, sub, DP_NOSPAN);
  dp_let *l1 = dp_let_new(f, &outer->e, &l2->e, DP_NOSPAN);
  dp_func *main = dp_func_new(2, (dp_var *[]){x, y}, &l1->e, NULL, NULL, NULL, DP_NOSPAN);
  CHECK_INFER(&main->e, "fn (Tensor[(5, 7), float32], Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32]");
  CHECK_TYPE(g->e.type, "fn (Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32]");
  CHECK_TYPE(f->e.type, "fn (fn (Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32]) -> fn (Tensor[(5, 7), float32]) -> Tensor[(5, 7), float32]");
  CHECK_TYPE(b->e.type, "Tensor[(5, 7), float32]");
  CHECK_TYPE(od->type, "Tensor[(5, 7), float32]");
  dp_release(main);
  dp_release(l1); dp_release(l2); dp_release(sub); dp_release(c3); dp_release(c2); dp_release(hf);
  dp_release(neg); dp_release(outer); dp_release(inner); dp_release(add); dp_release(ga); dp_release(od);
  dp_release(g); dp_release(a); dp_release(b); dp_release(f); dp_release(h); dp_release(x); dp_release(y);
}

/* type List[A] { Cons(A, List[A]), Nil }; match, constructors, refs, if, tuples, globals. */
static void test_module(void) {
  dp_err *err = NULL;
  dp_type *A = dp_type_var_new(C, "A");
  dp_type *listA = dp_type_adt(C, "List", 1, &A);
  dp_ctor *cons = dp_ctor_new("Cons", "List", 0, 1, &A, 2, (dp_type *[]){A, listA}, DP_NOSPAN);
  dp_ctor *nil = dp_ctor_new("Nil", "List", 1, 1, &A, 0, NULL, DP_NOSPAN);
  dp_typedef *td = dp_typedef_new("List", 1, &A, 2, (dp_ctor *[]){cons, nil}, DP_NOSPAN);
  dp_module *m = dp_module_new(C);
  CHECK(dp_module_add_typedef(m, td, &err) == 0);
  /* def @head(%l, %d: Tensor[(3), float32]) { match (%l) { Cons(%h, _) => %h, Nil => %d } } */
  dp_var *l = V("l", NULL), *d = V("d", TT(3)), *h = V("h", NULL);
  dp_pattern *ph = dp_pat_var(h, DP_NOSPAN), *pw = dp_pat_wild(DP_NOSPAN);
  dp_pattern *pc = dp_pat_ctor(cons, 2, (dp_pattern *[]){ph, pw}, DP_NOSPAN);
  dp_pattern *pn = dp_pat_ctor(nil, 0, NULL, DP_NOSPAN);
  dp_match *mt = dp_match_new(&l->e, 2, (dp_clause[]){{pc, &h->e}, {pn, &d->e}}, 1, DP_NOSPAN);
  dp_func *head = dp_func_new(2, (dp_var *[]){l, d}, &mt->e, NULL, NULL, NULL, DP_NOSPAN);
  dp_global *ghead = dp_global_new("head", DP_NOSPAN);
  /* def @main(%x: Tensor[(3), float32], %c: bool) {
       let %r = ref(%x); ref_write(%r, negative(%x)); %t = (%x, Nil);
       if (%c) { @head(Cons(ref_read(%r), Nil()), %x) } else { %t.0 } } (%t = (%x, Cons(%x, Nil))) */
  dp_var *x = V("x", TT(3)), *c = V("c", dp_type_tensor(C, DP_BOOL, 0, NULL)), *r = V("r", NULL);
  dp_var *unused = V("_", NULL);
  dp_ref_create *rn = dp_ref_create_new(&x->e, DP_NOSPAN);
  dp_expr *neg = call("negative", 1, (dp_expr *[]){&x->e}, 0, NULL, &err);
  dp_ref_write *rw = dp_ref_write_new(&r->e, neg, DP_NOSPAN);
  dp_ref_read *rr = dp_ref_read_new(&r->e, DP_NOSPAN);
  dp_call *nil1 = dp_call_new(&nil->e, 0, NULL, NULL, DP_NOSPAN);
  dp_call *lst = dp_call_new(&cons->e, 2, (dp_expr *[]){&rr->e, &nil1->e}, NULL, DP_NOSPAN);
  dp_global *gh2 = dp_global_new("head", DP_NOSPAN);
  dp_call *ch = dp_call_new(&gh2->e, 2, (dp_expr *[]){&lst->e, &x->e}, NULL, DP_NOSPAN);
  dp_call *lst2 = dp_call_new(&cons->e, 2, (dp_expr *[]){&x->e, &nil->e}, NULL, DP_NOSPAN);
  dp_tuple *t = dp_tuple_new(2, (dp_expr *[]){&x->e, &lst2->e}, DP_NOSPAN);
  dp_proj *p0 = dp_proj_new(&t->e, 0, DP_NOSPAN);
  dp_if *iff = dp_if_new(&c->e, &ch->e, &p0->e, DP_NOSPAN);
  dp_let *l2 = dp_let_new(unused, &rw->e, &iff->e, DP_NOSPAN);
  dp_let *l1 = dp_let_new(r, &rn->e, &l2->e, DP_NOSPAN);
  dp_func *mainf = dp_func_new(2, (dp_var *[]){x, c}, &l1->e, NULL, NULL, NULL, DP_NOSPAN);
  dp_global *gmain = dp_global_new("main", DP_NOSPAN);
  /* main first: it calls @head, defined after it */
  CHECK(dp_module_add_func(m, gmain, mainf, &err) == 0);
  CHECK(dp_module_add_func(m, ghead, head, &err) == 0);
  int rc = dp_infer_module(m, &err);
  CHECK(rc == 0);
  if (rc < 0) { printf("  %s\n", err->msg); dp_err_free(err); err = NULL; }
  CHECK_TYPE(mainf->e.type, "fn (Tensor[(3), float32], bool) -> Tensor[(3), float32]");
  CHECK_TYPE(l->e.type, "List[Tensor[(3), float32]]");
  CHECK_TYPE(h->e.type, "Tensor[(3), float32]");
  CHECK_TYPE(r->e.type, "ref(Tensor[(3), float32])");
  CHECK_TYPE(rw->e.type, "()");
  CHECK(t->e.type && t->e.type->h.kind == DP_TY_TUPLE &&
        ((dp_tuple_type *)t->e.type)->fields[1]->h.kind == DP_TY_ADT);
  CHECK_TYPE(gh2->e.type, "fn (List[Tensor[(3), float32]], Tensor[(3), float32]) -> Tensor[(3), float32]");
  CHECK(cons->e.type && cons->e.type->h.kind == DP_TY_FUNC);
  /* inferring again is fine */
  CHECK(dp_infer_module(m, &err) == 0);
  dp_release(m);
  dp_release(gmain); dp_release(mainf); dp_release(l1); dp_release(l2); dp_release(iff); dp_release(p0);
  dp_release(t); dp_release(lst2); dp_release(ch); dp_release(gh2); dp_release(lst); dp_release(nil1); dp_release(rr);
  dp_release(rw); dp_release(neg); dp_release(rn); dp_release(unused); dp_release(r); dp_release(c);
  dp_release(x); dp_release(ghead); dp_release(head); dp_release(mt); dp_release(pn); dp_release(pc);
  dp_release(pw); dp_release(ph); dp_release(h); dp_release(d); dp_release(l); dp_release(td);
  dp_release(nil); dp_release(cons); dp_release(listA); dp_release(A);
}

/* call_lowered types from the module's primfn. */
static void test_lowered(void) {
  dp_err *err = NULL;
  dp_module *m = dp_module_new(C);
  dp_type *t = TT(128, 128);
  dp_buffer bufs[3] = {{t, "scopeA"}, {t, ""}, {t, "scopeB"}};
  dp_primfn *pf = dp_primfn_new("gem", 3, bufs, (dp_buffer){t, "scopeA"}, DP_NOSPAN);
  CHECK(dp_module_add_primfn(m, pf, &err) == 0);
  dp_var *x = V("x", dp_retain(t)), *y = V("y", dp_retain(t)), *z = V("z", dp_retain(t));
  dp_global *g = dp_global_new("gem", DP_NOSPAN);
  dp_tuple *args = dp_tuple_new(3, (dp_expr *[]){&x->e, &y->e, &z->e}, DP_NOSPAN);
  dp_expr *cl = call("call_lowered", 2, (dp_expr *[]){&g->e, &args->e}, 0, NULL, &err);
  dp_func *f = dp_func_new(3, (dp_var *[]){x, y, z}, cl, NULL, NULL, NULL, DP_NOSPAN);
  dp_global *gm = dp_global_new("main", DP_NOSPAN);
  CHECK(dp_module_add_func(m, gm, f, &err) == 0);
  CHECK(dp_infer_module(m, &err) == 0);
  CHECK_TYPE(cl->type, "Tensor[(128, 128), float32]");
  dp_release(m); dp_release(gm); dp_release(f); dp_release(cl); dp_release(args); dp_release(g);
  dp_release(x); dp_release(y); dp_release(z); dp_release(pf); dp_release(t);
}

/* A million-deep call chain and let chain (unannotated let variables). */
static void test_deep(long n) {
  dp_err *err = NULL;
  dp_var *x = V("x", TT(4));
  dp_expr *e = dp_retain(&x->e);
  for (long i = 0; i < n; i++) {
    dp_expr *c = call("negative", 1, &e, 0, NULL, &err);
    dp_release(e);
    e = c;
  }
  CHECK_INFER(e, "Tensor[(4), float32]");
  dp_release(e);
  /* let %v1 = add(%x, %x); let %v2 = add(%v1, %v1); ... %vn */
  dp_var **vs = malloc(n * sizeof *vs);
  dp_expr **vals = malloc(n * sizeof *vals);
  dp_expr *prev = &x->e;
  for (long i = 0; i < n; i++) {
    vs[i] = V("v", NULL);
    vals[i] = call("add", 2, (dp_expr *[]){prev, prev}, 0, NULL, &err);
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
  dp_func *f = dp_func_new(1, &x, body, NULL, NULL, NULL, DP_NOSPAN);
  CHECK_INFER(&f->e, "fn (Tensor[(4), float32]) -> Tensor[(4), float32]");
  dp_release(f);
  dp_release(body);
  dp_release(x);
}

/* Entry point for the C test program: runs every check above and adds the
   counts to the caller's (ir_test.c's main calls it). Build this file alone
   with -DDP_INFER_TEST_MAIN for a standalone runner. */
void dp_test_infer(int *npassed, int *nfailed);
void dp_test_infer(int *npassed, int *nfailed) {
  long n = getenv("DEVPLAN_QUICK") ? 20000 : 1000000;
  passed = failed = 0;
  C = dp_ctx_new();
  CHECK(C != NULL && dp_register_builtin_ops(C, NULL) == 0);
  if (C) {
    test_registry();
    test_attrs();
    test_relations();
    test_infer_basic();
    test_higher_order();
    test_module();
    test_lowered();
    test_deep(n);
    dp_release(C);
  }
  *npassed += passed;
  *nfailed += failed;
}

#ifdef DP_INFER_TEST_MAIN
int main(void) {
  int p = 0, f = 0;
  setvbuf(stdout, NULL, _IONBF, 0);
  dp_test_infer(&p, &f);
  printf("%d passed, %d failed\n", p, f);
  return f ? 1 : 0;
}
#endif
