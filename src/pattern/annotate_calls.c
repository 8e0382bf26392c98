/*
 * AnnotateVirtualDevices' rewrite (annotate.h): the calls a rule places
 * wrapped in on_device(call, virtual_device=vd), in one C walk of the
 * module. The rules are the caller's (Lua functions): only the calls they
 * may annotate reach them. The calls earlier annotations decided are found
 * first, in one C walk too (what "already placed" means: annotate.h).
 * Rebuilt nodes keep their original's type, so the annotated module needs
 * no inference again.
 *
 * Both walks are dp_visit's and dp_rewrite's (post order, children in
 * expr.h order, a node with other references once), with explicit stacks
 * (one array of frames for both), and what they meet again or look up
 * (a shared node, a placed or fixed call and its rewrite) in one table of
 * records found by the node's mark (dp_expr.mark: the record's index,
 * checked against the record, as index.c does) instead of pointer maps: a
 * lookup was a hash probe per call, the walk's map of shared nodes another
 * per edge to a parameter. The rebuilt calls and lets and the new
 * on_device calls are made in a node arena (arena.h; a malloc each before),
 * which also puts fewer bytes on fresh pages.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "../core/arena.h"
#include "devplan/annotate.h"
#include "devplan/visit.h"

#define NCACHE 8
#define NOPS 4

/* What the walks know of a node they meet again or look up. */
enum { R_SEEN = 1, R_PLACED = 2, R_FIXED = 4, R_DONE = 8, R_OUTER = 16 };
typedef struct arec {
  dp_expr *e;
  dp_expr *out;     /* its rewrite (owned), when R_DONE in this function's walk */
  uint32_t walk;    /* the function whose walk rewrote it (each function is rewritten afresh) */
  uint8_t flags;    /* R_SEEN: met by the scan; R_PLACED, R_FIXED; R_DONE: rewritten;
                       R_OUTER: flagged F_REC already, by a run this one is nested in */
} arec;

/* dp_obj.flags of a node with a record, while the pass runs (cleared at its
   end). A rule may run anything, a pass that numbers the module's nodes by
   their marks too: a node so flagged whose mark no longer names its record
   is found through a pointer map of the records, made then. A rule may also
   run this pass on the same module: the nested run leaves the flag on the
   nodes it found flagged (R_OUTER), whose records are the outer run's.
   (Other bits: arena.h's 0x2000, inference's 0x8000 and 0x4000.) */
#define F_REC 0x1000u

/* What an operator is to the scan. */
enum { OP_OTHER = 0, OP_ON_DEVICE, OP_COPY, OP_DIALECT };

typedef struct frame {
  dp_expr *e;
  uint32_t i, n;    /* next child; children walked, | FR_SHARED */
} frame;

/* frame.n's top bit: the node had other references when the rewrite
   reached it (read then: the rewrite's own references, the rebuilt node's
   and a wrapper's, are not the module's), so its rewrite is remembered. */
#define FR_SHARED 0x80000000u

typedef struct stack {
  frame *f;
  uint32_t sp, cap;
} stack;

typedef struct rctx {
  const dp_annot_hooks *h;
  dp_op *on_device;
  arec *recs;        /* found by mark (or through lost, once a mark was lost) */
  uint32_t nrecs, caprecs, nfixed, walk;
  dp__ptrmap lost;   /* node -> record + 1, made when a mark was overwritten */
  int oom;           /* that map could not be made */
  struct { const dp_op *op; int kind; } ops[NOPS]; /* the operators met last, what they are */
  uint32_t nextop;
  dp_module *mod;
  stack st;          /* the rewrite's stack */
  stack sst;         /* the scan's (made when the rewrite needs the scan: below) */
  int scanned;       /* the scan of the whole module has run */
  dp_expr **res;     /* the rewrite's results: rewritten children awaiting their parent (owned) */
  uint32_t nres, capres;
  dp__arena arena;   /* the rewrite's new calls and lets */
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

/* What operator op is (its name read while it stays among the last few met). */
static int op_kind(rctx *c, const dp_op *op) {
  for (uint32_t i = 0; i < NOPS; i++)
    if (c->ops[i].op == op) return c->ops[i].kind;
  int kind = !strcmp(op->name, "on_device") ? OP_ON_DEVICE : !strcmp(op->name, "device_copy") ? OP_COPY
           : dialect(op->name) ? OP_DIALECT : OP_OTHER;
  uint32_t i = c->nextop++ % NOPS;
  c->ops[i].op = op;
  c->ops[i].kind = kind;
  return kind;
}

/* e's record when its mark was overwritten (by a pass a rule ran). */
static arec *rec_lost(rctx *c, dp_expr *e) {
  if (!c->lost.cap) {
    for (uint32_t i = 0; i < c->nrecs; i++)
      if (dp__ptrmap_put(&c->lost, c->recs[i].e, (void *)(uintptr_t)(i + 1)) < 0) {
        c->oom = 1;
        return NULL;
      }
  }
  dp__ptrslot *s = dp__ptrmap_find(&c->lost, e);
  if (!s) return NULL;
  e->mark = (uint32_t)((uintptr_t)s->ptr - 1);
  return &c->recs[e->mark];
}

/* e's record, or NULL. */
static arec *rec_of(rctx *c, dp_expr *e) {
  if (!(e->h.flags & F_REC)) return NULL;
  uint32_t m = e->mark;
  return m < c->nrecs && c->recs[m].e == e ? &c->recs[m] : rec_lost(c, e);
}

/* e's record, made when new (NULL: out of memory). */
static arec *rec_make(rctx *c, dp_expr *e) {
  arec *r = rec_of(c, e);
  if (r || c->oom) return r;
  if (c->nrecs == c->caprecs && dp_grow8((void **)&c->recs, &c->caprecs, c->nrecs + 1, sizeof *c->recs) < 0)
    return NULL;
  if (c->lost.cap && dp__ptrmap_put(&c->lost, e, (void *)(uintptr_t)(c->nrecs + 1)) < 0) return NULL;
  uint8_t outer = e->h.flags & F_REC ? R_OUTER : 0; /* (flagged, but not ours) */
  e->mark = c->nrecs;
  e->h.flags |= F_REC;
  c->recs[c->nrecs] = (arec){e, NULL, 0, outer};
  return &c->recs[c->nrecs++];
}

static int flag_node(rctx *c, dp_expr *e, uint8_t flags) {
  arec *r = rec_make(c, e);
  if (!r) return -1;
  if ((flags & R_FIXED) && !(r->flags & R_FIXED)) c->nfixed++;
  r->flags |= flags;
  return 0;
}

/* Child i of e (calls read here, the rest by expr.c: most nodes are calls). */
static dp_expr *child_of(const dp_expr *e, uint32_t i) {
  if (e->h.kind == DP_CALL) return i ? ((const dp_call *)e)->args[i - 1] : ((const dp_call *)e)->fn;
  return dp_expr_child(e, i);
}

static uint32_t nchildren(const dp_expr *e) {
  return e->h.kind == DP_CALL ? 1 + ((const dp_call *)e)->nargs : dp_expr_nchildren(e);
}

static int push_frame(stack *s, dp_expr *e, uint32_t n) {
  if (s->sp == s->cap && dp_grow8((void **)&s->f, &s->cap, s->sp + 1, sizeof *s->f) < 0) return -1;
  s->f[s->sp++] = (frame){e, 0, n};
  return 0;
}

/* ---------------- the scan: the calls already placed ---------------- */

/* The body of on_device call e, when e places it (on a device, constraining
   its body) and it is a call: flagged placed. */
static int place_body(rctx *c, dp_call *call, const dp_op *op) {
  if (!has_device(dp_op_attr(op, call->attrs, "virtual_device"))) return 0;
  if (truth(dp_op_attr(op, call->attrs, "constrain_body")) != 0 && call->nargs > 0 &&
      call->args[0]->h.kind == DP_CALL && flag_node(c, call->args[0], R_PLACED) < 0)
    return -1;
  return 0;
}

/* A call whose device is fixed (an on_device constraining its result, a
   device_copy) or that reads one (then placed too) is flagged: what its
   own subexpression says, read when its arguments are done. `body`: the
   on_device's body too (the scan; the rewrite flags it before it walks
   the body, place_body). */
static int scan_node(rctx *c, dp_expr *e, int body) {
  if (e->h.kind != DP_CALL || ((dp_call *)e)->fn->h.kind != DP_OP) return 0;
  dp_call *call = (dp_call *)e;
  const dp_op *op = (const dp_op *)call->fn;
  int kind = op_kind(c, op);
  if (kind == OP_ON_DEVICE) {
    if (body && place_body(c, call, op) < 0) return -1;
    if (truth(dp_op_attr(op, call->attrs, "constrain_result")) == 1 &&
        has_device(dp_op_attr(op, call->attrs, "virtual_device")) && flag_node(c, e, R_FIXED) < 0)
      return -1;
  } else if (kind == OP_COPY) {
    if (has_device(dp_op_attr(op, call->attrs, "dst_virtual_device")) && flag_node(c, e, R_FIXED) < 0) return -1;
  } else if (kind == OP_OTHER && c->nfixed) {
    for (uint32_t i = 0; i < call->nargs; i++) {
      const arec *r = rec_of(c, call->args[i]);
      if (r && (r->flags & R_FIXED)) return flag_node(c, e, R_PLACED | R_FIXED);
    }
  }
  return 0;
}

/* First reach of e: 0 already met, 1 pushed, -1 out of memory. */
static int scan_reach(rctx *c, dp_expr *e) {
  uint32_t n = nchildren(e);
  if (n == 0) return 0; /* (a leaf: a parameter, a constant, an operator: nothing to flag) */
  if (e->h.rc > 1) {
    arec *r = rec_make(c, e);
    if (!r) return -1;
    if (r->flags & R_SEEN) return 0;
    r->flags |= R_SEEN;
  }
  return push_frame(&c->sst, e, n) < 0 ? -1 : 1;
}

/* The calls already placed: every function walked, post order (its own
   stack: the rewrite may be halfway through its walk). */
static int scan_module(rctx *c, dp_module *m, dp_err **err) {
  c->scanned = 1;
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    c->sst.sp = 0;
    int rc = scan_reach(c, &m->funcs[i].fn->e);
    while (rc >= 0 && c->sst.sp) {
      frame *f = &c->sst.f[c->sst.sp - 1];
      if (f->i < f->n) {
        rc = scan_reach(c, child_of(f->e, f->i++));
      } else {
        c->sst.sp--;
        rc = scan_node(c, f->e, 1);
      }
    }
    if (rc < 0) {
      dp_err_set(err, oom());
      return -1;
    }
  }
  return 0;
}

/* ---------------- the rewrite ---------------- */

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

/* A Composite or Primitive literal the caller keeps whole: itself (new
   reference); NULL to walk it (or with *err set: stop). */
static dp_expr *pre(rctx *c, dp_expr *orig, dp_err **err) {
  if (!keeps_unit(orig)) return NULL;
  int r = c->h->unit ? c->h->unit(c->h->ud, (dp_func *)orig, err) : DP_ANNOT_KEEP;
  if (r < 0) {
    if (!*err) *err = dp_err_new(DP_ERR_CALLBACK, orig->span, "AnnotateVirtualDevices: callback failed");
    return NULL;
  }
  return r == DP_ANNOT_KEEP ? dp_retain(orig) : NULL;
}

/* orig rebuilt from its rewritten children (rebuilt, new reference):
   what replaces it (new reference), the call wrapped when a rule places
   it; NULL with *err set on failure. */
static dp_expr *post(rctx *c, dp_expr *orig, int shared, dp_expr *rebuilt, dp_err **err) {
  if (rebuilt != orig && !rebuilt->type) {
    if (orig->type) rebuilt->type = dp_retain(orig->type);
    else c->untyped = 1;
  }
  if (orig->h.kind != DP_CALL) return dp_retain(rebuilt);
  /* Is it placed already? What its own subexpression says is known now
     (scan_node); an on_device above it flagged it when the walk passed
     (rw_reach) if it has no other parent. A shared call may have another
     one anywhere, walked later or never (in a Composite function): before
     a rule is asked about one, the whole module is scanned, once. */
  if (scan_node(c, orig, 0) < 0 || (shared && !c->scanned && scan_module(c, c->mod, err) < 0)) {
    if (!*err) *err = oom();
    return NULL;
  }
  const arec *placed = rec_of(c, orig);
  if (c->oom) return *err = oom(), NULL;
  if (placed && (placed->flags & R_PLACED)) return dp_retain(rebuilt);
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
  dp_call *w = dp__call_new_in(&c->arena, &c->on_device->e, 1, &rebuilt, a, DP_NOSPAN);
  dp_release(a);
  if (!w) {
    *err = oom();
    return NULL;
  }
  if (rebuilt->type) w->e.type = dp_retain(rebuilt->type);
  else c->untyped = 1;
  return &w->e;
}

/* Hands r (owned) to the parent through the results. */
static int push_result(rctx *c, dp_expr *r) {
  if (c->nres == c->capres && dp_grow8((void **)&c->res, &c->capres, c->nres + 1, sizeof *c->res) < 0) {
    dp_release(r);
    return -1;
  }
  c->res[c->nres++] = r;
  return 0;
}

/* e is done with replacement r (owned): remembered when e is shared. */
static int rw_finish(rctx *c, dp_expr *e, int shared, dp_expr *r) {
  if (shared) {
    arec *m = rec_make(c, e);
    if (!m) {
      dp_release(r);
      return -1;
    }
    dp_release(m->out); /* (another function's) */
    m->out = dp_retain(r);
    m->walk = c->walk;
    m->flags |= R_DONE;
  }
  return push_result(c, r);
}

static int rw_reach(rctx *c, dp_expr *e, dp_err **err) {
  uint32_t n = nchildren(e);
  if (n == 0) return push_result(c, dp_retain(e)); /* (a leaf is itself: no rule, no unit) */
  int shared = e->h.rc > 1;
  if (shared) {
    const arec *m = rec_of(c, e);
    if (c->oom) return *err = oom(), -1;
    if (m && (m->flags & R_DONE) && m->walk == c->walk) return push_result(c, dp_retain(m->out));
  }
  dp_expr *r = pre(c, e, err);
  if (r) return rw_finish(c, e, shared, r);
  if (*err) return -1;
  /* an on_device placing its body: the body is flagged before it is walked */
  if (e->h.kind == DP_CALL && ((dp_call *)e)->fn->h.kind == DP_OP) {
    const dp_op *op = (const dp_op *)((dp_call *)e)->fn;
    if (op_kind(c, op) == OP_ON_DEVICE && place_body(c, (dp_call *)e, op) < 0) return *err = oom(), -1;
  }
  if (push_frame(&c->st, e, n | (shared ? FR_SHARED : 0)) < 0) return *err = oom(), -1;
  return 0;
}

/* All children of the top frame are on the results: rebuilt, posted. */
static int rw_complete(rctx *c, dp_err **err) {
  frame f = c->st.f[--c->st.sp];
  int shared = (f.n & FR_SHARED) != 0;
  f.n &= ~FR_SHARED;
  dp_expr **kids = c->res + (c->nres - f.n);
  dp_expr *rebuilt = dp__expr_with_children_in(&c->arena, f.e, kids);
  for (uint32_t i = 0; i < f.n; i++) dp_release(kids[i]);
  c->nres -= f.n;
  if (!rebuilt) {
    *err = oom();
    return -1;
  }
  dp_expr *r = post(c, f.e, shared, rebuilt, err);
  dp_release(rebuilt);
  if (!r) {
    if (!*err) *err = dp_err_new(DP_ERR_CALLBACK, f.e->span, "rewrite: callback failed");
    return -1;
  }
  return rw_finish(c, f.e, shared, r);
}

/* root rewritten (new reference), or NULL with *err set. */
static dp_expr *rewrite(rctx *c, dp_expr *root, dp_err **err) {
  c->st.sp = 0;
  c->walk++;
  int rc = rw_reach(c, root, err);
  while (rc == 0 && c->st.sp) {
    frame *f = &c->st.f[c->st.sp - 1];
    if (f->i < (f->n & ~FR_SHARED)) rc = rw_reach(c, child_of(f->e, f->i++), err);
    else rc = rw_complete(c, err);
  }
  dp_expr *r = NULL;
  if (rc == 0 && c->nres == 1) r = c->res[--c->nres];
  else if (!*err) *err = oom();
  while (c->nres) dp_release(c->res[--c->nres]);
  return r;
}

void dp_annot_result_clear(dp_annot_result *r) {
  if (!r) return;
  dp_release(r->mod);
  for (uint32_t i = 0; i < r->nlater; i++) dp_release(r->later[i]);
  free(r->later);
  memset(r, 0, sizeof *r);
}

static void ctx_free(rctx *c) {
  for (uint32_t i = 0; i < c->nrecs; i++) {
    if (!(c->recs[i].flags & R_OUTER)) c->recs[i].e->h.flags &= (uint16_t)~F_REC;
    dp_release(c->recs[i].out);
  }
  free(c->recs);
  dp__ptrmap_free(&c->lost);
  free(c->st.f);
  free(c->sst.f);
  free(c->res);
  dp__arena_done(&c->arena);
  for (uint32_t i = 0; i < c->nlater; i++) dp_release(c->later[i]);
  free(c->later);
  for (uint32_t i = 0; i < c->ncache; i++) {
    dp_release(c->cache[i].vd);
    dp_release(c->cache[i].attrs);
  }
}

int dp_annotate_placed(dp_module *m, dp_expr ***out, uint32_t *n, dp_err **err) {
  rctx c;
  memset(&c, 0, sizeof c);
  *out = NULL;
  *n = 0;
  int rc = scan_module(&c, m, err);
  if (rc == 0) {
    *out = dp_malloc((c.nrecs ? c.nrecs : 1) * sizeof **out);
    if (!*out) {
      dp_err_set(err, oom());
      rc = -1;
    }
    for (uint32_t i = 0; rc == 0 && i < c.nrecs; i++)
      if (c.recs[i].flags & R_PLACED) (*out)[(*n)++] = c.recs[i].e;
  }
  ctx_free(&c);
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
  c.mod = m; /* (scanned when a shared call is met: post) */
  if (!(nm = dp_module_copy(m))) {
    dp_err_set(err, oom());
    goto out;
  }
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    dp_err *e = NULL;
    dp_expr *r = rewrite(&c, &m->funcs[i].fn->e, &e);
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
  ctx_free(&c);
  return rc;
}
