/*
 * The expression printer: Relay text as TVM printed it (relay-text.md).
 *
 * A node that is not atomic (variable, global, constant, operator,
 * constructor) gets a graph binding `%n = ...;` unless it is used once and
 * stands where TVM's printer inlined (a scope's result, a let's value). So
 * a DAG prints each shared node once, numbered in order of first need.
 *
 * Three passes, all with explicit stacks (a 1,000,000-deep chain is fine):
 *  1. discover: every distinct node once, its number of uses, post order;
 *  2. homes: parents before children, each node's scope (function body, if
 *     branch, match clause, parenthesised let block) is the innermost one
 *     that contains all its uses, so a node shared by two branches is bound
 *     before the `if` and the text re-parses with the same sharing;
 *  3. print: post order again; bindings go to the buffer of their home
 *     scope, a let writes its `let %x = v;` line before its body is printed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "print_internal.h"
#include "textbuf.h"
#include "devplan/visit.h"

#define NOSCOPE UINT32_MAX
#define NONODE UINT32_MAX

enum {
  F_TRY = 1,      /* used where TVM inlines a unique expression */
  F_TAIL = 2,     /* used as the result of a scope */
  F_DONE = 4,     /* printed */
  F_LETBLOCK = 8, /* a let that opens its own parenthesised scope */
  F_ROOT = 16
};

typedef struct pnode {
  const dp_expr *e;
  uint32_t uses;
  uint32_t home;   /* its scope (NOSCOPE until known) */
  uint32_t inner;  /* first scope it opens */
  int32_t temp;    /* graph binding number, -1: none */
  uint32_t flags;
  uint32_t edge;   /* its children's node indices start at edges[edge] */
  char *text;      /* inline text (owned), or a variable's name (owned by names) */
} pnode;

typedef struct scope {
  uint32_t parent, level, indent;
  dp_tb buf;
} scope;

typedef struct nslot {
  char *s;
  uint32_t hash, next;
} nslot;

typedef struct frame {
  uint32_t node, k;
} frame;

typedef struct printer {
  int flags;
  const char *def_name;
  int failed;
  dp_pmap map;
  pnode *nodes;
  uint32_t n, cap;
  uint32_t *order;
  uint32_t norder, caporder;
  uint32_t *edges; /* child node indices, so later passes need no lookups */
  uint32_t nedges, capedges;
  scope *scopes;
  uint32_t nscopes, capscopes;
  nslot *names; /* the printed variable names in use (open addressing) */
  uint32_t nnames, capnames;
  int32_t next_temp;
  struct { const dp_type *t; char *s; } tcache[64];
} printer;

/* ---------------- small helpers ---------------- */

static int is_atomic(const dp_expr *e) {
  switch (e->h.kind) {
  case DP_VAR: case DP_GLOBAL: case DP_CONST: case DP_OP: case DP_CTOR: return 1;
  default: return 0;
  }
}

/* arr grown to hold `need` items (at least one, so that an empty result
   is not mistaken for out of memory); NULL on out of memory. */
static void *grow_array(void *arr, uint32_t *cap, uint32_t need, size_t elem) {
  if (need == 0) need = 1;
  if (need <= *cap) return arr;
  uint32_t c = *cap ? *cap : 16;
  while (c < need) c *= 2;
  void *a = realloc(arr, (size_t)c * elem);
  if (a) *cap = c;
  return a;
}

/* Index of e's node, adding it when new; NONODE on out of memory. */
/* Index of e's node, adding it when new; NONODE on out of memory. A node
   other than a variable held once (rc 1) has one parent, so it cannot be
   met again: it skips the map, which keeps trees and let chains cheap.
   (Variables always go through the map: binders look them up.) */
static uint32_t node_of(printer *p, const dp_expr *e, int *fresh) {
  int f = 1;
  pnode *nodes = grow_array(p->nodes, &p->cap, p->n + 1, sizeof *nodes);
  if (!nodes) return NONODE;
  p->nodes = nodes;
  if (e->h.rc != 1 || e->h.kind == DP_VAR || p->n == 0) {
    uint64_t *v = dp_pmap_upsert(&p->map, e, p->n, &f);
    if (!v) return NONODE;
    if (!f) {
      if (fresh) *fresh = 0;
      return (uint32_t)*v;
    }
  }
  if (fresh) *fresh = 1;
  nodes[p->n] = (pnode){.e = e, .home = NOSCOPE, .inner = NOSCOPE, .temp = -1, .edge = NONODE};
  return p->n++;
}

/* Node index of child k of node i. */
static uint32_t kid(const printer *p, uint32_t i, uint32_t k) {
  return p->edges[p->nodes[i].edge + k];
}

/* Room for the child indices of node i (a non-atomic node met first). */
static int add_edges(printer *p, uint32_t i) {
  uint32_t nc = dp_expr_nchildren(p->nodes[i].e);
  uint32_t *e = grow_array(p->edges, &p->capedges, p->nedges + nc, sizeof *e);
  if (!e) return -1;
  p->edges = e;
  p->nodes[i].edge = p->nedges;
  for (uint32_t k = 0; k < nc; k++) e[p->nedges + k] = NONODE;
  p->nedges += nc;
  return 0;
}

static uint32_t new_scopes(printer *p, uint32_t count, uint32_t parent, uint32_t indent_step) {
  scope *s = grow_array(p->scopes, &p->capscopes, p->nscopes + count, sizeof *s);
  if (!s) {
    p->failed = 1;
    return NOSCOPE;
  }
  p->scopes = s;
  uint32_t first = p->nscopes;
  for (uint32_t i = 0; i < count; i++) {
    scope *sc = &s[p->nscopes++];
    sc->parent = parent;
    sc->level = parent == NOSCOPE ? 0 : s[parent].level + 1;
    sc->indent = parent == NOSCOPE ? 0 : s[parent].indent + indent_step;
    dp_tb_init(&sc->buf);
  }
  return first;
}

static uint32_t lca(const printer *p, uint32_t a, uint32_t b) {
  while (p->scopes[a].level > p->scopes[b].level) a = p->scopes[a].parent;
  while (p->scopes[b].level > p->scopes[a].level) b = p->scopes[b].parent;
  while (a != b) {
    a = p->scopes[a].parent;
    b = p->scopes[b].parent;
  }
  return a;
}

static void indent(dp_tb *b, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) dp_tb_putn(b, "  ", 2);
}

static const char *type_text(printer *p, const dp_type *t) {
  uint32_t h = (uint32_t)(((uintptr_t)t >> 4) & 63);
  if (p->tcache[h].t == t) return p->tcache[h].s;
  char *s = dp_type_str(t);
  if (!s) {
    p->failed = 1;
    return "?";
  }
  free(p->tcache[h].s);
  p->tcache[h].t = t;
  p->tcache[h].s = s;
  return s;
}

static void put_type_comment(printer *p, dp_tb *b, const dp_expr *e) {
  if (!(p->flags & DP_PRINT_TYPES) || !e->type) return;
  dp_tb_puts(b, " /* ty=");
  dp_tb_puts(b, type_text(p, e->type));
  dp_tb_puts(b, " */");
}

/* ---------------- variable names ---------------- */

static nslot *name_slot(printer *p, const char *s, uint32_t h) {
  for (uint32_t i = h & (p->capnames - 1);; i = (i + 1) & (p->capnames - 1)) {
    nslot *sl = &p->names[i];
    if (!sl->s || (sl->hash == h && strcmp(sl->s, s) == 0)) return sl;
  }
}

static int names_grow(printer *p) {
  uint32_t cap = p->capnames ? p->capnames * 2 : 64;
  nslot *old = p->names;
  uint32_t oldcap = p->capnames;
  p->names = calloc(cap, sizeof *p->names);
  if (!p->names) {
    p->names = old;
    return -1;
  }
  p->capnames = cap;
  for (uint32_t i = 0; i < oldcap; i++)
    if (old[i].s) *name_slot(p, old[i].s, old[i].hash) = old[i];
  free(old);
  return 0;
}

/* The name as printed: identifier characters only, never starting with a
   digit (those would read as graph bindings `%0`). */
static char *sanitize(const char *hint) {
  size_t n = hint ? strlen(hint) : 0;
  char *s = malloc(n + 2), *o = s;
  if (!s) return NULL;
  if (n == 0 || (hint[0] >= '0' && hint[0] <= '9')) *o++ = n ? 'v' : 'x';
  for (size_t i = 0; i < n; i++) {
    char c = hint[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    *o++ = ok ? c : '_';
  }
  *o = 0;
  return s;
}

/* A fresh printed name from hint: `a`, then `a1`, `a2`, ... (as TVM). */
static char *alloc_name(printer *p, const char *hint) {
  if ((p->nnames + 2) * 10 > p->capnames * 7 && names_grow(p) < 0) return NULL;
  char *base = sanitize(hint);
  if (!base) return NULL;
  uint32_t h = dp_hash_str(0, base);
  nslot *bs = name_slot(p, base, h);
  if (!bs->s) {
    *bs = (nslot){base, h, 1};
    p->nnames++;
    return base;
  }
  size_t n = strlen(base);
  char *cand = malloc(n + 12);
  if (!cand) {
    free(base);
    return NULL;
  }
  uint32_t k = bs->next;
  for (;; k++) {
    snprintf(cand, n + 12, "%s%u", base, k);
    uint32_t ch = dp_hash_str(0, cand);
    nslot *cs = name_slot(p, cand, ch);
    if (!cs->s) {
      *cs = (nslot){cand, ch, 1};
      break;
    }
  }
  name_slot(p, base, h)->next = k + 1;
  p->nnames++;
  free(base);
  return cand;
}

/* Name of variable node i, given at its binding (or first use if free). */
static const char *var_name(printer *p, uint32_t i) {
  if (!p->nodes[i].text) {
    char *s = alloc_name(p, ((const dp_var *)p->nodes[i].e)->name);
    if (!s) {
      p->failed = 1;
      return "x";
    }
    p->nodes[i].text = s;
  }
  return p->nodes[i].text;
}

static void bind_var(printer *p, const dp_var *v) {
  uint32_t i = node_of(p, &v->e, NULL);
  if (i == NONODE) {
    p->failed = 1;
    return;
  }
  var_name(p, i);
}

/* ---------------- pass 1: discover ---------------- */

static int discover(printer *p, const dp_expr *root) {
  frame *stack = NULL;
  uint32_t n = 0, cap = 0;
  uint32_t r = node_of(p, root, NULL);
  if (r == NONODE) return -1;
  p->nodes[r].flags |= F_ROOT | F_TRY | F_TAIL;
  p->nodes[r].uses = 1;
  if (is_atomic(root)) return 0;
  if (add_edges(p, r) < 0 || !(stack = grow_array(stack, &cap, 1, sizeof *stack))) return -1;
  stack[n++] = (frame){r, 0};
  while (n) {
    frame *f = &stack[n - 1];
    const dp_expr *e = p->nodes[f->node].e;
    if (f->k >= dp_expr_nchildren(e)) {
      uint32_t *o = grow_array(p->order, &p->caporder, p->norder + 1, sizeof *o);
      if (!o) goto oom;
      p->order = o;
      p->order[p->norder++] = f->node;
      n--;
      continue;
    }
    uint32_t k = f->k++, self = f->node;
    const dp_expr *c = dp_expr_child(e, k);
    if (!c) continue;
    int fresh;
    uint32_t ci = node_of(p, c, &fresh);
    if (ci == NONODE) goto oom;
    p->edges[p->nodes[self].edge + k] = ci;
    p->nodes[ci].uses++;
    if (!fresh || is_atomic(c)) continue;
    if (add_edges(p, ci) < 0) goto oom;
    frame *s = grow_array(stack, &cap, n + 1, sizeof *stack);
    if (!s) goto oom;
    stack = s;
    stack[n++] = (frame){ci, 0};
  }
  free(stack);
  return 0;
oom:
  free(stack);
  return -1;
}

/* ---------------- pass 2: homes ---------------- */

static void use_in(printer *p, uint32_t ci, uint32_t sc, uint32_t flags) {
  if (ci == NONODE || is_atomic(p->nodes[ci].e)) return;
  pnode *cn = &p->nodes[ci];
  cn->flags |= flags;
  cn->home = cn->home == NOSCOPE ? sc : lca(p, cn->home, sc);
}

static int tail_inline(const pnode *n) {
  return (n->flags & F_ROOT) || (n->uses == 1 && (n->flags & F_TAIL));
}

static int is_inline(const pnode *n) {
  return is_atomic(n->e) || (n->flags & F_ROOT) || (n->uses == 1 && (n->flags & F_TRY));
}

static void place_children(printer *p, uint32_t i) {
  pnode *n = &p->nodes[i];
  const dp_expr *e = n->e;
  uint32_t h = n->home, s;
  switch (e->h.kind) {
  case DP_FUNC:
    if ((s = new_scopes(p, 1, h, 1)) == NOSCOPE) return;
    p->nodes[i].inner = s;
    use_in(p, kid(p, i, ((const dp_func *)e)->nparams), s, F_TRY | F_TAIL);
    return;
  case DP_IF: {
    if ((s = new_scopes(p, 2, h, 1)) == NOSCOPE) return;
    p->nodes[i].inner = s;
    use_in(p, kid(p, i, 0), h, 0);
    use_in(p, kid(p, i, 1), s, F_TRY | F_TAIL);
    use_in(p, kid(p, i, 2), s + 1, F_TRY | F_TAIL);
    return;
  }
  case DP_MATCH: {
    const dp_match *m = (const dp_match *)e;
    if ((s = new_scopes(p, m->n, h, 2)) == NOSCOPE) return;
    p->nodes[i].inner = s;
    use_in(p, kid(p, i, 0), h, 0);
    for (uint32_t k = 0; k < m->n; k++) use_in(p, kid(p, i, k + 1), s + k, F_TRY | F_TAIL);
    return;
  }
  case DP_LET: {
    if (tail_inline(n)) {
      s = h;
    } else {
      if ((s = new_scopes(p, 1, h, 1)) == NOSCOPE) return;
      p->nodes[i].flags |= F_LETBLOCK;
    }
    p->nodes[i].inner = s;
    use_in(p, kid(p, i, 1), s, F_TRY);
    use_in(p, kid(p, i, 2), s, F_TRY | F_TAIL);
    return;
  }
  default:
    for (uint32_t k = 0, nc = dp_expr_nchildren(e); k < nc; k++) use_in(p, kid(p, i, k), h, 0);
  }
}

static void place_all(printer *p, uint32_t root) {
  p->nodes[root].home = 0;
  for (uint32_t j = p->norder; j-- > 0 && !p->failed;) place_children(p, p->order[j]);
}

/* ---------------- pass 3: print ---------------- */

/* Append the reference to child c: its name, binding, or inline text. */
static void put_ref_i(printer *p, dp_tb *b, uint32_t i) {
  if (i == NONODE) {
    p->failed = 1;
    return;
  }
  pnode *n = &p->nodes[i];
  const dp_expr *c = n->e;
  switch (c->h.kind) {
  case DP_VAR:
    dp_tb_putc(b, '%');
    dp_tb_puts(b, var_name(p, i));
    return;
  case DP_GLOBAL:
    dp_tb_putc(b, '@');
    dp_tb_puts(b, ((const dp_global *)c)->name);
    return;
  case DP_OP: dp_tb_puts(b, ((const dp_op *)c)->name); return;
  case DP_CTOR: dp_tb_puts(b, ((const dp_ctor *)c)->name); return;
  case DP_CONST:
    dp__put_const(b, (const dp_const *)c);
    put_type_comment(p, b, c);
    return;
  default: break;
  }
  if (n->temp >= 0) {
    dp_tb_printf(b, "%%%d", n->temp);
  } else if (n->text) {
    dp_tb_puts(b, n->text);
    free(n->text);
    n->text = NULL;
  }
}

static void put_ref(printer *p, dp_tb *b, const dp_expr *c) {
  uint64_t *v = dp_pmap_get(&p->map, c);
  put_ref_i(p, b, v ? (uint32_t)*v : NONODE);
}

/* Reference to child k of node i. */
static void put_kid(printer *p, dp_tb *b, uint32_t i, uint32_t k) {
  put_ref_i(p, b, kid(p, i, k));
}

static void put_vdev(printer *p, dp_tb *b, const dp_vdev *vd, const char *pre, const char *post) {
  if (!vd || dp_vdev_is_fully_unconstrained(vd)) return;
  char *s = dp_vdev_str(vd);
  if (!s) {
    p->failed = 1;
    return;
  }
  dp_tb_printf(b, "%svirtual_device=%s%s", pre, s, post);
  free(s);
}

/* `%x {virtual_device=...}: T` and the type comment, at a binding. */
static void put_var_decl(printer *p, dp_tb *b, const dp_var *v, int is_param) {
  put_ref(p, b, &v->e);
  put_vdev(p, b, v->vdev, " {", "}");
  if (v->annot) {
    dp_tb_puts(b, ": ");
    dp_tb_puts(b, type_text(p, v->annot));
  }
  if (is_param) put_type_comment(p, b, &v->e);
}

static void put_aval(printer *p, dp_tb *b, const dp_aval *v) {
  if (v->kind == DP_AV_EXPR && v->u.expr && v->u.expr->h.kind == DP_CONST) {
    dp__put_const(b, (const dp_const *)v->u.expr);
    return;
  }
  /* a float written without a suffix is a float32 attribute: TVM prints
     those as `2e-05f` */
  dp_aval f32 = *v;
  if (v->kind == DP_AV_FLOAT && !v->dtype) f32.dtype = DP_FLOAT32;
  char *s = dp_av_str_of(&f32);
  if (!s) {
    p->failed = 1;
    return;
  }
  dp_tb_puts(b, s);
  free(s);
}

static void put_attrs(printer *p, dp_tb *b, const dp_attrs *a, int first) {
  for (uint32_t i = 0; a && i < a->n; i++) {
    if (!first || i) dp_tb_puts(b, ", ");
    dp_tb_puts(b, a->items[i].key);
    dp_tb_putc(b, '=');
    put_aval(p, b, &a->items[i].val);
  }
}

/* The lines of scope s, then its result, then a newline. */
static void put_scope(printer *p, dp_tb *b, uint32_t s, uint32_t result) {
  scope *sc = &p->scopes[s];
  if (sc->buf.failed) p->failed = 1;
  if (sc->buf.n) dp_tb_putn(b, sc->buf.s, sc->buf.n);
  dp_tb_free(&p->scopes[s].buf);
  indent(b, p->scopes[s].indent);
  put_ref_i(p, b, result);
  dp_tb_putc(b, '\n');
}

static void put_func(printer *p, dp_tb *b, uint32_t i) {
  const pnode *n = &p->nodes[i];
  const dp_func *f = (const dp_func *)n->e;
  uint32_t home = n->home, inner = n->inner;
  if ((n->flags & F_ROOT) && p->def_name) dp_tb_printf(b, "def @%s(", p->def_name);
  else dp_tb_puts(b, "fn (");
  for (uint32_t k = 0; k < f->nparams; k++) {
    if (k) dp_tb_puts(b, ", ");
    put_var_decl(p, b, f->params[k], 1);
  }
  put_vdev(p, b, f->vdev, f->nparams ? ", " : "", "");
  int first = !f->nparams && !(f->vdev && !dp_vdev_is_fully_unconstrained(f->vdev));
  put_attrs(p, b, f->attrs, first);
  dp_tb_putc(b, ')');
  if (f->ret) {
    dp_tb_puts(b, " -> ");
    dp_tb_puts(b, type_text(p, f->ret));
  }
  dp_tb_puts(b, " {\n");
  put_scope(p, b, inner, kid(p, i, f->nparams));
  indent(b, p->scopes[home].indent);
  dp_tb_putc(b, '}');
}

static void put_if(printer *p, dp_tb *b, uint32_t i) {
  uint32_t home = p->nodes[i].home, s = p->nodes[i].inner;
  dp_tb_puts(b, "if (");
  put_kid(p, b, i, 0);
  dp_tb_puts(b, ") {\n");
  put_scope(p, b, s, kid(p, i, 1));
  indent(b, p->scopes[home].indent);
  dp_tb_puts(b, "} else {\n");
  put_scope(p, b, s + 1, kid(p, i, 2));
  indent(b, p->scopes[home].indent);
  dp_tb_putc(b, '}');
}

/* Patterns, with an explicit stack (they may nest deeply). With `bind`,
   only give the pattern's variables their names. */
static void walk_pattern(printer *p, dp_tb *b, const dp_pattern *pat, int bind) {
  struct pf { const dp_pattern *p; uint32_t k; } *st = NULL;
  uint32_t n = 0, cap = 0;
  if (!(st = grow_array(st, &cap, 1, sizeof *st))) goto oom;
  st[n++] = (struct pf){pat, 0};
  while (n) {
    struct pf *f = &st[n - 1];
    const dp_pattern *q = f->p;
    if (q->h.kind == DP_PAT_WILD || q->h.kind == DP_PAT_VAR) {
      if (q->h.kind == DP_PAT_VAR && bind) bind_var(p, q->var);
      else if (q->h.kind == DP_PAT_VAR) put_var_decl(p, b, q->var, 0);
      else if (!bind) dp_tb_putc(b, '_');
      n--;
      continue;
    }
    if (f->k == 0 && !bind) {
      if (q->h.kind == DP_PAT_CTOR) dp_tb_puts(b, q->ctor->name);
      if (q->h.kind == DP_PAT_TUPLE || q->n) dp_tb_putc(b, '(');
    }
    if (f->k == q->n) {
      if (!bind && (q->h.kind == DP_PAT_TUPLE || q->n)) {
        if (q->h.kind == DP_PAT_TUPLE && q->n == 1) dp_tb_putc(b, ',');
        dp_tb_putc(b, ')');
      }
      n--;
      continue;
    }
    if (f->k && !bind) dp_tb_puts(b, ", ");
    const dp_pattern *sub = q->sub[f->k++];
    struct pf *s2 = grow_array(st, &cap, n + 1, sizeof *st);
    if (!s2) goto oom;
    st = s2;
    st[n++] = (struct pf){sub, 0};
  }
  free(st);
  return;
oom:
  free(st);
  p->failed = 1;
}

static void put_match(printer *p, dp_tb *b, uint32_t i) {
  const dp_match *m = (const dp_match *)p->nodes[i].e;
  uint32_t home = p->nodes[i].home, s = p->nodes[i].inner;
  uint32_t ind = p->scopes[home].indent;
  dp_tb_puts(b, m->complete ? "match (" : "match? (");
  put_kid(p, b, i, 0);
  dp_tb_puts(b, ") {\n");
  for (uint32_t k = 0; k < m->n; k++) {
    indent(b, ind + 1);
    walk_pattern(p, b, m->clauses[k].pat, 0);
    dp_tb_puts(b, " => ");
    if (p->scopes[s + k].buf.n) { /* bindings: a braced block */
      dp_tb_puts(b, "{\n");
      put_scope(p, b, s + k, kid(p, i, k + 1));
      indent(b, ind + 1);
      dp_tb_putc(b, '}');
    } else {
      dp_tb_free(&p->scopes[s + k].buf);
      put_kid(p, b, i, k + 1);
    }
    dp_tb_puts(b, ",\n");
  }
  indent(b, ind);
  dp_tb_putc(b, '}');
}

/* A let's text: its body's (the let lines are already in the scope), or a
   parenthesised block when it could not continue the enclosing scope. */
static void put_let(printer *p, dp_tb *b, uint32_t i) {
  if (p->nodes[i].flags & F_LETBLOCK) {
    dp_tb_puts(b, "(\n");
    put_scope(p, b, p->nodes[i].inner, kid(p, i, 2));
    indent(b, p->scopes[p->nodes[i].home].indent);
    dp_tb_putc(b, ')');
  } else {
    put_kid(p, b, i, 2);
  }
}

static void put_call(printer *p, dp_tb *b, uint32_t i) {
  const dp_call *c = (const dp_call *)p->nodes[i].e;
  put_kid(p, b, i, 0);
  dp_tb_putc(b, '(');
  for (uint32_t k = 0; k < c->nargs; k++) {
    if (k) dp_tb_puts(b, ", ");
    put_kid(p, b, i, k + 1);
  }
  put_attrs(p, b, c->attrs, c->nargs == 0);
  dp_tb_putc(b, ')');
}

static void put_node(printer *p, dp_tb *b, uint32_t i) {
  const dp_expr *e = p->nodes[i].e;
  switch (e->h.kind) {
  case DP_CALL: put_call(p, b, i); break;
  case DP_FUNC: put_func(p, b, i); break;
  case DP_LET: put_let(p, b, i); return; /* the body carries the type */
  case DP_IF: put_if(p, b, i); break;
  case DP_MATCH: put_match(p, b, i); break;
  case DP_TUPLE: {
    const dp_tuple *t = (const dp_tuple *)e;
    dp_tb_putc(b, '(');
    for (uint32_t k = 0; k < t->n; k++) {
      if (k) dp_tb_puts(b, ", ");
      put_kid(p, b, i, k);
    }
    dp_tb_puts(b, t->n == 1 ? ",)" : ")");
    break;
  }
  case DP_PROJ:
    put_kid(p, b, i, 0);
    dp_tb_printf(b, ".%u", ((const dp_proj *)e)->index);
    break;
  case DP_REF_NEW:
    dp_tb_puts(b, "ref(");
    put_kid(p, b, i, 0);
    dp_tb_putc(b, ')');
    break;
  case DP_REF_READ:
    dp_tb_puts(b, "ref_read(");
    put_kid(p, b, i, 0);
    dp_tb_putc(b, ')');
    break;
  case DP_REF_WRITE:
    dp_tb_puts(b, "ref_write(");
    put_kid(p, b, i, 0);
    dp_tb_puts(b, ", ");
    put_kid(p, b, i, 1);
    dp_tb_putc(b, ')');
    break;
  default: break;
  }
  if (!((p->nodes[i].flags & F_ROOT) && p->def_name)) put_type_comment(p, b, e);
}

/* Node i has all its children printed: make its text, then keep it for
   the one user (inline) or write its graph binding into its home scope. */
static void finish(printer *p, uint32_t i) {
  dp_tb t;
  dp_tb_init(&t);
  put_node(p, &t, i);
  pnode *n = &p->nodes[i];
  n->flags |= F_DONE;
  if (is_inline(n)) {
    n->text = dp_tb_take(&t);
    if (!n->text) p->failed = 1;
    return;
  }
  n->temp = p->next_temp++;
  dp_tb *b = &p->scopes[n->home].buf;
  indent(b, p->scopes[n->home].indent);
  dp_tb_printf(b, "%%%d = ", n->temp);
  if (t.failed) p->failed = 1;
  if (t.n) dp_tb_putn(b, t.s, t.n);
  dp_tb_puts(b, ";\n");
  dp_tb_free(&t);
}

/* Work due before child k of node i is printed: binders get their names
   in binding order, a let writes its line before its body. */
static void before_child(printer *p, uint32_t i, uint32_t k) {
  const dp_expr *e = p->nodes[i].e;
  if (e->h.kind == DP_FUNC && k < ((const dp_func *)e)->nparams) {
    bind_var(p, ((const dp_func *)e)->params[k]);
  } else if (e->h.kind == DP_LET && k == 0) {
    bind_var(p, ((const dp_let *)e)->var);
  } else if (e->h.kind == DP_LET && k == 2) {
    const dp_let *l = (const dp_let *)e;
    dp_tb line;
    dp_tb_init(&line);
    indent(&line, p->scopes[p->nodes[i].inner].indent);
    dp_tb_puts(&line, "let ");
    put_var_decl(p, &line, l->var, 0);
    dp_tb_puts(&line, " = ");
    put_kid(p, &line, i, 1);
    dp_tb_puts(&line, ";\n");
    if (line.failed) p->failed = 1;
    dp_tb *b = &p->scopes[p->nodes[i].inner].buf;
    if (line.n) dp_tb_putn(b, line.s, line.n);
    dp_tb_free(&line);
  } else if (e->h.kind == DP_MATCH && k >= 1) {
    walk_pattern(p, NULL, ((const dp_match *)e)->clauses[k - 1].pat, 1);
  }
}

static int print_nodes(printer *p, uint32_t root) {
  frame *stack = NULL;
  uint32_t n = 0, cap = 0;
  if (!(stack = grow_array(stack, &cap, 1, sizeof *stack))) return -1;
  stack[n++] = (frame){root, 0};
  while (n && !p->failed) {
    frame *f = &stack[n - 1];
    uint32_t i = f->node;
    const dp_expr *e = p->nodes[i].e;
    if (f->k >= dp_expr_nchildren(e)) {
      n--;
      finish(p, i);
      continue;
    }
    uint32_t k = f->k++;
    before_child(p, i, k);
    uint32_t ci = kid(p, i, k);
    if (ci == NONODE || is_atomic(p->nodes[ci].e) || (p->nodes[ci].flags & F_DONE)) continue;
    frame *s = grow_array(stack, &cap, n + 1, sizeof *stack);
    if (!s) {
      p->failed = 1;
      break;
    }
    stack = s;
    stack[n++] = (frame){ci, 0};
  }
  free(stack);
  return p->failed ? -1 : 0;
}

/* ---------------- driver ---------------- */

static void printer_free(printer *p) {
  for (uint32_t i = 0; i < p->n; i++)
    if (p->nodes[i].e->h.kind != DP_VAR) free(p->nodes[i].text);
  for (uint32_t i = 0; i < p->capnames; i++) free(p->names[i].s);
  for (uint32_t i = 0; i < p->nscopes; i++) dp_tb_free(&p->scopes[i].buf);
  for (int i = 0; i < 64; i++) free(p->tcache[i].s);
  free(p->nodes);
  free(p->order);
  free(p->edges);
  free(p->scopes);
  free(p->names);
  dp_pmap_free(&p->map);
}

/* Free variables of a bare expression take their names first, so that a
   bound variable with the same hint is the one renamed. */
static void name_free_vars(printer *p, const dp_expr *root) {
  uint32_t n = 0;
  dp_var **fv = dp_free_vars((dp_expr *)root, &n);
  if (!fv) {
    p->failed = 1;
    return;
  }
  for (uint32_t i = 0; i < n; i++) bind_var(p, fv[i]);
  free(fv);
}

static int run(printer *p, dp_tb *out, const dp_expr *root) {
  if (new_scopes(p, 1, NOSCOPE, 0) == NOSCOPE || discover(p, root) < 0) return -1;
  if (!p->def_name) name_free_vars(p, root);
  place_all(p, 0);
  if (p->failed) return -1;
  if (!is_atomic(root) && print_nodes(p, 0) < 0) return -1;
  scope *s0 = &p->scopes[0];
  if (s0->buf.failed) return -1;
  if (s0->buf.n) dp_tb_putn(out, s0->buf.s, s0->buf.n);
  put_ref_i(p, out, 0);
  return p->failed || out->failed ? -1 : 0;
}

int dp__print_root(dp_tb *out, const dp_expr *root, const char *def_name, int flags) {
  printer p;
  memset(&p, 0, sizeof p);
  p.flags = flags;
  p.def_name = def_name;
  dp_pmap_init(&p.map);
  int rc = run(&p, out, root);
  printer_free(&p);
  return rc;
}
