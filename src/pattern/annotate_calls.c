/*
 * AnnotateVirtualDevices' rewrite (annotate.h): the calls a rule places
 * wrapped in on_device(call, virtual_device=vd), in one C walk of the
 * module. The rules are the caller's (Lua functions): only the calls they
 * may annotate reach them. The calls earlier annotations decided are found
 * first, in one C walk too (what "already placed" means: annotate.h).
 * Rebuilt nodes keep their original's type, so the annotated module needs
 * no inference again.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "devplan/annotate.h"
#include "devplan/visit.h"

#define NCACHE 8

typedef struct rctx {
  const dp_annot_hooks *h;
  dp_op *on_device;
  dp__ptrmap placed, fixed;  /* node -> (nothing): sets */
  struct { dp_vdev *vd; dp_attrs *attrs; } cache[NCACHE]; /* device -> on_device's attributes */
  uint32_t ncache;
  dp_expr **later;
  uint32_t nlater, caplater;
  int untyped;
  dp_err **err;
} rctx;

static dp_err *oom(void) { return dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"); }

static int has_device(const dp_aval *v) {
  return v && v->kind == DP_AV_VDEV && v->u.vdev && !dp_vdev_is_fully_unconstrained(v->u.vdev);
}

/* A boolean attribute as Lua reads it: 1 true, 0 false, -1 anything else. */
static int truth(const dp_aval *v) {
  if (!v) return -1;
  if (v->kind == DP_AV_BOOL) return v->u.i != 0;
  return -1;
}

/* The memory and VM dialect: its operators' arguments have rules of their own. */
static int dialect(const char *name) {
  return !strcmp(name, "call_lowered") || !strncmp(name, "memory.", 7) || !strncmp(name, "vm.", 3);
}

/* Post order over every node: marks the calls already placed. */
static int mark(void *ud, dp_expr *e) {
  rctx *c = ud;
  if (e->h.kind != DP_CALL || ((dp_call *)e)->fn->h.kind != DP_OP) return 0;
  dp_call *call = (dp_call *)e;
  const dp_op *op = (const dp_op *)call->fn;
  if (!strcmp(op->name, "on_device")) {
    if (!has_device(dp_op_attr(op, call->attrs, "virtual_device"))) return 0;
    if (truth(dp_op_attr(op, call->attrs, "constrain_body")) != 0 && call->nargs > 0 &&
        call->args[0]->h.kind == DP_CALL && !dp__ptrmap_insert(&c->placed, call->args[0], NULL))
      return -1;
    if (truth(dp_op_attr(op, call->attrs, "constrain_result")) == 1 && !dp__ptrmap_insert(&c->fixed, e, NULL))
      return -1;
  } else if (!strcmp(op->name, "device_copy")) {
    if (has_device(dp_op_attr(op, call->attrs, "dst_virtual_device")) && !dp__ptrmap_insert(&c->fixed, e, NULL))
      return -1;
  } else if (!dialect(op->name) && c->fixed.n) {
    for (uint32_t i = 0; i < call->nargs; i++) {
      if (dp__ptrmap_find(&c->fixed, call->args[i])) {
        if (!dp__ptrmap_insert(&c->placed, e, NULL) || !dp__ptrmap_insert(&c->fixed, e, NULL)) return -1;
        break;
      }
    }
  }
  return 0;
}

static dp_attrs *attrs_on(rctx *c, dp_vdev *vd, double soft) {
  if (soft >= 0) { /* (a soft annotation: its weight makes it its own) */
    dp_attr two[2] = {{(char *)"virtual_device", dp_av_vdev(vd)}, {(char *)"soft", dp_av_float(soft, 0)}};
    return dp_op_attrs(c->on_device, 2, two, c->err);
  }
  for (uint32_t i = 0; i < c->ncache; i++)
    if (c->cache[i].vd == vd) return dp_retain(c->cache[i].attrs);
  dp_attr one[1] = {{(char *)"virtual_device", dp_av_vdev(vd)}};
  dp_attrs *a = dp_op_attrs(c->on_device, 1, one, c->err);
  if (a && c->ncache < NCACHE) {
    c->cache[c->ncache].vd = dp_retain(vd);
    c->cache[c->ncache++].attrs = dp_retain(a);
  }
  return a;
}

static int keeps_unit(const dp_expr *e) {
  if (e->h.kind != DP_FUNC) return 0;
  const dp_attrs *a = ((const dp_func *)e)->attrs;
  return a && (dp_attrs_get(a, "Composite") || dp_attrs_get(a, "Primitive"));
}

static dp_expr *pre(void *ud, dp_expr *orig, dp_err **err) {
  rctx *c = ud;
  if (!keeps_unit(orig)) return NULL;
  int r = c->h->unit ? c->h->unit(c->h->ud, (dp_func *)orig, err) : DP_ANNOT_KEEP;
  if (r < 0) {
    if (!*err) *err = dp_err_new(DP_ERR_CALLBACK, orig->span, "AnnotateVirtualDevices: callback failed");
    return NULL;
  }
  return r == DP_ANNOT_KEEP ? dp_retain(orig) : NULL;
}

static dp_expr *post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  rctx *c = ud;
  if (rebuilt != orig && !rebuilt->type) {
    if (orig->type) rebuilt->type = dp_retain(orig->type);
    else c->untyped = 1;
  }
  if (orig->h.kind != DP_CALL || dp__ptrmap_find(&c->placed, orig)) return dp_retain(rebuilt);
  dp_vdev *vd = NULL;
  double soft = -1;
  int r = c->h->call(c->h->ud, (dp_call *)orig, &vd, &soft, err);
  if (r < 0) {
    if (!*err) *err = dp_err_new(DP_ERR_CALLBACK, orig->span, "AnnotateVirtualDevices: callback failed");
    return NULL;
  }
  if (r == DP_ANNOT_LATER) {
    if (dp_grow((void **)&c->later, &c->caplater, c->nlater + 1, sizeof *c->later) < 0) {
      *err = oom();
      return NULL;
    }
    c->later[c->nlater++] = dp_retain(rebuilt);
  }
  if (r != DP_ANNOT_DEVICE) return dp_retain(rebuilt);
  c->err = err;
  dp_attrs *a = attrs_on(c, vd, soft);
  dp_release(vd);
  if (!a) return NULL;
  dp_call *w = dp_call_new(&c->on_device->e, 1, &rebuilt, a, DP_NOSPAN);
  dp_release(a);
  if (!w) {
    *err = oom();
    return NULL;
  }
  if (rebuilt->type) w->e.type = dp_retain(rebuilt->type);
  else c->untyped = 1;
  return &w->e;
}

void dp_annot_result_clear(dp_annot_result *r) {
  if (!r) return;
  dp_release(r->mod);
  for (uint32_t i = 0; i < r->nlater; i++) dp_release(r->later[i]);
  free(r->later);
  memset(r, 0, sizeof *r);
}

/* The calls already placed: every function walked, post order. */
static int mark_module(rctx *c, dp_module *m, dp_err **err) {
  dp_visitor v = {NULL, mark, c};
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    if (dp_visit(&m->funcs[i].fn->e, &v) < 0) {
      dp_err_set(err, oom());
      return -1;
    }
  }
  return 0;
}

int dp_annotate_placed(dp_module *m, dp_expr ***out, uint32_t *n, dp_err **err) {
  rctx c;
  memset(&c, 0, sizeof c);
  *out = NULL;
  *n = 0;
  int rc = mark_module(&c, m, err);
  if (rc == 0) {
    *out = dp_malloc((c.placed.n ? c.placed.n : 1) * sizeof **out);
    if (!*out) {
      dp_err_set(err, oom());
      rc = -1;
    }
    for (uint32_t i = 0; rc == 0 && i < c.placed.cap; i++)
      if (c.placed.slots[i].key) (*out)[(*n)++] = (dp_expr *)c.placed.slots[i].key;
  }
  dp__ptrmap_free(&c.placed);
  dp__ptrmap_free(&c.fixed);
  return rc;
}

int dp_annotate_calls(dp_module *m, const dp_annot_hooks *h, dp_annot_result *out, dp_err **err) {
  memset(out, 0, sizeof *out);
  rctx c;
  memset(&c, 0, sizeof c);
  c.h = h;
  c.err = err;
  c.on_device = dp_op_get(m->ctx, "on_device");
  dp_module *nm = NULL;
  int rc = -1;
  if (!c.on_device) {
    dp_err_set(err, dp_err_new(DP_ERR_GENERIC, DP_NOSPAN, "AnnotateVirtualDevices: no operator on_device"));
    goto out;
  }
  if (mark_module(&c, m, err) < 0) goto out;
  if (!(nm = dp_module_copy(m))) {
    dp_err_set(err, oom());
    goto out;
  }
  dp_rewriter rw = {pre, post, &c};
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    dp_err *e = NULL;
    dp_expr *r = dp_rewrite(&m->funcs[i].fn->e, &rw, &e);
    if (!r) {
      dp_err_set(err, e ? e : oom());
      goto out;
    }
    if (r != &m->funcs[i].fn->e && dp_module_set_func(nm, m->funcs[i].global->name, (dp_func *)r, err) < 0) {
      dp_release(r);
      goto out;
    }
    dp_release(r);
  }
  out->mod = nm;
  out->later = c.later;
  out->nlater = c.nlater;
  out->untyped = c.untyped;
  nm = NULL;
  c.later = NULL;
  c.nlater = 0;
  rc = 0;
out:
  dp_release(nm);
  for (uint32_t i = 0; i < c.nlater; i++) dp_release(c.later[i]);
  free(c.later);
  for (uint32_t i = 0; i < c.ncache; i++) {
    dp_release(c.cache[i].vd);
    dp_release(c.cache[i].attrs);
  }
  dp__ptrmap_free(&c.placed);
  dp__ptrmap_free(&c.fixed);
  return rc;
}
