/*
 * Grouping: the matches of one pattern in a function body, as TVM's
 * PatternGrouper (dataflow_matcher.cc) finds them, for MergeComposite,
 * the rewriter and MergeAndAnnotate.
 *
 * Candidate roots are tried from the output toward the inputs (reverse
 * post order), each node not yet in a group; the first match wins, so an
 * optional part makes the larger group. A group is everything from the
 * root down to its inputs: the expressions that leaf patterns (and the
 * arguments or fields of an any-arity call or tuple) matched, except
 * operators, function literals, what a dominator's parent and path or a
 * matched function's body matched, and constants that a const or constant
 * expr pattern matched (those stay inside). A group is rejected when one
 * of its inner nodes is already in a group, or is used outside the group
 * by a node the root does not post-dominate. A group without inputs is
 * decided without walking it when it is rejected (rejects_unwalked).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "../core/textbuf.h"

int dp__dfp_vec_push(dp__dfp_vec *v, void *x) {
  if (v->n == v->cap) {
    void *items = v->items;
    if (dp_grow(&items, &v->cap, v->n + 1, sizeof *v->items) < 0) return -1;
    v->items = items;
  }
  v->items[v->n++] = x;
  return 0;
}

int dp__dfp_u32s_push(dp__dfp_u32s *v, uint32_t x) {
  if (v->n == v->cap) {
    void *a = v->a;
    if (dp_grow(&a, &v->cap, v->n + 1, sizeof *v->a) < 0) return -1;
    v->a = a;
  }
  v->a[v->n++] = x;
  return 0;
}

/* ---------------- the opaque set ---------------- */

struct dp_dfp_opaque {
  dp__ptrmap set;
};

dp_dfp_opaque *dp_dfp_opaque_new(void) { return dp_calloc(1, sizeof(dp_dfp_opaque)); }

void dp_dfp_opaque_free(dp_dfp_opaque *o) {
  if (!o) return;
  dp__ptrmap_free(&o->set);
  free(o);
}

int dp_dfp_opaque_add(dp_dfp_opaque *o, const dp_dfp_group *g) {
  for (uint32_t i = 0; i < g->ninterior; i++)
    if (dp__ptrmap_put(&o->set, g->interior[i], NULL) < 0) return -1;
  return 0;
}

int dp__dfp_opaque_has(const dp_dfp_opaque *o, const dp_expr *e) {
  return o && dp__ptrmap_find(&o->set, e) != NULL;
}

/* ---------------- the graph, shared by several groupings ---------------- */

struct dp_dfp_graph {
  dp__dfp_graph g;
};

dp_dfp_graph *dp_dfp_graph_new(dp_expr *body, dp_err **err) {
  dp_dfp_graph *x = dp_calloc(1, sizeof *x);
  if (!x || dp__dfp_graph_build(&x->g, body, 1) < 0) {
    free(x);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  return x;
}

void dp_dfp_graph_free(dp_dfp_graph *x) {
  if (!x) return;
  dp__dfp_graph_free(&x->g);
  free(x);
}

dp_expr *dp_dfp_graph_root(const dp_dfp_graph *x) { return x->g.n ? x->g.x[x->g.n - 1] : NULL; }

/* ---------------- groups ---------------- */

void dp_dfp_groups_clear(dp_dfp_groups *gs) {
  free(gs->items);
  free(gs->xpool);
  free(gs->bpool);
  dp_release(gs->body);
  memset(gs, 0, sizeof *gs);
}

typedef struct grouper {
  const dp_dfp *p;
  dp__dfp_graph *g;
  dp__dfp_matcher m;
  const dp_dfp_opaque *opaque;
  uint32_t *gid;        /* per graph node: group id + 1 (0: none) */
  uint8_t *skip;        /* per graph node: in a function made from an earlier pattern */
  uint32_t *mark;       /* per graph node: the stamp of the group being made, when inside it */
  uint32_t stamp;
  uint32_t number;      /* TVM's graph_number_: every group made, taken or not */
  uint32_t cap;
  dp_dfp_groups *out;
  /* the pools the groups point into, filled as offsets until the end */
  uint32_t nx, capx_pool, nb, capb_pool;
  /* scratch of the group being made */
  dp__ptrmap fuzzy;         /* what a dominator's parent and path matched */
  dp__dfp_u32s fns;         /* the function literals a function pattern matched (graph indices) */
  uint32_t *below;          /* per node: fn_walk's stamp when below the function it walked */
  uint32_t walked, wstamp;  /* that function (+1), and its stamp */
  dp__ptrmap skipped;       /* the operators, constructors and globals below it */
  uint32_t *above;          /* per node: up_walk's stamp when above the node it walked from */
  uint32_t upfrom, ustamp;  /* that node (+1), and its stamp */
  dp__dfp_vec in;           /* inputs (dp_expr *) */
  dp__dfp_vec interior;     /* post order indices, as pointers' worth of integers */
  dp__dfp_vec sorted;       /* trail positions of the bindings that make inputs */
  uint32_t *xstack;     /* extraction stack: (node, next kid) pairs */
  uint32_t capx;
} grouper;

/* ---- what is not an input: fuzzy matches ---- */

/* TVM's fuzzy matches: what a dominator's parent and path matched, and
   every node of a matched function literal's body. The bodies are not
   collected (nested literals would make that quadratic): make_input asks
   in_body about the few expressions that could be inputs. */
static int find_fuzzy(grouper *gr) {
  const dp__dfp_matcher *m = &gr->m;
  const dp_dfp *p = gr->p;
  gr->fns.n = 0;
  if (!p->has_fuzzy) return 0;
  for (uint32_t t = 0; t < m->ntrail; t++) {
    uint32_t node = m->trail[t].node;
    dp_expr *e = m->trail[t].expr;
    if (p->nodes[node].fuzzy && dp__ptrmap_put(&gr->fuzzy, e, NULL) < 0) return -1;
    if (p->nodes[node].kind == DP_DFP_FN && e->h.kind == DP_FUNC) {
      uint32_t f = dp__dfp_graph_find(gr->g, e);
      if (f >= DP__DFP_OOM || dp__dfp_u32s_push(&gr->fns, f) < 0) return -1;
    }
  }
  return 0;
}

/* Marks with a new stamp everything reached from node v along the
   graph's edges from start/edges (its children, or its consumers); a
   child the graph leaves out goes into skip when given. */
static int mark_reached(const dp__dfp_graph *g, uint32_t v, const uint32_t *start, const uint32_t *edges,
                        uint32_t *marks, uint32_t stamp, dp__ptrmap *skip) {
  dp__dfp_u32s st = {NULL, 0, 0};
  int rc = dp__dfp_u32s_push(&st, v);
  while (rc == 0 && st.n) {
    uint32_t x = st.a[--st.n];
    for (uint32_t k = start[x]; k < start[x + 1] && rc == 0; k++) {
      uint32_t c = edges[k];
      if (c == DP__DFP_NONE) {
        if (skip && dp__ptrmap_put(skip, dp_expr_child(g->x[x], k - start[x]), NULL) < 0) rc = -1;
        continue;
      }
      if (marks[c] == stamp) continue;
      marks[c] = stamp;
      rc = dp__dfp_u32s_push(&st, c);
    }
  }
  free(st.a);
  return rc;
}

/* Marks everything below function literal f, and collects the nodes
   the graph leaves out there (once for each f in turn): for an operator,
   constructor or global, which the graph does not hold. */
static int fn_walk(grouper *gr, uint32_t f) {
  const dp__dfp_graph *g = gr->g;
  if (gr->walked == f + 1) return 0;
  if (!gr->below && !(gr->below = dp_calloc(g->n, sizeof *gr->below))) return -1;
  gr->walked = 0;
  dp__ptrmap_free(&gr->skipped);
  if (mark_reached(g, f, g->kstart, g->kids, gr->below, ++gr->wstamp, &gr->skipped) < 0) return -1;
  gr->walked = f + 1;
  return 0;
}

/* Marks everything above node c: its consumers, theirs, and so on (once
   for each c in turn: the candidates of one group after another are
   mostly the same few nodes, such as a variable every literal captures). */
static int up_walk(grouper *gr, uint32_t c) {
  const dp__dfp_graph *g = gr->g;
  if (gr->upfrom == c + 1) return 0;
  if (!gr->above && !(gr->above = dp_calloc(g->n, sizeof *gr->above))) return -1;
  gr->upfrom = 0;
  if (mark_reached(g, c, g->ostart, g->outs, gr->above, ++gr->ustamp, NULL) < 0) return -1;
  gr->upfrom = c + 1;
  return 0;
}

/* Is node c (not f's parameter) below function literal f? Most answers
   come from the graph's numbering: what f post-dominates is below it, and
   so is what the graph's walk found from f; the others walk up from c. */
static int below_fn(grouper *gr, uint32_t f, uint32_t c) {
  dp__dfp_graph *g = gr->g;
  if (c >= f) return 0;
  if (g->first[f] <= c) return 1;
  int d = dp__dfp_graph_dominates(g, f, c);
  if (d != 0) return d;
  if (up_walk(gr, c) < 0) return -1;
  return gr->above[f] == gr->ustamp;
}

/* Is e in the body of function literal f? Its parameters are below f
   without being in the body unless the body uses them. 1, 0, -1. */
static int in_body(grouper *gr, uint32_t f, const dp_expr *e) {
  const dp__dfp_graph *g = gr->g;
  const dp_func *fn = (const dp_func *)g->x[f];
  if (e == fn->body) return 1;
  if (dp__dfp_graph_skips(e)) {
    if (fn_walk(gr, f) < 0) return -1;
    return dp__ptrmap_find(&gr->skipped, e) != NULL;
  }
  uint32_t c = dp__dfp_graph_find(gr->g, e);
  if (c >= DP__DFP_OOM) return -1;
  int param = 0;
  for (uint32_t i = 0; i < fn->nparams && !param; i++) param = e == &fn->params[i]->e;
  if (!param) return below_fn(gr, f, c);
  uint32_t body = dp__dfp_graph_find(gr->g, fn->body);
  for (uint32_t o = g->ostart[c]; o < g->ostart[c + 1]; o++) {
    uint32_t u = g->outs[o];
    if (u == f) continue;
    int r = u == body ? 1 : below_fn(gr, f, u);
    if (r != 0) return r;
  }
  return 0;
}

/* 1 when e is a fuzzy match, 0 not, -1 out of memory. */
static int fuzzy(grouper *gr, const dp_expr *e) {
  if (gr->fuzzy.n && dp__ptrmap_find(&gr->fuzzy, e)) return 1;
  for (uint32_t i = 0; i < gr->fns.n; i++) {
    int r = in_body(gr, gr->fns.a[i], e);
    if (r != 0) return r;
  }
  return 0;
}

/* ---- inputs ---- */

/* TVM's EmbedConst: a constant matched by const, or by a constant expr,
   stays inside the group. */
static int embeds(const grouper *gr, const dp_expr *e, uint32_t node) {
  const dp_dfp_node *x = &gr->p->nodes[node];
  if (e->h.kind != DP_CONST) return 0;
  return x->kind == DP_DFP_CONST || (x->kind == DP_DFP_EXPR && x->expr->h.kind == DP_CONST);
}

static int is_input(const grouper *gr, const dp_expr *e) {
  for (uint32_t i = 0; i < gr->in.n; i++)
    if (gr->in.items[i] == e) return 1;
  return 0;
}

/* A group has few inputs: a list, not a set. */
static int make_input(grouper *gr, dp_expr *e, uint32_t node) {
  if (e->h.kind == DP_OP || e->h.kind == DP_FUNC || embeds(gr, e, node)) return 0;
  int fz = fuzzy(gr, e);
  if (fz != 0) return fz < 0 ? -1 : 0;
  if (is_input(gr, e)) return 0;
  return dp__dfp_vec_push(&gr->in, e);
}

/* The inputs one binding makes: a leaf's match, the arguments or fields
   of an any-arity call or tuple. */
static int inputs_of(grouper *gr, const dp_dfp_bind *b) {
  const dp_dfp_node *x = &gr->p->nodes[b->node];
  dp_expr *e = b->expr;
  if (x->nkids == 0 && x->kind != DP_DFP_TUPLE) return make_input(gr, e, b->node);
  if (x->kind == DP_DFP_CALL && e->h.kind == DP_CALL) {
    for (uint32_t a = 0; a < ((dp_call *)e)->nargs; a++)
      if (make_input(gr, ((dp_call *)e)->args[a], b->node) < 0) return -1;
  } else if (x->kind == DP_DFP_TUPLE && e->h.kind == DP_TUPLE) {
    for (uint32_t a = 0; a < ((dp_tuple *)e)->n; a++)
      if (make_input(gr, ((dp_tuple *)e)->fields[a], b->node) < 0) return -1;
  }
  return 0;
}

/* In the pattern graph's post order (then in binding order): leaves make
   inputs of what they matched, an any-arity call or tuple of its
   arguments or fields. The bindings that make inputs are few: sorted by
   insertion. */
static int find_inputs(grouper *gr) {
  const dp_dfp *p = gr->p;
  const dp__dfp_matcher *m = &gr->m;
  gr->sorted.n = 0;
  for (uint32_t t = 0; t < m->ntrail; t++) {
    uint32_t node = m->trail[t].node;
    if (p->nodes[node].input_rank == DP__DFP_NONE) continue;
    if (dp__dfp_vec_push(&gr->sorted, (void *)(uintptr_t)t) < 0) return -1;
    for (uint32_t i = gr->sorted.n - 1; i > 0; i--) {
      uint32_t a = (uint32_t)(uintptr_t)gr->sorted.items[i - 1];
      if (p->nodes[m->trail[a].node].input_rank <= p->nodes[node].input_rank) break;
      gr->sorted.items[i] = gr->sorted.items[i - 1];
      gr->sorted.items[i - 1] = (void *)(uintptr_t)t;
    }
  }
  for (uint32_t i = 0; i < gr->sorted.n; i++)
    if (inputs_of(gr, &m->trail[(uintptr_t)gr->sorted.items[i]]) < 0) return -1;
  return 0;
}

/* ---- the group's nodes (TVM's MatchExtractor) ---- */

/* Everything from the root down to the inputs, in post order, each node
   once (operators, constructors and globals left out): by index. */
static int extract(grouper *gr, uint32_t root) {
  const dp__dfp_graph *g = gr->g;
  uint32_t sp = 0;
  gr->mark[root] = gr->stamp;
  if (dp_grow((void **)&gr->xstack, &gr->capx, 2, sizeof *gr->xstack) < 0) return -1;
  gr->xstack[sp++] = root;
  gr->xstack[sp++] = g->kstart[root];
  while (sp) {
    uint32_t v = gr->xstack[sp - 2], k = gr->xstack[sp - 1];
    if (k < g->kstart[v + 1]) {
      gr->xstack[sp - 1]++;
      uint32_t kid = g->kids[k];
      if (kid == DP__DFP_NONE || gr->mark[kid] == gr->stamp || is_input(gr, g->x[kid])) continue;
      gr->mark[kid] = gr->stamp;
      if (dp_grow((void **)&gr->xstack, &gr->capx, sp + 2, sizeof *gr->xstack) < 0) return -1;
      gr->xstack[sp++] = kid;
      gr->xstack[sp++] = g->kstart[kid];
    } else {
      sp -= 2;
      if (dp__dfp_vec_push(&gr->interior, (void *)(uintptr_t)v) < 0) return -1;
    }
  }
  return 0;
}

/* TVM's two rejections: an inner node already in a group (overlap), or
   used outside the group by a node the root does not post-dominate.
   1 accept, 0 reject, -1 out of memory. */
static int acceptable(grouper *gr, uint32_t root) {
  dp__dfp_graph *g = gr->g;
  for (uint32_t i = 0; i < gr->interior.n; i++) {
    uint32_t k = (uint32_t)(uintptr_t)gr->interior.items[i];
    int kind = g->x[k]->h.kind;
    if (kind == DP_FUNC || kind == DP_CONST) continue;
    if (gr->gid[k]) return 0;
    if (k == root) continue;
    for (uint32_t o = g->ostart[k]; o < g->ostart[k + 1]; o++) {
      uint32_t user = g->outs[o];
      if (gr->mark[user] == gr->stamp) continue;
      int d = dp__dfp_graph_dominates(g, root, user);
      if (d <= 0) return d;
    }
  }
  return 1;
}

/* ---- groups without inputs: rejected without a walk ---- */

/* A group without inputs is everything below its root, and the walk of
   extract and acceptable is as long as that: trying every function
   literal of a nest would be quadratic in its depth. Such a group is
   rejected when some node below the root, functions and constants aside,
   is used from outside: when the root is not closed (see
   dp__dfp_graph_closed), known without a walk. A closed root is walked
   (the group is then kept, so the walk is paid once per node): none of
   its nodes can be in an earlier group, whose root comes later in post
   order, since every path to them passes this root, which that group
   would then hold. 1 reject, 0 walk, -1 out of memory. */
static int rejects_unwalked(grouper *gr, uint32_t root) {
  int c = dp__dfp_graph_closed(gr->g, root);
  return c < 0 ? -1 : c == 0;
}

/* Keeps the group: its arrays go into the pools (offsets for now: the
   pools move as they grow; dp_dfp_group_matches fixes the pointers). */
static int keep_group(grouper *gr, dp_expr *root, uint32_t number) {
  dp_dfp_groups *out = gr->out;
  uint32_t nin = gr->in.n, nint = gr->interior.n, nb = gr->m.ntrail;
  if (out->n == gr->cap) {
    void *items = out->items;
    if (dp_grow(&items, &gr->cap, out->n + 1, sizeof *out->items) < 0) return -1;
    out->items = items;
  }
  void *xp = out->xpool, *bp = out->bpool;
  if (dp_grow(&xp, &gr->capx_pool, gr->nx + nin + nint, sizeof *out->xpool) < 0) return -1;
  out->xpool = xp;
  if (dp_grow(&bp, &gr->capb_pool, gr->nb + nb, sizeof *out->bpool) < 0) return -1;
  out->bpool = bp;
  dp_dfp_group g = {root, number, nin, (dp_expr **)(uintptr_t)gr->nx, nint,
                    (dp_expr **)(uintptr_t)(gr->nx + nin), nb, (dp_dfp_bind *)(uintptr_t)gr->nb};
  if (nin) memcpy(out->xpool + gr->nx, gr->in.items, nin * sizeof(dp_expr *)); /* (none: in.items may be NULL) */
  gr->nx += nin;
  for (uint32_t i = 0; i < nint; i++) {
    uint32_t k = (uint32_t)(uintptr_t)gr->interior.items[i];
    out->xpool[gr->nx++] = gr->g->x[k];
    gr->gid[k] = out->n + 1;
  }
  if (nb) memcpy(out->bpool + gr->nb, gr->m.trail, nb * sizeof(dp_dfp_bind));
  gr->nb += nb;
  out->items[out->n++] = g;
  return 0;
}

/* The groups' offsets into the pools become pointers. */
static void fix_pointers(dp_dfp_groups *out) {
  for (uint32_t i = 0; i < out->n; i++) {
    dp_dfp_group *g = &out->items[i];
    /* (a pool nothing went into stays NULL, and so do its pointers) */
    g->inputs = out->xpool ? out->xpool + (uintptr_t)g->inputs : NULL;
    g->interior = out->xpool ? out->xpool + (uintptr_t)g->interior : NULL;
    g->binds = out->bpool ? out->bpool + (uintptr_t)g->binds : NULL;
  }
}

/* TVM's CreateGroup for the match just made at root. */
static int make_group(grouper *gr, uint32_t root) {
  uint32_t number = gr->number++;
  gr->stamp++;
  if (gr->fuzzy.n) dp__ptrmap_free(&gr->fuzzy);
  gr->in.n = gr->interior.n = 0;
  if (find_fuzzy(gr) < 0 || find_inputs(gr) < 0) return -1;
  /* a root that is its own input (a lone wildcard) groups nothing: TVM
     never rewrites it */
  if (is_input(gr, gr->g->x[root])) return 0;
  if (gr->in.n == 0) {
    int r = rejects_unwalked(gr, root);
    if (r != 0) return r < 0 ? -1 : 0;
  }
  if (extract(gr, root) < 0) return -1;
  int ok = acceptable(gr, root);
  if (ok <= 0) return ok;
  return keep_group(gr, gr->g->x[root], number);
}

/* Nodes inside a function literal that an earlier pattern made
   (PartitionedFromPattern): never roots. */
static int mark_partitioned(grouper *gr, uint32_t v) {
  const dp__dfp_graph *g = gr->g;
  dp_func *f = (dp_func *)g->x[v];
  if (!f->attrs || !dp_attrs_get(f->attrs, "PartitionedFromPattern")) return 0;
  dp__dfp_vec stack = {NULL, 0, 0};
  int rc = dp__dfp_vec_push(&stack, (void *)(uintptr_t)v);
  while (rc == 0 && stack.n) {
    uint32_t k = (uint32_t)(uintptr_t)stack.items[--stack.n];
    if (gr->skip[k]) continue;
    gr->skip[k] = 1;
    for (uint32_t c = g->kstart[k]; c < g->kstart[k + 1] && rc == 0; c++)
      if (g->kids[c] != DP__DFP_NONE) rc = dp__dfp_vec_push(&stack, (void *)(uintptr_t)g->kids[c]);
  }
  free(stack.items);
  return rc;
}

static void grouper_free(grouper *gr) {
  dp__dfp_matcher_free(&gr->m);
  free(gr->gid);
  free(gr->skip);
  free(gr->mark);
  dp__ptrmap_free(&gr->fuzzy);
  free(gr->fns.a);
  free(gr->below);
  dp__ptrmap_free(&gr->skipped);
  free(gr->above);
  free(gr->in.items);
  free(gr->interior.items);
  free(gr->sorted.items);
  free(gr->xstack);
}

int dp_dfp_group_matches(const dp_dfp *p, dp_expr *body, const dp_dfp_host *host,
                         const dp_dfp_opaque *opaque, dp_dfp_graph *graph, dp_dfp_groups *out,
                         dp_err **err) {
  memset(out, 0, sizeof *out);
  if (!p || !p->finished || !body || (graph && dp_dfp_graph_root(graph) != body)) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                               "dp_dfp_group_matches: no program, or a graph of another body"));
    return -1;
  }
  out->body = dp_retain(body);
  grouper gr;
  memset(&gr, 0, sizeof gr);
  dp_dfp_graph *own = NULL;
  gr.p = p;
  gr.out = out;
  gr.opaque = opaque;
  int rc = -1;
  if (!graph && !(graph = own = dp_dfp_graph_new(body, err))) goto fail;
  gr.g = &graph->g;
  if (dp__dfp_matcher_init(&gr.m, p, host, gr.g, opaque) < 0) goto oom;
  uint32_t n = gr.g->n ? gr.g->n : 1;
  gr.gid = dp_calloc(n, sizeof *gr.gid);
  gr.skip = dp_calloc(n, 1);
  gr.mark = dp_calloc(n, sizeof *gr.mark);
  if (!gr.gid || !gr.skip || !gr.mark) goto oom;
  for (uint32_t v = gr.g->n; v-- > 0;) {
    dp_expr *e = gr.g->x[v];
    if (gr.gid[v] || gr.skip[v]) continue;
    if (e->h.kind == DP_FUNC && mark_partitioned(&gr, v) < 0) goto oom;
    if (gr.skip[v] || !dp__dfp_root_may_match(p, e) || (opaque && dp__dfp_opaque_has(opaque, e))) continue;
    int r = dp__dfp_matcher_run(&gr.m, e);
    if (r < 0) {
      dp_err_set(err, gr.m.err);
      gr.m.err = NULL;
      goto fail;
    }
    if (r > 0 && make_group(&gr, v) < 0) goto oom;
    dp__dfp_matcher_reset(&gr.m);
  }
  fix_pointers(out);
  rc = 0;
  goto done;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
fail:
  dp_dfp_groups_clear(out);
done:
  grouper_free(&gr);
  dp_dfp_graph_free(own);
  return rc;
}

/* TVM's PartitionedFromPattern label: the group's nodes in post order, an
   operator call as "<op>_", another call "Call_", a tuple "Tuple_", a
   projection "TupleGetItem<i>_", a function literal "Function". */
char *dp_dfp_group_label(const dp_dfp_group *g) {
  dp__tb b;
  dp__tb_init(&b);
  for (uint32_t i = 0; i < g->ninterior; i++) {
    const dp_expr *e = g->interior[i];
    switch (e->h.kind) {
    case DP_CALL: {
      const dp_expr *fn = ((const dp_call *)e)->fn;
      if (fn->h.kind == DP_OP) {
        dp__tb_puts(&b, ((const dp_op *)fn)->name);
        dp__tb_putc(&b, '_');
      } else {
        dp__tb_puts(&b, "Call_");
      }
      break;
    }
    case DP_TUPLE: dp__tb_puts(&b, "Tuple_"); break;
    case DP_PROJ: dp__tb_printf(&b, "TupleGetItem%u_", ((const dp_proj *)e)->index); break;
    case DP_FUNC: dp__tb_puts(&b, "Function"); break;
    case DP_LET: dp__tb_puts(&b, "Let_"); break;
    case DP_IF: dp__tb_puts(&b, "If_"); break;
    case DP_MATCH: dp__tb_puts(&b, "Match_"); break;
    default: break;
    }
  }
  return dp__tb_take(&b);
}
