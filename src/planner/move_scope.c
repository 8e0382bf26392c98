/*
 * MoveCopies' analysis of one global function (move.h): every distinct
 * node numbered in post order (the order dp_visit and dp_rewrite meet
 * them), its children and uses, and the scope it runs in.
 *
 * Scopes: the global function's body (the root), the body of each function
 * literal, each branch of an if and each clause of a match. A node runs in
 * the innermost scope holding all its uses (where the printer binds it:
 * include/devplan/visit.h), so its home is the lowest common ancestor of
 * the scopes its uses are in, computed parents first (reverse post order),
 * which opens the scopes of each node below its own home.
 *
 * Explicit stacks only (dp_visit): any depth. Linear in the function, but
 * for the common ancestors, which walk up the scope tree (as deep as
 * branches and literals nest).
 */
#include <stdlib.h>
#include "planner.h"

typedef struct nctx { dp__mfun *m; int oom; } nctx;

static int number(void *ud, dp_expr *e) {
  nctx *c = ud;
  dp__mfun *m = c->m;
  if (dp_grow((void **)&m->x, &m->capx, m->n + 1, sizeof *m->x) < 0 ||
      dp__ptrmap_set(&m->id, e, m->n, 0) < 0) {
    c->oom = 1;
    return -1;
  }
  m->x[m->n++] = e;
  return 0;
}

/* Scopes a node opens, and at which child slots. */
static uint32_t nscopes(const dp_expr *e, int root) {
  switch (e->h.kind) {
  case DP_FUNC: return 1;
  case DP_IF: return 2;
  case DP_MATCH: return ((const dp_match *)e)->n;
  default: (void)root; return 0;
  }
}

uint32_t dp__mfun_scope_at(const dp__mfun *m, uint32_t id, uint32_t slot) {
  uint32_t first = m->open[id];
  if (first == MV_NONE) return MV_NONE;
  const dp_expr *e = m->x[id];
  switch (e->h.kind) {
  case DP_FUNC: return slot == ((const dp_func *)e)->nparams ? first : MV_NONE;
  case DP_IF: return slot == 1 || slot == 2 ? first + slot - 1 : MV_NONE;
  case DP_MATCH: return slot >= 1 ? first + slot - 1 : MV_NONE;
  default: return MV_NONE;
  }
}

uint32_t dp__mscope_lca(const dp__mfun *m, uint32_t a, uint32_t b) {
  if (a == MV_NONE) return b;
  if (b == MV_NONE) return a;
  while (m->s[a].depth > m->s[b].depth) a = m->s[a].parent;
  while (m->s[b].depth > m->s[a].depth) b = m->s[b].parent;
  while (a != b) {
    a = m->s[a].parent;
    b = m->s[b].parent;
  }
  return a;
}

int dp__mscope_within(const dp__mfun *m, uint32_t a, uint32_t b, int arms_only) {
  if (a == MV_NONE || b == MV_NONE) return 0;
  while (m->s[a].depth > m->s[b].depth) {
    if (arms_only && m->s[a].kind != MS_ARM) return 0;
    a = m->s[a].parent;
  }
  return a == b;
}

static int add_scope(dp__mfun *m, uint32_t parent, uint32_t opener, uint8_t kind) {
  if (dp_grow((void **)&m->s, &m->caps, m->ns + 1, sizeof *m->s) < 0) return -1;
  m->s[m->ns++] = (dp__mscope){parent, parent == MV_NONE ? 0 : m->s[parent].depth + 1, opener, kind};
  return 0;
}

/* Children ids, then uses (counted, then filled). */
static int link(dp__mfun *m) {
  uint32_t n = m->n;
  if (!(m->koff = dp_malloc(((size_t)n + 1) * sizeof *m->koff)) ||
      !(m->uoff = dp_calloc((size_t)n + 2, sizeof *m->uoff)))
    return -1;
  for (uint32_t i = 0; i < n; i++) {
    dp_expr *e = m->x[i];
    uint32_t k = dp__nchildren(e);
    m->koff[i] = m->nkid;
    if (dp_grow((void **)&m->kid, &m->capkid, m->nkid + k, sizeof *m->kid) < 0) return -1;
    for (uint32_t j = 0; j < k; j++) {
      uint32_t c = dp__mfun_id(m, dp__child(e, j));
      m->kid[m->nkid++] = c;
      if (c != MV_NONE) m->uoff[c + 2]++;
    }
  }
  m->koff[n] = m->nkid;
  /* uoff[i + 2] counts; prefix sums make uoff[i + 1] the start of i's uses
     (filled from there), and uoff[i + 1] its end after the fill */
  for (uint32_t i = 2; i < n + 2; i++) m->uoff[i] += m->uoff[i - 1];
  size_t total = m->uoff[n + 1] ? m->uoff[n + 1] : 1;
  if (!(m->upar = dp_malloc(total * sizeof *m->upar)) ||
      !(m->uslot = dp_malloc(total * sizeof *m->uslot)))
    return -1;
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t j = m->koff[i]; j < m->koff[i + 1]; j++) {
      uint32_t c = m->kid[j];
      if (c == MV_NONE) continue;
      uint32_t at = m->uoff[c + 1]++;
      m->upar[at] = i;
      m->uslot[at] = j - m->koff[i];
    }
  return 0;
}

/* Homes, parents first; each node opens its scopes below its home. */
static int homes(dp__mfun *m) {
  uint32_t n = m->n;
  if (!(m->home = dp_malloc((size_t)n * sizeof *m->home)) ||
      !(m->open = dp_malloc((size_t)n * sizeof *m->open)))
    return -1;
  for (uint32_t i = 0; i < n; i++) m->home[i] = m->open[i] = MV_NONE;
  uint32_t root = n - 1;
  if (add_scope(m, MV_NONE, root, MS_ROOT) < 0) return -1;
  m->home[root] = 0;
  for (uint32_t i = n; i-- > 0;) {
    dp_expr *e = m->x[i];
    if (m->home[i] == MV_NONE) m->home[i] = 0; /* (unreached: only the root has no use) */
    uint32_t k = nscopes(e, i == root);
    if (i == root) {
      m->open[i] = 0;
    } else if (k) {
      m->open[i] = m->ns;
      uint8_t kind = e->h.kind == DP_FUNC ? MS_FN : MS_ARM;
      for (uint32_t j = 0; j < k; j++)
        if (add_scope(m, m->home[i], i, kind) < 0) return -1;
    }
    for (uint32_t j = m->koff[i]; j < m->koff[i + 1]; j++) {
      uint32_t c = m->kid[j];
      if (c == MV_NONE) continue;
      int ck = m->x[c]->h.kind;
      if (ck == DP_OP || ck == DP_CTOR || ck == DP_GLOBAL || ck == DP_VAR) continue;
      uint32_t at = dp__mfun_scope_at(m, i, j - m->koff[i]);
      if (at == MV_NONE) at = m->home[i];
      m->home[c] = dp__mscope_lca(m, m->home[c], at);
    }
  }
  for (uint32_t i = 0; i < n; i++) {
    int k = m->x[i]->h.kind;
    if (k == DP_OP || k == DP_CTOR || k == DP_GLOBAL || k == DP_VAR) m->home[i] = 0;
  }
  return 0;
}

int dp__mfun_init(dp__mfun *m, dp_expr *f, const char *name, dp_err **err) {
  *m = (dp__mfun){0};
  m->root = f;
  m->name = name;
  nctx c = {m, 0};
  dp_visitor v = {NULL, number, &c};
  if (dp_visit(f, &v) < 0 || c.oom || m->n == 0 || link(m) < 0 || homes(m) < 0) {
    dp__mfun_free(m);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  return 0;
}

void dp__mfun_free(dp__mfun *m) {
  dp__ptrmap_free(&m->id);
  free(m->x);
  free(m->koff);
  free(m->kid);
  free(m->uoff);
  free(m->upar);
  free(m->uslot);
  free(m->home);
  free(m->open);
  free(m->s);
  *m = (dp__mfun){0};
}

/* ---- uses through on_device calls ---- */

int dp__mfun_uses(const struct dp__plan_ops *ops, const dp__mfun *f, uint32_t v, dp__mvuses *out) {
  uint32_t *stack = NULL, n = 0, cap = 0;
  int rc = 0;
  if (dp_grow((void **)&stack, &cap, 1, sizeof *stack) < 0) return -1;
  stack[n++] = v;
  while (n && rc == 0) {
    uint32_t x = stack[--n];
    for (uint32_t k = f->uoff[x]; k < f->uoff[x + 1] && rc == 0; k++) {
      uint32_t q = f->upar[k], slot = f->uslot[k];
      if (slot == 1 && dp__on_device_body(ops, f->x[q])) {
        if (dp_grow((void **)&stack, &cap, n + 1, sizeof *stack) < 0 ||
            dp_grow((void **)&out->w, &out->capw, out->nw + 1, sizeof *out->w) < 0)
          rc = -1;
        else {
          stack[n++] = q;
          out->w[out->nw++] = q;
        }
        continue;
      }
      if (dp_grow((void **)&out->u, &out->cap, out->n + 1, sizeof *out->u) < 0) rc = -1;
      else out->u[out->n++] = (dp__mvuse){q, slot, x};
    }
  }
  free(stack);
  if (rc < 0) {
    free(out->u);
    free(out->w);
    *out = (dp__mvuses){0};
  }
  return rc;
}

int dp__mfun_stays_put(const struct dp__plan_ops *ops, const dp__mfun *f, uint32_t c) {
  uint32_t v = c == MV_NONE ? MV_NONE : f->kid[f->koff[c] + 1];
  while (v != MV_NONE && dp__on_device_body(ops, f->x[v]) && dp__mfun_nuses(f, v) == 1)
    v = f->kid[f->koff[v] + 1];
  if (v == MV_NONE) return 0;
  int k = f->x[v]->h.kind;
  if (k == DP_VAR || k == DP_GLOBAL || k == DP_CONST || k == DP_OP || k == DP_CTOR) return 1;
  dp__mvuses vu = {0};
  if (dp__mfun_uses(ops, f, v, &vu) < 0) return -1;
  uint32_t at = MV_NONE;
  for (uint32_t u = 0; u < vu.n; u++) {
    uint32_t p = vu.u[u].par;
    if (p == c) continue; /* (the copy itself, through the on_device calls on the way to it) */
    uint32_t sc = dp__mfun_scope_at(f, p, vu.u[u].slot);
    at = dp__mscope_lca(f, at, sc != MV_NONE ? sc : f->home[p]);
  }
  free(vu.u);
  free(vu.w);
  return at == MV_NONE || dp__mscope_within(f, at, f->home[v], 1);
}
