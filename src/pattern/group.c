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
 * by a node the root does not post-dominate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "../core/textbuf.h"
#include "devplan/visit.h"

int dfp_vec_push(dfp_vec *v, void *x) {
  if (v->n == v->cap) {
    void *items = v->items;
    if (dp_grow(&items, &v->cap, v->n + 1, sizeof *v->items) < 0) return -1;
    v->items = items;
  }
  v->items[v->n++] = x;
  return 0;
}

/* ---------------- the opaque set ---------------- */

struct dp_dfp_opaque {
  dp_ptrmap set;
};

dp_dfp_opaque *dp_dfp_opaque_new(void) { return dp_calloc(1, sizeof(dp_dfp_opaque)); }

void dp_dfp_opaque_free(dp_dfp_opaque *o) {
  if (!o) return;
  dp_ptrmap_free(&o->set);
  free(o);
}

int dp_dfp_opaque_add(dp_dfp_opaque *o, const dp_dfp_group *g) {
  for (uint32_t i = 0; i < g->ninterior; i++)
    if (dp_ptrmap_put(&o->set, g->interior[i], NULL) < 0) return -1;
  return 0;
}

int dfp_opaque_has(const dp_dfp_opaque *o, const dp_expr *e) {
  return o && dp_ptrmap_get(&o->set, e) != NULL;
}

/* ---------------- groups ---------------- */

static void group_clear(dp_dfp_group *g) {
  free(g->inputs);
  free(g->interior);
  free(g->binds);
  free(g->label);
}

void dp_dfp_groups_clear(dp_dfp_groups *gs) {
  for (uint32_t i = 0; i < gs->n; i++) group_clear(&gs->items[i]);
  free(gs->items);
  dp_release(gs->body);
  memset(gs, 0, sizeof *gs);
}

typedef struct grouper {
  const dp_dfp *p;
  dfp_graph g;
  dfp_matcher m;
  const dp_dfp_opaque *opaque;
  uint32_t *gid;        /* per graph node: group id + 1 (0: none) */
  uint8_t *skip;        /* per graph node: in a function made from an earlier pattern */
  uint32_t *mark;       /* per graph node: the stamp of the group being made, when inside it */
  uint32_t stamp;
  uint32_t number;      /* TVM's graph_number_: every group made, taken or not */
  uint32_t cap;
  dp_dfp_groups *out;
  /* scratch of the group being made */
  dp_ptrmap fuzzy, inputs;
  dfp_vec in, interior;
  dp_tb label;
} grouper;

/* ---- what is not an input: fuzzy matches ---- */

static int add_fuzzy_tree(grouper *gr, dp_expr *body);

/* TVM's fuzzy matches: what a dominator's parent and path matched, and
   every node of a matched function literal's body. */
static int find_fuzzy(grouper *gr) {
  const dfp_matcher *m = &gr->m;
  const dp_dfp *p = gr->p;
  for (uint32_t t = 0; t < m->ntrail; t++) {
    uint32_t node = m->trail[t].node;
    const dp_dfp_node *x = &p->nodes[node];
    int fuzzy = 0;
    for (uint32_t k = 0; k < p->norder && !fuzzy; k++) {
      const dp_dfp_node *d = &p->nodes[p->order[k]];
      fuzzy = d->kind == DP_DFP_DOMINATES && (d->kids[0] == node || d->kids[1] == node);
    }
    if (fuzzy && dp_ptrmap_put(&gr->fuzzy, m->trail[t].expr, NULL) < 0) return -1;
    if (x->kind == DP_DFP_FN && m->trail[t].expr->h.kind == DP_FUNC &&
        add_fuzzy_tree(gr, ((dp_func *)m->trail[t].expr)->body) < 0)
      return -1;
  }
  return 0;
}

static int fuzzy_post(void *ud, dp_expr *e) {
  return dp_ptrmap_put(&((grouper *)ud)->fuzzy, e, NULL) < 0 ? -1 : 0;
}

static int add_fuzzy_tree(grouper *gr, dp_expr *body) {
  dp_visitor v = {NULL, fuzzy_post, gr};
  return dp_visit(body, &v);
}

/* ---- inputs ---- */

/* TVM's EmbedConst: a constant matched by const, or by a constant expr,
   stays inside the group. */
static int embeds(const grouper *gr, const dp_expr *e, uint32_t node) {
  const dp_dfp_node *x = &gr->p->nodes[node];
  if (e->h.kind != DP_CONST) return 0;
  return x->kind == DP_DFP_CONST || (x->kind == DP_DFP_EXPR && x->expr->h.kind == DP_CONST);
}

static int make_input(grouper *gr, dp_expr *e, uint32_t node) {
  if (e->h.kind == DP_OP || e->h.kind == DP_FUNC || embeds(gr, e, node)) return 0;
  if (dp_ptrmap_get(&gr->fuzzy, e) || dp_ptrmap_get(&gr->inputs, e)) return 0;
  if (dp_ptrmap_put(&gr->inputs, e, NULL) < 0) return -1;
  return dfp_vec_push(&gr->in, e);
}

/* In the pattern graph's post order: leaves make inputs of what they
   matched, an any-arity call or tuple of its arguments or fields. */
static int find_inputs(grouper *gr) {
  const dp_dfp *p = gr->p;
  const dfp_matcher *m = &gr->m;
  for (uint32_t k = 0; k < p->norder; k++) {
    uint32_t node = p->order[k];
    const dp_dfp_node *x = &p->nodes[node];
    int any = x->flags & DP_DFPF_ANY;
    if (!(x->nkids == 0 || (any && (x->kind == DP_DFP_CALL || x->kind == DP_DFP_TUPLE)))) continue;
    for (uint32_t t = 0; t < m->ntrail; t++) {
      if (m->trail[t].node != node) continue;
      dp_expr *e = m->trail[t].expr;
      if (x->nkids == 0 && x->kind != DP_DFP_TUPLE) {
        if (make_input(gr, e, node) < 0) return -1;
      } else if (x->kind == DP_DFP_CALL && e->h.kind == DP_CALL) {
        for (uint32_t a = 0; a < ((dp_call *)e)->nargs; a++)
          if (make_input(gr, ((dp_call *)e)->args[a], node) < 0) return -1;
      } else if (e->h.kind == DP_TUPLE) {
        for (uint32_t a = 0; a < ((dp_tuple *)e)->n; a++)
          if (make_input(gr, ((dp_tuple *)e)->fields[a], node) < 0) return -1;
      }
    }
  }
  return 0;
}

/* ---- the group's nodes and its label (TVM's MatchExtractor) ---- */

static void label_of(dp_tb *b, const dp_expr *e) {
  switch (e->h.kind) {
  case DP_CALL: {
    const dp_expr *fn = ((const dp_call *)e)->fn;
    if (fn->h.kind == DP_OP) {
      dp_tb_puts(b, ((const dp_op *)fn)->name);
      dp_tb_putc(b, '_');
    } else {
      dp_tb_puts(b, "Call_");
    }
    break;
  }
  case DP_TUPLE: dp_tb_puts(b, "Tuple_"); break;
  case DP_PROJ: dp_tb_printf(b, "TupleGetItem%u_", ((const dp_proj *)e)->index); break;
  case DP_FUNC: dp_tb_puts(b, "Function"); break;
  case DP_LET: dp_tb_puts(b, "Let_"); break;
  case DP_IF: dp_tb_puts(b, "If_"); break;
  case DP_MATCH: dp_tb_puts(b, "Match_"); break;
  default: break;
  }
}

typedef struct xframe {
  dp_expr *e;
  uint32_t i, n;
} xframe;

/* Everything from the root down to the inputs, in post order, each node
   once (operators, constructors and globals left out). */
static int extract(grouper *gr, dp_expr *root) {
  xframe *st = NULL;
  uint32_t sp = 0, cap = 0;
  int rc = -1;
  gr->stamp++;
  uint32_t r = dfp_graph_find(&gr->g, root);
  if (r != DFP_NONE) gr->mark[r] = gr->stamp;
  if (dp_grow((void **)&st, &cap, 1, sizeof *st) < 0) goto out;
  st[sp++] = (xframe){root, 0, dp_expr_nchildren(root)};
  while (sp) {
    xframe *f = &st[sp - 1];
    if (f->i < f->n) {
      dp_expr *kid = dp_expr_child(f->e, f->i++);
      if (dfp_graph_skips(kid) || dp_ptrmap_get(&gr->inputs, kid)) continue;
      uint32_t k = dfp_graph_find(&gr->g, kid);
      if (k == DFP_NONE || gr->mark[k] == gr->stamp) continue;
      gr->mark[k] = gr->stamp;
      if (dp_grow((void **)&st, &cap, sp + 1, sizeof *st) < 0) goto out;
      st[sp++] = (xframe){kid, 0, dp_expr_nchildren(kid)};
    } else {
      label_of(&gr->label, f->e);
      if (dfp_vec_push(&gr->interior, f->e) < 0) goto out;
      sp--;
    }
  }
  rc = 0;
out:
  free(st);
  return rc;
}

/* TVM's two rejections: an inner node already in a group (overlap), or
   used outside the group by a node the root does not post-dominate. */
static int acceptable(grouper *gr, dp_expr *root) {
  uint32_t r = dfp_graph_find(&gr->g, root);
  for (uint32_t i = 0; i < gr->interior.n; i++) {
    dp_expr *x = gr->interior.items[i];
    if (x->h.kind == DP_FUNC || x->h.kind == DP_CONST) continue;
    uint32_t k = dfp_graph_find(&gr->g, x);
    if (k == DFP_NONE) continue;
    if (gr->gid[k]) return 0;
    if (x == root) continue;
    for (uint32_t o = gr->g.ostart[k]; o < gr->g.ostart[k + 1]; o++) {
      uint32_t user = gr->g.outs[o];
      if (gr->mark[user] != gr->stamp && !dfp_graph_dominates(&gr->g, r, user)) return 0;
    }
  }
  return 1;
}

static void *copy_of(const void *src, size_t n) {
  void *d = dp_malloc(n ? n : 1);
  if (d && n) memcpy(d, src, n);
  return d;
}

static int keep_group(grouper *gr, dp_expr *root, uint32_t number) {
  dp_dfp_groups *out = gr->out;
  if (out->n == gr->cap) {
    void *items = out->items;
    if (dp_grow(&items, &gr->cap, out->n + 1, sizeof *out->items) < 0) return -1;
    out->items = items;
  }
  dp_dfp_group g = {root, number, gr->in.n, NULL, gr->interior.n, NULL, gr->m.ntrail, NULL, NULL};
  g.inputs = copy_of(gr->in.items, gr->in.n * sizeof(dp_expr *));
  g.interior = copy_of(gr->interior.items, gr->interior.n * sizeof(dp_expr *));
  g.binds = copy_of(gr->m.trail, gr->m.ntrail * sizeof(dp_dfp_bind));
  g.label = dp_tb_take(&gr->label);
  if (!g.inputs || !g.interior || !g.binds || !g.label) {
    group_clear(&g);
    return -1;
  }
  out->items[out->n++] = g;
  for (uint32_t i = 0; i < gr->interior.n; i++) {
    uint32_t k = dfp_graph_find(&gr->g, gr->interior.items[i]);
    if (k != DFP_NONE) gr->gid[k] = out->n;
  }
  return 0;
}

/* TVM's CreateGroup for the match just made at root. */
static int make_group(grouper *gr, dp_expr *root) {
  uint32_t number = gr->number++;
  dp_ptrmap_free(&gr->fuzzy);
  dp_ptrmap_free(&gr->inputs);
  gr->in.n = gr->interior.n = 0;
  dp_tb_free(&gr->label);
  dp_tb_init(&gr->label);
  if (find_fuzzy(gr) < 0 || find_inputs(gr) < 0) return -1;
  /* a root that is its own input (a lone wildcard) groups nothing: TVM
     never rewrites it */
  if (dp_ptrmap_get(&gr->inputs, root)) return 0;
  if (extract(gr, root) < 0) return -1;
  if (!acceptable(gr, root)) return 0;
  return keep_group(gr, root, number);
}

/* Nodes inside a function literal that an earlier pattern made
   (PartitionedFromPattern): never roots. */
static int mark_partitioned(grouper *gr, uint32_t v) {
  dp_func *f = (dp_func *)gr->g.x[v];
  if (!f->attrs || !dp_attrs_get(f->attrs, "PartitionedFromPattern")) return 0;
  gr->skip[v] = 1;
  dfp_vec stack = {NULL, 0, 0};
  int rc = dfp_vec_push(&stack, f->body);
  while (rc == 0 && stack.n) {
    dp_expr *e = stack.items[--stack.n];
    uint32_t k = dfp_graph_find(&gr->g, e);
    if (k == DFP_NONE || gr->skip[k]) continue;
    gr->skip[k] = 1;
    for (uint32_t c = 0; c < dp_expr_nchildren(e) && rc == 0; c++)
      rc = dfp_vec_push(&stack, dp_expr_child(e, c));
  }
  free(stack.items);
  return rc;
}

static void grouper_free(grouper *gr) {
  dfp_graph_free(&gr->g);
  dfp_matcher_free(&gr->m);
  free(gr->gid);
  free(gr->skip);
  free(gr->mark);
  dp_ptrmap_free(&gr->fuzzy);
  dp_ptrmap_free(&gr->inputs);
  free(gr->in.items);
  free(gr->interior.items);
  dp_tb_free(&gr->label);
}

int dp_dfp_group_matches(const dp_dfp *p, dp_expr *body, const dp_dfp_host *host,
                 const dp_dfp_opaque *opaque, dp_dfp_groups *out, dp_err **err) {
  memset(out, 0, sizeof *out);
  if (!p || !p->finished || !body) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "dp_dfp_group: no program or body"));
    return -1;
  }
  out->body = dp_retain(body);
  grouper gr;
  memset(&gr, 0, sizeof gr);
  gr.p = p;
  gr.out = out;
  gr.opaque = opaque;
  dp_tb_init(&gr.label);
  int rc = -1;
  if (dfp_graph_build(&gr.g, body) < 0 || dfp_matcher_init(&gr.m, p, host, &gr.g, opaque) < 0)
    goto oom;
  gr.gid = dp_calloc(gr.g.n ? gr.g.n : 1, sizeof *gr.gid);
  gr.skip = dp_calloc(gr.g.n ? gr.g.n : 1, 1);
  gr.mark = dp_calloc(gr.g.n ? gr.g.n : 1, sizeof *gr.mark);
  if (!gr.gid || !gr.skip || !gr.mark) goto oom;
  for (uint32_t v = gr.g.n; v-- > 0;) {
    dp_expr *e = gr.g.x[v];
    if (gr.gid[v] || gr.skip[v]) continue;
    if (e->h.kind == DP_FUNC && mark_partitioned(&gr, v) < 0) goto oom;
    if (gr.skip[v] || (opaque && dfp_opaque_has(opaque, e))) continue;
    int r = dfp_matcher_run(&gr.m, e);
    if (r < 0) {
      dp_err_set(err, gr.m.err);
      gr.m.err = NULL;
      goto fail;
    }
    if (r > 0 && make_group(&gr, e) < 0) goto oom;
    dfp_matcher_reset(&gr.m);
  }
  rc = 0;
  goto done;
oom:
  dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
fail:
  dp_dfp_groups_clear(out);
done:
  grouper_free(&gr);
  return rc;
}
