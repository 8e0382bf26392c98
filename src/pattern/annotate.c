/*
 * MergeAndAnnotate's rewrite (RFC 0038: MergeComposite that inserts
 * on_device): the groups stay where they are, and are placed on their
 * device so that the planner runs each of their calls there and copies
 * only what crosses the group's boundary:
 * - every call of a group (in the group's own dataflow, not inside a
 *   function literal it holds), and its root whatever it is, is read from
 *   outside the group through on_device(x, virtual_device=vd): the call
 *   runs on vd, its result may be copied wherever its users are; the
 *   group's own nodes read it directly, so each side has its own domain;
 * - every input of a group that no group computes is read, by the
 *   group's nodes only, through on_device(input, virtual_device=vd,
 *   constrain_body=False, constrain_result=True): it arrives on vd, and is
 *   computed wherever the planner decides.
 * A node inside a group that is also used outside it (MergeComposite
 * would duplicate the group's part for that user; annotation cannot) stays
 * on the group's device; its outside users read it through a copy.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "devplan/visit.h"

typedef struct place {
  dp_vdev *vd;
  dp_attrs *body_attrs;   /* on_device(x, virtual_device=vd) */
  dp_attrs *input_attrs;  /* ... constrain_body=False, constrain_result=True */
} place;

typedef struct member {
  uint32_t set, group;
  uint8_t wrapped;        /* read from outside the group through on_device */
  dp_expr *raw;           /* the rebuilt node the group's own nodes read (owned) */
} member;

/* A wrapper made for input x of one group. */
typedef struct wrap {
  const dp_expr *x;
  dp_expr *w;             /* owned */
  uint32_t next;          /* the group's next wrapper, or DP__DFP_NONE */
} wrap;

typedef struct actx {
  const dp_dfp_placed *sets;
  uint32_t nsets;
  place *places;
  dp_op *on_device;
  dp__ptrmap members;      /* top-level node of a group -> member index + 1 */
  member *mem;
  uint32_t nmem, capmem;
  uint32_t *first;        /* per set: the number of the set's first group */
  uint32_t *head;         /* per group (numbered across sets): its first wrapper, or DP__DFP_NONE */
  wrap *wr;
  uint32_t nwr, capwr;
} actx;

static dp_err *oom(void) { return dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"); }

static int is_device_call(const dp_expr *e) {
  return dp_is_op_call(e, "on_device") || dp_is_op_call(e, "device_copy");
}

/* Calls, and the root whatever it is (but a variable, a constant or a
   function value), are placed with on_device. */
static int wraps_node(const dp_dfp_group *g, const dp_expr *e) {
  if (e->h.kind == DP_CALL) return !is_device_call(e);
  return e == g->root && e->h.kind != DP_VAR && e->h.kind != DP_CONST && e->h.kind != DP_FUNC &&
         e->h.kind != DP_OP && e->h.kind != DP_GLOBAL;
}

static int attrs_for(actx *a, uint32_t k, dp_err **err) {
  dp_vdev *vd = a->sets[k].vd;
  dp_attr one[1] = {{(char *)"virtual_device", dp_av_vdev(vd)}};
  a->places[k].body_attrs = dp_op_attrs(a->on_device, 1, one, err);
  if (!a->places[k].body_attrs) return -1;
  dp_attr three[3] = {{(char *)"virtual_device", dp_av_vdev(vd)},
                      {(char *)"constrain_body", dp_av_bool(0)},
                      {(char *)"constrain_result", dp_av_bool(1)}};
  a->places[k].input_attrs = dp_op_attrs(a->on_device, 3, three, err);
  a->places[k].vd = vd;
  return a->places[k].input_attrs ? 0 : -1;
}

/* The group's nodes in its own dataflow: from the root through its inner
   nodes, not into function literals. */
static int add_members(actx *a, uint32_t k, uint32_t gi) {
  const dp_dfp_group *g = &a->sets[k].groups->items[gi];
  dp__ptrmap inner = DP__PTRMAP_INIT, seen = DP__PTRMAP_INIT;
  dp__dfp_vec stack = {NULL, 0, 0};
  int rc = -1;
  for (uint32_t i = 0; i < g->ninterior; i++)
    if (dp__ptrmap_put(&inner, g->interior[i], NULL) < 0) goto out;
  if (dp__dfp_vec_push(&stack, g->root) < 0) goto out;
  while (stack.n) {
    dp_expr *e = stack.items[--stack.n];
    if (dp__ptrmap_find(&seen, e)) continue;
    if (dp__ptrmap_put(&seen, e, NULL) < 0) goto out;
    if (a->nmem == a->capmem) {
      void *m = a->mem;
      if (dp_grow(&m, &a->capmem, a->nmem + 1, sizeof *a->mem) < 0) goto out;
      a->mem = m;
    }
    a->mem[a->nmem] = (member){k, gi, (uint8_t)wraps_node(g, e), NULL};
    if (dp__ptrmap_put(&a->members, e, (void *)(uintptr_t)(++a->nmem)) < 0) goto out;
    if (e->h.kind == DP_FUNC) continue;
    for (uint32_t c = 0; c < dp_expr_nchildren(e); c++) {
      dp_expr *kid = dp_expr_child(e, c);
      if (dp__ptrmap_find(&inner, kid) && dp__dfp_vec_push(&stack, kid) < 0) goto out;
    }
  }
  rc = 0;
out:
  dp__ptrmap_free(&inner);
  dp__ptrmap_free(&seen);
  free(stack.items);
  return rc;
}

static const member *member_of(const actx *a, const dp_expr *e) {
  dp__ptrslot *v = dp__ptrmap_find(&a->members, e);
  return v ? &a->mem[(uintptr_t)v->ptr - 1] : NULL;
}

static int is_input_of(const dp_dfp_group *g, const dp_expr *x) {
  for (uint32_t i = 0; i < g->ninputs; i++)
    if (g->inputs[i] == x) return 1;
  return 0;
}

/* on_device(x', vd, constrain_body=False, constrain_result=True) for
   group g's reads of input x (one per group and input: a group has few
   inputs, so its wrappers are a short list). */
static dp_expr *input_wrapper(actx *a, const member *m, dp_expr *x, dp_expr *now) {
  uint32_t gi = a->first[m->set] + m->group;
  for (uint32_t i = a->head[gi]; i != DP__DFP_NONE; i = a->wr[i].next)
    if (a->wr[i].x == x) return a->wr[i].w;
  dp_expr *w = (dp_expr *)dp_call_new(&a->on_device->e, 1, &now, a->places[m->set].input_attrs,
                                      DP_NOSPAN);
  if (!w) return NULL;
  if (a->nwr == a->capwr) {
    void *wr = a->wr;
    if (dp_grow(&wr, &a->capwr, a->nwr + 1, sizeof *a->wr) < 0) {
      dp_release(w);
      return NULL;
    }
    a->wr = wr;
  }
  a->wr[a->nwr] = (wrap){x, w, a->head[gi]};
  a->head[gi] = a->nwr++;
  return w;
}

static dp_expr *a_post(void *ud, dp_expr *orig, dp_expr *rebuilt, dp_err **err) {
  actx *a = ud;
  member *m = (member *)member_of(a, orig);
  if (!m) return dp_retain(rebuilt);
  const dp_dfp_group *g = &a->sets[m->set].groups->items[m->group];
  uint32_t n = dp_expr_nchildren(orig);
  dp_expr *small[8], **kids = n <= 8 ? small : dp_malloc(n * sizeof *kids);
  dp_expr *r = NULL;
  if (!kids) goto oom;
  for (uint32_t c = 0; c < n; c++) {
    dp_expr *x = dp_expr_child(orig, c);
    kids[c] = dp_expr_child(rebuilt, c);
    const member *xm = member_of(a, x);
    if (xm && xm->set == m->set && xm->group == m->group && xm->raw) {
      kids[c] = xm->raw; /* inside the group: no wrapper between its nodes */
      continue;
    }
    if (!is_input_of(g, x) || (xm && xm->wrapped) || orig->h.kind == DP_FUNC ||
        (orig->h.kind == DP_LET && c == 0))
      continue;
    if (!(kids[c] = input_wrapper(a, m, x, kids[c]))) goto oom;
  }
  if (!(m->raw = dp_expr_with_children(rebuilt, kids))) goto oom;
  if (kids != small) free(kids);
  if (!m->wrapped) return dp_retain(m->raw);
  r = (dp_expr *)dp_call_new(&a->on_device->e, 1, &m->raw, a->places[m->set].body_attrs, orig->span);
  if (!r) dp_err_set(err, oom());
  return r;
oom:
  if (kids != small) free(kids);
  dp_err_set(err, oom());
  return NULL;
}

static void actx_free(actx *a) {
  for (uint32_t k = 0; a->places && k < a->nsets; k++) {
    dp_release(a->places[k].body_attrs);
    dp_release(a->places[k].input_attrs);
  }
  free(a->places);
  for (uint32_t i = 0; i < a->nwr; i++) dp_release(a->wr[i].w);
  free(a->wr);
  for (uint32_t i = 0; i < a->nmem; i++) dp_release(a->mem[i].raw);
  free(a->mem);
  free(a->first);
  free(a->head);
  dp__ptrmap_free(&a->members);
}

dp_expr *dp_dfp_annotate(dp_expr *body, const dp_dfp_placed *sets, uint32_t nsets, dp_err **err) {
  actx a;
  memset(&a, 0, sizeof a);
  a.sets = sets;
  a.nsets = nsets;
  dp_expr *r = NULL;
  a.places = dp_calloc(nsets ? nsets : 1, sizeof *a.places);
  a.first = dp_calloc(nsets ? nsets : 1, sizeof *a.first);
  uint32_t ngroups = 0;
  for (uint32_t k = 0; k < nsets; k++) {
    if (a.first) a.first[k] = ngroups;
    ngroups += sets[k].groups->n;
  }
  a.head = dp_malloc((ngroups ? ngroups : 1) * sizeof *a.head);
  if (!a.places || !a.first || !a.head) {
    dp_err_set(err, oom());
    goto out;
  }
  memset(a.head, 0xff, (ngroups ? ngroups : 1) * sizeof *a.head); /* DP__DFP_NONE */
  for (uint32_t k = 0; k < nsets; k++) {
    if (!sets[k].vd) {
      dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "MergeAndAnnotate: a group set has no device"));
      goto out;
    }
    a.on_device = dp_op_get(sets[k].vd->ctx, "on_device");
    if (!a.on_device || attrs_for(&a, k, err) < 0) goto out;
    for (uint32_t gi = 0; gi < sets[k].groups->n; gi++)
      if ((!sets[k].keep || sets[k].keep[gi]) && add_members(&a, k, gi) < 0) {
        dp_err_set(err, oom());
        goto out;
      }
  }
  if (!a.on_device) {
    r = dp_retain(body);
    goto out;
  }
  dp_rewriter rw = {NULL, a_post, &a};
  r = dp_rewrite(body, &rw, err);
out:
  actx_free(&a);
  return r;
}
