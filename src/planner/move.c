/*
 * MoveCopies (include/devplan/move.h): copies of a planned module moved to
 * where they run least, never more often on any execution path.
 *
 * The pass works in rounds, each on a fresh analysis of the module
 * (move_scope.c: every node's uses and the scope it runs in) and applied by
 * one rewrite per function (move_rewrite.c):
 *
 *   1. boundaries: for each function whose every reference is a call
 *      (globals other than @main, let-bound closures, literals called in
 *      place), a parameter copied on every call moves to the callers; a
 *      result copied on every exit moves to the callers;
 *   2. when no boundary moved, closures: a let-bound closure called
 *      whenever it is made that copies, on every call, a value it captures
 *      makes that copy where it is made instead (once per closure);
 *   3. when nothing above moved, loops: a recursive function (or closure)
 *      that copies a loop invariant before every recursive call is peeled
 *      (its first iteration calls a clone that takes the value on the
 *      destination); a clone copies its region as the analysis saw it, so
 *      these rounds decide nothing else, and nested regions wait a round;
 *   4. when nothing else moved: copies of one value to one device merge
 *      where one runs whenever another would (dominance, every arm of a
 *      branch), and lets bound to copies nobody reads go;
 *
 * and in every rewrite a copy of a copy back is the value. Rounds go on
 * until nothing moves (at most MAX_ROUNDS). Then the module is type-checked
 * and planned once more by TVM's rules, which writes its annotations in the
 * planned form (the result plans to itself) and checks that every device
 * still agrees.
 *
 * Why no path copies more. Each rule trades copies that run at least as
 * often for one that runs at most as often: a parameter copy made on every
 * call (its scope is the body) for one per call site (one per call), none
 * where the argument is already there; a result copy made on every exit for
 * one per call site; a closure's copy made on every call for one where
 * the closure is made, which a call follows every time (what it copies,
 * read outside now, runs there too: once per closure, not per call); a
 * peeled loop's copies for those of its first iteration; merged copies for
 * one in a scope where one of them ran whenever it runs (its own scope, or
 * a branch whose every arm copied). Nothing else changes where a node
 * runs: a replacement takes the place of the node it replaces, under the
 * same uses.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"

#define MAX_ROUNDS 32

enum { H_GLOBAL, H_LET, H_LITERAL };

typedef struct mcall { uint32_t fn, id; } mcall;

/* A function whose boundary may move. */
typedef struct mhandle {
  uint8_t kind, direct;
  uint32_t fn, node, let, var, body;  /* in function fn: its DP_FUNC, its let and variable (H_LET) */
  uint32_t gidx;                      /* H_GLOBAL: its index in the module */
  mcall *calls; uint32_t ncalls, capcalls;
} mhandle;

/* A clone built when the round is applied (loop peeling). */
typedef struct mclone {
  uint32_t fn, root;        /* the function it is taken from, and its root there */
  dp__mtable t;             /* fresh */
  char *name;               /* a global specialisation's name; NULL: a let-bound one */
  uint32_t into;            /* let-bound: the let (in fn) it goes before */
} mclone;

typedef struct mstate {
  dp_module *m;             /* the module of this round (owned) */
  const dp_config *cfg;
  struct dp__plan_ops ops;
  dp__mfun *f; uint32_t nf;
  dp__mtable *t;
  mhandle *h; uint32_t nh, caph;
  dp__ptrmap hmap;          /* let variable or literal node -> handle + 1 */
  uint32_t *hglobal;        /* module function index -> handle, or MV_NONE */
  mclone *cl; uint32_t ncl, capcl;
  dp_moves *log;
  uint32_t budget;          /* functions peeling may still add */
  /* merge scratch */
  uint32_t *covst, *touch, *armst, *armcnt, stamp;
  int oom;
} mstate;

/* ---------------------------------------------------------------- the log */

static char *fmt(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  char *s = dp_vformat(f, ap);
  va_end(ap);
  return s;
}

static void log_move(mstate *st, int kind, const char *fn, const char *to, const char *value,
                     dp_span span, dp_vdev *src, dp_vdev *dst, uint32_t count, const char *f, ...) {
  dp_moves *o = st->log;
  if (!o) return;
  if (dp_grow((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v) < 0) {
    st->oom = 1;
    return;
  }
  dp_move *mv = &o->v[o->n];
  *mv = (dp_move){kind, fn ? dp_strdup(fn) : NULL, to ? dp_strdup(to) : NULL,
                  value ? dp_strdup(value) : NULL, NULL, span, dp_retain(src), dp_retain(dst), count};
  va_list ap;
  va_start(ap, f);
  mv->text = dp_vformat(f, ap);
  va_end(ap);
  if ((fn && !mv->fn) || (to && !mv->to) || (value && !mv->value) || !mv->text) st->oom = 1;
  o->n++;
}

void dp_moves_clear(dp_moves *m) {
  for (uint32_t i = 0; i < m->n; i++) {
    free(m->v[i].fn);
    free(m->v[i].to);
    free(m->v[i].value);
    free(m->v[i].text);
    dp_release(m->v[i].src);
    dp_release(m->v[i].dst);
  }
  free(m->v);
  *m = (dp_moves){0};
}

/* A device in a message ("cuda"), malloc'd. */
static char *dev(const dp_vdev *v) { return dp__vdev_short(v); }

/* A device in a name ("cuda", "cuda1", "cpu_scopeA"): letters, digits, _. */
static void dev_ident(const dp_vdev *v, char *buf, size_t n) {
  const char *dt = v && v->device_type ? dp_device_type_name(v->device_type) : NULL;
  int k = snprintf(buf, n, "%s", dt ? dt : "dev");
  if (v && v->virtual_device_id > 0 && k >= 0 && (size_t)k < n)
    k += snprintf(buf + k, n - k, "%d", v->virtual_device_id);
  if (v && v->memory_scope[0] && k >= 0 && (size_t)k < n) {
    k += snprintf(buf + k, n - k, "_");
    for (const char *s = v->memory_scope; *s && (size_t)k + 1 < n; s++)
      buf[k++] = (char)((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                                (*s >= '0' && *s <= '9') ? *s : '_');
    buf[k] = 0;
  }
}

/* ---------------------------------------------------------------- analysis */

static void forget(mstate *st) {
  for (uint32_t i = 0; i < st->nf; i++) {
    dp__mtable_free(&st->t[i]);
    dp__mfun_free(&st->f[i]);
  }
  for (uint32_t i = 0; i < st->nh; i++) free(st->h[i].calls);
  for (uint32_t i = 0; i < st->ncl; i++) {
    dp__mtable_free(&st->cl[i].t);
    free(st->cl[i].name);
  }
  free(st->f);
  free(st->t);
  free(st->h);
  free(st->cl);
  free(st->hglobal);
  free(st->covst);
  free(st->touch);
  free(st->armst);
  free(st->armcnt);
  dp__ptrmap_free(&st->hmap);
  st->f = NULL;
  st->t = NULL;
  st->h = NULL;
  st->cl = NULL;
  st->hglobal = NULL;
  st->covst = st->touch = st->armst = st->armcnt = NULL;
  st->nf = st->nh = st->caph = st->ncl = st->capcl = 0;
}

static int add_call(mstate *st, uint32_t h, uint32_t fn, uint32_t id) {
  mhandle *x = &st->h[h];
  if (dp_grow((void **)&x->calls, &x->capcalls, x->ncalls + 1, sizeof *x->calls) < 0) return -1;
  x->calls[x->ncalls++] = (mcall){fn, id};
  return 0;
}

static int new_handle(mstate *st, mhandle h) {
  if (dp_grow((void **)&st->h, &st->caph, st->nh + 1, sizeof *st->h) < 0) return -1;
  st->h[st->nh++] = h;
  return 0;
}

static int is_call(const dp_expr *e) { return e->h.kind == DP_CALL; }

/* Handles: the global functions, let-bound closures and literals called in
   place, each with its call sites, and whether every reference is one. */
static int find_handles(mstate *st) {
  dp_module *m = st->m;
  if (!(st->hglobal = dp_malloc((m->nfuncs ? m->nfuncs : 1) * sizeof *st->hglobal))) return -1;
  for (uint32_t g = 0; g < m->nfuncs; g++) {
    st->hglobal[g] = MV_NONE;
    if (dp__is_primitive(m->funcs[g].fn)) continue;
    st->hglobal[g] = st->nh;
    mhandle h = {H_GLOBAL, 1, g, st->f[g].n - 1, MV_NONE, MV_NONE, 0, g, NULL, 0, 0};
    if (new_handle(st, h) < 0) return -1;
  }
  for (uint32_t g = 0; g < st->nf; g++) {
    dp__mfun *f = &st->f[g];
    for (uint32_t id = 0; id < f->n; id++) {
      dp_expr *e = f->x[id];
      if (e->h.kind != DP_LET) continue;
      uint32_t v = f->kid[f->koff[id] + 1], var = f->kid[f->koff[id]];
      if (v == MV_NONE || f->x[v]->h.kind != DP_FUNC || dp__is_primitive((dp_func *)f->x[v]) ||
          dp__mfun_nuses(f, v) != 1)
        continue;
      uint32_t body = dp__mfun_scope_at(f, v, ((dp_func *)f->x[v])->nparams);
      int fresh = 0;
      dp__ptrslot *s1 = dp__ptrmap_insert(&st->hmap, f->x[var], &fresh);
      if (!s1) return -1;
      if (!fresh) continue; /* (a node in two functions: left alone) */
      s1->val = st->nh + 1;
      dp__ptrslot *s2 = dp__ptrmap_insert(&st->hmap, f->x[v], &fresh);
      if (!s2) return -1;
      s2->val = st->nh + 1;
      mhandle h = {H_LET, 1, g, v, id, var, body, MV_NONE, NULL, 0, 0};
      if (new_handle(st, h) < 0) return -1;
    }
    for (uint32_t id = 0; id + 1 < f->n; id++) {
      dp_expr *e = f->x[id];
      if (e->h.kind != DP_FUNC || dp__is_primitive((dp_func *)e) || dp__ptrmap_find(&st->hmap, e))
        continue;
      uint32_t nu = dp__mfun_nuses(f, id), ok = nu > 0;
      for (uint32_t u = f->uoff[id]; u < f->uoff[id + 1] && ok; u++)
        ok = is_call(f->x[f->upar[u]]) && f->uslot[u] == 0;
      if (!ok) continue;
      if (!dp__ptrmap_insert(&st->hmap, e, NULL)) return -1;
      dp__ptrmap_find(&st->hmap, e)->val = st->nh + 1;
      uint32_t body = dp__mfun_scope_at(f, id, ((dp_func *)e)->nparams);
      mhandle h = {H_LITERAL, 1, g, id, MV_NONE, MV_NONE, body, MV_NONE, NULL, 0, 0};
      if (new_handle(st, h) < 0) return -1;
      for (uint32_t u = f->uoff[id]; u < f->uoff[id + 1]; u++)
        if (add_call(st, st->nh - 1, g, f->upar[u]) < 0) return -1;
    }
  }
  /* references of globals and let variables */
  for (uint32_t g = 0; g < st->nf; g++) {
    dp__mfun *f = &st->f[g];
    for (uint32_t id = 0; id < f->n; id++) {
      dp_expr *e = f->x[id];
      uint32_t h = MV_NONE;
      if (e->h.kind == DP_GLOBAL) {
        int gi = dp_module_func_index(m, ((dp_global *)e)->name);
        if (gi >= 0) h = st->hglobal[gi];
      } else if (e->h.kind == DP_VAR) {
        dp__ptrslot *s = dp__ptrmap_find(&st->hmap, e);
        if (s && st->h[s->val - 1].kind == H_LET && st->h[s->val - 1].fn == g) h = s->val - 1;
      }
      if (h == MV_NONE) continue;
      for (uint32_t u = f->uoff[id]; u < f->uoff[id + 1]; u++) {
        uint32_t p = f->upar[u];
        if (st->h[h].kind == H_LET && p == st->h[h].let && f->uslot[u] == 0) continue;
        if (is_call(f->x[p]) && f->uslot[u] == 0) {
          if (add_call(st, h, g, p) < 0) return -1;
        } else {
          st->h[h].direct = 0;
        }
      }
    }
  }
  return 0;
}

static int analyse(mstate *st, dp_err **err) {
  dp_module *m = st->m;
  st->nf = 0; /* (the functions made so far: what forget frees) */
  if (!(st->f = dp_calloc(m->nfuncs ? m->nfuncs : 1, sizeof *st->f)) ||
      !(st->t = dp_calloc(m->nfuncs ? m->nfuncs : 1, sizeof *st->t)))
    goto oom;
  st->nf = m->nfuncs;
  for (uint32_t g = 0; g < st->nf; g++) {
    if (dp__mfun_init(&st->f[g], &m->funcs[g].fn->e, m->funcs[g].global->name, err) < 0) {
      st->nf = g; /* (the ones made are freed by forget) */
      return -1;
    }
    if (dp__mtable_init(&st->t[g], &st->f[g], 0, err) < 0) {
      dp__mfun_free(&st->f[g]);
      st->nf = g;
      return -1;
    }
  }
  if (find_handles(st) < 0) goto oom;
  return 0;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return -1;
}

/* ---------------------------------------------------------------- helpers */

static int is_copy(mstate *st, const dp_expr *e, dp_vdev **src, dp_vdev **dst) {
  dp_expr *b;
  return dp__device_copy_props(&st->ops, e, &b, src, dst) && *src && *dst && *src != *dst;
}

/* The handle a call calls (MV_NONE: none). */
static uint32_t callee_handle(mstate *st, uint32_t g, uint32_t call) {
  dp__mfun *f = &st->f[g];
  uint32_t c = f->kid[f->koff[call]];
  if (c == MV_NONE) return MV_NONE;
  dp_expr *e = f->x[c];
  if (e->h.kind == DP_GLOBAL) {
    int gi = dp_module_func_index(st->m, ((dp_global *)e)->name);
    return gi >= 0 ? st->hglobal[gi] : MV_NONE;
  }
  dp__ptrslot *s = dp__ptrmap_find(&st->hmap, e);
  return s ? s->val - 1 : MV_NONE;
}

/* The id of argument i of call id (MV_NONE: none). */
static uint32_t arg_id(const dp__mfun *f, uint32_t call, uint32_t i) {
  uint32_t at = f->koff[call] + 1 + i;
  return at < f->koff[call + 1] ? f->kid[at] : MV_NONE;
}

/* Node id under its on_device calls. */
static uint32_t strip_id(mstate *st, const dp__mfun *f, uint32_t id) {
  while (id != MV_NONE && dp__on_device_body(&st->ops, f->x[id])) id = f->kid[f->koff[id] + 1];
  return id;
}

static dp_func *hfunc(mstate *st, const mhandle *h) {
  return (dp_func *)st->f[h->fn].x[h->node];
}

/* The handle's name for messages (malloc'd). */
static char *hname(mstate *st, const mhandle *h) {
  dp__mfun *f = &st->f[h->fn];
  if (h->kind == H_GLOBAL) return fmt("@%s", f->name);
  if (h->kind == H_LET) return fmt("%%%s (in @%s)", ((dp_var *)f->x[h->var])->name, f->name);
  dp_span s = f->x[h->node]->span;
  return s.line ? fmt("the function at %u:%u (in @%s)", s.line, s.col, f->name)
                : fmt("a function literal (in @%s)", f->name);
}

static int is_main(mstate *st, const mhandle *h) {
  return h->kind == H_GLOBAL && strcmp(st->f[h->fn].name, "main") == 0;
}

/* Is call site c of h inside h itself (a recursive call)? arms_only: and
   reached from h's body through branches only. */
static int inside(mstate *st, const mhandle *h, const mcall *c, int arms_only) {
  if (c->fn != h->fn) return 0;
  dp__mfun *f = &st->f[h->fn];
  return dp__mscope_within(f, f->home[c->id], h->body, arms_only);
}

/* ---------------------------------------------------------------- out of functions */

/* A parameter copied on every call moves to the callers. */
static int move_params(mstate *st, mhandle *h) {
  dp__mfun *f = &st->f[h->fn];
  dp__mtable *t = &st->t[h->fn];
  dp_func *fn = hfunc(st, h);
  uint32_t hi = (uint32_t)(h - st->h);
  int moved = 0;
  for (uint32_t i = 0; i < fn->nparams; i++) {
    dp_var *p = fn->params[i];
    uint32_t pid = dp__mfun_id(f, &p->e);
    dp_vdev *src = dp_var_vdev(p), *dst = NULL;
    if (pid == MV_NONE || !src || dp__mtable_get(t, pid)) continue;
    int ok = 1;
    uint32_t top = 0, ncopies = 0;
    dp__mvuses vu = {0};
    if (dp__mfun_uses(&st->ops, f, pid, &vu) < 0) return -1;
    for (uint32_t u = 0; u < vu.n && ok; u++) {
      uint32_t q = vu.u[u].par, slot = vu.u[u].slot;
      dp_vdev *s2, *d2;
      if (q == h->node && slot == i) continue; /* the binding */
      if (slot == 1 && is_copy(st, f->x[q], &s2, &d2) && s2 == src) {
        if (!dst) dst = d2;
        ok = d2 == dst && !dp__mtable_get(t, q);
        top += f->home[q] == h->body;
        ncopies++;
      } else if (is_call(f->x[q]) && slot == i + 1 && callee_handle(st, h->fn, q) == hi) {
        /* passed on unchanged to a recursive call */
      } else {
        ok = 0;
      }
    }
    for (uint32_t w = 0; w < vu.nw && ok; w++) ok = !dp__mtable_get(t, vu.w[w]);
    if (!ok || !dst || !top) {
      free(vu.u);
      free(vu.w);
      continue;
    }
    dp__mdec *d = dp__mtable_dec(t, pid);
    if (!d || !(d->var = dp__mvar_like(p, dst))) goto oom;
    d->op = MD_VAR;
    dp_var *np = d->var;
    for (uint32_t u = 0; u < vu.n; u++) {
      uint32_t q = vu.u[u].par;
      dp_vdev *s2, *d2;
      if (vu.u[u].slot != 1 || !is_copy(st, f->x[q], &s2, &d2)) continue;
      dp__mdec *dq = dp__mtable_dec(t, q);
      if (!dq) goto oom;
      dq->op = MD_VAR;
      dq->var = dp_retain(np);
    }
    /* on_device calls around it that stay (as a recursive call's argument)
       said where it was: they go */
    for (uint32_t w = 0; w < vu.nw; w++) {
      dp__mdec *dw = dp__mtable_dec(t, vu.w[w]);
      if (!dw) goto oom;
      dw->op = MD_KID;
      dw->kid = 1;
    }
    free(vu.u);
    free(vu.w);
    uint32_t sites = 0;
    for (uint32_t k = 0; k < h->ncalls; k++) {
      mcall *c = &h->calls[k];
      dp__mfun *cf = &st->f[c->fn];
      uint32_t arg = strip_id(st, cf, arg_id(cf, c->id, i));
      if (c->fn == h->fn && arg == pid) continue; /* recursive, unchanged */
      if (dp__mtable_act(&st->t[c->fn], c->id, (dp__mact){i, MA_WRAP, 0, NULL, src, dst}) < 0) return -1;
      sites++;
    }
    char *who = hname(st, h), *a = dev(src), *b = dev(dst), *pn = fmt("%%%s", p->name);
    log_move(st, DP_MOVE_PARAM, who, NULL, pn, p->e.span, src, dst, ncopies,
             "the copy of parameter %%%s of %s from %s to %s, made on every call, moved to its %u "
             "call site%s: %s now takes %%%s on %s (a call site copies once per call, as the "
             "function did; one that holds the value on %s already copies nothing)",
             p->name, who ? who : "?", a ? a : "?", b ? b : "?", sites, sites == 1 ? "" : "s",
             who ? who : "?", p->name, b ? b : "?", b ? b : "?");
    free(pn);
    free(who);
    free(a);
    free(b);
    moved++;
    continue;
  oom:
    free(vu.u);
    free(vu.w);
    return -1;
  }
  return moved;
}

/* The tail of a function: the nodes its result comes out of. */
typedef struct tailw {
  uint32_t *copy, nc, capc;   /* copies ending an exit */
  uint32_t *wrap, nw, capw;   /* on_device calls on the way (they go) */
  uint32_t *self, ns, caps;   /* recursive calls in tail position */
  dp_vdev *src;
} tailw;

static int tail_push(uint32_t **a, uint32_t *n, uint32_t *cap, uint32_t v) {
  if (dp_grow((void **)a, cap, *n + 1, sizeof **a) < 0) return -1;
  (*a)[(*n)++] = v;
  return 0;
}

/* Walks h's tail (through lets and on_device calls; not into an if or a
   match, whose condition or data lives where its result does, and would
   have to move with it): 1 when it ends in a copy from one device to the
   function's device (or a recursive call), 0 when not, -1 out of memory. */
static int tail_of(mstate *st, mhandle *h, tailw *w) {
  dp__mfun *f = &st->f[h->fn];
  dp__mtable *t = &st->t[h->fn];
  dp_func *fn = hfunc(st, h);
  dp_vdev *dres = fn->vdev;
  uint32_t *stack = NULL, n = 0, cap = 0;
  int ok = dres != NULL, oom = 0;
  uint32_t body = f->kid[f->koff[h->node] + fn->nparams];
  if (ok && tail_push(&stack, &n, &cap, body) < 0) return -1;
  while (ok && !oom && n) {
    uint32_t id = stack[--n];
    dp_expr *e = f->x[id];
    dp_vdev *s2, *d2;
    if (id == MV_NONE || dp__mfun_nuses(f, id) != 1 || dp__mtable_get(t, id)) {
      ok = 0;
      break;
    }
    if (e->h.kind == DP_LET) {
      oom |= tail_push(&stack, &n, &cap, f->kid[f->koff[id] + 2]) < 0;
    } else if (dp__on_device_body(&st->ops, e)) {
      oom |= tail_push(&w->wrap, &w->nw, &w->capw, id) < 0 ||
             tail_push(&stack, &n, &cap, f->kid[f->koff[id] + 1]) < 0;
    } else if (is_copy(st, e, &s2, &d2) && d2 == dres && (!w->src || w->src == s2)) {
      w->src = s2;
      oom |= tail_push(&w->copy, &w->nc, &w->capc, id) < 0;
    } else if (e->h.kind == DP_VAR) {
      /* a let variable bound to a copy, read only here */
      uint32_t let = MV_NONE;
      for (uint32_t u = f->uoff[id]; u < f->uoff[id + 1]; u++)
        if (f->uslot[u] == 0 && f->x[f->upar[u]]->h.kind == DP_LET) let = f->upar[u];
      if (let == MV_NONE || dp__mfun_nuses(f, id) != 2) {
        ok = 0;
        break;
      }
      uint32_t v = f->kid[f->koff[let] + 1];
      while (ok && v != MV_NONE && dp__on_device_body(&st->ops, f->x[v])) {
        ok = dp__mfun_nuses(f, v) == 1 && !dp__mtable_get(t, v);
        oom |= ok && tail_push(&w->wrap, &w->nw, &w->capw, v) < 0;
        v = f->kid[f->koff[v] + 1];
      }
      if (!ok || v == MV_NONE || dp__mfun_nuses(f, v) != 1 || dp__mtable_get(t, v) ||
          !is_copy(st, f->x[v], &s2, &d2) || d2 != dres || (w->src && w->src != s2)) {
        ok = 0;
        break;
      }
      w->src = s2;
      oom |= tail_push(&w->copy, &w->nc, &w->capc, v) < 0;
    } else if (is_call(e) && callee_handle(st, h->fn, id) == (uint32_t)(h - st->h)) {
      oom |= tail_push(&w->self, &w->ns, &w->caps, id) < 0;
    } else {
      ok = 0;
    }
  }
  free(stack);
  if (oom) return -1;
  return ok && w->nc > 0;
}

/* A result copied on every exit moves to the callers: the function then
   returns where it computes. */
static int move_result(mstate *st, mhandle *h) {
  tailw w = {0};
  int r = tail_of(st, h, &w);
  if (r <= 0) goto done;
  dp__mtable *t = &st->t[h->fn];
  dp_func *fn = hfunc(st, h);
  dp_vdev *src = w.src, *dst = fn->vdev;
  r = -1;
  for (uint32_t k = 0; k < w.nc; k++) {
    dp__mdec *d = dp__mtable_dec(t, w.copy[k]);
    if (!d) goto done;
    d->op = MD_KID;
    d->kid = 1;
  }
  for (uint32_t k = 0; k < w.nw; k++) {
    dp__mdec *d = dp__mtable_dec(t, w.wrap[k]);
    if (!d) goto done;
    d->op = MD_KID;
    d->kid = 1;
  }
  dp__mdec *d = dp__mtable_dec(t, h->node);
  if (!d) goto done;
  d->vdev = src;
  uint32_t sites = 0;
  for (uint32_t k = 0; k < h->ncalls; k++) {
    mcall *c = &h->calls[k];
    int tail_self = 0;
    for (uint32_t j = 0; j < w.ns; j++) tail_self |= c->fn == h->fn && c->id == w.self[j];
    if (tail_self) continue;
    dp__mdec *dc = dp__mtable_dec(&st->t[c->fn], c->id);
    if (!dc) goto done;
    dc->wrap = 1;
    dc->src = src;
    dc->dst = dst;
    sites++;
  }
  char *who = hname(st, h), *a = dev(src), *b = dev(dst);
  log_move(st, DP_MOVE_RESULT, who, NULL, "the result", hfunc(st, h)->e.span, src, dst, w.nc,
           "the copy of the result of %s from %s to %s, made on every exit, moved to its %u call "
           "site%s: %s now returns on %s, where it computes (a call site copies once per call, as "
           "the function did; one that copied the result back to %s copies nothing)",
           who ? who : "?", a ? a : "?", b ? b : "?", sites, sites == 1 ? "" : "s", who ? who : "?",
           a ? a : "?", a ? a : "?");
  free(who);
  free(a);
  free(b);
  r = 1;
done:
  free(w.copy);
  free(w.wrap);
  free(w.self);
  return r;
}

/* A result every caller copies to one device moves into the function when
   it meets a copy the function makes there already (of the value it
   returns, on every call): the two are one, and the function returns on
   that device. Each call ran both; it runs one. (Without such a copy it
   stays with the callers: per call the same, and the function keeps
   running where it computes.) */
static int move_result_in(mstate *st, mhandle *h) {
  dp__mfun *f = &st->f[h->fn];
  dp__mtable *t = &st->t[h->fn];
  dp_func *fn = hfunc(st, h);
  dp_vdev *d1 = fn->vdev, *d2 = NULL;
  uint32_t hi = (uint32_t)(h - st->h);
  if (!d1 || dp__mtable_get(t, h->node)) return 0;
  /* every call is read only by a copy from d1 to one device (through
     on_device calls); none is a recursive call */
  for (uint32_t k = 0; k < h->ncalls; k++) {
    mcall *c = &h->calls[k];
    dp__mfun *cf = &st->f[c->fn];
    if (c->fn == h->fn && inside(st, h, c, 0)) return 0;
    uint32_t x = c->id;
    while (dp__mfun_nuses(cf, x) == 1 && cf->uslot[cf->uoff[x]] == 1 &&
           dp__on_device_body(&st->ops, cf->x[cf->upar[cf->uoff[x]]]))
      x = cf->upar[cf->uoff[x]];
    dp_vdev *s2, *dd;
    if (dp__mfun_nuses(cf, x) != 1 || cf->uslot[cf->uoff[x]] != 1) return 0;
    uint32_t q = cf->upar[cf->uoff[x]];
    if (!is_copy(st, cf->x[q], &s2, &dd) || s2 != d1 || (d2 && dd != d2) || dp__mtable_get(&st->t[c->fn], q))
      return 0;
    d2 = dd;
  }
  if (!d2) return 0;
  /* the tail: through lets and on_device calls to the value returned */
  uint32_t parent = h->node, slot = fn->nparams, leaf = f->kid[f->koff[h->node] + fn->nparams];
  uint32_t *wraps = NULL, nw = 0, capw = 0;
  int r = 0;
  while (leaf != MV_NONE && dp__mfun_nuses(f, leaf) == 1 && !dp__mtable_get(t, leaf) &&
         (f->x[leaf]->h.kind == DP_LET || dp__on_device_body(&st->ops, f->x[leaf]))) {
    if (f->x[leaf]->h.kind == DP_LET) {
      parent = leaf;
      slot = 2;
      leaf = f->kid[f->koff[leaf] + 2];
    } else {
      if (tail_push(&wraps, &nw, &capw, leaf) < 0) return -1;
      leaf = f->kid[f->koff[leaf] + 1];
    }
  }
  dp_vdev *s2, *dd;
  if (leaf == MV_NONE || dp__mtable_get(t, leaf) || is_copy(st, f->x[leaf], &s2, &dd) ||
      (is_call(f->x[leaf]) && callee_handle(st, h->fn, leaf) == hi))
    goto done;
  /* a copy of it to d2 the function makes on every call, met before the tail */
  dp__mvuses vu = {0};
  uint32_t q = MV_NONE;
  if (dp__mfun_uses(&st->ops, f, leaf, &vu) < 0) { /* (through the on_device calls around it) */
    r = -1;
    goto done;
  }
  for (uint32_t u = 0; u < vu.n && q == MV_NONE; u++) {
    uint32_t c = vu.u[u].par;
    if (vu.u[u].slot == 1 && is_copy(st, f->x[c], &s2, &dd) && s2 == d1 && dd == d2 && f->home[c] == h->body &&
        c < parent && !dp__mtable_get(t, c))
      q = c;
  }
  free(vu.u);
  free(vu.w);
  if (q == MV_NONE) goto done;
  r = -1;
  for (uint32_t k = 0; k < nw; k++) {
    dp__mdec *d = dp__mtable_dec(t, wraps[k]);
    if (!d) goto done;
    d->op = MD_KID;
    d->kid = 1;
  }
  dp__mdec *d = dp__mtable_dec(t, parent);
  if (!d) goto done;
  d->sub = 1;
  d->sub_slot = slot;
  d->sub_node = q;
  if (!(d = dp__mtable_dec(t, h->node))) goto done;
  d->vdev = d2;
  for (uint32_t k = 0; k < h->ncalls; k++) {
    mcall *c = &h->calls[k];
    dp__mfun *cf = &st->f[c->fn];
    uint32_t x = c->id;
    while (dp__mfun_nuses(cf, x) == 1 && dp__on_device_body(&st->ops, cf->x[cf->upar[cf->uoff[x]]])) {
      x = cf->upar[cf->uoff[x]];
      dp__mdec *dw = dp__mtable_dec(&st->t[c->fn], x);
      if (!dw) goto done;
      dw->op = MD_KID;
      dw->kid = 1;
    }
    dp__mdec *dq = dp__mtable_dec(&st->t[c->fn], cf->upar[cf->uoff[x]]);
    if (!dq) goto done;
    dq->op = MD_KID;
    dq->kid = 1;
  }
  char *who = hname(st, h), *a = dev(d1), *b = dev(d2);
  log_move(st, DP_MOVE_RESULT, who, NULL, "the result", fn->e.span, d1, d2, h->ncalls,
           "every call of %s copied its result from %s to %s, which %s copies there already on every "
           "call: the callers' copies moved into it are that copy, and %s now returns on %s (each call "
           "ran two copies, it runs one)",
           who ? who : "?", a ? a : "?", b ? b : "?", who ? who : "?", who ? who : "?", b ? b : "?");
  free(who);
  free(a);
  free(b);
  r = 1;
done:
  free(wraps);
  return r;
}

/* ---------------------------------------------------------------- out of loops */

static mclone *new_clone(mstate *st, uint32_t fn, uint32_t root, dp_err **err) {
  if (dp_grow((void **)&st->cl, &st->capcl, st->ncl + 1, sizeof *st->cl) < 0) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  mclone *c = &st->cl[st->ncl];
  *c = (mclone){fn, root, {0}, NULL, MV_NONE};
  if (dp__mtable_init(&c->t, &st->f[fn], 1, err) < 0) return NULL;
  st->ncl++;
  return c;
}

/* A name no function of the module (or clone of this round) has. */
static char *fresh_name(mstate *st, const char *base, const dp_vdev *vd) {
  char id[96];
  dev_ident(vd, id, sizeof id);
  for (uint32_t k = 1; k < 100000; k++) {
    char *name = k == 1 ? fmt("%s_%s", base, id) : fmt("%s_%s_%u", base, id, k);
    if (!name) return NULL;
    int taken = dp_module_func(st->m, name) != NULL;
    for (uint32_t i = 0; i < st->ncl && !taken; i++) taken = st->cl[i].name && !strcmp(st->cl[i].name, name);
    if (!taken) return name;
    free(name);
  }
  return NULL;
}

/* The copies of value node v (a variable) inside h, from one device to
   another: *src, *dst, the list; 0 when some use of v inside h is another
   (with may_read, such uses are allowed: the clone reads v too). */
typedef struct vcopies { uint32_t *c, n, cap; dp_vdev *src, *dst; } vcopies;

static int copies_of(mstate *st, mhandle *h, uint32_t v, int param, uint32_t pos, vcopies *out) {
  dp__mfun *f = &st->f[h->fn];
  dp__mtable *t = &st->t[h->fn];
  uint32_t hi = (uint32_t)(h - st->h);
  dp__mvuses vu = {0};
  int rc = 1;
  if (dp__mfun_uses(&st->ops, f, v, &vu) < 0) return -1;
  for (uint32_t u = 0; u < vu.n && rc > 0; u++) {
    uint32_t q = vu.u[u].par, slot = vu.u[u].slot;
    dp_vdev *s2, *d2;
    if (param && q == h->node && slot == pos) continue;
    if (!param && !dp__mscope_within(f, f->home[q], h->body, 0)) continue; /* outside h */
    if (slot == 1 && is_copy(st, f->x[q], &s2, &d2) && !dp__mtable_get(t, q)) {
      if (!out->src) {
        out->src = s2;
        out->dst = d2;
      }
      if (s2 != out->src || d2 != out->dst) rc = 0;
      else if (tail_push(&out->c, &out->n, &out->cap, q) < 0) rc = -1;
    } else if (param && is_call(f->x[q]) && slot == pos + 1 && callee_handle(st, h->fn, q) == hi &&
               vu.u[u].node == v) {
      /* passed on unchanged */
    } else if (param) {
      rc = 0;
    }
  }
  free(vu.u);
  free(vu.w);
  return rc > 0 ? out->n > 0 : rc;
}

/* For each recursive call, the copy (of vc) that runs before it in the same
   iteration (a copy whose scope holds the call's through branches only, met
   before it); 0 when one has none. */
static int dominators(mstate *st, mhandle *h, const vcopies *vc, uint32_t *rec, uint32_t nrec,
                      uint32_t *dom) {
  dp__mfun *f = &st->f[h->fn];
  for (uint32_t k = 0; k < nrec; k++) {
    dom[k] = MV_NONE;
    for (uint32_t j = 0; j < vc->n && dom[k] == MV_NONE; j++) {
      uint32_t c = vc->c[j];
      if (c < rec[k] && dp__mscope_within(f, f->home[rec[k]], f->home[c], 1) &&
          dp__mscope_within(f, f->home[c], h->body, 1))
        dom[k] = c;
    }
    if (dom[k] == MV_NONE) return 0;
  }
  return 1;
}

static int peel_log(mstate *st, mhandle *h, const char *value, dp_span span, const vcopies *vc,
                    const char *clone) {
  char *who = hname(st, h), *a = dev(vc->src), *b = dev(vc->dst);
  log_move(st, DP_MOVE_LOOP, who, clone, value, span, vc->src, vc->dst, vc->n,
           "%s copies its loop invariant %s from %s to %s before every recursive call: peeled, "
           "the first iteration copies it once and calls %s, which takes %s on %s, so the copy "
           "runs once per loop instead of once per iteration (and not at all when the loop "
           "does not)",
           who ? who : "?", value, a ? a : "?", b ? b : "?", clone, value, b ? b : "?");
  free(who);
  free(a);
  free(b);
  return 0;
}

/* Recursive calls of h, all reached from its body through branches:
   *rec (malloc'd) and *n their count (0 when there are none, or one is
   not so reached). 0, or -1 (out of memory). */
static int recursive_calls(mstate *st, mhandle *h, uint32_t **rec, uint32_t *n) {
  uint32_t cap = 0;
  *rec = NULL;
  *n = 0;
  for (uint32_t k = 0; k < h->ncalls; k++) {
    mcall *c = &h->calls[k];
    if (!inside(st, h, c, 0)) continue;
    int bad = !inside(st, h, c, 1) || dp__mtable_get(&st->t[h->fn], c->id);
    if (bad || tail_push(rec, n, &cap, c->id) < 0) {
      free(*rec);
      *rec = NULL;
      *n = 0;
      return bad ? 0 : -1;
    }
  }
  return 0;
}

/* One loop invariant: a parameter (global: at pos) or a variable the
   closure captures, its copies, and for each recursive call the copy that
   runs before it. */
typedef struct minv { uint32_t pos, vid; dp_var *var; vcopies vc; uint32_t *dom; } minv;

static void invs_free(minv *v, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    free(v[i].vc.c);
    free(v[i].dom);
  }
  free(v);
}

/* Adds invariant (var, vid, pos) to *v when its copies dominate every
   recursive call: 1 added, 0 not, -1 out of memory. */
static int add_inv(mstate *st, mhandle *h, minv **v, uint32_t *n, uint32_t *cap, dp_var *var,
                   uint32_t vid, int param, uint32_t pos, uint32_t *rec, uint32_t nrec) {
  minv x = {pos, vid, var, {0}, NULL};
  int ok = copies_of(st, h, vid, param, pos, &x.vc);
  if (ok > 0 && param && x.vc.src != dp_var_vdev(var)) ok = 0;
  if (ok > 0 && !(x.dom = dp_malloc(nrec * sizeof *x.dom))) ok = -1;
  if (ok > 0) ok = dominators(st, h, &x.vc, rec, nrec, x.dom);
  if (ok > 0 && dp_grow((void **)v, cap, *n + 1, sizeof **v) < 0) ok = -1;
  if (ok <= 0) {
    free(x.vc.c);
    free(x.dom);
    return ok;
  }
  (*v)[(*n)++] = x;
  return 1;
}

/* The original's recursive calls go to the clone, with the copies made
   before them (which stay as they are: a peel reads them by identity). */
static int redirect(mstate *st, mhandle *h, const minv *v, uint32_t n, uint32_t *rec, uint32_t nrec,
                    dp_expr *callee, int append) {
  dp__mtable *t = &st->t[h->fn];
  for (uint32_t k = 0; k < nrec; k++) {
    for (uint32_t j = 0; j < n; j++) {
      dp__mact a = {v[j].pos, append ? MA_APPEND_USE : MA_USE, v[j].dom[k], NULL, NULL, NULL};
      if (dp__mtable_act(t, rec[k], a) < 0) return -1;
      dp__mdec *d = dp__mtable_dec(t, v[j].dom[k]);
      if (!d) return -1;
      d->keep = 1;
    }
    dp__mdec *d = dp__mtable_dec(t, rec[k]);
    if (!d) return -1;
    dp_release(d->callee);
    d->callee = dp_retain(callee);
  }
  return 0;
}

/* In the clone, the invariant's copies are the new variable. */
static int copies_become(dp__mtable *t, const minv *x, dp_var *nv) {
  for (uint32_t j = 0; j < x->vc.n; j++) {
    dp__mdec *d = dp__mtable_dec(t, x->vc.c[j]);
    if (!d) return -1;
    d->op = MD_VAR;
    dp_release(d->var);
    d->var = dp_retain(nv);
  }
  return 0;
}

static void peel_logs(mstate *st, mhandle *h, const minv *v, uint32_t n, const char *clone) {
  for (uint32_t j = 0; j < n; j++) {
    char *value = fmt("%%%s", v[j].var->name);
    peel_log(st, h, value ? value : "?", v[j].var->e.span, &v[j].vc, clone);
    free(value);
  }
}

/* A global recursive function: its parameters passed on unchanged and
   copied before every recursive call. The clone takes them where they are
   copied to, and calls itself. */
static int peel_global(mstate *st, mhandle *h, uint32_t *rec, uint32_t nrec, dp_err **err) {
  dp__mfun *f = &st->f[h->fn];
  dp_func *fn = hfunc(st, h);
  minv *v = NULL;
  uint32_t n = 0, cap = 0;
  for (uint32_t i = 0; i < fn->nparams; i++) {
    dp_var *p = fn->params[i];
    uint32_t pid = dp__mfun_id(f, &p->e);
    int ok = pid != MV_NONE && dp_var_vdev(p) && !dp__mtable_get(&st->t[h->fn], pid);
    for (uint32_t k = 0; k < nrec && ok; k++) ok = arg_id(f, rec[k], i) == pid;
    if (ok && add_inv(st, h, &v, &n, &cap, p, pid, 1, i, rec, nrec) < 0) goto oom;
  }
  if (!n) return 0;
  char *name = fresh_name(st, f->name, v[0].vc.dst);
  mclone *cl = name ? new_clone(st, h->fn, h->node, err) : NULL;
  if (!cl) {
    free(name);
    goto oom;
  }
  cl->name = name;
  dp_global *g = dp_global_new(name, fn->e.span);
  if (!g) goto oom;
  for (uint32_t j = 0; j < n; j++) {
    dp__mdec *d = dp__mtable_dec(&cl->t, v[j].vid);
    if (!d || !(d->var = dp__mvar_like(v[j].var, v[j].vc.dst))) goto oomg;
    d->op = MD_VAR;
    if (copies_become(&cl->t, &v[j], d->var) < 0) goto oomg;
  }
  for (uint32_t k = 0; k < nrec; k++) {
    dp__mdec *d = dp__mtable_dec(&cl->t, rec[k]);
    if (!d) goto oomg;
    d->callee = dp_retain(&g->e);
  }
  if (redirect(st, h, v, n, rec, nrec, &g->e, 0) < 0) goto oomg;
  char *gname = fmt("@%s", name);
  peel_logs(st, h, v, n, gname ? gname : name);
  free(gname);
  dp_release(g);
  invs_free(v, n);
  st->budget--;
  if (st->log) st->log->functions_added++;
  return 1;
oomg:
  dp_release(g);
oom:
  invs_free(v, n);
  return -1;
}

/* A recursive let-bound closure (while_loop's shape): the variables it
   captures and copies before every recursive call become parameters of
   its clone, bound by a let before it, which calls itself. */
static int peel_closure(mstate *st, mhandle *h, uint32_t *rec, uint32_t nrec, dp_err **err) {
  dp__mfun *f = &st->f[h->fn];
  dp_func *fn = hfunc(st, h);
  uint32_t nfree = 0;
  dp_var **fv = dp_free_vars(&fn->e, &nfree);
  minv *v = NULL;
  uint32_t n = 0, cap = 0;
  if (!fv) return -1;
  for (uint32_t i = 0; i < nfree; i++) {
    if (&fv[i]->e == f->x[h->var]) continue;
    uint32_t w = dp__mfun_id(f, &fv[i]->e);
    if (w != MV_NONE && add_inv(st, h, &v, &n, &cap, fv[i], w, 0, 0, rec, nrec) < 0) {
      free(fv);
      goto oom;
    }
  }
  free(fv);
  if (!n) return 0;
  dp_var *hv = (dp_var *)f->x[h->var];
  char *name = fresh_name(st, hv->name, v[0].vc.dst); /* (a name hint) */
  mclone *cl = name ? new_clone(st, h->fn, h->node, err) : NULL;
  dp_var *nv = cl ? dp_var_new(name, dp_var_annot(hv), dp_var_vdev(hv), hv->e.span) : NULL;
  free(name);
  if (!nv) goto oom;
  cl->into = h->let;
  dp__mdec *d = dp__mtable_dec(&st->t[h->fn], h->let);
  if (!d) {
    dp_release(nv);
    goto oom;
  }
  d->before_var = nv; /* (the table owns it from here) */
  for (uint32_t j = 0; j < n; j++) {
    dp_var *np = dp__mvar_like(v[j].var, v[j].vc.dst);
    int rc = np ? dp__mtable_act(&cl->t, h->node, (dp__mact){0, MA_APPEND_VAR, 0, np, NULL, NULL}) : -1;
    if (rc == 0) rc = copies_become(&cl->t, &v[j], np);
    for (uint32_t k = 0; k < nrec && rc == 0; k++)
      rc = dp__mtable_act(&cl->t, rec[k], (dp__mact){0, MA_APPEND_VAR, 0, np, NULL, NULL});
    dp_release(np);
    if (rc < 0) goto oom;
  }
  for (uint32_t k = 0; k < nrec; k++) {
    if (!(d = dp__mtable_dec(&cl->t, rec[k]))) goto oom;
    d->callee = dp_retain(&nv->e);
  }
  if (redirect(st, h, v, n, rec, nrec, &nv->e, 1) < 0) goto oom;
  char *clone = fmt("%%%s", nv->name);
  peel_logs(st, h, v, n, clone ? clone : "?");
  free(clone);
  invs_free(v, n);
  st->budget--;
  if (st->log) st->log->functions_added++;
  return 1;
oom:
  invs_free(v, n);
  return -1;
}

static int peel(mstate *st, mhandle *h, dp_err **err) {
  if (!st->budget || is_main(st, h) || h->kind == H_LITERAL) return 0;
  if (h->kind == H_LET && dp__mtable_get(&st->t[h->fn], h->let)) return 0;
  uint32_t *rec, nrec;
  if (recursive_calls(st, h, &rec, &nrec) < 0) return -1;
  if (!nrec) return 0;
  int r = h->kind == H_GLOBAL ? peel_global(st, h, rec, nrec, err) : peel_closure(st, h, rec, nrec, err);
  free(rec);
  return r;
}

static int boundaries(mstate *st, dp_err **err) {
  int moved = 0;
  for (uint32_t i = 0; i < st->nh; i++) {
    mhandle *h = &st->h[i];
    if (is_main(st, h)) continue;
    int r = 0;
    if (h->direct && h->ncalls) {
      r = move_params(st, h);
      if (r >= 0) {
        int q = move_result(st, h);
        if (q == 0) q = move_result_in(st, h);
        r = q < 0 ? -1 : r + q;
      }
    }
    if (r < 0) {
      if (err && !*err) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return -1;
    }
    moved += r;
  }
  return moved;
}

/* Loops peeled, in a round of their own: a clone copies its region as the
   analysis saw it, so no other decision may fall in it; in one function,
   regions that nest are peeled one per round. */
static int peels(mstate *st, dp_err **err) {
  int moved = 0;
  uint32_t *region = dp_malloc((st->nh ? st->nh : 1) * sizeof *region), *rfn = NULL;
  uint32_t nr = 0;
  if (!region || !(rfn = dp_malloc((st->nh ? st->nh : 1) * sizeof *rfn))) {
    free(region);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  for (uint32_t i = 0; i < st->nh; i++) {
    mhandle *h = &st->h[i];
    dp__mfun *f = &st->f[h->fn];
    int overlap = 0;
    for (uint32_t k = 0; k < nr && !overlap; k++)
      overlap = rfn[k] == h->fn && (h->kind == H_GLOBAL || dp__mscope_within(f, h->body, region[k], 0) ||
                                    dp__mscope_within(f, region[k], h->body, 0));
    if (overlap) continue;
    int r = peel(st, h, err);
    if (r < 0) {
      free(region);
      free(rfn);
      if (err && !*err) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return -1;
    }
    if (r > 0) {
      region[nr] = h->kind == H_GLOBAL ? 0 : h->body;
      rfn[nr++] = h->fn;
    }
    moved += r;
  }
  free(region);
  free(rfn);
  return moved;
}

/* ---------------------------------------------------------------- merging */

typedef struct mkey { dp_expr *value; dp_vdev *src, *dst; uint32_t first, n; } mkey;
typedef struct mmember { uint32_t key, id, top; } mmember;

static int by_key_top_id(const void *a, const void *b) {
  const mmember *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  if (x->top != y->top) return x->top < y->top ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static const dp__mfun *sort_f;
static int by_depth_desc(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  uint32_t dx = sort_f->s[x].depth, dy = sort_f->s[y].depth;
  return dx != dy ? (dx > dy ? -1 : 1) : (x < y ? -1 : x > y);
}

static uint32_t narms(const dp_expr *e) {
  return e->h.kind == DP_IF ? 2 : e->h.kind == DP_MATCH ? ((const dp_match *)e)->n : 0;
}

/* The topmost scope where one of a group's copies runs whenever the scope
   runs, for each member (mb[first .. first + n)). */
static int cover(mstate *st, dp__mfun *f, mmember *mb, uint32_t n, uint32_t **touched, uint32_t *cap) {
  uint32_t stamp = ++st->stamp, nt = 0;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t s = f->home[mb[k].id];
    st->covst[s] = stamp;
    for (; s != MV_NONE && st->touch[s] != stamp; s = f->s[s].parent) {
      st->touch[s] = stamp;
      if (dp_grow((void **)touched, cap, nt + 1, sizeof **touched) < 0) return -1;
      (*touched)[nt++] = s;
    }
  }
  sort_f = f;
  qsort(*touched, nt, sizeof **touched, by_depth_desc);
  for (uint32_t k = 0; k < nt; k++) {
    uint32_t s = (*touched)[k];
    if (st->covst[s] != stamp || f->s[s].kind != MS_ARM) continue;
    uint32_t o = f->s[s].opener;
    if (st->armst[o] != stamp) {
      st->armst[o] = stamp;
      st->armcnt[o] = 0;
    }
    if (++st->armcnt[o] == narms(f->x[o])) st->covst[f->s[s].parent] = stamp;
  }
  for (uint32_t k = 0; k < n; k++) {
    uint32_t top = MV_NONE;
    for (uint32_t s = f->home[mb[k].id]; s != MV_NONE; s = f->s[s].parent)
      if (st->covst[s] == stamp) top = s;
    mb[k].top = top;
  }
  return 0;
}

static dp_expr *strip(mstate *st, dp_expr *e) {
  dp_expr *b;
  while ((b = dp__on_device_body(&st->ops, e))) e = b;
  return e;
}

/* The value a copy copies, in words (malloc'd). */
static char *value_text(mstate *st, dp_expr *v) {
  if (v->h.kind == DP_VAR) return fmt("%%%s", ((dp_var *)v)->name);
  return dp__describe(st->m->ctx, v);
}

static int merge_fn(mstate *st, uint32_t g) {
  dp__mfun *f = &st->f[g];
  dp__mtable *t = &st->t[g];
  mkey *keys = NULL;
  mmember *mb = NULL;
  uint32_t nk = 0, capk = 0, nm = 0, capm = 0, *touched = NULL, capt = 0;
  dp__ptrmap first = DP__PTRMAP_INIT;
  int moved = -1, dead = 0;
  /* lets bound to copies (or variables) nobody reads */
  for (uint32_t id = 0; id < f->n; id++) {
    if (f->x[id]->h.kind != DP_LET || dp__mtable_get(t, id)) continue;
    uint32_t var = f->kid[f->koff[id]], v = f->kid[f->koff[id] + 1];
    if (var == MV_NONE || v == MV_NONE || dp__mfun_nuses(f, var) != 1) continue;
    dp_expr *val = strip(st, f->x[v]);
    dp_vdev *src, *dst;
    int copy = is_copy(st, val, &src, &dst);
    if (!copy && val->h.kind != DP_VAR) continue;
    if (copy) {
      int ok = dp__mfun_stays_put(&st->ops, f, dp__mfun_id(f, val));
      if (ok < 0) goto done;
      if (!ok) continue;
    }
    dp__mdec *d = dp__mtable_dec(t, id);
    /* its copy merges with no other (the let goes, and its uses with it) */
    dp__mdec *dv = d ? dp__mtable_dec(t, dp__mfun_id(f, val)) : NULL;
    if (!dv) goto done;
    d->op = MD_BODY;
    if (copy) {
      char fnn[300];
      snprintf(fnn, sizeof fnn, "@%s", f->name);
      char *name = fmt("%%%s", ((dp_var *)f->x[var])->name);
      log_move(st, DP_MOVE_DEAD, fnn, NULL, name, f->x[id]->span, src, dst, 1,
               "let %s in @%s is bound to a copy nobody reads any more: gone", name ? name : "?",
               f->name);
      free(name);
    }
    dead++;
  }
  for (uint32_t id = 0; id < f->n; id++) {
    dp_vdev *src, *dst;
    if (!is_copy(st, f->x[id], &src, &dst) || dp__mtable_get(t, id)) continue;
    dp_expr *v = strip(st, ((dp_call *)f->x[id])->args[0]);
    dp__ptrslot *s = dp__ptrmap_find(&first, v);
    uint32_t k = s ? s->val : MV_NONE;
    while (k != MV_NONE && !(keys[k].src == src && keys[k].dst == dst)) k = keys[k].first;
    if (k == MV_NONE) {
      if (dp_grow((void **)&keys, &capk, nk + 1, sizeof *keys) < 0) goto done;
      keys[nk] = (mkey){v, src, dst, s ? s->val : MV_NONE, 0};
      if (dp__ptrmap_set(&first, v, nk, 0) < 0) goto done;
      k = nk++;
    }
    keys[k].n++;
    if (dp_grow((void **)&mb, &capm, nm + 1, sizeof *mb) < 0) goto done;
    mb[nm++] = (mmember){k, id, MV_NONE};
  }
  moved = dead;
  if (nm < 2) goto done;
  /* members of one key together, then the groups found by their cover */
  qsort(mb, nm, sizeof *mb, by_key_top_id);
  for (uint32_t a = 0; a < nm;) {
    uint32_t b = a;
    while (b < nm && mb[b].key == mb[a].key) b++;
    if (b - a >= 2 && cover(st, f, mb + a, b - a, &touched, &capt) < 0) {
      moved = -1;
      goto done;
    }
    a = b;
  }
  qsort(mb, nm, sizeof *mb, by_key_top_id);
  for (uint32_t a = 0; a < nm;) {
    uint32_t b = a;
    while (b < nm && mb[b].key == mb[a].key && mb[b].top == mb[a].top) b++;
    if (b - a >= 2 && mb[a].top != MV_NONE) {
      int direct = 0;
      for (uint32_t k = a; k < b; k++) {
        dp__mdec *d = dp__mtable_dec(t, mb[k].id);
        if (!d) {
          moved = -1;
          goto done;
        }
        d->op = MD_REP;
        d->rep = mb[a].id;
        direct |= f->home[mb[k].id] == mb[a].top;
      }
      mkey *k = &keys[mb[a].key];
      dp_expr *opener = f->x[f->s[mb[a].top].opener];
      char *what = value_text(st, k->value), *x = dev(k->src), *y = dev(k->dst);
      char *where = dp__describe(st->m->ctx, opener);
      char fnn[300];
      snprintf(fnn, sizeof fnn, "@%s", f->name);
      if (direct)
        log_move(st, DP_MOVE_MERGED, fnn, NULL, what, k->value->span, k->src, k->dst, b - a,
                 "%u copies of %s from %s to %s in @%s are one: it runs where one of them ran "
                 "whenever any of the others would",
                 b - a, what ? what : "?", x ? x : "?", y ? y : "?", f->name);
      else
        log_move(st, DP_MOVE_MERGED, fnn, NULL, what, k->value->span, k->src, k->dst, b - a,
                 "the copies of %s from %s to %s that every arm under %s makes are one copy, "
                 "made before it (it runs once whichever arm is taken, as one of them did)",
                 what ? what : "?", x ? x : "?", y ? y : "?", where ? where : "a branch");
      free(what);
      free(x);
      free(y);
      free(where);
      moved++;
    }
    a = b;
  }
done:
  free(keys);
  free(mb);
  free(touched);
  dp__ptrmap_free(&first);
  return moved;
}

static int merges(mstate *st, dp_err **err) {
  int moved = 0;
  for (uint32_t g = 0; g < st->nf; g++) {
    dp__mfun *f = &st->f[g];
    free(st->covst);
    free(st->touch);
    free(st->armst);
    free(st->armcnt);
    st->covst = dp_calloc(f->ns ? f->ns : 1, sizeof *st->covst);
    st->touch = dp_calloc(f->ns ? f->ns : 1, sizeof *st->touch);
    st->armst = dp_calloc(f->n, sizeof *st->armst);
    st->armcnt = dp_calloc(f->n, sizeof *st->armcnt);
    st->stamp = 0;
    int r = st->covst && st->touch && st->armst && st->armcnt ? merge_fn(st, g) : -1;
    if (r < 0) {
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      return -1;
    }
    moved += r;
  }
  return moved;
}

/* ---------------------------------------------------------------- out of closures */

/* May value node v of h's closure be computed where the closure is made,
   once, instead of on every call? Its nodes computed inside the closure (those
   outside it are computed there already) must be operators alone (constants,
   tuples, projections, constructors, operator calls but references'), so
   that computing them once gives what each call computed, and read only
   variables the closure captures (fv: bound outside it; not its own). A
   walk with an explicit stack (mark: f->n stamps, *stamp bumped). 1, 0, -1
   (out of memory). */
static int movable(mstate *st, mhandle *h, const dp__ptrmap *fv, uint32_t v, uint32_t *mark,
                   uint32_t *stamp) {
  dp__mfun *f = &st->f[h->fn];
  uint32_t *stack = NULL, n = 0, cap = 0;
  uint32_t s = ++*stamp;
  int ok = 1;
  if (tail_push(&stack, &n, &cap, v) < 0) return -1;
  mark[v] = s;
  while (n && ok > 0) {
    uint32_t id = stack[--n];
    dp_expr *e = f->x[id];
    if (e->h.kind == DP_VAR) {
      ok = dp__ptrmap_find(fv, e) && id != h->var;
      continue;
    }
    if (!dp__mscope_within(f, f->home[id], h->body, 0)) continue; /* computed outside already */
    switch (e->h.kind) {
    case DP_CONST: case DP_OP: case DP_CTOR: case DP_TUPLE: case DP_PROJ: break;
    case DP_CALL: {
      dp_expr *callee = ((dp_call *)e)->fn;
      if (callee->h.kind == DP_CTOR) break;
      const char *name = callee->h.kind == DP_OP ? ((dp_op *)callee)->name : NULL;
      ok = name && strcmp(name, "ref") != 0 && strcmp(name, "ref_read") != 0 && strcmp(name, "ref_write") != 0;
      break;
    }
    default: ok = 0; break;
    }
    for (uint32_t k = f->koff[id]; k < f->koff[id + 1] && ok > 0; k++) {
      uint32_t c = f->kid[k];
      if (c == MV_NONE || mark[c] == s) continue;
      mark[c] = s;
      if (tail_push(&stack, &n, &cap, c) < 0) ok = -1;
    }
  }
  free(stack);
  return ok;
}

/* Copy c (at the top of h's body: it runs on every call) moves to where
   the closure is made: `let %v = device_copy(...); let %f = fn ...`, the
   copy inside becomes %v. 1 moved, 0 not (what it copies reads something
   bound inside, or is more than operators: a call of a function, a
   reference, a branch), -1 out of memory. */
static int hoist_copy(mstate *st, mhandle *h, const dp__ptrmap *fv, uint32_t c, uint32_t *mark,
                      uint32_t *stamp) {
  dp__mfun *f = &st->f[h->fn];
  dp__mtable *t = &st->t[h->fn];
  dp_vdev *src, *dst;
  if (!is_copy(st, f->x[c], &src, &dst) || !src || !dst || dp__mtable_get(t, c)) return 0;
  uint32_t arg = f->kid[f->koff[c] + 1];
  int ok = movable(st, h, fv, arg, mark, stamp);
  if (ok <= 0) return ok;
  dp_expr *v = strip(st, f->x[arg]);
  char id[96];
  dev_ident(dst, id, sizeof id);
  char *name = v->h.kind == DP_VAR ? fmt("%s_%s", ((dp_var *)v)->name, id) : fmt("copy_%s", id);
  dp_var *nv = name ? dp_var_new(name, NULL, NULL, f->x[c]->span) : NULL; /* (its device: the copy's) */
  free(name);
  if (!nv) return -1;
  if (f->x[c]->type) nv->e.type = dp_retain(f->x[c]->type);
  dp__mdec *dc = dp__mtable_dec(t, c);
  if (!dc) {
    dp_release(nv);
    return -1;
  }
  dc->op = MD_VAR;
  dc->var = nv; /* (the table owns it) */
  dp__mdec *dl = dp__mtable_dec(t, h->let);
  if (!dl) return -1;
  dl->hoist_var = dp_retain(nv);
  dl->hoist_arg = arg;
  dl->hoist_src = src;
  dl->hoist_dst = dst;
  char *who = hname(st, h), *what = value_text(st, v), *a = dev(src), *b = dev(dst);
  char *to = fmt("%%%s", nv->name);
  if (!who || !what || !a || !b || !to) st->oom = 1; /* (an error: no message with a "?") */
  log_move(st, DP_MOVE_CAPTURED, who, to, what, f->x[c]->span, src, dst, 1,
           "%s copies %s, which it captures, from %s to %s on every call, and is called "
           "whenever it is made: the copy moved to where it is made (%s), once per closure "
           "instead of once per call",
           who ? who : "?", what ? what : "?", a ? a : "?", b ? b : "?", to ? to : "?");
  free(who);
  free(what);
  free(a);
  free(b);
  free(to);
  return 1;
}

/* Let-bound closures called whenever they are made (a call in the let's
   own scope: it runs each time the let does) that copy, on every call (at
   the top of the body), a value they capture: the copy is made once, where
   the closure is, instead of once per call. One copy per closure and
   round; none where the let or the closure has another decision. */
static int hoists(mstate *st, dp_err **err) {
  int moved = 0, rc = 0;
  uint32_t **by = dp_calloc(st->nf ? st->nf : 1, sizeof *by); /* fn -> scope -> handle */
  dp__ptrmap *fv = dp_calloc(st->nh ? st->nh : 1, sizeof *fv); /* handle -> what it captures */
  uint8_t *has_fv = dp_calloc(st->nh ? st->nh : 1, 1);
  if (!by || !fv || !has_fv) rc = -1;
  for (uint32_t i = 0; i < st->nh && rc == 0; i++) {
    mhandle *h = &st->h[i];
    uint32_t g = h->fn;
    dp__mfun *f = &st->f[g];
    if (h->kind != H_LET || h->body == MV_NONE) continue;
    if (dp__mtable_get(&st->t[g], h->let) || dp__mtable_get(&st->t[g], h->node)) continue;
    int called = 0;
    for (uint32_t k = 0; k < h->ncalls && !called; k++)
      called = h->calls[k].fn == g && f->home[h->calls[k].id] == f->home[h->let];
    if (!called) continue;
    if (!by[g]) {
      if (!(by[g] = dp_malloc((f->ns ? f->ns : 1) * sizeof **by))) {
        rc = -1;
        break;
      }
      for (uint32_t k = 0; k < f->ns; k++) by[g][k] = MV_NONE;
    }
    by[g][h->body] = i;
  }
  for (uint32_t g = 0; g < st->nf && rc == 0; g++) {
    dp__mfun *f = &st->f[g];
    if (!by[g]) continue;
    uint32_t *mark = dp_calloc(f->n ? f->n : 1, sizeof *mark), stamp = 0;
    if (!mark) rc = -1;
    for (uint32_t c = 0; c < f->n && rc == 0; c++) {
      uint32_t hi = by[g][f->home[c]];
      dp_vdev *src, *dst;
      if (hi == MV_NONE || !is_call(f->x[c]) || !is_copy(st, f->x[c], &src, &dst)) continue;
      mhandle *h = &st->h[hi];
      if (!has_fv[hi]) { /* (once per closure and round) */
        uint32_t nfree = 0;
        dp_var **vs = dp_free_vars(&hfunc(st, h)->e, &nfree);
        if (!vs) rc = -1;
        for (uint32_t i = 0; i < nfree && rc == 0; i++)
          if (dp__ptrmap_put(&fv[hi], vs[i], vs[i]) < 0) rc = -1;
        free(vs);
        has_fv[hi] = 1;
      }
      int r = rc == 0 ? hoist_copy(st, h, &fv[hi], c, mark, &stamp) : -1;
      if (r < 0) rc = -1;
      if (r > 0) {
        by[g][h->body] = MV_NONE; /* one per closure and round */
        moved++;
      }
    }
    free(mark);
  }
  for (uint32_t g = 0; by && g < st->nf; g++) free(by[g]);
  for (uint32_t i = 0; fv && i < st->nh; i++) dp__ptrmap_free(&fv[i]);
  free(by);
  free(fv);
  free(has_fv);
  if (rc < 0) {
    if (err && !*err) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  return moved;
}

/* ---------------------------------------------------------------- applying */

static dp_module *apply(mstate *st, dp_err **err) {
  dp_module *out = dp_module_copy(st->m);
  if (!out) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  for (uint32_t i = 0; i < st->ncl; i++) {
    mclone *c = &st->cl[i];
    if (!c->name) { /* let-bound: made when its let is rewritten */
      dp__mdec *d = dp__mtable_dec(&st->t[c->fn], c->into);
      if (!d) goto oom;
      d->clone = &c->t;
      d->clone_root = c->root;
      continue;
    }
    dp_expr *made = dp__mrewrite(&st->ops, &c->t, c->root, err);
    if (!made) goto fail;
    dp_global *g = dp_global_new(c->name, made->span);
    int rc = g ? dp_module_add_func(out, g, (dp_func *)made, err) : -1;
    dp_release(g);
    dp_release(made);
    if (rc < 0) goto fail;
  }
  for (uint32_t g = 0; g < st->nf; g++) {
    if (!st->t[g].any) continue;
    dp_expr *fn = dp__mrewrite(&st->ops, &st->t[g], st->f[g].n - 1, err);
    if (!fn) goto fail;
    if (fn->h.kind != DP_FUNC) {
      dp_release(fn);
      dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "move_copies: function @%s did not stay a function",
                                 st->f[g].name));
      goto fail;
    }
    int rc = dp_module_set_func(out, st->f[g].name, (dp_func *)fn, err);
    dp_release(fn);
    if (rc < 0) goto fail;
    if (st->t[g].ncancel) {
      char fnn[300];
      snprintf(fnn, sizeof fnn, "@%s", st->f[g].name);
      log_move(st, DP_MOVE_CANCELLED, fnn, NULL, NULL, DP_NOSPAN, NULL, NULL, st->t[g].ncancel,
               "%u cop%s in @%s copied a value back to the device it came from: the value itself, "
               "no copy", st->t[g].ncancel, st->t[g].ncancel == 1 ? "y" : "ies", st->f[g].name);
    }
  }
  return out;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
fail:
  dp_release(out);
  return NULL;
}

/* ---------------------------------------------------------------- the pass */

dp_module *dp_plan_move_copies(dp_module *planned, const dp_config *cfg, const dp_move_opts *o,
                               dp_moves *out, dp_err **err) {
  mstate st = {0};
  if (out) *out = (dp_moves){0};
  if (dp__plan_ops(planned->ctx, &st.ops, err) < 0) return NULL;
  st.m = dp_retain(planned);
  st.cfg = cfg;
  st.log = out;
  st.budget = o && o->max_new_functions ? o->max_new_functions : 16;
  for (uint32_t round = 0; round < MAX_ROUNDS; round++) {
    if (analyse(&st, err) < 0) goto fail;
    int moved = boundaries(&st, err);
    if (moved == 0) moved = hoists(&st, err);
    if (moved == 0) moved = peels(&st, err);
    if (moved == 0) moved = merges(&st, err);
    if (moved < 0 || st.oom) goto fail;
    if (moved == 0) {
      forget(&st);
      break;
    }
    if (out) out->rounds++;
    dp_module *next = apply(&st, err);
    forget(&st);
    if (!next) goto fail;
    dp_release(st.m);
    st.m = next;
  }
  dp__plan_ops_free(&st.ops);
  /* the planned form, by TVM's rules (every device is written, so they
     change none: a conflict here would be a bug of this pass) */
  dp_module *norm = dp_infer_module(st.m, err) == 0 ? dp_plan_devices(st.m, cfg, err) : NULL;
  dp_release(st.m);
  if (!norm && out) dp_moves_clear(out);
  return norm;
fail:
  if (err && !*err) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  forget(&st);
  dp__plan_ops_free(&st.ops);
  dp_release(st.m);
  if (out) dp_moves_clear(out);
  return NULL;
}
