/*
 * Attribute values and immutable attribute sets.
 *
 * A value owns what it holds (string, list items, a retained virtual
 * device or constant expression). A set copies its keys into its own
 * allocation and takes the values over. Lists nest only as deep as a user
 * writes them (never with the IR's depth), so list helpers recurse.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "textbuf.h"
#include "print_internal.h"
#include "devplan/attrs.h"
#include "devplan/expr.h"
#include "devplan/device.h"

dp_aval dp_av_none(void) { return (dp_aval){.kind = DP_AV_NONE}; }
dp_aval dp_av_bool(int b) { return (dp_aval){.kind = DP_AV_BOOL, .u.i = b != 0}; }
dp_aval dp_av_int(int64_t i) { return (dp_aval){.kind = DP_AV_INT, .u.i = i}; }

dp_aval dp_av_float(double f, dp_dtype suffix) {
  return (dp_aval){.kind = DP_AV_FLOAT, .dtype = suffix, .u.f = f};
}

/* Out of memory gives a value of kind 0, which every consumer rejects. */
dp_aval dp_av_string(const char *s) {
  dp_aval v = {.kind = DP_AV_STR};
  v.u.s = dp_strdup(s);
  if (!v.u.s) v.kind = 0;
  return v;
}

dp_aval dp_av_vdev(struct dp_vdev *vd) {
  return (dp_aval){.kind = DP_AV_VDEV, .u.vdev = dp_retain(vd)};
}

dp_aval dp_av_expr(struct dp_expr *e) {
  return (dp_aval){.kind = DP_AV_EXPR, .u.expr = dp_retain(e)};
}

dp_aval dp_av_list(uint32_t n, dp_aval *items) {
  return (dp_aval){.kind = DP_AV_LIST, .n = n, .u.items = items};
}

dp_aval dp_av_copy(const dp_aval *v) {
  dp_aval c = *v;
  switch (v->kind) {
  case DP_AV_STR: return dp_av_string(v->u.s);
  case DP_AV_VDEV: dp_retain(v->u.vdev); break;
  case DP_AV_EXPR: dp_retain(v->u.expr); break;
  case DP_AV_LIST:
    c.u.items = dp_calloc(v->n, sizeof *c.u.items);
    if (!c.u.items) return (dp_aval){0};
    for (uint32_t i = 0; i < v->n; i++) {
      c.u.items[i] = dp_av_copy(&v->u.items[i]);
      if (!c.u.items[i].kind && v->u.items[i].kind) {
        c.n = i;
        dp_av_clear(&c);
        return (dp_aval){0};
      }
    }
    break;
  default: break;
  }
  return c;
}

/* Clears v, releasing held objects through wl when given (inside a free
   function) or directly otherwise. */
static void av_clear(dp_aval *v, dp_worklist *wl) {
  switch (v->kind) {
  case DP_AV_STR: free(v->u.s); break;
  case DP_AV_LIST:
    for (uint32_t i = 0; i < v->n; i++) av_clear(&v->u.items[i], wl);
    free(v->u.items);
    break;
  case DP_AV_VDEV:
  case DP_AV_EXPR:
    if (wl) dp_release_deferred(wl, v->u.vdev);
    else dp_release(v->u.vdev);
    break;
  default: break;
  }
  memset(v, 0, sizeof *v);
  v->kind = DP_AV_NONE;
}

void dp_av_clear(dp_aval *v) { av_clear(v, NULL); }

/* Scalar constants compare by value; other expressions by identity. */
static int const_equal(const dp_expr *a, const dp_expr *b) {
  if (a == b) return 1;
  if (!a || !b || a->h.kind != DP_CONST || b->h.kind != DP_CONST) return 0;
  const dp_const *x = (const dp_const *)a, *y = (const dp_const *)b;
  return x->dtype == y->dtype && x->ndim == y->ndim && x->nbytes == y->nbytes &&
         (x->ndim == 0 || memcmp(x->shape, y->shape, x->ndim * sizeof *x->shape) == 0) &&
         memcmp(x->data, y->data, x->nbytes) == 0;
}

/* Floats compare by value: the suffix only records how it was written. */
int dp_av_equal(const dp_aval *a, const dp_aval *b) {
  if (a->kind != b->kind) return 0;
  switch (a->kind) {
  case DP_AV_NONE: return 1;
  case DP_AV_BOOL:
  case DP_AV_INT: return a->u.i == b->u.i;
  case DP_AV_FLOAT: return a->u.f == b->u.f || (isnan(a->u.f) && isnan(b->u.f));
  case DP_AV_STR: return strcmp(a->u.s, b->u.s) == 0;
  case DP_AV_VDEV: return a->u.vdev == b->u.vdev; /* interned */
  case DP_AV_EXPR: return const_equal(a->u.expr, b->u.expr);
  case DP_AV_LIST:
    if (a->n != b->n) return 0;
    for (uint32_t i = 0; i < a->n; i++)
      if (!dp_av_equal(&a->u.items[i], &b->u.items[i])) return 0;
    return 1;
  default: return 0;
  }
}

/* ---------------- text ---------------- */

static int put_av(dp__tb *b, const dp_aval *v) {
  switch (v->kind) {
  case DP_AV_NONE: dp__tb_puts(b, "None"); return 0;
  case DP_AV_BOOL: dp__tb_puts(b, v->u.i ? "True" : "False"); return 0;
  case DP_AV_INT: dp__put_int(b, v->u.i, v->dtype); return 0;
  case DP_AV_FLOAT: dp__put_real(b, v->u.f, v->dtype, 0); return 0;
  case DP_AV_STR: dp__tb_put_quoted(b, v->u.s); return 0;
  case DP_AV_LIST:
    dp__tb_putc(b, '[');
    for (uint32_t i = 0; i < v->n; i++) {
      if (i) dp__tb_puts(b, ", ");
      if (put_av(b, &v->u.items[i]) < 0) return -1;
    }
    dp__tb_putc(b, ']');
    return 0;
  case DP_AV_VDEV: {
    char *s = dp_vdev_str(v->u.vdev);
    if (!s) return -1;
    dp__tb_puts(b, s);
    free(s);
    return 0;
  }
  case DP_AV_EXPR:
    if (!v->u.expr || v->u.expr->h.kind != DP_CONST) return -1;
    dp__put_const(b, (const dp_const *)v->u.expr);
    return 0;
  default: return -1;
  }
}

/* NULL on out of memory. */
char *dp_av_str(const dp_aval *v) {
  dp__tb b;
  dp__tb_init(&b);
  if (put_av(&b, v) < 0) {
    dp__tb_free(&b);
    return NULL;
  }
  return dp__tb_take(&b);
}

/* ---------------- attribute sets ---------------- */

/* Takes the values over even on failure (they are cleared then), so the
   caller never has to clean up after an error. */
dp_attrs *dp_attrs_make(uint32_t n, dp_attr *items, dp_err **err) {
  size_t keybytes = 0;
  for (uint32_t i = 0; i < n; i++) {
    const char *k = items[i].key ? items[i].key : "";
    keybytes += strlen(k) + 1;
    for (uint32_t j = 0; j < i; j++) {
      if (strcmp(k, items[j].key ? items[j].key : "") == 0) {
        dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "duplicate attribute '%s'", k));
        goto fail;
      }
    }
    if (items[i].val.kind == 0) { /* what a value constructor gives on out of memory */
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      goto fail;
    }
    if (items[i].val.kind < DP_AV_NONE || items[i].val.kind > DP_AV_EXPR) {
      dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "bad value for attribute '%s'", k));
      goto fail;
    }
  }
  dp_attrs *a = dp_malloc(sizeof *a + n * sizeof(dp_attr) + keybytes);
  if (!a) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    goto fail;
  }
  a->h = (dp_obj){.rc = 1, .type = DP_OBJ_ATTRS};
  a->n = n;
  char *keys = (char *)(a->items + n);
  for (uint32_t i = 0; i < n; i++) {
    const char *k = items[i].key ? items[i].key : "";
    size_t len = strlen(k) + 1;
    memcpy(keys, k, len);
    a->items[i].key = keys;
    a->items[i].val = items[i].val;
    keys += len;
  }
  return a;
fail:
  for (uint32_t i = 0; i < n; i++) dp_av_clear(&items[i].val);
  return NULL;
}

const dp_aval *dp_attrs_get(const dp_attrs *a, const char *key) {
  if (!a || !key) return NULL;
  for (uint32_t i = 0; i < a->n; i++)
    if (strcmp(a->items[i].key, key) == 0) return &a->items[i].val;
  return NULL;
}

void dp__attrs_free_fn(dp_obj *o, dp_worklist *wl) {
  dp_attrs *a = (dp_attrs *)o;
  for (uint32_t i = 0; i < a->n; i++) av_clear(&a->items[i].val, wl);
  free(a);
}
