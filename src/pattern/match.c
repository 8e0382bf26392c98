/*
 * The matcher: does a pattern program match an expression at its root?
 * TVM's DFPatternMatcher (dataflow_matcher.cc) as a state machine over an
 * explicit stack of frames, so neither the pattern nor the IR depth
 * touches the C stack.
 *
 * Semantics kept from TVM:
 * - a node is bound to what it matched when its match completes; reached
 *   again, it matches only that very expression (sharing by identity);
 *   a failed match undoes the bindings made since it started;
 * - a call matches its callee first, then its arguments in order; for the
 *   operators add and multiply a failed argument list is tried once more
 *   reversed; when the callee does not match, divide/multiply patterns are
 *   tried re-associated (program.c made those patterns);
 * - a dominator pattern matches its child, then walks the path back from
 *   it (MatchesPath) with bindings unchecked on the path (TVM's memoize_
 *   flag off), then asks that the parent lie below the child in the
 *   post-dominator tree.
 *
 * One addition that keeps those semantics: a path that failed from an
 * expression, while nothing the walk may look up was bound, fails from
 * it for every later root too (see "kept walks" below), so that roots
 * over a deep nest do not each walk the path down the whole of it; and a
 * walk stops as soon as the parent is bound where the dominator's
 * expression cannot post-dominate it, since the final test would fail.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "devplan/visit.h"

typedef struct dp__dfp_frame {
  uint32_t node;     /* pattern node (for a path frame: the dominator node) */
  uint32_t state;
  uint32_t i, n;     /* loop counter and bound */
  uint32_t wm, wm2;  /* trail watermarks */
  uint32_t count;    /* path frame: inputs seen */
  uint8_t path;      /* a MatchesPath frame: neither binds nor undoes */
  uint8_t nobind;    /* completed from an earlier binding: nothing to record */
  uint8_t keep;      /* a path frame whose walk holds for every root: kept */
  uint32_t owner;    /* a path frame: its dominator's frame */
  dp_expr *e;
} dp__dfp_frame;

/* step() results besides 0/1 (done) and -1 (error): PUSHED, a frame was
   pushed; AGAIN, the frame called a leaf, whose result is already in
   m->imm (no frame for leaves: most pattern nodes are). */
enum { PUSHED = 2, AGAIN = 3 };

/* ---------------- kept walks ----------------
   A dominator's path walk from an expression x (TVM's MatchesPath) reads
   x and what is below it, the pattern, and the bindings it looks up: those
   of what the dominator's parent reaches (tried with memoize on) and, when
   the path holds a dominator (which turns memoize back on), of what the
   path reaches. When none of those is bound as the walk starts, what it
   does depends on x alone. A failure leaves no binding behind: it is kept,
   and the next walk from x under another root fails at once. A success
   binds the parent (every branch of a walk ends at it) to the same
   expression z each time: kept, a walk from x under a root that does not
   post-dominate z stops at once, as the test after it would fail. Without
   that, every root over a deep nest walks the path down all of it. */
#define READS_MAX (1u << 22) /* beyond this many (node, dominator) pairs, keep nothing */

/* Appends to *out the nodes reachable from `from` (kids and re-associated
   patterns) not yet seen, marking them; 1 when one is a dominator, 0 not,
   -1 on out of memory. */
static int reach(const dp_dfp *p, uint32_t from, uint8_t *seen, uint32_t *stack, uint32_t **out,
                 uint32_t *n, uint32_t *cap) {
  int dom = 0;
  uint32_t sp = 0;
  if (seen[from]) return 0;
  seen[from] = 1;
  stack[sp++] = from;
  while (sp) {
    uint32_t i = stack[--sp];
    const dp_dfp_node *x = &p->nodes[i];
    if (*n == *cap) {
      void *o = *out;
      if (dp_grow(&o, cap, *n + 1, sizeof **out) < 0) return -1;
      *out = o;
    }
    (*out)[(*n)++] = i;
    if (x->kind == DP_DFP_DOMINATES) dom = 1;
    uint32_t alts = x->reassoc == 1 ? 2 : x->reassoc == 2 ? 1 : 0;
    for (uint32_t k = 0; k < x->nkids + alts; k++) {
      uint32_t kid = k < x->nkids ? x->kids[k] : x->alt[k - x->nkids];
      if (!seen[kid]) {
        seen[kid] = 1;
        stack[sp++] = kid;
      }
    }
  }
  return dom;
}

/* Each dominator's number, and per pattern node the dominators whose walk
   may look it up (rstart/reads). ndom stays 0 when there are too many
   pairs to keep. 0, or -1 on out of memory. */
static int walks_init(dp__dfp_matcher *m) {
  const dp_dfp *p = m->p;
  uint32_t ndom = 0, n = 0, cap = 0, *list = NULL, *dstart = NULL;
  uint8_t *seen = NULL;
  uint32_t *stack = NULL;
  int rc = -1;
  for (uint32_t i = 0; i < p->n; i++) ndom += p->nodes[i].kind == DP_DFP_DOMINATES;
  if (!ndom) return 0;
  m->dom = dp_malloc(p->n * sizeof *m->dom);
  dstart = dp_malloc((ndom + 1) * sizeof *dstart);
  seen = dp_malloc(p->n);
  stack = dp_malloc(p->n * sizeof *stack);
  if (!m->dom || !dstart || !seen || !stack) goto done;
  uint32_t d = 0;
  for (uint32_t i = 0; i < p->n; i++) {
    m->dom[i] = DP__DFP_NONE;
    if (p->nodes[i].kind != DP_DFP_DOMINATES) continue;
    m->dom[i] = d;
    dstart[d] = n;
    memset(seen, 0, p->n);
    int r = reach(p, p->nodes[i].kids[1], seen, stack, &list, &n, &cap);
    if (r < 0) goto done;
    if (r == 0) { /* the path looks nothing up: forget it */
      for (uint32_t k = dstart[d]; k < n; k++) seen[list[k]] = 0;
      n = dstart[d];
    }
    if (reach(p, p->nodes[i].kids[0], seen, stack, &list, &n, &cap) < 0) goto done;
    if (n > READS_MAX) { /* a pathological pattern: walk every path */
      rc = 0;
      goto done;
    }
    d++;
  }
  dstart[ndom] = n;
  m->rstart = dp_calloc(p->n + 1, sizeof *m->rstart);
  m->reads = dp_malloc((n ? n : 1) * sizeof *m->reads);
  m->nbound = dp_calloc(ndom, sizeof *m->nbound);
  m->walked = dp_calloc(ndom, sizeof *m->walked);
  if (!m->rstart || !m->reads || !m->nbound || !m->walked) goto done;
  for (uint32_t k = 0; k < n; k++) m->rstart[list[k] + 1]++;
  for (uint32_t i = 0; i < p->n; i++) m->rstart[i + 1] += m->rstart[i];
  for (uint32_t dd = 0; dd < ndom; dd++) /* rstart[i] runs to the end of node i, then moves back */
    for (uint32_t k = dstart[dd]; k < dstart[dd + 1]; k++) m->reads[m->rstart[list[k]]++] = dd;
  for (uint32_t i = p->n; i > 0; i--) m->rstart[i] = m->rstart[i - 1];
  m->rstart[0] = 0;
  m->ndom = ndom;
  rc = 0;
done:
  free(list);
  free(dstart);
  free(seen);
  free(stack);
  return rc;
}

static void walks_free(dp__dfp_matcher *m) {
  for (uint32_t d = 0; m->walked && d < m->ndom; d++) dp__ptrmap_free(&m->walked[d]);
  free(m->walked);
  free(m->dom);
  free(m->rstart);
  free(m->reads);
  free(m->nbound);
}

/* What a walk from an expression found, kept when it started with
   nothing it may look up bound: &walk_failed, or the expression it bound
   the parent to first (every branch of a walk that succeeds ends at the
   parent), which a root must post-dominate. */
static const char walk_failed;

static void remember_walk(dp__dfp_matcher *m, const dp__dfp_frame *f, const void *found) {
  dp__ptrslot *s = dp__ptrmap_insert(&m->walked[m->dom[f->node]], f->e, NULL);
  if (s) s->ptr = (void *)found; /* a cache: without memory for it, the path is walked again */
}

/* A node's first binding made (+1) or undone (-1). */
static void count_bound(dp__dfp_matcher *m, uint32_t node, int delta) {
  if (!m->ndom) return;
  for (uint32_t k = m->rstart[node]; k < m->rstart[node + 1]; k++) m->nbound[m->reads[k]] += (uint32_t)delta;
}

int dp__dfp_matcher_init(dp__dfp_matcher *m, const dp_dfp *p, const dp_dfp_host *host,
                     dp__dfp_graph *graph, const dp_dfp_opaque *opaque) {
  memset(m, 0, sizeof *m);
  m->p = p;
  m->host = host;
  m->graph = graph;
  m->opaque = opaque;
  m->memoize = 1;
  m->first = dp_malloc((p->n ? p->n : 1) * sizeof *m->first);
  if (!m->first) return -1;
  for (uint32_t i = 0; i < p->n; i++) m->first[i] = DP__DFP_NONE;
  if (p->has_dominator && walks_init(m) < 0) {
    dp__dfp_matcher_free(m);
    return -1;
  }
  return 0;
}

void dp__dfp_matcher_free(dp__dfp_matcher *m) {
  free(m->first);
  free(m->trail);
  free(m->frames);
  walks_free(m);
  if (m->own_built) dp__dfp_graph_free(&m->own);
  dp_err_free(m->err);
  memset(m, 0, sizeof *m);
}

/* ---------------- bindings ---------------- */

static int bind(dp__dfp_matcher *m, uint32_t node, dp_expr *e) {
  if (m->ntrail == m->captrail) {
    void *t = m->trail;
    if (dp_grow(&t, &m->captrail, m->ntrail + 1, sizeof *m->trail) < 0) return -1;
    m->trail = t;
  }
  if (m->first[node] == DP__DFP_NONE) {
    m->first[node] = m->ntrail;
    count_bound(m, node, 1);
  }
  m->trail[m->ntrail++] = (dp_dfp_bind){node, e};
  return 0;
}

/* TVM's ClearMap: forget the bindings made since watermark wm. */
static void clear_to(dp__dfp_matcher *m, uint32_t wm) {
  while (m->ntrail > wm) {
    m->ntrail--;
    uint32_t node = m->trail[m->ntrail].node;
    if (m->first[node] == m->ntrail) {
      m->first[node] = DP__DFP_NONE;
      count_bound(m, node, -1);
    }
  }
}

void dp__dfp_matcher_reset(dp__dfp_matcher *m) {
  clear_to(m, 0);
  m->nframes = 0;
  m->memoize = 1;
  m->cut = 0;
}

/* ---------------- frames ---------------- */

static int push(dp__dfp_matcher *m, uint32_t node, dp_expr *e, int path) {
  if (m->nframes == m->capframes) {
    void *f = m->frames;
    if (dp_grow(&f, &m->capframes, m->nframes + 1, sizeof *m->frames) < 0) return -1;
    m->frames = f;
  }
  m->frames[m->nframes++] = (dp__dfp_frame){.node = node, .e = e, .path = (uint8_t)path, .wm = m->ntrail};
  return PUSHED;
}

/* Pushes a MatchesPath frame for dominator node `node` at e, its
   dominator's frame being `owner`. */
static int push_path(dp__dfp_matcher *m, uint32_t node, dp_expr *e, uint32_t owner) {
  int r = push(m, node, e, 1);
  if (r == PUSHED) m->frames[m->nframes - 1].owner = owner;
  return r;
}

/* Does the dominator's expression of path frame f fail to post-dominate
   z, the parent's first binding in this walk, so that the test after the
   walk fails? 1 yes, 0 no (or no graph yet), -1 out of memory. A yes
   stops the walk, and every walk on the stack that may be kept reached z
   first: that is kept (the failure itself depends on the root, so none is
   kept until the dominator frame sees it: m->cut). */
static int cut_at(dp__dfp_matcher *m, uint32_t fi, const dp_expr *z) {
  const dp__dfp_frame *f = &m->frames[fi];
  if (!m->graph) return 0;
  int d = dp__dfp_graph_dominates(m->graph, dp__dfp_graph_find(m->graph, m->frames[f->owner].e),
                                  dp__dfp_graph_find(m->graph, z));
  if (d != 0) return d < 0 ? -1 : 0;
  for (uint32_t k = fi; k > f->owner; k--)
    if (m->frames[k].keep) remember_walk(m, &m->frames[k], z);
  m->cut = 1;
  return 1;
}

/* The walk of path frame f can stop once the parent is bound (the walk
   cannot undo that binding and succeed) where the test would fail. */
static int parent_cut(dp__dfp_matcher *m, uint32_t fi) {
  uint32_t b = m->first[m->p->nodes[m->frames[fi].node].kids[0]];
  return b == DP__DFP_NONE ? 0 : cut_at(m, fi, m->trail[b].expr);
}

static int leaf(const dp_dfp_node *x, const dp_expr *e);

/* Continue frame fi in state `next` after matching node against e. A leaf
   is matched on the spot, as its own frame would: an earlier binding
   decides, else the test, bound on success. */
static int call(dp__dfp_matcher *m, uint32_t fi, uint32_t next, uint32_t node, dp_expr *e) {
  m->frames[fi].state = next;
  const dp_dfp_node *x = &m->p->nodes[node];
  if (x->nkids == 0 && x->kind != DP_DFP_TUPLE && x->kind != DP_DFP_CALL && x->kind != DP_DFP_FN) {
    if (m->memoize && m->first[node] != DP__DFP_NONE) {
      m->imm = m->trail[m->first[node]].expr == e;
      return AGAIN;
    }
    m->imm = leaf(x, e);
    if (m->imm && bind(m, node, e) < 0) return -1;
    return AGAIN;
  }
  return push(m, node, e, 0);
}

/* Kinds that look inside an expression: an opaque one (an earlier group)
   never matches them, as the call of a composite function would not. */
static int is_structural(int kind) {
  return kind == DP_DFP_CALL || kind == DP_DFP_TUPLE || kind == DP_DFP_PROJ ||
         kind == DP_DFP_FN || kind == DP_DFP_IF || kind == DP_DFP_LET || kind == DP_DFP_DOMINATES;
}

/* ---------------- leaves and type tests ---------------- */

static int leaf(const dp_dfp_node *x, const dp_expr *e) {
  switch (x->kind) {
  case DP_DFP_WILD: return 1;
  case DP_DFP_VAR:
    return e->h.kind == DP_VAR && (!x->name || strcmp(x->name, ((const dp_var *)e)->name) == 0);
  case DP_DFP_CONST: return e->h.kind == DP_CONST;
  case DP_DFP_OPKIND:
    return e->h.kind == DP_OP && ((const dp_op *)e)->pattern >= 0 &&
           ((x->kinds >> ((const dp_op *)e)->pattern) & 1);
  case DP_DFP_EXPR: /* TVM: structural equality, a variable only equal to itself */
    if (x->expr == e) return 1;
    return x->expr->h.kind != DP_VAR && e->h.kind == x->expr->h.kind && dp_expr_equal(x->expr, e, NULL) == 1;
  case DP_DFP_OP: return x->expr == e;
  default: return 0;
  }
}

static const dp_tensor_type *tensor_of(const dp_expr *e) {
  return e->type && e->type->h.kind == DP_TY_TENSOR ? (const dp_tensor_type *)e->type : NULL;
}

static int type_holds(const dp_dfp_node *x, const dp_expr *e) {
  const dp_tensor_type *t = tensor_of(e);
  switch (x->kind) {
  case DP_DFP_TYPE: return e->type && dp_type_equal(x->type, e->type) == 1;
  case DP_DFP_DTYPE: return t && t->dtype == x->dtype;
  case DP_DFP_SHAPE:
    if (!t || t->ndim != x->ndim) return 0;
    for (uint32_t k = 0; k < t->ndim; k++)
      if (t->dims[k] != x->shape[k]) return 0;
    return 1;
  default: return 0;
  }
}

/* ---------------- structured nodes ---------------- */

/* Sequence: match kid k0 + i against child c0 + i of e for i < n; the
   frame's i counts. Entered with state s (first time: i = 0). */
static int sequence(dp__dfp_matcher *m, uint32_t fi, int ret, uint32_t s, uint32_t k0, uint32_t c0) {
  dp__dfp_frame *f = &m->frames[fi];
  if (f->i > 0 && !ret) return 0;
  if (f->i == f->n) return 1;
  const dp_dfp_node *x = &m->p->nodes[f->node];
  uint32_t i = f->i++;
  return call(m, fi, s, x->kids[k0 + i], dp_expr_child(f->e, c0 + i));
}

static int step_call(dp__dfp_matcher *m, uint32_t fi, int ret) {
  dp__dfp_frame *f = &m->frames[fi];
  const dp_dfp_node *x = &m->p->nodes[f->node];
  const dp_call *c = (const dp_call *)f->e;
  switch (f->state) {
  case 0:
    if (f->e->h.kind != DP_CALL) return 0;
    return call(m, fi, 1, x->kids[0], c->fn);
  case 1: /* callee done */
    if (!ret) break;
    if (x->flags & DP_DFPF_ANY) return 1;
    f->wm2 = m->ntrail;
    if (c->nargs != x->nkids - 1) goto args_failed;
    f->n = c->nargs;
    f->i = 0;
    f->state = 2;
    /* fall through */
  case 2: /* arguments in order */
    if (f->i > 0 && !ret) goto args_failed;
    if (f->i == f->n) return 1;
    f->i++;
    return call(m, fi, 2, x->kids[f->i], c->args[f->i - 1]);
  case 3: /* arguments reversed (add, multiply) */
    if (f->i > 0 && !ret) {
      clear_to(m, f->wm2);
      return 0;
    }
    if (f->i == 2) return 1;
    f->i++;
    return call(m, fi, 3, x->kids[3 - f->i], c->args[f->i - 1]);
  case 4: /* a re-associated pattern done */
    if (ret) return 1;
    clear_to(m, f->wm);
    if (x->reassoc == 1 && f->i == 1) {
      f->i = 2;
      return call(m, fi, 4, x->alt[1], f->e);
    }
    return 0;
  }
  /* the callee did not match: TVM tries divide/multiply re-associated */
  clear_to(m, f->wm);
  if (x->reassoc == 1 && dp_is_op_call(f->e, "multiply") && c->nargs == 2 &&
      (dp_is_op_call(c->args[0], "divide") || dp_is_op_call(c->args[1], "divide"))) {
    f->i = 1;
    return call(m, fi, 4, x->alt[0], f->e);
  }
  if (x->reassoc == 2 && dp_is_op_call(f->e, "divide") && c->nargs == 2 &&
      (dp_is_op_call(c->args[0], "multiply") || dp_is_op_call(c->args[1], "multiply"))) {
    f->i = 3;
    return call(m, fi, 4, x->alt[0], f->e);
  }
  return 0;
args_failed:
  clear_to(m, f->wm2);
  if (!x->commute || c->nargs != 2) return 0;
  f->i = 1; /* pattern argument 2 against argument 1, then 1 against 2 */
  return call(m, fi, 3, x->kids[2], c->args[0]);
}

static int step_fn(dp__dfp_matcher *m, uint32_t fi, int ret) {
  dp__dfp_frame *f = &m->frames[fi];
  const dp_dfp_node *x = &m->p->nodes[f->node];
  const dp_func *fn = (const dp_func *)f->e;
  switch (f->state) {
  case 0:
    if (f->e->h.kind != DP_FUNC) return 0;
    if (x->flags & DP_DFPF_ANY) return call(m, fi, 2, x->kids[0], fn->body);
    if (fn->nparams != x->nkids - 1) return 0;
    f->n = fn->nparams;
    f->state = 1;
    /* fall through */
  case 1:
    if (f->i > 0 && !ret) return 0;
    if (f->i < f->n) {
      f->i++;
      return call(m, fi, 1, x->kids[f->i - 1], &fn->params[f->i - 1]->e);
    }
    return call(m, fi, 2, x->kids[x->nkids - 1], fn->body);
  default:
    return ret;
  }
}

/* The dominator pattern: child, then the path back to the parent, then
   the parent must lie below e in the post-dominator tree. */
static int step_dominates(dp__dfp_matcher *m, uint32_t fi, int ret) {
  dp__dfp_frame *f = &m->frames[fi];
  const dp_dfp_node *x = &m->p->nodes[f->node];
  switch (f->state) {
  case 0: return call(m, fi, 1, x->kids[2], f->e);
  case 1:
    if (!ret) return 0;
    f->state = 2;
    return push_path(m, f->node, f->e, fi);
  default: {
    m->memoize = 1;
    m->cut = 0;
    if (!ret) return 0;
    uint32_t b = m->first[x->kids[0]];
    if (b == DP__DFP_NONE) return 0;
    if (!m->graph) {
      if (dp__dfp_graph_build(&m->own, m->frames[0].e, 1) < 0) return -1;
      m->own_built = 1;
      m->graph = &m->own;
    }
    /* -1 (no memory for the dominator tree) stops the match */
    return dp__dfp_graph_dominates(m->graph, dp__dfp_graph_find(m->graph, f->e),
                               dp__dfp_graph_find(m->graph, m->trail[b].expr));
  }
  }
}

/* The inputs MatchesPath follows: data inputs, leaving out a call's callee
   and its variable and constant arguments, a function's parameters and a
   let's variable. Returns the next one from child index *i, or NULL. */
static dp_expr *path_input(const dp_expr *e, uint32_t *i) {
  uint32_t n = dp_expr_nchildren(e);
  for (; *i < n; (*i)++) {
    dp_expr *c = dp_expr_child(e, *i);
    if (dp__dfp_graph_skips(c)) continue;
    if (e->h.kind == DP_CALL && (*i == 0 || c->h.kind == DP_VAR || c->h.kind == DP_CONST)) continue;
    if (e->h.kind == DP_FUNC && *i < ((const dp_func *)e)->nparams) continue;
    if (e->h.kind == DP_LET && *i == 0) continue;
    return c;
  }
  return NULL;
}

/* TVM's MatchesPath(e): every input of e is the parent, or is on the path
   and satisfies this again; at least one input. */
static int step_path(dp__dfp_matcher *m, uint32_t fi, int ret) {
  dp__dfp_frame *f = &m->frames[fi];
  const dp_dfp_node *x = &m->p->nodes[f->node];
  int r;
  if (f->state == 0) {
    if ((r = parent_cut(m, fi)) != 0) return r < 0 ? -1 : 0;
    uint32_t d = m->ndom ? m->dom[f->node] : DP__DFP_NONE;
    if (d != DP__DFP_NONE && m->nbound[d] == 0) {
      dp__ptrslot *seen = m->walked[d].n ? dp__ptrmap_find(&m->walked[d], f->e) : NULL;
      if (seen && seen->ptr == &walk_failed) return 0;
      if (seen && (r = cut_at(m, fi, seen->ptr)) != 0) return r < 0 ? -1 : 0;
      f->keep = 1;
    }
  }
  uint32_t i = f->i;
  dp_expr *in = path_input(f->e, &i);
  switch (f->state) {
  case 1: /* parent tried */
    if (!ret) {
      m->memoize = 0;
      return call(m, fi, 2, x->kids[1], in);
    }
    if ((r = parent_cut(m, fi)) != 0) return r < 0 ? -1 : 0;
    f->i++;
    break;
  case 2: /* path tried */
    if (!ret) return 0;
    f->state = 3;
    return push_path(m, f->node, in, f->owner);
  case 3: /* the path below done */
    if (!ret) return 0;
    f->i++;
    break;
  }
  i = f->i;
  in = path_input(f->e, &i);
  f->i = i;
  if (!in) return f->count > 0;
  f->count++;
  m->memoize = 1;
  return call(m, fi, 1, x->kids[0], in);
}

/* One step of frame fi, `ret` being the result of the frame it called
   last: 0/1 when the frame is done, PUSHED when it called another, -1 on
   error. */
static int step(dp__dfp_matcher *m, uint32_t fi, int ret) {
  dp__dfp_frame *f = &m->frames[fi];
  if (f->path) return step_path(m, fi, ret);
  const dp_dfp_node *x = &m->p->nodes[f->node];
  dp_expr *e = f->e;
  if (f->state == 0) {
    if (m->memoize && m->first[f->node] != DP__DFP_NONE) {
      f->nobind = 1;
      return m->trail[m->first[f->node]].expr == e;
    }
    if (m->opaque && is_structural(x->kind) && dp__dfp_opaque_has(m->opaque, e)) return 0;
  }
  switch (x->kind) {
  case DP_DFP_WILD: case DP_DFP_VAR: case DP_DFP_CONST: case DP_DFP_EXPR: case DP_DFP_OP:
  case DP_DFP_OPKIND:
    return leaf(x, e);
  case DP_DFP_CALL: return step_call(m, fi, ret);
  case DP_DFP_FN: return step_fn(m, fi, ret);
  case DP_DFP_DOMINATES: return step_dominates(m, fi, ret);
  case DP_DFP_TUPLE:
    if (f->state == 0) {
      if (e->h.kind != DP_TUPLE) return 0;
      if (x->flags & DP_DFPF_ANY) return 1;
      if (((const dp_tuple *)e)->n != x->nkids) return 0;
      f->n = x->nkids;
    }
    return sequence(m, fi, ret, 1, 0, 0);
  case DP_DFP_PROJ:
    if (f->state == 0) {
      if (e->h.kind != DP_PROJ) return 0;
      if (x->index >= 0 && (uint32_t)x->index != ((const dp_proj *)e)->index) return 0;
      return call(m, fi, 1, x->kids[0], ((const dp_proj *)e)->tuple);
    }
    return ret;
  case DP_DFP_IF: case DP_DFP_LET:
    if (f->state == 0) {
      if (e->h.kind != (x->kind == DP_DFP_IF ? DP_IF : DP_LET)) return 0;
      f->n = 3;
    }
    return sequence(m, fi, ret, 1, 0, 0);
  case DP_DFP_ALT:
    if (f->state == 0) return call(m, fi, 1, x->kids[0], e);
    if (f->state == 1 && !ret) return call(m, fi, 2, x->kids[1], e);
    return ret;
  case DP_DFP_USE:
    return f->state == 0 ? call(m, fi, 1, x->kids[0], e) : ret;
  case DP_DFP_TYPE: case DP_DFP_DTYPE: case DP_DFP_SHAPE:
    if (f->state == 0) return type_holds(x, e) ? call(m, fi, 1, x->kids[0], e) : 0;
    return ret;
  case DP_DFP_ATTR:
    if (f->state == 0) return call(m, fi, 1, x->kids[0], e);
    if (!ret) return 0;
    if (m->opaque && dp__dfp_opaque_has(m->opaque, e)) return !x->attrs || x->attrs->n == 0;
    return dp__dfp_attrs_hold(x->attrs, e);
  case DP_DFP_WHERE: {
    if (f->state == 0) return call(m, fi, 1, x->kids[0], e);
    if (!ret) return 0;
    if (!m->host || !m->host->pred) return 0;
    int r = m->host->pred(m->host->ud, x->pred, e, &m->err);
    if (r < 0 && !m->err) m->err = dp_err_new(DP_ERR_CALLBACK, DP_NOSPAN, "a pattern predicate failed");
    return r < 0 ? -1 : r > 0;
  }
  default:
    return 0;
  }
}

/* Frame fi is done with result r: record or undo its bindings, pop it. */
static int complete(dp__dfp_matcher *m, int r) {
  dp__dfp_frame *f = &m->frames[m->nframes - 1];
  if (f->keep && !m->cut) {
    uint32_t b = m->first[m->p->nodes[f->node].kids[0]];
    if (!r) remember_walk(m, f, &walk_failed);
    else if (b != DP__DFP_NONE) remember_walk(m, f, m->trail[b].expr);
  }
  if (!f->path && !f->nobind) {
    if (!r) clear_to(m, f->wm);
    else if (!(m->p->nodes[f->node].flags & DP__DFPF_UNBOUND) && bind(m, f->node, f->e) < 0) return -1;
  }
  m->nframes--;
  return 0;
}

int dp__dfp_root_may_match(const dp_dfp *p, const dp_expr *e) {
  if (p->root_kind && (int)e->h.kind != p->root_kind) return 0;
  return !p->root_op || ((const dp_call *)e)->fn == p->root_op;
}

int dp__dfp_matcher_run(dp__dfp_matcher *m, dp_expr *e) {
  const dp_dfp *p = m->p;
  if (!dp__dfp_root_may_match(p, e)) return 0;
  if (push(m, p->root, e, 0) < 0) goto oom;
  int ret = 0;
  while (m->nframes) {
    int r = step(m, m->nframes - 1, ret);
    if (r == PUSHED) {
      ret = 0;
      continue;
    }
    if (r == AGAIN) {
      ret = m->imm;
      continue;
    }
    if (r < 0) {
      if (!m->err) goto oom;
      dp__dfp_matcher_reset(m);
      return -1;
    }
    if (complete(m, r) < 0) goto oom;
    ret = r;
  }
  m->memoize = 1;
  return ret;
oom:
  dp__dfp_matcher_reset(m);
  if (!m->err) m->err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  return -1;
}

int dp_dfp_match(const dp_dfp *p, dp_expr *e, const dp_dfp_host *host, dp_dfp_bind **binds,
                 uint32_t *nbinds, dp_err **err) {
  dp__dfp_matcher m;
  if (binds) *binds = NULL;
  if (nbinds) *nbinds = 0;
  if (!p || !p->finished || !e) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "dp_dfp_match: no program or expression"));
    return -1;
  }
  if (dp__dfp_matcher_init(&m, p, host, NULL, NULL) < 0) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  int r = dp__dfp_matcher_run(&m, e);
  if (r < 0) {
    dp_err_set(err, m.err);
    m.err = NULL;
  } else if (r > 0 && binds) {
    *binds = dp_malloc((m.ntrail ? m.ntrail : 1) * sizeof **binds);
    if (!*binds) {
      dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
      r = -1;
    } else {
      if (m.ntrail) memcpy(*binds, m.trail, m.ntrail * sizeof **binds);
      if (nbinds) *nbinds = m.ntrail;
    }
  }
  dp__dfp_matcher_free(&m);
  return r;
}

/* ---------------- every match under a root ---------------- */

typedef struct findctx {
  dp__dfp_matcher m;
  dp_dfp_found_fn found;
  void *ud;
  dp_err *err;
} findctx;

static int find_post(void *ud, dp_expr *e) {
  findctx *c = ud;
  int r = dp__dfp_matcher_run(&c->m, e);
  if (r > 0 && c->found(c->ud, e, c->m.trail, c->m.ntrail, &c->err) < 0) {
    if (!c->err) c->err = dp_err_new(DP_ERR_CALLBACK, DP_NOSPAN, "stopped");
    r = -1;
  } else if (r < 0) {
    c->err = c->m.err;
    c->m.err = NULL;
  }
  dp__dfp_matcher_reset(&c->m);
  return r < 0 ? -1 : 0;
}

int dp_dfp_find(const dp_dfp *p, dp_expr *root, const dp_dfp_host *host, dp_dfp_found_fn found,
                void *ud, dp_err **err) {
  findctx c = {.found = found, .ud = ud};
  dp__dfp_graph g;
  int have_graph = 0, rc = -1;
  if (!p || !p->finished || !root) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "dp_dfp_find: no program or expression"));
    return -1;
  }
  if (p->has_dominator) {
    if (dp__dfp_graph_build(&g, root, 1) < 0) goto oom;
    have_graph = 1;
  }
  if (dp__dfp_matcher_init(&c.m, p, host, have_graph ? &g : NULL, NULL) < 0) goto oom;
  dp_visitor v = {NULL, find_post, &c};
  if (dp_visit(root, &v) < 0) {
    if (!c.err) c.err = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    dp_err_set(err, c.err);
  } else {
    rc = 0;
  }
  dp__dfp_matcher_free(&c.m);
  if (have_graph) dp__dfp_graph_free(&g);
  return rc;
oom:
  if (have_graph) dp__dfp_graph_free(&g);
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return -1;
}
