/*
 * Explanations: why a domain has its device, and the conflict errors; the
 * layer above the phases. The phases return a conflict as data (the
 * domains' failed record); the pipeline (plan.c), the planner's state
 * (domains_api.c) and the Lua binding ask here for its words.
 *
 * A domain's device comes from constraint domains (an annotation, a callee
 * rule, a defaulting rule) that unification joined into its class. A proof
 * forest connects every class member by edges that carry the reason of each
 * unification, so the path from an expression's domain to the nearest
 * constraint of its class is the chain of steps that carried the device
 * there.
 *
 * Analysis keeps no proofs (they would be more than half of the domains'
 * memory). When a conflict or an explanation asks, new domains over the
 * same index replay analysis and the log of what followed it (replay.c),
 * and this file keeps the proof forest of that replay: the domains tell it
 * each link they make (on_link).
 *
 * Every conflict at once (all_conflicts): the replay goes on after each
 * conflict, and analysis tells here each one as it meets it, so each
 * independent one (independent.c follows the links to say which) is worded
 * as PlanDevices would word it had it stopped there; the proof forest's
 * children lists are kept as it changes, so a search costs what it visits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"

static const char *const rule_texts[R__COUNT] = {
  [R_NONE] = "unknown",
  [R_ON_DEVICE] = "the annotation",
  [R_COPY_SRC] = "the source of device_copy",
  [R_COPY_DST] = "the destination of device_copy",
  [R_PARAM_ANNOT] = "the virtual_device of parameter",
  [R_FUNC_ANNOT] = "the virtual_device of function",
  [R_HOST_ARG] = "the host device required by",
  [R_ALLOC_DEV] = "the virtual_device of",
  [R_PRIMFN_ARG] = "the memory scope of a primfn argument buffer",
  [R_PRIMFN_RESULT] = "the memory scope of a primfn result buffer",
  [R_DEF_RESULT] = "the default device (configuration) for the result of",
  [R_DEF_PARAM] = "the defaulting rule 'parameters follow the result' of",
  [R_DEF_LET] = "the defaulting rule 'a let variable follows its let' at",
  [R_DEF_CALL] = "the default device (configuration) for the callee of",
  [R_USER_CONSTRAIN] = "a script's constraint on",
  [R_USER_DEFAULT] = "a script's default for",
  [R_PLACEMENT] = "the placement by cost of",
  [R_ARG] = "an argument of",
  [R_RESULT] = "the result of",
  [R_CALLEE] = "the callee of",
  [R_LET_VAR] = "the binding of",
  [R_LET_BODY] = "the body of",
  [R_FUNC_BODY] = "the body of",
  [R_FUNC_PARAM] = "a parameter of",
  [R_TUPLE] = "a field of",
  [R_PROJ] = "the tuple of",
  [R_IF_COND] = "the condition of",
  [R_IF_BRANCH] = "a branch of",
  [R_MATCH_DATA] = "the data of",
  [R_MATCH_PAT] = "a pattern variable of",
  [R_MATCH_RHS] = "a clause of",
  [R_REF] = "the reference of",
  [R_GLOBAL] = "the definition of",
  [R_FREE_ON_DEVICE] = "the free on_device",
  [R_CTOR] = "a constructor argument of",
  [R_USER_UNIFY] = "a script's unification at",
  [R_COLLAPSE] = "a collapsed function in",
};

/* Short names of the constraint rules (dp_explain.rule). */
static const char *rule_name(int rule) {
  switch (rule) {
  case R_ON_DEVICE: return "on_device";
  case R_COPY_SRC: case R_COPY_DST: return "device_copy";
  case R_PARAM_ANNOT: return "parameter annotation";
  case R_FUNC_ANNOT: return "function annotation";
  case R_HOST_ARG: return "host";
  case R_ALLOC_DEV: return "memory.alloc_storage";
  case R_PRIMFN_ARG: case R_PRIMFN_RESULT: return "primfn scope";
  case R_DEF_RESULT: return "default result";
  case R_DEF_PARAM: return "default parameter";
  case R_DEF_LET: return "default let";
  case R_DEF_CALL: return "default callee";
  case R_USER_CONSTRAIN: return "script constraint";
  case R_USER_DEFAULT: return "script default";
  case R_PLACEMENT: return "placement";
  default: return "unknown";
  }
}

const char *dp__rule_text(int rule) {
  return rule >= 0 && rule < R__COUNT && rule_texts[rule] ? rule_texts[rule] : "unknown";
}

/* Length of the rule text to print before the description w: without its
   last word when w starts with that word ("the source of device_copy" +
   "device_copy at 3:5" reads "the source of device_copy at 3:5"). */
static int rule_prefix_len(const char *text, const char *w) {
  int n = (int)strlen(text);
  const char *last = strrchr(text, ' ');
  if (!w || !last) return n;
  size_t k = strlen(last + 1);
  if (k && strncmp(w, last + 1, k) == 0 && (w[k] == ' ' || w[k] == '\0'))
    return (int)(last - text);
  return n;
}

static char *reason(dp__domains *d, int rule, dp_expr *why) {
  char *w = why ? dp__describe(d->ctx, why) : NULL;
  if (why && !w) return NULL; /* out of memory, not a text without its expression */
  const char *text = dp__rule_text(rule);
  size_t n = strlen(text) + (w ? strlen(w) : 0) + 4;
  char *s = dp_malloc(n);
  if (s) snprintf(s, n, "%.*s%s%s", rule_prefix_len(text, w), text, w ? " " : "", w ? w : "");
  free(w);
  return s;
}

/* ---- the proofs of a replay ---- */

/* An edge of the proof forest: towards parent, for rule and why. */
typedef struct proof { uint32_t parent; uint8_t rule; dp_expr *why; } proof;

/* Domains with proofs: new domains over the index of a state, which
   replay what made its domains (replay), and the proof forest of what they
   link (an undirected spanning tree of every class whose edges say why two
   domains were unified), grown to every domain made (cover). With track
   (all_conflicts), also each node's children in the forest (first child,
   next and previous sibling, each id + 1, 0: none), kept as it changes,
   and the links told to independent.c. */
typedef struct proofs {
  dp__domains d;
  const struct dp__placement *place; /* the state's: what LOG_PLACE replays */
  proof *edge;
  uint32_t *first, *next, *prev;     /* track */
  uint32_t n, cap;                   /* domains covered */
  dp__indep *indep;                  /* track */
} proofs;

/* The forest to cover d's domains: 0, or -1 (out of memory). */
static int cover(proofs *pf) {
  uint32_t n = pf->d.nnodes;
  if (n <= pf->n) return 0;
  void **const arrs[] = {(void **)&pf->edge, (void **)&pf->first, (void **)&pf->next, (void **)&pf->prev};
  const size_t sizes[] = {sizeof *pf->edge, sizeof *pf->first, sizeof *pf->next, sizeof *pf->prev};
  if (dp_grow_arrays(&pf->cap, n, pf->indep ? 4 : 1, arrs, sizes) < 0) return -1;
  for (uint32_t i = pf->n; i < n; i++) {
    pf->edge[i] = (proof){DP__NONE_ID, 0, NULL};
    if (pf->indep) pf->first[i] = pf->next[i] = pf->prev[i] = 0;
  }
  pf->n = n;
  return 0;
}

/* Is the proof path from y shorter than the one from x? Walks both in
   lockstep, so the cost is the shorter of the two: a chain of a million
   unifications must not make each new link walk the whole chain. */
static int proof_shorter(const proofs *pf, uint32_t x, uint32_t y) {
  for (;;) {
    if (pf->edge[y].parent == DP__NONE_ID) return pf->edge[x].parent != DP__NONE_ID;
    if (pf->edge[x].parent == DP__NONE_ID) return 0;
    x = pf->edge[x].parent;
    y = pf->edge[y].parent;
  }
}

/* The children lists: c leaves parent p's, joins parent q's. */
static void kid_move(proofs *pf, uint32_t c, uint32_t p, uint32_t q) {
  if (p != DP__NONE_ID) {
    uint32_t nx = pf->next[c], pv = pf->prev[c];
    if (pv) pf->next[pv - 1] = nx;
    else pf->first[p] = nx;
    if (nx) pf->prev[nx - 1] = pv;
  }
  uint32_t f = pf->first[q];
  pf->next[c] = f;
  pf->prev[c] = 0;
  if (f) pf->prev[f - 1] = c + 1;
  pf->first[q] = c + 1;
}

/* The domains linked x and y (on_link): an edge x - y; x's tree is
   re-rooted at x, which then hangs under y. */
static int proof_link(void *ud, dp__domains *d, uint32_t x, uint32_t y, int rule, dp_expr *why) {
  (void)d;
  proofs *pf = ud;
  if (cover(pf) < 0) return -1;
  int rc = pf->indep && dp__indep_link(pf->indep, x, y) < 0 ? -1 : 0;
  if (proof_shorter(pf, x, y)) {
    uint32_t t = x;
    x = y;
    y = t;
  }
  proof carry = {y, (uint8_t)rule, why};
  for (uint32_t cur = x; cur != DP__NONE_ID;) {
    proof old = pf->edge[cur];
    if (pf->indep) kid_move(pf, cur, old.parent, carry.parent);
    pf->edge[cur] = carry;
    carry = (proof){cur, old.rule, old.why};
    cur = old.parent;
  }
  return rc;
}

static void proofs_free(proofs *pf) {
  dp__domains_clear(&pf->d);
  free(pf->edge);
  free(pf->first);
  free(pf->next);
  free(pf->prev);
  dp__indep_free(pf->indep);
}

/* New domains with proofs over s's index (track: for all_conflicts). 0, or
   -1 + error (then free them all the same). */
static int proofs_init(proofs *pf, dp_domains *s, int track, dp_err **err) {
  *pf = (proofs){.place = s->place};
  if (dp__domains_init(&pf->d, s->uf.ix, s->uf.nnodes + 64, err) < 0) return -1;
  pf->d.on_link = proof_link;
  pf->d.link_ud = pf;
  if ((track && !(pf->indep = dp__indep_new())) || cover(pf) < 0) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  return 0;
}

/* Replays on pf what made s's domains: analysis (how: NULL, to its first
   conflict), then the first n entries of s's log. 0, 1 (a conflict:
   pf->d.failed) or -1 + error. */
static int replay(proofs *pf, dp_domains *s, dp__analysis *how, uint32_t n, dp_err **err) {
  dp__analysis first = {0};
  int rc = dp__analyze(&pf->d, how ? how : &first, err);
  for (uint32_t i = 0; i < n && rc == 0; i++) rc = dp__log_apply(&pf->d, &s->log.v[i], pf->place, err);
  return rc;
}

/* ---- searching the forest ---- */

/* The proof forest's children lists, and the breadth-first search's
   arrays, made once for any number of searches (every conflict of a
   module): a search visits x's class only (proof edges join unified
   domains), marked with a stamp instead of clearing. Made from the forest
   as it stands (head, next), or, on all_conflicts' replay, reading the
   lists the forest keeps as it changes (dyn), sorted as the made ones
   are: a search finds the same either way. */
typedef struct pindex {
  uint32_t *head, *next, *from, *queue, *stamp;
  uint32_t n, cur;
  const proofs *dyn;         /* read its first/next lists (arrays grown to its domains) */
  uint32_t *kids, capkids;   /* one node's children, ascending */
  int oom; /* a search found a constraint but could not allocate its path */
} pindex;

static void pindex_free(pindex *p) {
  free(p->head);
  free(p->next);
  free(p->from);
  free(p->queue);
  free(p->stamp);
  free(p->kids);
}

static int pindex_init(pindex *p, const proofs *pf) {
  uint32_t n = pf->d.nnodes;
  *p = (pindex){0};
  p->n = n;
  p->head = dp_malloc((size_t)n * sizeof *p->head);
  p->next = dp_malloc((size_t)n * sizeof *p->next);
  p->from = dp_malloc((size_t)n * sizeof *p->from);
  p->queue = dp_malloc((size_t)n * sizeof *p->queue);
  p->stamp = dp_calloc(n, sizeof *p->stamp);
  if (!p->head || !p->next || !p->from || !p->queue || !p->stamp) {
    pindex_free(p);
    return -1;
  }
  for (uint32_t i = 0; i < n; i++) p->head[i] = DP__NONE_ID;
  for (uint32_t i = n; i-- > 0;) {
    uint32_t q = pf->edge[i].parent;
    if (q != DP__NONE_ID) {
      p->next[i] = p->head[q];
      p->head[q] = i;
    }
  }
  return 0;
}

/* The dynamic form's search arrays to the domains so far: 0, or -1. */
static int pindex_cover(pindex *p, const dp__domains *d) {
  uint32_t old = p->n;
  void **const arrs[] = {(void **)&p->from, (void **)&p->queue, (void **)&p->stamp};
  const size_t sizes[] = {sizeof *p->from, sizeof *p->queue, sizeof *p->stamp};
  if (dp_grow_arrays(&p->n, d->nnodes, 3, arrs, sizes) < 0) return -1;
  memset(p->stamp + old, 0, (size_t)(p->n - old) * sizeof *p->stamp);
  return 0;
}

static int cmp_u32(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  return a < b ? -1 : a > b;
}

/* u's children in the proof forest, ascending, in p->kids: their number
   (UINT32_MAX: out of memory). */
static uint32_t kids_of(pindex *p, uint32_t u) {
  uint32_t n = 0;
  if (!p->dyn) {
    for (uint32_t c = p->head[u]; c != DP__NONE_ID; c = p->next[c]) {
      if (dp_grow((void **)&p->kids, &p->capkids, n + 1, sizeof *p->kids) < 0) return UINT32_MAX;
      p->kids[n++] = c;
    }
    return n;
  }
  const proofs *pf = p->dyn;
  for (uint32_t c = pf->first[u]; c; c = pf->next[c - 1]) {
    if (dp_grow((void **)&p->kids, &p->capkids, n + 1, sizeof *p->kids) < 0) return UINT32_MAX;
    p->kids[n++] = c - 1;
  }
  if (n > 1) qsort(p->kids, n, sizeof *p->kids, cmp_u32);
  return n;
}

/* Is constraint node u one to stop at? `avoid` (a device index, or
   DP__NONE_ID) prefers a constraint whose device cannot join it. */
static int wanted(dp__domains *d, uint32_t u, uint32_t avoid) {
  dp__dnode *nu = &d->nodes[u];
  /* explaining (no device to avoid): a real constraint beats a default
     that only filled in fields such as the virtual device id */
  if (avoid == DP__NONE_ID) return nu->crule < R_DEF_RESULT || nu->crule > R_DEF_CALL;
  if (avoid == 0 || dp__dom_cons(d, u)->vdev == 0) return 1;
  dp_vdev *j = dp_vdev_join(d->dev->v[dp__dom_cons(d, u)->vdev], d->dev->v[avoid]);
  dp_release(j);
  return j == NULL;
}

/* BFS in x's proof tree to the nearest constraint node (wanted first, else
   the first met). Fills path[] with the nodes from x to the constraint;
   returns its length (0: none found). */
static uint32_t nearest(pindex *p, proofs *pf, uint32_t x, uint32_t avoid, uint32_t **path) {
  dp__domains *d = &pf->d;
  uint32_t found = DP__NONE_ID, any = DP__NONE_ID, len = 0, qh = 0, qt = 0, st = ++p->cur;
  *path = NULL;
  p->queue[qt++] = x;
  p->from[x] = x;
  p->stamp[x] = st;
  while (qh < qt) {
    uint32_t u = p->queue[qh++];
    if (d->nodes[u].crule) {
      if (any == DP__NONE_ID) any = u;
      if (wanted(d, u, avoid)) {
        found = u;
        break;
      }
    }
    uint32_t up = pf->edge[u].parent;
    if (up != DP__NONE_ID && p->stamp[up] != st) {
      p->stamp[up] = st;
      p->from[up] = u;
      p->queue[qt++] = up;
    }
    uint32_t nk = kids_of(p, u);
    if (nk == UINT32_MAX) {
      p->oom = 1;
      return 0;
    }
    for (uint32_t i = 0; i < nk; i++) {
      uint32_t c = p->kids[i];
      if (p->stamp[c] != st) {
        p->stamp[c] = st;
        p->from[c] = u;
        p->queue[qt++] = c;
      }
    }
  }
  if (found == DP__NONE_ID) found = any;
  if (found == DP__NONE_ID) return 0;
  for (uint32_t u = found;; u = p->from[u]) {
    len++;
    if (u == x) break;
  }
  *path = dp_malloc(len * sizeof **path);
  if (!*path) {
    p->oom = 1;
    return 0;
  }
  uint32_t i = len;
  for (uint32_t u = found;; u = p->from[u]) {
    (*path)[--i] = u;
    if (u == x) break;
  }
  return len;
}

/* One search on an index of its own (an explanation, one conflict). */
static uint32_t nearest_constraint(proofs *pf, uint32_t x, uint32_t avoid, uint32_t **path, int *oom) {
  pindex p;
  *path = NULL;
  if (pindex_init(&p, pf) < 0) {
    *oom = 1;
    return 0;
  }
  uint32_t len = nearest(&p, pf, x, avoid, path);
  if (p.oom) *oom = 1;
  pindex_free(&p);
  return len;
}

/* The proof edge between neighbours u and v (one is the other's parent). */
static void edge_of(const proofs *pf, uint32_t u, uint32_t v, int *rule, dp_expr **why) {
  const proof *n = pf->edge[u].parent == v ? &pf->edge[u] : &pf->edge[v];
  *rule = n->rule;
  *why = n->why;
}

/* Notes on e, one per step of path: 0, or -1 when memory ran out (the
   notes are then incomplete). */
static int note_steps(proofs *pf, dp_err *e, const uint32_t *path, uint32_t len, int reverse) {
  int rc = 0;
  for (uint32_t k = 0; k + 1 < len; k++) {
    uint32_t i = reverse ? len - 2 - k : k;
    int rule;
    dp_expr *why;
    edge_of(pf, path[i], path[i + 1], &rule, &why);
    char *r = reason(&pf->d, rule, why);
    if (!r || dp_err_note(e, dp__span_of(why), "it flows through %s", r ? r : "?") < 0) rc = -1;
    free(r);
  }
  return rc;
}

static char *constraint_text(dp__domains *d, uint32_t c, dp_span *span) {
  dp__dnode *n = &d->nodes[c];
  dp_expr *cwhy = n->crule ? dp__dom_cons(d, c)->why : NULL;
  *span = dp__span_of(cwhy);
  return reason(d, n->crule, cwhy);
}

/* ---- conflicts ---- */

/* The error of conflict f of pf's domains (px: the search arrays of every
   conflict, or NULL: its own). */
static dp_err *conflict_with_proofs(proofs *pf, pindex *px, dp__conflict f) {
  dp__domains *d = &pf->d;
  uint32_t a = f.a, b = f.b;
  uint32_t va = d->nodes[dp__dom_result(d, a)].vdev, vb = d->nodes[dp__dom_result(d, b)].vdev;
  uint32_t *pa = NULL, *pb = NULL;
  int oom = cover(pf) < 0;
  uint32_t la = oom ? 0 : px ? nearest(px, pf, a, vb, &pa) : nearest_constraint(pf, a, vb, &pa, &oom);
  uint32_t lb = oom ? 0 : px ? nearest(px, pf, b, va, &pb) : nearest_constraint(pf, b, va, &pb, &oom);
  if (px && px->oom) oom = 1;
  dp_span sa = DP_NOSPAN, sb = DP_NOSPAN;
  char *ca = la ? constraint_text(d, pa[la - 1], &sa) : dp_strdup("an earlier unification");
  char *cb = lb ? constraint_text(d, pb[lb - 1], &sb) : dp_strdup("an earlier unification");
  char *da = dp__vdev_short(d->dev->v[va]), *db = dp__vdev_short(d->dev->v[vb]);
  char *at = reason(d, f.rule, f.why);
  dp_err *e = NULL;
  if (!oom && ca && cb && da && db && at) {
    e = dp_err_at(d->ctx, DP_ERR_CONFLICT, dp__span_of(f.why),
                  "conflicting virtual devices at %s: it must be on %s because of %s; "
                  "it must also be on %s because of %s", at, da, ca, db, cb);
    if (la && (dp_err_note(e, sa, "%s puts it on %s", ca, da) < 0 || note_steps(pf, e, pa, la, 1) < 0)) oom = 1;
    if (dp_err_note(e, dp__span_of(f.why), "the two meet at %s", at) < 0) oom = 1;
    if (lb && (note_steps(pf, e, pb, lb, 0) < 0 || dp_err_note(e, sb, "%s puts it on %s", cb, db) < 0)) oom = 1;
  }
  free(pa); free(pb); free(ca); free(cb); free(da); free(db); free(at);
  if (e && !oom) return e;
  /* (out of memory on the way: that, not a conflict worded in part) */
  dp_err_free(e);
  return dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
}

/* The domains keep no proofs: the conflict is met again on a replay that
   keeps them (analysis is deterministic, and the log ends with what
   failed), and worded from there. */
dp_err *dp__conflict_error(dp_domains *s) {
  dp_expr *why = s->uf.failed.why;
  dp_err *e = NULL;
  proofs pf;
  int rc = proofs_init(&pf, s, 0, &e) < 0 ? -1 : replay(&pf, s, NULL, s->log.n, &e);
  if (rc > 0) e = conflict_with_proofs(&pf, NULL, pf.d.failed);
  proofs_free(&pf);
  /* (out of memory on the way: that, not a conflict worded without its chain) */
  if (e && (e->code == DP_ERR_CONFLICT || e->code == DP_ERR_MEMORY)) return e;
  dp_err_free(e);
  char *at = dp__describe(s->uf.ctx, why);
  e = dp_err_at(s->uf.ctx, DP_ERR_CONFLICT, dp__span_of(why), "conflicting virtual devices at %s",
                at ? at : "?");
  free(at);
  return e;
}

/* ---- every conflict at once ---- */

/* all_conflicts' replay: the proofs, the search arrays, and the
   independent conflicts worded as met (the state they are met in says
   what each one is). */
typedef struct collector {
  proofs *pf;
  pindex px;
  dp_err **errs;
  uint32_t n, cap;
} collector;

/* Analysis met the conflict d->failed (how->conflict): worded now, when
   independent. 0, or -1 (out of memory). */
static int collect(void *ud, dp__domains *d) {
  collector *c = ud;
  int rc = dp__indep_conflict(c->pf->indep, d->failed.a, d->failed.b);
  if (rc <= 0) return rc; /* the same two classes again: that conflict, reported once */
  if (pindex_cover(&c->px, d) < 0 || dp_grow((void **)&c->errs, &c->cap, c->n + 1, sizeof *c->errs) < 0)
    return -1;
  dp_err *e = conflict_with_proofs(c->pf, &c->px, d->failed);
  if (e->code == DP_ERR_MEMORY) {
    dp_err_free(e);
    return -1;
  }
  c->errs[c->n++] = e;
  return 0;
}

typedef struct found_conflict { dp_err *err; uint32_t order; } found_conflict;

static int span_cmp(dp_span a, dp_span b) {
  if (a.source != b.source) return a.source < b.source ? -1 : 1;
  if (a.line != b.line) return a.line < b.line ? -1 : 1;
  if (a.col != b.col) return a.col < b.col ? -1 : 1;
  return 0;
}

/* Source order; as met where two share a position. */
static int cmp_found(const void *x, const void *y) {
  const found_conflict *a = x, *b = y;
  int c = span_cmp(a->err->span, b->err->span);
  return c ? c : a->order < b->order ? -1 : a->order > b->order;
}

/* Replays s's analysis with proofs, collecting: its independent conflicts
   in source order in *out. 0, or -1 + error. */
static int replay_collecting(dp_domains *s, found_conflict **out, uint32_t *nout, dp_err **err) {
  proofs pf;
  collector c = {&pf, {0}, NULL, 0, 0};
  c.px.dyn = &pf;
  *out = NULL;
  *nout = 0;
  int rc = proofs_init(&pf, s, 1, err);
  if (rc == 0) {
    dp__analysis how = {.collect = 1, .conflict = collect, .ud = &c};
    rc = replay(&pf, s, &how, 0, err);
  }
  proofs_free(&pf);
  found_conflict *f = rc == 0 ? dp_malloc((c.n ? c.n : 1) * sizeof *f) : NULL;
  if (rc == 0 && !f) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    rc = -1;
  }
  for (uint32_t i = 0; i < c.n; i++) {
    if (f) f[i] = (found_conflict){c.errs[i], i};
    else dp_err_free(c.errs[i]);
  }
  free(c.errs);
  pindex_free(&c.px);
  if (rc < 0) return -1;
  qsort(f, c.n, sizeof *f, cmp_found);
  *out = f;
  *nout = c.n;
  return 0;
}

#define CONFLICTS_SHOWN 20

/* A copy of e (the one conflict, also in the list). */
static dp_err *copy_err(const dp_err *e) {
  dp_err *c = dp_err_new(e->code, e->span, "%s", e->msg);
  if (e->source && c->code == e->code) c->source = dp_strdup(e->source); /* (not the static out of memory) */
  for (uint32_t i = 0; i < e->nnotes; i++) dp_err_note(c, e->notes[i].span, "%s", e->notes[i].msg);
  return c;
}

/* The error of n > 1 conflicts: where the first is, "N conflicts: " and
   its message, the others (up to CONFLICTS_SHOWN in all) one note each,
   then how many more. */
static dp_err *summary(const found_conflict *f, uint32_t n) {
  uint32_t shown = n < CONFLICTS_SHOWN ? n : CONFLICTS_SHOWN;
  dp_err *sum = dp_err_new(DP_ERR_CONFLICT, f[0].err->span, "%u conflicts: %s", n, f[0].err->msg);
  if (f[0].err->source && sum->code == DP_ERR_CONFLICT) sum->source = dp_strdup(f[0].err->source);
  for (uint32_t i = 1; i < shown; i++) dp_err_note(sum, f[i].err->span, "%s", f[i].err->msg);
  if (n > shown) dp_err_note(sum, DP_NOSPAN, "and %u more", n - shown);
  return sum;
}

int dp__conflict_errors(dp_domains *s, dp_conflicts *all, dp_err **err) {
  dp_err *e = NULL;
  found_conflict *f = NULL;
  uint32_t n = 0;
  replay_collecting(s, &f, &n, &e);
  if (e || n == 0) {
    free(f);
    dp_err_set(err, e ? e : dp_err_new(DP_ERR_CONFLICT, DP_NOSPAN, "conflicting virtual devices"));
    return -1;
  }
  /* one conflict: the error PlanDevices gives when it stops at it */
  dp_err *top = n == 1 ? copy_err(f[0].err) : summary(f, n);
  if (all) {
    all->v = dp_malloc(n * sizeof *all->v);
    if (all->v) all->n = n;
  }
  for (uint32_t i = 0; i < n; i++) {
    if (all && all->v) all->v[i] = f[i].err;
    else dp_err_free(f[i].err);
  }
  free(f);
  dp_err_set(err, top);
  return -1;
}

/* ---- explanations ---- */

/* The domain node of e to explain (through functions to their results). */
static uint32_t explained_node(dp__domains *d, dp_expr *e) {
  uint32_t n = dp__dom_of(d, e);
  while (d->nodes[dp__dom_find(d, n)].isfn) n = dp__dom_kid(d, n, dp__dom_arity(d, n));
  return n;
}

/* x's rule, constraint and steps for the constraint at the end of path
   (len > 0) and its sentence into buf: 0, or -1 on out of memory. */
static int explain_constraint(proofs *pf, dp_explain *x, const uint32_t *path, uint32_t len,
                              const char *w, const char *dev, char *buf, size_t size) {
  dp__domains *d = &pf->d;
  dp__dnode *c = &d->nodes[path[len - 1]];
  if (!(x->rule = dp_strdup(rule_name(c->crule)))) return -1;
  dp_expr *cwhy = c->crule ? dp__dom_cons(d, path[len - 1])->why : NULL;
  x->span = dp__span_of(cwhy);
  x->why = cwhy ? dp_retain(cwhy) : NULL;
  /* a placement by cost says what it weighed, both ways */
  char *ct = c->crule == R_PLACEMENT ? dp__place_reason(d, pf->place, path[len - 1]) : NULL;
  if (!ct) ct = reason(d, c->crule, cwhy);
  if (!ct) return -1;
  snprintf(buf, size, "%s is on %s because of %s%s", w, dev, ct, len > 1 ? ", through the steps below" : "");
  free(ct);
  dp_err tmp = {0};
  int rc = note_steps(pf, &tmp, path, len, 0);
  x->nsteps = tmp.nnotes;
  x->steps = tmp.notes;
  return rc;
}

static dp_explain *explain_with_proofs(proofs *pf, dp_expr *e, dp_err **err) {
  dp__domains *d = &pf->d;
  dp_explain *x = dp_calloc(1, sizeof *x);
  uint32_t *path = NULL, len = 0;
  char *dev = NULL, *w = NULL, buf[1024];
  pindex p;
  int rc = -1;
  if (!x) goto out;
  uint32_t n = explained_node(d, e), r = dp__dom_find(d, n);
  if (cover(pf) < 0 || pindex_init(&p, pf) < 0) goto out;
  len = nearest(&p, pf, n, DP__NONE_ID, &path);
  int lost = p.oom;
  pindex_free(&p);
  x->vdev = dp_retain(d->dev->v[d->nodes[r].vdev]);
  dev = dp__vdev_short(x->vdev);
  w = dp__describe(d->ctx, e);
  if (lost || !dev || !w) goto out;
  if (!len || d->nodes[r].vdev == 0) {
    if (!(x->rule = dp_strdup(d->nodes[r].vdev ? "unknown" : "free"))) goto out;
    snprintf(buf, sizeof buf, "%s is on %s: no constraint decided it", w, dev);
  } else if (explain_constraint(pf, x, path, len, w, dev, buf, sizeof buf) < 0) {
    goto out;
  }
  rc = (x->text = dp_strdup(buf)) ? 0 : -1;
out:
  free(path);
  free(dev);
  free(w);
  if (rc == 0) return x;
  dp_explain_free(x);
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return NULL;
}

void dp_explain_free(dp_explain *x) {
  if (!x) return;
  dp_release(x->vdev);
  dp_release(x->why);
  free(x->rule);
  free(x->text);
  for (uint32_t i = 0; i < x->nsteps; i++) free(x->steps[i].msg);
  free(x->steps);
  free(x);
}

dp_explain *dp_domains_explain(dp_domains *s, dp_expr *e, dp_err **err) {
  dp__ondev p;
  if (!dp__dom_has(&s->uf, e) && dp__on_device_props(&s->uf.ix->ops, e, &p)) e = p.body;
  if (!dp__dom_has(&s->uf, e)) {
    char *w = dp__describe(s->uf.ctx, e);
    dp_err_set(err, dp_err_at(s->uf.ctx, DP_ERR_VALUE, e->span, "%s is not part of the planned module", w));
    free(w);
    return NULL;
  }
  proofs pf;
  dp_explain *x = NULL;
  int rc = proofs_init(&pf, s, 0, err) < 0 ? -1 : replay(&pf, s, NULL, s->log.n, err);
  if (rc > 0) dp_err_set(err, conflict_with_proofs(&pf, NULL, pf.d.failed));
  if (rc == 0) x = explain_with_proofs(&pf, e, err);
  proofs_free(&pf);
  return x;
}
