/*
 * IR benchmark: a call chain `%i = add(%(i-1), %(i-2))` (every node used
 * twice, so the printer binds each one) and a let chain
 * `let %xi = add(%x(i-1), %y); ...`, N nodes deep, built in C. For each
 * step (build, traverse with dp_visit, compare with dp_expr_equal against a
 * second identical build, print with dp_print_module, free) it prints the
 * seconds and the memory per node: the peak of heap bytes in use during the
 * step above what was in use when it started.
 *
 * Memory is counted exactly by wrapping malloc/calloc/realloc/free at link
 * time (-Wl,--wrap=...), so the core library's allocations are all seen.
 *
 * Usage: devplan-bench-ir [call|let] N
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "devplan/devplan.h"

/* ---------------- counting allocator ---------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

static int64_t live, peak;

static void count(int64_t d) {
  live += d;
  if (live > peak) peak = live;
}

void *__wrap_malloc(size_t n) {
  void *p = __real_malloc(n);
  if (p) count((int64_t)malloc_usable_size(p));
  return p;
}

void *__wrap_calloc(size_t n, size_t m) {
  void *p = __real_calloc(n, m);
  if (p) count((int64_t)malloc_usable_size(p));
  return p;
}

void *__wrap_realloc(void *p, size_t n) {
  int64_t before = p ? (int64_t)malloc_usable_size(p) : 0;
  void *q = __real_realloc(p, n);
  if (q) count((int64_t)malloc_usable_size(q) - before);
  else if (!n) count(-before);
  return q;
}

void __wrap_free(void *p) {
  if (p) count(-(int64_t)malloc_usable_size(p));
  __real_free(p);
}

/* ---------------- steps ---------------- */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct step {
  double t0;
  int64_t live0;
} step;

static step begin(void) {
  step s = {now(), live};
  peak = live;
  return s;
}

static void end(step s, const char *kind, const char *name, long n) {
  double dt = now() - s.t0;
  printf("%-5s %9ld  %-9s %8.3f s  %7.1f B/link peak  %7.1f B/link kept\n", kind, n, name, dt,
         (double)(peak - s.live0) / n, (double)(live - s.live0) / n);
}

static dp_module *wrap(dp_ctx *ctx, dp_func *fn) {
  dp_module *m = dp_module_new(ctx);
  dp_global *g = dp_global_new("main", DP_NOSPAN);
  if (!m || !g || dp_module_add_func(m, g, fn, NULL) < 0) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  dp_release(g);
  dp_release(fn);
  return m;
}

/* %i = add(%(i-1), %(i-2)), keeping only the last two handles. */
static dp_module *build_calls(dp_ctx *ctx, dp_type *t, long n) {
  dp_op *add = dp_op_get(ctx, "add");
  dp_var *x = dp_var_new("x", t, NULL, DP_NOSPAN), *y = dp_var_new("y", t, NULL, DP_NOSPAN);
  dp_expr *prev2 = dp_retain(&x->e), *prev1 = dp_retain(&y->e);
  for (long i = 0; i < n; i++) {
    dp_expr *args[2] = {prev1, prev2};
    dp_call *c = dp_call_new(&add->e, 2, args, NULL, DP_NOSPAN);
    if (!c) exit(1);
    dp_release(prev2);
    prev2 = prev1;
    prev1 = &c->e;
  }
  dp_var *ps[2] = {x, y};
  dp_func *fn = dp_func_new(2, ps, prev1, NULL, NULL, NULL, DP_NOSPAN);
  dp_release(prev1);
  dp_release(prev2);
  dp_release(x);
  dp_release(y);
  return wrap(ctx, fn);
}

/* let %x1 = add(%x0, %y); let %x2 = add(%x1, %y); ... %xn, built inside out. */
static dp_module *build_lets(dp_ctx *ctx, dp_type *t, long n) {
  dp_op *add = dp_op_get(ctx, "add");
  dp_var *y = dp_var_new("y", t, NULL, DP_NOSPAN);
  dp_var **vars = calloc((size_t)n + 1, sizeof *vars);
  if (!vars) exit(1);
  for (long i = 0; i <= n; i++) vars[i] = dp_var_new("x", t, NULL, DP_NOSPAN);
  dp_expr *body = dp_retain(&vars[n]->e);
  for (long i = n; i >= 1; i--) {
    dp_expr *args[2] = {&vars[i - 1]->e, &y->e};
    dp_call *c = dp_call_new(&add->e, 2, args, NULL, DP_NOSPAN);
    dp_let *l = dp_let_new(vars[i], &c->e, body, DP_NOSPAN);
    if (!l) exit(1);
    dp_release(c);
    dp_release(body);
    body = &l->e;
  }
  dp_var *ps[2] = {vars[0], y};
  dp_func *fn = dp_func_new(2, ps, body, NULL, NULL, NULL, DP_NOSPAN);
  dp_release(body);
  for (long i = 0; i <= n; i++) dp_release(vars[i]);
  free(vars);
  dp_release(y);
  return wrap(ctx, fn);
}

static int count_node(void *ud, dp_expr *e) {
  (void)e;
  ++*(long *)ud;
  return 0;
}

int main(int argc, char **argv) {
  const char *kind = argc > 1 ? argv[1] : "call";
  long n = argc > 2 ? atol(argv[2]) : 100000;
  int lets = strcmp(kind, "let") == 0;
  dp_ctx *ctx = dp_ctx_new();
  if (!ctx || dp_register_builtin_ops(ctx, NULL) < 0) return 1;
  int64_t dims[2] = {5, 7};
  dp_type *t = dp_type_tensor(ctx, DP_FLOAT32, 2, dims);

  step s = begin();
  dp_module *a = lets ? build_lets(ctx, t, n) : build_calls(ctx, t, n);
  end(s, kind, "build", n);
  dp_module *b = lets ? build_lets(ctx, t, n) : build_calls(ctx, t, n);

  long visited = 0;
  dp_visitor v = {NULL, count_node, &visited};
  s = begin();
  dp_visit(&a->funcs[0].fn->e, &v);
  end(s, kind, "traverse", n);

  s = begin();
  dp_diff d = {0};
  int eq = dp_expr_equal(&a->funcs[0].fn->e, &b->funcs[0].fn->e, &d);
  end(s, kind, "compare", n);
  dp_diff_clear(&d);

  s = begin();
  size_t len = 0;
  char *text = dp_print_module(a, 0, &len);
  end(s, kind, "print", n);

  s = begin();
  dp_release(a);
  end(s, kind, "free", n);

  if (!eq || !text || visited < n) {
    fprintf(stderr, "FAILED: equal=%d text=%s visited=%ld\n", eq, text ? "ok" : "NULL", visited);
    return 1;
  }
  free(text);
  dp_release(b);
  dp_release(t);
  dp_release(ctx);
  return 0;
}
