/*
 * The default cost model of scheduling (schedule.h): what a call costs
 * where no measured time is known. Per device type a rate:
 *
 *   seconds = overhead + flops / flops_per_second + bytes / bytes_per_second
 *
 * Flops are estimated from the operator, its attributes and the checked
 * types (a multiply-add counts 2): convolutions from the output and the
 * kernel (each output element reads kernel/out-channels weights), their
 * transposes from the input, dense/matmul/batch_matmul from the output and
 * the reduced dimension, pooling from the output and the window, anything
 * else one per output element. Bytes are the tensor arguments read plus the
 * result written. A call of a primitive function (a fused kernel) sums its
 * body's calls. Unknown dimensions count 1, so nothing costs 0 but a call
 * with no overhead and no tensors.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"
#include "devplan/schedule.h"

const dp_cost_rate DP_COST_RATE_DEFAULT = {0, 1e10, 1e10, 1e-6};

const dp_cost_rate *dp_cost_rate_of(const dp_cost_model *m, int device_type) {
  const dp_cost_rate *any = &DP_COST_RATE_DEFAULT;
  for (uint32_t i = 0; m && i < m->n; i++) {
    if (m->rates[i].device_type == device_type) return &m->rates[i];
    if (m->rates[i].device_type == 0) any = &m->rates[i];
  }
  return any;
}

/* Visits the tensors of t (tuples flattened, no recursion: types nest as
   deep as written) with f; *unknown set when a part is neither a tensor
   nor a tuple, or a dimension is unknown (counted as 1). */
static double sum_tensors(const dp_type *t, int *unknown,
                          double (*f)(const dp_tensor_type *, int *)) {
  const dp_type *small[16], **stack = small;
  uint32_t n = 0, cap = 16;
  double sum = 0;
  if (!t) {
    *unknown = 1;
    return 0;
  }
  stack[n++] = t;
  while (n > 0) {
    const dp_type *x = stack[--n];
    if (x->h.kind == DP_TY_TENSOR) {
      sum += f((const dp_tensor_type *)x, unknown);
    } else if (x->h.kind == DP_TY_TUPLE) {
      const dp_tuple_type *tt = (const dp_tuple_type *)x;
      if (n + tt->n > cap) {
        uint32_t c = stack == small ? 0 : cap;
        const dp_type **bigger = stack == small ? NULL : stack;
        if (dp_grow((void **)&bigger, &c, n + tt->n, sizeof *bigger) < 0) {
          *unknown = 1; /* (out of memory: what was counted stands) */
          break;
        }
        if (stack == small) memcpy(bigger, small, n * sizeof *small);
        stack = bigger;
        cap = c;
      }
      for (uint32_t i = tt->n; i-- > 0;) stack[n++] = tt->fields[i];
    } else {
      *unknown = 1;
    }
  }
  if (stack != small) free(stack);
  return sum;
}

static double tensor_elems(const dp_tensor_type *tt, int *unknown) {
  double n = 1;
  for (uint32_t i = 0; i < tt->ndim; i++) {
    if (tt->dims[i] < 0) *unknown = 1;
    else n *= (double)tt->dims[i];
  }
  return n;
}

static double tensor_bytes(const dp_tensor_type *tt, int *unknown) {
  return tensor_elems(tt, unknown) * (double)dp_dtype_bytes(tt->dtype);
}

/* Elements of a tensor type (unknown dimensions count 1); tuples sum. */
static double elems(const dp_type *t, int *unknown) {
  return sum_tensors(t, unknown, tensor_elems);
}

double dp_sched_type_bytes(const dp_type *t, int *unknown) {
  return sum_tensors(t, unknown, tensor_bytes);
}

static const dp_tensor_type *tensor(const dp_expr *e) {
  return e && e->type && e->type->h.kind == DP_TY_TENSOR ? (const dp_tensor_type *)e->type : NULL;
}

static double dim(const dp_tensor_type *t, int64_t i) {
  if (!t || i < 0 || (uint64_t)i >= t->ndim || t->dims[i] < 1) return 1;
  return (double)t->dims[i];
}

/* The position of letter c in the layout attribute `key` of the call (its
   default when not written), or dflt. */
static int64_t layout_pos(const dp_call *c, const char *key, char ch, int64_t dflt) {
  const dp_op *op = (const dp_op *)c->fn;
  const dp_aval *v = dp_op_attr(op, c->attrs, key);
  if (!v || v->kind != DP_AV_STR || !v->u.s) return dflt;
  const char *p = strchr(v->u.s, ch);
  return p ? p - v->u.s : dflt;
}

static double prod_ints(const dp_call *c, const char *key) {
  const dp_aval *v = dp_op_attr((const dp_op *)c->fn, c->attrs, key);
  double n = 1;
  if (v && v->kind == DP_AV_LIST)
    for (uint32_t i = 0; i < v->n; i++)
      if (v->u.items[i].kind == DP_AV_INT && v->u.items[i].u.i > 0) n *= (double)v->u.items[i].u.i;
  if (v && v->kind == DP_AV_INT && v->u.i > 0) n = (double)v->u.i;
  return n;
}

static int starts(const char *name, const char *prefix) {
  return strncmp(name, prefix, strlen(prefix)) == 0;
}

/* Flops of one operator call. */
static double op_flops(const dp_call *c) {
  const char *name = ((const dp_op *)c->fn)->name;
  int u = 0;
  double out = elems(c->e.type, &u);
  if (out < 1) out = 1;
  const dp_tensor_type *x = c->nargs > 0 ? tensor(c->args[0]) : NULL;
  const dp_tensor_type *w = c->nargs > 1 ? tensor(c->args[1]) : NULL;
  if (starts(name, "nn.conv") && strstr(name, "transpose") && w) {
    int u2 = 0;
    double in = x ? elems(&x->t, &u2) : out, wn = elems(&w->t, &u2);
    double ci = dim(w, layout_pos(c, "kernel_layout", 'I', 0));
    return 2 * (in < 1 ? 1 : in) * wn / ci;
  }
  if (starts(name, "nn.conv") && w) {
    int u2 = 0;
    double wn = elems(&w->t, &u2);
    double co = dim(w, layout_pos(c, "kernel_layout", 'O', 0));
    return 2 * out * wn / co;
  }
  if ((strcmp(name, "nn.dense") == 0 || strcmp(name, "nn.matmul") == 0 ||
       strcmp(name, "nn.batch_matmul") == 0) && x)
    return 2 * out * dim(x, (int64_t)x->ndim - 1);
  if (strstr(name, "global_") && strstr(name, "pool") && x) {
    int u2 = 0;
    double in = elems(&x->t, &u2);
    return in < 1 ? 1 : in;
  }
  if (strstr(name, "pool")) return out * prod_ints(c, "pool_size");
  return out;
}

typedef struct fsum { double flops; } fsum;

static int sum_post(void *ud, dp_expr *e) {
  fsum *s = ud;
  if (e->h.kind == DP_CALL && ((dp_call *)e)->fn->h.kind == DP_OP) s->flops += op_flops((dp_call *)e);
  return 0;
}

double dp_call_flops(const dp_expr *call) {
  if (!call || call->h.kind != DP_CALL) return 0;
  const dp_call *c = (const dp_call *)call;
  if (c->fn->h.kind == DP_OP) return op_flops(c);
  if (c->fn->h.kind == DP_FUNC) { /* a fused kernel: its body */
    fsum s = {0};
    dp_visitor v = {NULL, sum_post, &s};
    dp_visit(((dp_func *)c->fn)->body, &v);
    return s.flops > 0 ? s.flops : 1;
  }
  int u = 0;
  double out = elems(call->type, &u);
  return out < 1 ? 1 : out;
}

double dp_call_bytes(const dp_expr *call) {
  if (!call || call->h.kind != DP_CALL) return 0;
  const dp_call *c = (const dp_call *)call;
  int u = 0;
  double n = dp_sched_type_bytes(call->type, &u);
  for (uint32_t i = 0; i < c->nargs; i++) {
    const dp_type *t = c->args[i]->type;
    if (t && (t->h.kind == DP_TY_TENSOR || t->h.kind == DP_TY_TUPLE)) n += dp_sched_type_bytes(t, &u);
  }
  return n;
}

double dp_cost_model_seconds(const dp_cost_model *m, const dp_expr *call, int device_type) {
  const dp_cost_rate *r = dp_cost_rate_of(m, device_type);
  return r->overhead + dp_call_flops(call) / r->flops_per_second +
         dp_call_bytes(call) / r->bytes_per_second;
}
