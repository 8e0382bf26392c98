/*
 * What dp.planner.report counts (lua/devplan/report.lua words it), in one
 * C walk of a planned module: per device the calls and the bytes resident,
 * every device_copy, the totals. Above the phases: each node's device is
 * read from the planned module's own annotations (lexical.c: what capture
 * writes down, which is what planning the module again finds), and where
 * the module does not say them all so, from the domains the pipeline gives
 * back for it (dp_plan_domains), as dp_domains_each tells them.
 *
 * Each value is counted once, where it is made: the parameters of the entry
 * functions (those no other function refers to), the results of operator
 * and constructor calls (but on_device), constants, and the results of
 * copies (on their destination). Sums never wrap: a value whose bytes
 * would carry a sum past INT64_MAX is counted in too_large instead, in the
 * order the values are met (parameters first, then each function's nodes
 * in post order), as the report always did.
 *
 * The copies' names are the printer's: its walk of the module for names
 * drives, and the count's walk goes along a node at a time (each node is
 * then read once while in the cache; two walks one after the other read a
 * large module from memory twice), the copies named from what the printer
 * tells of each node it finishes (below: "the copies' names told by the
 * printer's one walk"), or where that cannot be done, by a walk of their own.
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"
#include "devplan/print.h"
#include "devplan/report.h"
#include "../core/print_internal.h"

typedef struct rctx {
  dp_report_data *r;
  dp_domains *d;
  dp__ptrmap exact;       /* node -> device, when the quick lookup cannot be used */
  int use_exact;
  uint32_t at;            /* scan_by_id: the id of the node post reads, else DP__NONE_ID */
  int primitive;          /* the quick walk met a primitive function: use `exact` */
  const dp_op *on_device, *device_copy;
  const dp_module *m;
  uint32_t fn;            /* the function walked */
  uint8_t *called;        /* per function: another function refers to it */
  int lexical;            /* the devices read from the module (dp_report_scan_lexical) */
  dp_vdev *lexctx;        /* then the device of the node post reads */
  uint32_t entered;
  int oom;
  dp_vdev *last;          /* the device last named, and its index in r->dev */
  uint32_t last_at;
  const dp_type *bytes_of; /* the type whose bytes were counted last (types are
                              interned: a module's values are of a few types) */
  int bytes_kind;
  int64_t bytes;
  const dp_attrs *ends_of[2]; /* the copies' attributes read last, and their ends
                                 (planning shares one object among the copies
                                 between two devices; the module, held, frees none) */
  dp_vdev *ends[2][2];
  uint32_t nextends;
  const dp_expr *posted;  /* the node the lexical walk posted last */
} rctx;

/* The entry of vd, named (added) when new. */
static dp_report_dev *named(rctx *c, dp_vdev *vd) {
  dp_report_data *r = c->r;
  if (vd == c->last && c->last_at < r->ndev && r->dev[c->last_at].vd == vd) return &r->dev[c->last_at];
  for (uint32_t i = r->ndev; i-- > 0;)
    if (r->dev[i].vd == vd) {
      c->last = vd;
      c->last_at = i;
      return &r->dev[i];
    }
  if (dp_grow((void **)&r->dev, &r->capdev, r->ndev + 1, sizeof *r->dev) < 0) {
    c->oom = 1;
    return NULL;
  }
  dp_report_dev *d = &r->dev[r->ndev++];
  memset(d, 0, sizeof *d);
  d->vd = vd;
  d->entered = UINT32_MAX;
  return d;
}

/* The entry of vd as the report lists it (in order of first use). */
static dp_report_dev *entry(rctx *c, dp_vdev *vd) {
  dp_report_dev *d = named(c, vd);
  if (d && d->entered == UINT32_MAX) d->entered = c->entered++;
  return d;
}

/* dp_type_bytes of e's type (DP_BYTES_UNKNOWN without one), the last
   type's answer kept. */
static int type_bytes(rctx *c, const dp_expr *e, int64_t *b) {
  if (!e->type) return DP_BYTES_UNKNOWN;
  if (e->type != c->bytes_of) {
    c->bytes = 0;
    c->bytes_kind = dp_type_bytes(e->type, &c->bytes);
    if (c->bytes_kind < 0) return c->bytes_kind; /* (not kept) */
    c->bytes_of = e->type;
  }
  *b = c->bytes;
  return c->bytes_kind;
}

/* sum + b unless it passes INT64_MAX: 1 added, 0 left out. */
static int add(int64_t *sum, int64_t b) {
  if (*sum > INT64_MAX - b) return 0;
  *sum += b;
  return 1;
}

static void resident(rctx *c, dp_expr *e, dp_vdev *vd) {
  if (!vd || dp_vdev_is_fully_unconstrained(vd)) return;
  dp_report_dev *d = entry(c, vd);
  if (!d) return;
  int64_t b = 0;
  int r = type_bytes(c, e, &b);
  if (r < 0) {
    c->oom = 1;
    return;
  }
  if (r == DP_BYTES_UNKNOWN) {
    d->unknown++;
    return;
  }
  if (r != DP_BYTES_KNOWN || !add(&d->bytes, b)) d->too_large++;
  if (r != DP_BYTES_KNOWN || !add(&c->r->bytes_resident, b)) c->r->too_large++;
}

/* The device dp_domains_each gives e, or NULL (borrowed: the domains hold it). */
static dp_vdev *device_id(rctx *c, uint32_t id);

static dp_vdev *device(rctx *c, dp_expr *e) {
  if (c->lexical) return c->lexctx;
  if (c->at != DP__NONE_ID) return device_id(c, c->at);
  if (c->use_exact) {
    dp__ptrslot *s = dp__ptrmap_find(&c->exact, e);
    return s ? s->ptr : NULL;
  }
  if (!dp_domains_has(c->d, e)) return NULL;
  dp_vdev *vd = dp_domains_lookup(c->d, e, NULL);
  dp_release(vd); /* interned, held by the domains */
  return vd;
}

static int remember(void *ud, const char *global, dp_expr *e, dp_vdev *vd) {
  rctx *c = ud;
  (void)global;
  return dp__ptrmap_put(&c->exact, e, vd) < 0 ? -1 : 0;
}

/* A device_copy's written ends (its attributes' src_virtual_device and
   dst_virtual_device when devices, else NULL), read in one pass. */
static void copy_ends(rctx *c, const dp_call *call, dp_vdev **src, dp_vdev **dst) {
  for (uint32_t i = 0; i < 2; i++)
    if (call->attrs && c->ends_of[i] == call->attrs) {
      *src = c->ends[i][0];
      *dst = c->ends[i][1];
      return;
    }
  int have_src = 0, have_dst = 0;
  for (uint32_t i = 0; call->attrs && i < call->attrs->n && !(have_src && have_dst); i++) {
    const dp_attr *a = &call->attrs->items[i];
    int is_src = !have_src && !strcmp(a->key, "src_virtual_device");
    int is_dst = !is_src && !have_dst && !strcmp(a->key, "dst_virtual_device");
    if (!is_src && !is_dst) continue;
    dp_vdev *v = a->val.kind == DP_AV_VDEV ? a->val.u.vdev : NULL;
    if (is_src) have_src = 1, *src = v;
    else have_dst = 1, *dst = v;
  }
  uint32_t k = c->nextends++ % 2;
  c->ends_of[k] = call->attrs;
  c->ends[k][0] = *src;
  c->ends[k][1] = *dst;
}

/* The quick lookup reads the domains as dp_domains_each's walk would,
   which does not enter primitive functions: met one, the walk stops and
   the exact table is made instead. */
static int pre(void *ud, dp_expr *e) {
  rctx *c = ud;
  if (!c->use_exact && e->h.kind == DP_FUNC && dp__is_primitive((dp_func *)e)) {
    c->primitive = 1;
    return -1;
  }
  return 1;
}

static int post(void *ud, dp_expr *e) {
  rctx *c = ud;
  dp_report_data *r = c->r;
  if (e->h.kind == DP_CONST) {
    resident(c, e, device(c, e));
  } else if (e->h.kind == DP_CALL) {
    dp_call *call = (dp_call *)e;
    dp_expr *fn = call->fn;
    if (fn == &c->device_copy->e) {
      dp_vdev *src = NULL, *dst = NULL;
      copy_ends(c, call, &src, &dst);
      if (dp_grow8((void **)&r->copies, &r->capcopies, r->ncopies + 1, sizeof *r->copies) < 0) {
        c->oom = 1;
        return -1;
      }
      dp_expr *value = call->nargs ? call->args[0] : e;
      while (value->h.kind == DP_CALL && ((dp_call *)value)->fn == &c->on_device->e && ((dp_call *)value)->nargs)
        value = ((dp_call *)value)->args[0];
      dp_report_copy *rc = &r->copies[r->ncopies++];
      *rc = (dp_report_copy){e, value, src, dst, UINT32_MAX, UINT32_MAX, NULL, NULL, NULL, NULL, dp_retain(e->type), e->span};
      dp_report_dev *sd = src ? named(c, src) : NULL;
      if (sd) rc->src_dev = (uint32_t)(sd - r->dev);
      dp_report_dev *dd = dst ? named(c, dst) : NULL;
      if (dd) rc->dst_dev = (uint32_t)(dd - r->dev);
      if (src) entry(c, src);
      resident(c, e, dst);
      r->copies_total++;
      int64_t b = 0;
      int k = type_bytes(c, e, &b);
      if (k < 0) c->oom = 1;
      else if (k != DP_BYTES_UNKNOWN && (k != DP_BYTES_KNOWN || !add(&r->bytes_copied, b))) r->copies_too_large++;
    } else if ((fn->h.kind == DP_OP || fn->h.kind == DP_CTOR) && fn != &c->on_device->e) {
      dp_vdev *vd = device(c, e);
      if (vd && !dp_vdev_is_fully_unconstrained(vd)) {
        dp_report_dev *d = entry(c, vd);
        if (d) d->calls++;
        r->calls++;
      }
      resident(c, e, vd);
    }
  }
  return c->oom ? -1 : 0;
}

/* Which functions another function refers to. */
static int find_called(void *ud, dp_expr *e) {
  rctx *c = ud;
  if (e->h.kind == DP_GLOBAL) {
    int i = dp_module_func_index(c->m, ((dp_global *)e)->name);
    if (i >= 0 && (uint32_t)i != c->fn) c->called[i] = 1;
  }
  return 0;
}

/* ---- the copies' names, as the printer gives them ---- */

/* A node whose name the report wants: the offset of its function's name in
   buf << 32 | 1 + the offset of its own name; 0 while not named. Found by
   the node's mark (dp_expr.mark: the index here, checked against e, as
   index.c does) instead of a pointer map: the printer names every node,
   and a lookup of each was a fifth of the naming. */
typedef struct nwant {
  const dp_expr *e;
  uint64_t word;
} nwant;

typedef struct nctx {
  dp_report_data *r;
  nwant *want;            /* the copies and their values */
  uint32_t nwant, capwant;
  char *buf;              /* the names kept, one after another (one block: a
                             report names up to a copy and its value per call) */
  uint32_t nbuf, capbuf;
  const char *fn;         /* the function last named in, kept at buf + fnat */
  uint32_t fnat;
  int oom;
} nctx;

/* Keeps s in buf: its offset, or UINT32_MAX (out of memory, or past 4 GB of names). */
static uint32_t keep(nctx *n, const char *s) {
  size_t len = strlen(s) + 1;
  if (len >= UINT32_MAX - 1 - n->nbuf || dp_grow8((void **)&n->buf, &n->capbuf, n->nbuf + (uint32_t)len, 1) < 0) {
    n->oom = 1;
    return UINT32_MAX;
  }
  uint32_t at = n->nbuf;
  memcpy(n->buf + at, s, len);
  n->nbuf += (uint32_t)len;
  return at;
}

/* e's entry in want, or NULL. */
static nwant *wanted(const nctx *n, const dp_expr *e) {
  uint32_t m = e->mark;
  return m < n->nwant && n->want[m].e == e ? &n->want[m] : NULL;
}

/* e wanted (once). */
static void want(nctx *n, dp_expr *e) {
  if (wanted(n, e)) return;
  if (dp_grow((void **)&n->want, &n->capwant, n->nwant + 1, sizeof *n->want) < 0) {
    n->oom = 1;
    return;
  }
  e->mark = n->nwant;
  n->want[n->nwant++] = (nwant){e, 0};
}

static void on_name(void *ud, const char *fn, const dp_expr *e, const char *name) {
  nctx *n = ud;
  nwant *w = n->oom ? NULL : wanted(n, e);
  if (!w || w->word) return; /* the first name a node is given */
  if (fn != n->fn) { /* (kept once per function: a definition is named with one string) */
    uint32_t at = keep(n, fn);
    if (at == UINT32_MAX) return;
    n->fn = fn;
    n->fnat = at;
  }
  uint32_t at = keep(n, name);
  if (at != UINT32_MAX) w->word = (uint64_t)n->fnat << 32 | (at + 1);
}

static int lex_post(void *ud, dp_expr *e, dp_vdev *dev);

/* The lexical walk (dp_report_scan_lexical) a step at a time, alongside
   the printer's walk of the same def. */
typedef struct lexrun {
  dp__lexical *lx;
  rctx *c;
  const dp_module *m;
  uint32_t next;          /* the function whose walk begins next */
  int going;              /* 2: a walk under way */
  int rc;                 /* 0, 1 (the module does not say its devices so), -1 */
} lexrun;

static void lex_step(lexrun *x) {
  x->going = dp__lexical_step(x->lx, lex_post, x->c);
  if (x->going == 1 || x->going < 0) x->rc = x->going;
}

/* The walks of the functions before j done, j's begun (or done). */
static void lex_at(lexrun *x, uint32_t j) {
  while (x->rc == 0 && x->next <= j && x->next < x->m->nfuncs) {
    while (x->rc == 0 && x->going == 2) lex_step(x);
    if (x->rc) return;
    x->c->fn = x->next;
    x->going = dp__lexical_begin(x->lx, x->m->funcs[x->next++].fn);
    if (x->going == 1 || x->going < 0) x->rc = x->going;
  }
}

/* ---- the copies' names told by the printer's one walk (dp__print_module_names_fin) ----

   The printer's walk of a flat body finishes the non-atomic nodes in the
   order the counting walk posted them, so the copies come in the order of
   r->copies: each is checked against the next (by address: the node is not
   read again) and named from the words the walk gives it and its
   children. A copy's value (its argument under the on_device calls) is the
   argument's word, or for an on_device the value it was found to hold when
   it finished, kept in a small table (a copy reads the on_device made just
   before it). Anything else (a value that is a variable: its name is the
   printer's alone; a body the one walk does not print; an on_device no
   longer in the table; a node of two functions, where the report keeps the
   name told first) gives up, and the names
   are found as before (name_copies_by_mark). */

#define FIN_SLOTS 64

typedef struct fctx {
  dp_report_data *r;
  const dp_op *on_device, *device_copy;
  uint32_t next;          /* the copy expected next */
  int failed;
  struct { const dp_expr *e; uint64_t value; } od[FIN_SLOTS]; /* on_device -> its value's word */
  nctx n;                 /* the names kept (one block) */
  const char *fn;         /* the def last kept, at n.buf + fnat */
  uint32_t fnat;
  uint64_t *words;        /* per copy: its word and its value's (0: none) */
  uint32_t *fnat_of;      /* per copy: its def's name in n.buf */
  uint32_t capwords, capfnat;
  lexrun *run;            /* the lexical walk alongside (NULL: done before) */
  uint32_t def;           /* the function the printer walks */
  uint32_t gen;           /* its count: the words of slots are the def's */
  struct fslot { uint64_t word; uint32_t gen; } *slots; /* by dp__lexical_met's number */
  uint32_t capslots;
} fctx;

/* The printer walks def fn: the lexical walk of the same function under
   way. 0 when fn is no function of the module (or the walk gave up). */
static int at_def(fctx *f, const char *fn) {
  const dp_module *m = f->run->m;
  if (f->gen && f->def < m->nfuncs && m->funcs[f->def].global->name == fn) return f->run->rc == 0;
  if (f->gen) f->def++;
  while (f->def < m->nfuncs && m->funcs[f->def].global->name != fn) f->def++;
  if (f->def >= m->nfuncs) return 0;
  f->gen++;
  lex_at(f->run, f->def);
  return f->run->rc == 0;
}

static uint64_t *on_slot(void *ud, const char *fn, const dp_expr *e, int *fresh) {
  fctx *f = ud;
  lexrun *x = f->run;
  if (f->failed || !at_def(f, fn)) {
    f->failed = 1;
    return NULL;
  }
  uint32_t k;
  while ((k = dp__lexical_met(x->lx, e)) == UINT32_MAX && x->rc == 0 && x->going == 2) lex_step(x);
  uint32_t had = f->capslots;
  if (k == UINT32_MAX || (k >= f->capslots && dp_grow8((void **)&f->slots, &f->capslots, k + 1, sizeof *f->slots) < 0)) {
    f->failed = 1;
    return NULL;
  }
  if (f->capslots > had) memset(f->slots + had, 0, (size_t)(f->capslots - had) * sizeof *f->slots); /* (gen 0: never asked) */
  struct fslot *sl = &f->slots[k];
  *fresh = sl->gen != f->gen;
  if (*fresh) *sl = (struct fslot){0, f->gen};
  return &sl->word;
}

static uint32_t od_slot(const dp_expr *e) { return (uint32_t)((uintptr_t)e >> 4) % FIN_SLOTS; }

/* The word of the value under argument a of a node finished with the
   words kids (a's is kids[0] when a is not atomic). 0: none (a constant,
   a global); sets failed when not known here. */
static uint64_t value_word(fctx *f, const dp_expr *a, const uint64_t *kids, uint32_t nkids) {
  if (a->h.kind == DP_VAR) { /* (named by the printer's rules for variables) */
    f->failed = 1;
    return 0;
  }
  if (a->h.kind == DP_GLOBAL || a->h.kind == DP_CONST || a->h.kind == DP_OP || a->h.kind == DP_CTOR) return 0;
  if (a->h.kind == DP_CALL && ((const dp_call *)a)->fn == &f->on_device->e && ((const dp_call *)a)->nargs) {
    uint32_t k = od_slot(a);
    if (f->od[k].e == a) return f->od[k].value;
    f->failed = 1;
    return 0;
  }
  if (!nkids) f->failed = 1;
  return nkids ? kids[0] : 0;
}

static void on_fin(void *ud, const char *fn, const dp_expr *e, uint64_t tref, const uint64_t *kids, uint32_t nkids) {
  fctx *f = ud;
  if (f->failed) return;
  if (!e) { /* (a body the one walk does not print) */
    f->failed = 1;
    return;
  }
  if (f->run) { /* the lexical walk posts e first */
    if (!at_def(f, fn)) {
      f->failed = 1;
      return;
    }
    while (f->run->rc == 0 && f->run->going == 2 && f->run->c->posted != e) lex_step(f->run);
    if (f->run->rc) {
      f->failed = 1;
      return;
    }
  }
  if (e->h.kind != DP_CALL) return;
  const dp_call *call = (const dp_call *)e;
  if (call->fn == &f->on_device->e && call->nargs) {
    uint64_t v = value_word(f, call->args[0], kids, nkids);
    uint32_t k = od_slot(e);
    f->od[k].e = e;
    f->od[k].value = v;
  } else if (call->fn == &f->device_copy->e) {
    dp_report_data *r = f->r;
    if (f->next >= r->ncopies || r->copies[f->next].copy != e ||
        dp_grow8((void **)&f->words, &f->capwords, 2 * (f->next + 1), sizeof *f->words) < 0 ||
        dp_grow8((void **)&f->fnat_of, &f->capfnat, f->next + 1, sizeof *f->fnat_of) < 0) {
      f->failed = 1;
      return;
    }
    uint64_t v = call->nargs ? value_word(f, call->args[0], kids, nkids) : tref;
    f->words[2 * f->next] = tref;
    f->words[2 * f->next + 1] = v;
    if (tref || v) { /* (its def's name, kept once per def) */
      if (fn != f->fn) {
        uint32_t at = keep(&f->n, fn);
        if (at == UINT32_MAX) f->failed = 1;
        f->fn = fn;
        f->fnat = at;
      }
      f->fnat_of[f->next] = f->fnat;
    }
    f->next++;
  }
}

static void fin_init(fctx *f, dp_module *m, dp_report_data *r) {
  memset(f, 0, sizeof *f);
  f->r = r;
  f->on_device = dp_op_get(m->ctx, "on_device");
  f->device_copy = dp_op_get(m->ctx, "device_copy");
  if (!f->on_device || !f->device_copy) f->failed = 1;
}

/* The names the walk told, made the copies': 1 named, 0 not (name them
   as before), -1 out of memory. Frees what f holds. */
static int fin_done(fctx *f) {
  dp_report_data *r = f->r;
  int named = 0;
  if (!f->failed && !f->n.oom && f->next == r->ncopies && r->ncopies) {
    /* the names: "%12" kept after the defs' names, in the same block */
    uint32_t *at = dp_malloc((size_t)r->ncopies * 2 * sizeof *at);
    if (!at) f->n.oom = 1;
    for (uint32_t i = 0; i < 2 * r->ncopies && !f->n.oom; i++) {
      char t[16];
      at[i] = UINT32_MAX;
      if (!f->words[i]) continue;
      dp__print_tref_text(f->words[i], t);
      at[i] = keep(&f->n, t);
    }
    if (!f->n.oom && f->n.buf && dp_grow((void **)&r->strings, &r->capstrings, r->nstrings + 1, sizeof *r->strings) < 0)
      f->n.oom = 1;
    if (!f->n.oom) {
      if (f->n.buf) r->strings[r->nstrings++] = f->n.buf;
      f->n.buf = NULL;
      for (uint32_t i = 0; i < r->ncopies; i++) {
        dp_report_copy *c = &r->copies[i];
        if (at[2 * i] != UINT32_MAX) c->fn = r->strings[r->nstrings - 1] + f->fnat_of[i], c->name = r->strings[r->nstrings - 1] + at[2 * i];
        if (at[2 * i + 1] != UINT32_MAX)
          c->value_fn = r->strings[r->nstrings - 1] + f->fnat_of[i], c->value_name = r->strings[r->nstrings - 1] + at[2 * i + 1];
      }
      named = 1;
    }
    free(at);
  }
  free(f->n.buf);
  free(f->words);
  free(f->fnat_of);
  free(f->slots);
  return f->n.oom ? -1 : named;
}

/* The names by the printer's one walk after the count: 1 named, 0 not,
   -1 out of memory. */
static int name_copies_fin(dp_module *m, dp_report_data *r) {
  fctx f;
  fin_init(&f, m, r);
  if (f.failed || m->nfuncs != 1) return 0; /* (a node of two defs: the name told first is the report's) */
  dp__print_fin hook = {on_fin, NULL, &f};
  if (dp__print_module_names_fin(m, &hook) < 0) f.n.oom = 1;
  return fin_done(&f);
}

/* The names of the copies and their values, as the printer gives them. */
static int name_copies_by_mark(dp_module *m, dp_report_data *r);

static int name_copies(dp_module *m, dp_report_data *r) {
  int rc = name_copies_fin(m, r);
  return rc != 0 ? (rc < 0 ? -1 : 0) : name_copies_by_mark(m, r);
}

static int name_copies_by_mark(dp_module *m, dp_report_data *r) {
  nctx n = {r, NULL, 0, 0, NULL, 0, 0, NULL, 0, 0};
  /* at most a copy and its value each: allocated once */
  if (r->ncopies && r->ncopies <= UINT32_MAX / 2 && dp_grow((void **)&n.want, &n.capwant, 2 * r->ncopies, sizeof *n.want) < 0) n.oom = 1;
  for (uint32_t i = 0; i < r->ncopies && !n.oom; i++) {
    want(&n, r->copies[i].copy);
    want(&n, r->copies[i].value);
  }
  dp_print_opts o = {0, on_name, &n, NULL, NULL};
  if (!n.oom && dp_print_module_names(m, &o) < 0) n.oom = 1;
  /* the block of names becomes the report's (its one string) */
  if (!n.oom && n.buf && dp_grow((void **)&r->strings, &r->capstrings, r->nstrings + 1, sizeof *r->strings) < 0) n.oom = 1;
  if (!n.oom && n.buf) r->strings[r->nstrings++] = n.buf;
  else free(n.buf);
  for (uint32_t i = 0; i < r->ncopies && !n.oom; i++) {
    dp_report_copy *c = &r->copies[i];
    const nwant *a = wanted(&n, c->copy), *b = wanted(&n, c->value);
    if (a && a->word) c->fn = n.buf + (a->word >> 32), c->name = n.buf + (uint32_t)a->word - 1;
    if (b && b->word) c->value_fn = n.buf + (b->word >> 32), c->value_name = n.buf + (uint32_t)b->word - 1;
  }
  free(n.want);
  return n.oom ? -1 : 0;
}

void dp_report_data_clear(dp_report_data *r) {
  if (!r) return;
  for (uint32_t i = 0; i < r->nstrings; i++) free(r->strings[i]);
  free(r->strings);
  free(r->dev);
  for (uint32_t i = 0; i < r->ncopies; i++) dp_release((dp_type *)r->copies[i].type);
  free(r->copies);
  memset(r, 0, sizeof *r);
}

/* The device of node id of the domains' index (as dp_domains_lookup of
   its expression: a node numbered in two functions has one domain). */
static dp_vdev *device_id(rctx *c, uint32_t id) {
  dp__domains *d = &c->d->uf;
  return d->dev->v[dp__dom_dev(d, dp__dom_at(d, id))];
}

/* c->called: the functions some function calls (the others are entry
   functions), known before any node is counted. */
static int mark_called(rctx *c) {
  const dp_module *m = c->m;
  memset(c->called, 0, m->nfuncs ? m->nfuncs : 1);
  if (m->nfuncs > 1) {
    dp_visitor g = {NULL, find_called, c};
    for (c->fn = 0; c->fn < m->nfuncs; c->fn++)
      if (dp_visit(m->funcs[c->fn].fn->body, &g) < 0) return -1;
  }
  return 0;
}

/* scan, where the domains are the planned module's own nodes and it has no
   primitive function: by the index's numbering (each function's nodes in
   post order, as dp_visit meets them), without a lookup by address. */
static int scan_by_id(rctx *c) {
  const dp_module *m = c->m;
  dp__index *ix = c->d->uf.ix;
  if (mark_called(c) < 0) return -1;
  for (uint32_t i = 0; i < m->nfuncs && !c->oom; i++) {
    if (c->called[i]) continue;
    const dp_func *f = m->funcs[i].fn;
    uint32_t fid = ix->fnid[i];
    for (uint32_t p = 0; p < f->nparams; p++) {
      uint32_t k = dp__kid(ix, fid, p);
      resident(c, &f->params[p]->e, k == DP__NONE_ID ? NULL : device_id(c, k));
    }
  }
  for (c->fn = 0; c->fn < m->nfuncs && !c->oom; c->fn++) {
    dp__post it;
    dp__post_start(&it, ix, c->fn, c->fn + 1);
    for (uint32_t id; !c->oom && (id = dp__post_next(&it)) != DP__NONE_ID;) {
      c->at = id;
      if (post(c, ix->x[id]) < 0) return -1;
    }
  }
  return c->oom ? -1 : 0;
}

/* Can scan_by_id read the domains? Their module is the planned one (no
   phase rewrote it), numbered function by function, with no primitive
   function (dp_visit would not descend there as the index does not). */
static int by_id(rctx *c) {
  dp__index *ix = c->d->uf.ix;
  if (c->use_exact || ix->mod != c->m || ix->nfn != c->m->nfuncs) return 0;
  for (uint32_t id = 0; id < ix->n; id++)
    if (ix->what[id] == W_PRIM_FUNC) return 0;
  return 1;
}

static int scan(rctx *c) {
  const dp_module *m = c->m;
  dp_visitor v = {pre, post, c};
  if (mark_called(c) < 0) return -1;
  for (uint32_t i = 0; i < m->nfuncs && !c->oom; i++) {
    if (c->called[i]) continue;
    const dp_func *f = m->funcs[i].fn;
    for (uint32_t p = 0; p < f->nparams; p++) resident(c, &f->params[p]->e, device(c, &f->params[p]->e));
  }
  for (c->fn = 0; c->fn < m->nfuncs && !c->oom; c->fn++)
    if (dp_visit(&m->funcs[c->fn].fn->e, &v) < 0) return -1;
  return c->oom ? -1 : 0;
}

/* ---- the devices read from the module itself (lexical.c) ---- */

static int lex_post(void *ud, dp_expr *e, dp_vdev *dev) {
  rctx *c = ud;
  c->lexctx = dev;
  c->posted = e;
  return post(c, e);
}

int dp_report_scan_lexical(dp_module *planned, const dp_config *cfg, dp_report_data *out, dp_err **err) {
  memset(out, 0, sizeof *out);
  rctx c;
  memset(&c, 0, sizeof c);
  c.r = out;
  c.m = planned;
  c.lexical = 1;
  c.at = DP__NONE_ID;
  c.on_device = dp_op_get(planned->ctx, "on_device");
  c.device_copy = dp_op_get(planned->ctx, "device_copy");
  c.called = dp_malloc(planned->nfuncs ? planned->nfuncs : 1);
  dp__lexical *lx = cfg ? dp__lexical_new(planned, cfg) : NULL;
  int rc = lx && c.called && c.on_device && c.device_copy ? mark_called(&c) : -1;
  for (uint32_t i = 0; i < planned->nfuncs && rc == 0; i++) { /* the entry functions' parameters */
    if (c.called[i]) continue;
    const dp_func *f = planned->funcs[i].fn;
    for (uint32_t p = 0; p < f->nparams && rc == 0; p++) {
      dp_var *v = f->params[p];
      int s = dp__lexical_settled(lx, dp_var_vdev(v));
      if (s <= 0) rc = s < 0 ? -1 : 1;
      else resident(&c, &v->e, dp_var_vdev(v));
    }
  }
  /* The copies' names come from the printer's walk, which the count's
     walk goes along with a node at a time, so that each node is read once
     while it is in the cache (two walks one after the other read a large
     module from memory twice). A module without copies needs no names:
     when no call of the context refers to device_copy (its references are
     the registry's alone), the count walks alone. */
  if (rc == 0 && planned->nfuncs && c.device_copy->e.h.rc > 1) {
    lexrun x = {lx, &c, planned, 0, 0, 0};
    fctx f;
    fin_init(&f, planned, out);
    f.run = &x;
    dp__print_fin hook = {on_fin, on_slot, &f};
    if (dp__print_module_names_fin(planned, &hook) < 0) f.n.oom = 1;
    lex_at(&x, planned->nfuncs - 1); /* (what the printer's walk left) */
    while (x.rc == 0 && x.going == 2) lex_step(&x);
    rc = x.rc;
    if (dp__lexical_crossed(lx)) f.failed = 1; /* (a node of two defs: the name told first is the report's) */
    int named = fin_done(&f);
    if (c.oom || named < 0) rc = -1;
    if (rc == 0 && out->ncopies && !named) rc = name_copies_by_mark(planned, out);
  } else {
    for (c.fn = 0; c.fn < planned->nfuncs && rc == 0 && !c.oom; c.fn++)
      rc = dp__lexical_walk(lx, planned->funcs[c.fn].fn, lex_post, &c);
    if (c.oom) rc = -1;
    if (rc == 0 && out->ncopies) rc = name_copies(planned, out);
  }
  free(c.called);
  dp__lexical_free(lx);
  if (rc != 0) dp_report_data_clear(out);
  if (rc < 0 && err && !*err) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
  return rc;
}

int dp_report_scan(dp_module *planned, dp_domains *d, dp_report_data *out, dp_err **err) {
  memset(out, 0, sizeof *out);
  rctx c;
  memset(&c, 0, sizeof c);
  c.r = out;
  c.d = d;
  c.m = planned;
  c.on_device = dp_op_get(planned->ctx, "on_device");
  c.device_copy = dp_op_get(planned->ctx, "device_copy");
  c.called = dp_malloc(planned->nfuncs ? planned->nfuncs : 1);
  /* the quick lookup: the domains are the planned module's own nodes */
  const dp_module *dm = dp_domains_module(d);
  int same = dm->nfuncs == planned->nfuncs;
  for (uint32_t i = 0; same && i < dm->nfuncs; i++) same = dm->funcs[i].fn == planned->funcs[i].fn;
  c.use_exact = !same;
  int rc = c.called && c.on_device && c.device_copy ? 0 : -1;
  /* the domains find nodes by their address: the index's map of every node
     is made now, so that running out of memory there is an error rather
     than nodes without a device */
  dp__index *ix = d->uf.ix;
  c.at = DP__NONE_ID;
  if (rc == 0 && by_id(&c)) {
    rc = scan_by_id(&c);
    c.at = DP__NONE_ID;
  } else {
    if (rc == 0 && planned->nfuncs && dp__index_id(ix, &planned->funcs[0].fn->e) == DP__NONE_ID && !ix->full)
      rc = -1;
    if (rc == 0 && c.use_exact) rc = dp_domains_each(d, remember, &c, err);
    if (rc == 0) rc = 1; /* (the walk below) */
  }
  if (rc == 1) {
    rc = scan(&c);
    if (rc < 0 && c.primitive && !c.oom) { /* again, exactly */
      dp_report_data_clear(out);
      c.use_exact = 1;
      c.entered = 0;
      rc = dp_domains_each(d, remember, &c, err);
      if (rc == 0) rc = scan(&c);
    }
  }
  if (rc == 0 && out->ncopies) rc = name_copies(planned, out);
  free(c.called);
  dp__ptrmap_free(&c.exact);
  if (rc < 0) {
    dp_report_data_clear(out);
    if (err && !*err) dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  return 0;
}
