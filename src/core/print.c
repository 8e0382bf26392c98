/*
 * The expression printer: Relay text as TVM printed it (relay-text.md).
 *
 * A node that is not atomic (variable, global, constant, operator,
 * constructor) gets a graph binding `%n = ...;` unless it is used once and
 * stands where TVM's printer inlined (a scope's result, a let's value). So
 * a DAG prints each shared node once, numbered in order of first need.
 *
 * Most bodies are one scope (a DAG of calls, tuples and projections under a
 * let chain): those print in one post-order walk, flat_print below, which
 * gives up (before the caller keeps any of its text) on anything else.
 * The names alone (dp_print_module_names, the report's) take the same walk,
 * the names it gives kept and told once it finished (it may give up).
 * Everything else, and every print of the text that reports names
 * (on_name), takes three passes, all with explicit stacks (a
 * 1,000,000-deep chain is fine):
 *  1. discover: every distinct node once, its number of uses, post order
 *     (atomic nodes are no nodes of the printer: they print from the IR;
 *     variables find their names in the map);
 *  2. homes: parents before children, each node's scope (function body, if
 *     branch, match clause, parenthesised let block) is the innermost one
 *     that contains all its uses, so a node shared by two branches is bound
 *     before the `if` and the text re-parses with the same sharing;
 *  3. print: post order again; bindings go to the buffer of their home
 *     scope, a let writes its `let %x = v;` line before its body is printed.
 *
 * Speed (a million-node chain prints in a fraction of a second, bench/ir.sh):
 * no malloc per node, and time linear in the text whatever the nesting.
 * The lines of the outermost scope and of a root function's body are
 * written straight into the output, where they stay. Every other text (an
 * inline node's, the lines of an inner scope) is a rope: a linked list of
 * pieces of one arena of bytes. A text enters its one user by splicing its
 * list, never by copying its bytes, so a text nested n scopes deep is
 * copied once (into the output), not n times. An inline node's text waits
 * for its user on a stack of ropes: children finish in order, so a node's
 * inline children lie side by side on top of the stack when it finishes,
 * and its own rope replaces them. Indentation stops growing at MAX_INDENT
 * levels, so the text of a program nested 100,000 deep stays linear in its
 * size. Variable names live in one character array; integers are formatted
 * by hand; a node's kind is kept with it so that pass 2 does not touch the IR.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "print_internal.h"
#include "textbuf.h"
#include "devplan/visit.h"

#define NOSCOPE UINT32_MAX
#define NOSEG UINT32_MAX
/* Indentation (two spaces a level) stops growing at this level: deeper
   scopes print at its column, so the text's size stays linear in the
   program's. (No program a person reads nests 64 scopes deep.) */
#define MAX_INDENT 64
#define NONODE UINT32_MAX
#define ATOM (UINT32_MAX - 1) /* edge to an atomic child */
#define ATOM_VAR (UINT32_MAX - 2) /* edge to a variable */

enum {
  F_TRY = 1,      /* used where TVM inlines a unique expression */
  F_TAIL = 2,     /* used as the result of a scope */
  F_DONE = 4,     /* printed */
  F_LETBLOCK = 8, /* a let that opens its own parenthesised scope */
  F_ROOT = 16,
  F_BOUND = 32,   /* printed as a graph binding: aux is its number */
  USE1 = 64,      /* uses, counted up to 2 in two bits */
  USES = 3 * USE1,
  KIND = 8,       /* the node's kind is in the 8 bits from here: the passes
                     that need no more than it spare a cache miss on the IR */
  F_ELSEIF = 1 << 16 /* an if that is the else branch of an if, used there
                        only: printed `} else if (...) {` by the if that
                        heads the chain (its scopes are that if's home's) */
};

#define KIND_OF(n) (((n)->flags >> KIND) & 0xff)

typedef struct pnode {
  const dp_expr *e;
  uint32_t home;   /* its scope (NOSCOPE until known) */
  uint32_t inner;  /* first scope it opens */
  uint32_t edge;   /* its children's node indices start at edges[edge] */
  uint32_t nc;     /* its number of children */
  uint32_t aux;    /* F_BOUND: binding number; else the length of its text */
  uint32_t flags;  /* F_... and the uses */
} pnode;

/* A piece of a rope: bytes [off, off + len) of the arena, then piece next. */
typedef struct seg {
  size_t off, len;
  uint32_t next;
} seg;

/* A text not yet in the output: its first and last pieces (NOSEG: empty). */
typedef struct rope {
  uint32_t head, tail;
} rope;

static const rope EMPTY_ROPE = {NOSEG, NOSEG};

typedef struct scope {
  uint32_t parent, level, indent;
  uint32_t jump; /* an ancestor (see lca) */
  int direct;  /* its lines go straight to the output (see run) */
  rope lines;  /* else they gather here */
} scope;

typedef struct nslot {
  uint32_t off;  /* 1 + offset in the names array; 0: empty */
  uint32_t hash, next;
} nslot;

typedef struct frame {
  uint32_t node, k;
} frame;

/* A recently named variable: its name (1 + offset in the names array) and
   length. Not every named variable is in the map (see name_of). */
enum { VC_INMAP = 1, VC_SINGLE = 2, VC_USED = 4 };
typedef struct vslot {
  const dp_var *v;
  uint32_t off, len, flags;
} vslot;

typedef struct pframe {
  uint32_t node, k;
  uint32_t mark; /* the stack of texts when the node was entered */
} pframe;

typedef struct printer {
  int flags;
  const char *def_name;
  const dp_print_opts *opts; /* for on_name; never NULL */
  dp__devnames *devnames;    /* DP_PRINT_SHORT_DEVICES */
  dp__metaw *meta;           /* DP_PRINT_META */
  int failed;
  dp__ptrmap map; /* node -> index, of nodes held more than once; variable
                 -> 1 + offset of its name in the names array */
  pnode *nodes;
  uint32_t n, cap;
  uint32_t *order;
  uint32_t norder, caporder;
  uint32_t *edges; /* child node indices, so later passes need no lookups */
  uint32_t nedges, capedges;
  scope *scopes;
  uint32_t nscopes, capscopes;
  dp__tb *out;  /* the output */
  dp__tb arena; /* the bytes of the ropes */
  seg *segs;    /* their pieces */
  uint32_t nsegs, capsegs;
  rope *open;     /* the rope written to when writing to the arena */
  size_t open_at; /* where its bytes not yet in a piece start */
  rope *texts;  /* texts of inline nodes waiting for their user */
  uint32_t ntexts, captexts;
  uint32_t cur; /* the next inline child's text in texts */
  char *nm;    /* the printed variable names, NUL-terminated, one after another */
  size_t nmlen, nmcap;
  nslot *names; /* the names in use (open addressing) */
  uint32_t nnames, capnames;
  int names_exact; /* generated names (`x1`) are in `names` too: see alloc_name */
  const dp_var **frees; /* free variables met at a use in a def (declared at the end) */
  uint32_t nfrees, capfrees;
  size_t body_start;    /* where a def's body starts in the output */
  int streamed;         /* part of the output was written out (dp__tb_flush)
                           after body_start: frees cannot be declared there */
  uint32_t next_temp;
  uint32_t nbinders; /* let variables and parameters: most names */
  struct { const dp_type *t; char *s; } tcache[64];
  vslot vcache[256]; /* recent names (see name_of) */
  uint64_t inmap[1024]; /* a bit per hash of the variables in the map (name_of) */
  struct { const dp_op *op; size_t n; } ocache[64]; /* operator names' lengths */
  struct { const dp_vdev *vd; char *s; size_t n; } dcache[16]; /* devices' text */
  char tnum[12];  /* next_temp's digits (flat_print) */
  uint32_t tnlen;
  /* the text of recent attribute sets: a million annotations share a few
     sets, each printed once (a set's text depends on nothing else) */
  struct { const dp_attrs *a; char *s; size_t n; } acache[64];
  uint32_t turn; /* the way a full cache line replaces next (slot_of) */
  /* names given by the one walk for names alone, told once it finished:
     a variable's (v: 1 + offset of its name in nm) or a binding number */
  int defer;
  struct told { const dp_expr *e; uint32_t v, temp; } *told;
  uint32_t ntold, captold;
  /* the flat walk's shared nodes (held more than once), found again by
     their mark (see flat_shared), with the marks they had before */
  struct shared { const dp_expr *e; uint64_t tref; } *shared;
  uint32_t *oldmarks;
  uint32_t nshared, capshared;
  int by_mark; /* flat_shared finds them by mark, not in the map */
  const dp__print_fin *fin; /* DP__PRINT_FIN: told each node the flat walk finishes */
  int slot_failed;          /* its slot gave none: the walk gives up */
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
  void *a = dp_realloc(arr, (size_t)c * elem);
  if (a) *cap = c;
  return a;
}

static inline int tb_room(dp__tb *b, size_t extra) {
  return b->cap - b->n > extra ? 0 : dp__tb_reserve(b, extra); /* inline fast path */
}

/* (No NUL after each append, as dp__tb_putn writes: the text is ended once,
   by dp__tb_take; the printer reads its buffers by length.) */
static inline void put(dp__tb *b, const char *s, size_t n) {
  if (tb_room(b, n) < 0) return;
  memcpy(b->s + b->n, s, n);
  b->n += n;
}

static inline void puts_(dp__tb *b, const char *s) { put(b, s, strlen(s)); }

static inline void putc_(dp__tb *b, char c) {
  if (tb_room(b, 1) < 0) return;
  b->s[b->n++] = c;
}

/* Decimal digits of v at d (at least 10 bytes); their number. Written
   from the end, two at a time: a million-line text has a few million. */
static size_t fmt_u32(char *d, uint32_t v) {
  static const char pairs[] = "00010203040506070809101112131415161718192021222324"
                              "25262728293031323334353637383940414243444546474849"
                              "50515253545556575859606162636465666768697071727374"
                              "75767778798081828384858687888990919293949596979899";
  size_t n = v < 10 ? 1 : v < 100 ? 2 : v < 1000 ? 3 : v < 10000 ? 4 : v < 100000 ? 5
             : v < 1000000 ? 6 : v < 10000000 ? 7 : v < 100000000 ? 8 : v < 1000000000 ? 9 : 10;
  char *w = d + n;
  for (; v >= 100; v /= 100) {
    w -= 2;
    memcpy(w, pairs + 2 * (v % 100), 2);
  }
  if (v >= 10) memcpy(w - 2, pairs + 2 * v, 2);
  else w[-1] = (char)('0' + v);
  return n;
}

/* `%n`, a graph binding's name. */
static void put_temp(dp__tb *b, uint32_t v) {
  char d[11];
  d[0] = '%';
  put(b, d, 1 + fmt_u32(d + 1, v));
}

/* Index of non-atomic e's node, adding it when new; NONODE on out of
   memory. A node held once (rc 1) has one parent, so it cannot be met
   again: it skips the map, which keeps trees and let chains cheap. */
static uint32_t node_of(printer *p, const dp_expr *e, int *fresh) {
  int f = 1;
  pnode *nodes = grow_array(p->nodes, &p->cap, p->n + 1, sizeof *nodes);
  if (!nodes) return NONODE;
  p->nodes = nodes;
  if (e->h.rc != 1) {
    dp__ptrslot *v = dp__ptrmap_insert(&p->map, e, &f);
    if (!v) return NONODE;
    if (!f) {
      if (fresh) *fresh = 0;
      return (uint32_t)v->word;
    }
    v->word = p->n;
  }
  if (fresh) *fresh = 1;
  nodes[p->n] = (pnode){.e = e, .home = NOSCOPE, .inner = NOSCOPE, .edge = NONODE,
                        .flags = (uint32_t)e->h.kind << KIND};
  return p->n++;
}

/* Child k of e: dp_expr_child, with the commonest kinds first. */
static const dp_expr *child_of(const dp_expr *e, uint32_t k) {
  if (e->h.kind == DP_CALL) {
    const dp_call *c = (const dp_call *)e;
    return k ? c->args[k - 1] : c->fn;
  }
  if (e->h.kind == DP_LET) {
    const dp_let *l = (const dp_let *)e;
    return k == 0 ? &l->var->e : k == 1 ? l->value : l->body;
  }
  return dp_expr_child(e, k);
}

/* Node index of child k of node i. */
static uint32_t kid(const printer *p, uint32_t i, uint32_t k) {
  return p->edges[p->nodes[i].edge + k];
}

/* Room for the child indices of node i (a non-atomic node met first). */
static int add_edges(printer *p, uint32_t i) {
  const dp_expr *x = p->nodes[i].e;
  uint32_t nc = x->h.kind == DP_CALL ? 1 + ((const dp_call *)x)->nargs
                : x->h.kind == DP_LET ? 3 : dp_expr_nchildren(x);
  uint32_t *e = grow_array(p->edges, &p->capedges, p->nedges + nc, sizeof *e);
  if (!e) return -1;
  p->edges = e;
  p->nodes[i].edge = p->nedges;
  p->nodes[i].nc = nc;
  if (KIND_OF(&p->nodes[i]) == DP_LET) p->nbinders++;
  if (KIND_OF(&p->nodes[i]) == DP_FUNC) p->nbinders += nc - 1;
  for (uint32_t k = 0; k < nc; k++) e[p->nedges + k] = ATOM;
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
    uint32_t self = p->nscopes;
    scope *sc = &s[p->nscopes++];
    sc->parent = parent;
    sc->level = parent == NOSCOPE ? 0 : s[parent].level + 1;
    sc->indent = parent == NOSCOPE ? 0 : s[parent].indent + indent_step;
    if (sc->indent > MAX_INDENT) sc->indent = MAX_INDENT;
    /* skew-binary jump pointers (Myers 1983): an ancestor whose level
       depends on the scope's level alone, so that lca takes O(log depth)
       steps where walking parents would take the depth */
    if (parent == NOSCOPE) {
      sc->jump = self;
    } else {
      uint32_t j = s[parent].jump, jj = s[j].jump;
      sc->jump = s[parent].level - s[j].level == s[j].level - s[jj].level ? jj : parent;
    }
    sc->direct = parent == NOSCOPE;
    sc->lines = EMPTY_ROPE;
  }
  return first;
}

/* The innermost scope that holds both a and b. */
static uint32_t lca(const printer *p, uint32_t a, uint32_t b) {
  const scope *s = p->scopes;
  if (s[a].level < s[b].level) {
    uint32_t t = a;
    a = b;
    b = t;
  }
  while (s[a].level > s[b].level) a = s[s[a].jump].level >= s[b].level ? s[a].jump : s[a].parent;
  while (a != b) {
    if (s[a].jump != s[b].jump) {
      a = s[a].jump;
      b = s[b].jump;
    } else {
      a = s[a].parent;
      b = s[b].parent;
    }
  }
  return a;
}

/* ---------------- ropes ---------------- */

/* Bytes [off, off + len) of the arena after rope r. */
static void rope_add(printer *p, rope *r, size_t off, size_t len) {
  if (r->tail != NOSEG && p->segs[r->tail].off + p->segs[r->tail].len == off) {
    p->segs[r->tail].len += len;
    return;
  }
  seg *g = grow_array(p->segs, &p->capsegs, p->nsegs + 1, sizeof *g);
  if (!g || p->nsegs == NOSEG) {
    p->failed = 1;
    return;
  }
  p->segs = g;
  g[p->nsegs] = (seg){off, len, NOSEG};
  if (r->tail == NOSEG) r->head = p->nsegs;
  else g[r->tail].next = p->nsegs;
  r->tail = p->nsegs++;
}

/* Rope x after rope r (x is used up: a text has one user). */
static void rope_cat(printer *p, rope *r, rope x) {
  if (x.head == NOSEG) return;
  if (r->tail == NOSEG) r->head = x.head;
  else p->segs[r->tail].next = x.head;
  r->tail = x.tail;
}

/* Writing to the arena appends to rope r until text_end. */
static dp__tb *text_begin(printer *p, rope *r) {
  if (p->open) p->failed = 1; /* one rope at a time */
  p->open = r;
  p->open_at = p->arena.n;
  return &p->arena;
}

/* The bytes written since the last cut into the open rope. */
static void text_cut(printer *p) {
  if (p->arena.n > p->open_at) rope_add(p, p->open, p->open_at, p->arena.n - p->open_at);
  p->open_at = p->arena.n;
}

static void text_end(printer *p) {
  text_cut(p);
  p->open = NULL;
}

/* Append rope x to b: spliced when b is the arena (the open rope), its
   bytes copied otherwise (into the output: their one copy). */
static void put_text(printer *p, dp__tb *b, rope x) {
  if (b == &p->arena && p->open) {
    text_cut(p);
    rope_cat(p, p->open, x);
    return;
  }
  for (uint32_t g = x.head; g != NOSEG; g = p->segs[g].next) put(b, p->arena.s + p->segs[g].off, p->segs[g].len);
  /* a text of one piece, the last one written (a let's value, most
     often): its room is free again, so a long let chain reuses it */
  if (x.head != NOSEG && x.head == x.tail && x.head == p->nsegs - 1 && !p->open &&
      p->segs[x.head].off + p->segs[x.head].len == p->arena.n) {
    p->arena.n = p->segs[x.head].off;
    p->nsegs--;
  }
}

/* Where the lines of scope s go: the output, or (opened) its rope; end
   with close_lines. */
static dp__tb *open_lines(printer *p, uint32_t s) {
  return p->scopes[s].direct ? p->out : text_begin(p, &p->scopes[s].lines);
}

static void close_lines(printer *p) {
  if (p->open) text_end(p);
}

static inline void indent(dp__tb *b, uint32_t n) {
  static const char spaces[] = "                                                                ";
  size_t left = (size_t)n * 2;
  for (; left > sizeof spaces - 1; left -= sizeof spaces - 1) put(b, spaces, sizeof spaces - 1);
  put(b, spaces, left);
}

/* The slot of key in one of the printer's caches (n entries, a power of
   two; each entry's first member its key): the one of WAYS slots from the
   key's hash that holds it (*hit), else the one it goes in: an empty one,
   else each way in turn. A handful of keys met over and over (a branchy
   plan's two on_device and two device_copy attribute sets) never evict
   each other, whatever their addresses: with one slot a key, two whose
   addresses shared the hash took turns, each printed again every time. */
#define WAYS 4u
static inline uint32_t slot_of(printer *p, const void *cache, size_t stride, uint32_t n, const void *key, int *hit) {
  uint32_t h = (uint32_t)(((uint64_t)(uintptr_t)key * 0x9E3779B97F4A7C15ull) >> 40) & (n - 1), empty = n;
  for (uint32_t w = 0; w < WAYS; w++) {
    uint32_t i = (h + w) & (n - 1);
    const void *k = *(const void *const *)(const void *)((const char *)cache + i * stride);
    if (k == key) {
      *hit = 1;
      return i;
    }
    if (!k && empty == n) empty = i;
  }
  *hit = 0;
  return empty < n ? empty : (h + (p->turn++ & (WAYS - 1))) & (n - 1);
}
#define SLOT(p, cache, key, hit) slot_of((p), (p)->cache, sizeof (p)->cache[0], \
                                         (uint32_t)(sizeof (p)->cache / sizeof (p)->cache[0]), (key), (hit))

static const char *type_text(printer *p, const dp_type *t) {
  int hit;
  uint32_t h = SLOT(p, tcache, t, &hit);
  if (hit) return p->tcache[h].s;
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

/* The comment after a node: its checked type (DP_PRINT_TYPES) and its
   source position (DP_PRINT_SPANS), `/ * ty=T span=src:3:9 * /` as TVM. */
static void type_comment(printer *p, dp__tb *b, const dp_expr *e) {
  int ty = (p->flags & DP_PRINT_TYPES) && e->type;
  int sp = (p->flags & DP_PRINT_SPANS) && (e->span.source || e->span.line);
  if (!ty && !sp) return;
  put(b, " /* ", 4);
  if (ty) {
    put(b, "ty=", 3);
    puts_(b, type_text(p, e->type));
  }
  if (sp) {
    char d[24];
    put(b, ty ? " span=" : "span=", ty ? 6 : 5);
    puts_(b, p->opts->ctx ? dp_ctx_source_name(p->opts->ctx, e->span.source) : "<unknown>");
    d[0] = ':';
    size_t k = 1 + fmt_u32(d + 1, e->span.line);
    d[k++] = ':';
    k += fmt_u32(d + k, e->span.col);
    put(b, d, k);
  }
  put(b, " */", 3);
}

static inline void put_type_comment(printer *p, dp__tb *b, const dp_expr *e) {
  if (p->flags & (DP_PRINT_TYPES | DP_PRINT_SPANS)) type_comment(p, b, e);
}

/* ---------------- variable names ---------------- */

static nslot *name_slot(printer *p, const char *s, uint32_t h) {
  for (uint32_t i = h & (p->capnames - 1);; i = (i + 1) & (p->capnames - 1)) {
    nslot *sl = &p->names[i];
    if (!sl->off || (sl->hash == h && strcmp(p->nm + sl->off - 1, s) == 0)) return sl;
  }
}

/* Room for `more` more names in the set (at most half full). */
static int names_reserve(printer *p, uint32_t more) {
  if ((uint64_t)(p->nnames + more) * 2 <= (uint64_t)p->capnames) return 0;
  uint32_t cap = p->capnames ? p->capnames : 64;
  while ((uint64_t)(p->nnames + more) * 2 > (uint64_t)cap) {
    if (cap > UINT32_MAX / 2) return -1;
    cap *= 2;
  }
  nslot *old = p->names;
  uint32_t oldcap = p->capnames;
  p->names = dp_calloc(cap, sizeof *p->names);
  if (!p->names) {
    p->names = old;
    return -1;
  }
  p->capnames = cap;
  for (uint32_t i = 0; i < oldcap; i++) {
    if (!old[i].off) continue;
    uint32_t j = old[i].hash & (cap - 1);
    while (p->names[j].off) j = (j + 1) & (cap - 1);
    p->names[j] = old[i];
  }
  free(old);
  return 0;
}

static inline int names_room(printer *p) {
  return (uint64_t)(p->nnames + 2) * 2 <= (uint64_t)p->capnames ? 0 : names_reserve(p, 2);
}

/* FNV-1a of all but the last byte, plus the last byte (as the parser's
   scope.c): the names a generated program gives (x0, x1, ... x19) land in
   neighbouring slots, so that a million names fill the table in order
   instead of with a cache miss each. */
static uint32_t name_hash(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  if (n == 0) return h;
  for (size_t i = 0; i + 1 < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  h ^= h >> 15;
  return h + (unsigned char)s[n - 1];
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }
/* Characters a name keeps as they are: letters, digits, `_`. */
static const uint8_t NAME_CHAR[256] = {
  ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
  ['_'] = 1,
  ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1,
  ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1,
  ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
  ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1,
  ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1,
  ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
};
static int is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

/* Put every name given so far into the set (see alloc_name). */
static int make_exact(printer *p) {
  p->names_exact = 1;
  /* (sized once for the names to come: most are the binders') */
  if (names_reserve(p, p->nbinders + 2) < 0) return -1;
  /* (the names array holds every name given, one after another) */
  for (size_t o = 0; o < p->nmlen;) {
    const char *s = p->nm + o;
    size_t n = strlen(s);
    if (names_room(p) < 0) return -1;
    uint32_t h = name_hash(s, n);
    nslot *sl = name_slot(p, s, h);
    if (!sl->off) {
      *sl = (nslot){(uint32_t)o + 1, h, 1};
      p->nnames++;
    }
    o += n + 1;
  }
  return 0;
}

/* A fresh printed name from hint: `a`, then `a1`, `a2`, ... (as TVM); the
   name keeps what the lexer reads as one name (identifier characters, and
   a `.` or `/` before a letter: `conv1.weight`, `base/x`), the rest becomes
   `_`, and it never starts with a digit (that would read as a graph
   binding `%0`). Returns 1 + its offset in the names array, 0 on out of
   memory.
   While no base name ends in a digit, a generated name `a<k>` cannot equal
   a base name, nor one generated from another base (the digits split the
   same way), nor one from the same base (k only grows): so generated names
   stay out of the set until a base name ending in a digit first appears. */
static uint32_t alloc_name(printer *p, const char *hint, uint32_t *lenp) {
  size_t n = hint ? strlen(hint) : 0;
  if (p->nmcap - p->nmlen < n + 13) {
    size_t cap = p->nmcap ? p->nmcap : 256;
    while (cap - p->nmlen < n + 13) cap *= 2;
    char *nm = dp_realloc(p->nm, cap);
    if (!nm) return 0;
    p->nm = nm;
    p->nmcap = cap;
  }
  if (p->nmlen + n + 13 > UINT32_MAX) return 0;
  size_t o = p->nmlen;
  char *s = p->nm + o, *w = s;
  /* (name_hash as the name is written: hp is the hash of all but the
     last character) */
  uint32_t h = 2166136261u, hp = h;
  if (n == 0 || is_digit(hint[0])) {
    *w++ = n ? 'v' : 'x';
    h = (h ^ (unsigned char)w[-1]) * 16777619u;
  }
  for (size_t i = 0; i < n; i++) {
    char c = hint[i];
    int ok = NAME_CHAR[(unsigned char)c] ||
             (i && w > s && (c == '.' || c == '/') && i + 1 < n && is_name_start(hint[i + 1]));
    *w++ = ok ? c : '_';
    hp = h;
    h = (h ^ (unsigned char)w[-1]) * 16777619u;
  }
  *w = 0;
  size_t len = (size_t)(w - s);
  if (is_digit(s[len - 1]) && !p->names_exact && make_exact(p) < 0) return 0;
  if (names_room(p) < 0) return 0;
  h = (hp ^ (hp >> 15)) + (unsigned char)s[len - 1];
  nslot *bs = name_slot(p, s, h);
  if (!bs->off) {
    *bs = (nslot){(uint32_t)o + 1, h, 1};
    p->nnames++;
    p->nmlen = o + len + 1;
    *lenp = (uint32_t)len;
    return (uint32_t)o + 1;
  }
  uint32_t k = bs->next;
  size_t dl;
  for (;; k++) {
    dl = fmt_u32(s + len, k);
    s[len + dl] = 0;
    if (!p->names_exact) break;
    uint32_t ch = name_hash(s, len + dl);
    nslot *cs = name_slot(p, s, ch);
    if (!cs->off) {
      *cs = (nslot){(uint32_t)o + 1, ch, 1};
      p->nnames++;
      break;
    }
  }
  bs->next = k + 1;
  p->nmlen = o + len + dl + 1;
  *lenp = (uint32_t)(len + dl);
  return (uint32_t)o + 1;
}

/* Tells opts->on_name the name `%...` of e: a variable's (offset off in the
   names array) or, off 0, the graph binding number temp. */
static void tell_name(printer *p, const dp_expr *e, uint32_t off, uint32_t temp) {
  char d[16], *s = d;
  d[0] = '%';
  if (off) {
    size_t n = strlen(p->nm + off - 1);
    if (!(s = dp_malloc(n + 2))) {
      p->failed = 1;
      return;
    }
    s[0] = '%';
    memcpy(s + 1, p->nm + off - 1, n + 1);
  } else {
    d[1 + fmt_u32(d + 1, temp)] = 0;
  }
  p->opts->on_name(p->opts->ud, p->def_name ? p->def_name : "", e, s);
  if (s != d) free(s);
}

/* tell_name now, or (p->defer) once the walk finished. */
static void report_named(printer *p, const dp_expr *e, uint32_t off, uint32_t temp) {
  if (!p->defer) {
    tell_name(p, e, off, temp);
    return;
  }
  struct told *t = grow_array(p->told, &p->captold, p->ntold + 1, sizeof *t);
  if (!t) {
    p->failed = 1;
    return;
  }
  p->told = t;
  t[p->ntold++] = (struct told){e, off, temp};
}

/* The name of e: a variable's (off) or the graph binding just given. */
static void report_name(printer *p, const dp_expr *e, uint32_t off) {
  report_named(p, e, off, off ? 0 : p->next_temp - 1);
}

/* The map's slot of key, added when new (fresh tells): the map grows four
   times at a time (most of its keys are the binders). NULL on out of memory. */
static dp__ptrslot *map_insert(printer *p, const void *key, int *fresh) {
  if (((uint64_t)p->map.n + 1) * 3 > (uint64_t)p->map.cap * 2 &&
      dp__ptrmap_reserve(&p->map, p->map.n * 3 + 64) < 0)
    return NULL;
  return dp__ptrmap_insert(&p->map, key, fresh);
}

/* A new name for v: given, reported, and when a use in a def meets it
   first, v is free there (declared at the def's start). 0 on failure. */
static uint32_t new_name(printer *p, const dp_var *v, int use, uint32_t *len) {
  uint32_t off = alloc_name(p, v->name, len);
  if (!off) return 0;
  if (p->opts->on_name) report_name(p, &v->e, off);
  if (use && p->def_name) {
    const dp_var **f = grow_array(p->frees, &p->capfrees, p->nfrees + 1, sizeof *f);
    if (f) (p->frees = f)[p->nfrees++] = v;
    else p->failed = 1;
  }
  return off;
}

static inline uint32_t vhash(const dp_var *v) { return (uint32_t)((uintptr_t)v >> 4) & 255; }

/* The bit of v in inmap: set for every variable put in the map, so that a
   variable named lazily looks in the map only when one of its bit is. */
static inline uint32_t inmap_bit(const dp_var *v) {
  return (uint32_t)(((uint64_t)(uintptr_t)v * 0x9E3779B97F4A7C15ull) >> 48);
}
static inline void inmap_set(printer *p, const dp_var *v) {
  uint32_t b = inmap_bit(v);
  p->inmap[b >> 6] |= (uint64_t)1 << (b & 63);
}
static inline int inmap_maybe(const printer *p, const dp_var *v) {
  uint32_t b = inmap_bit(v);
  return (p->inmap[b >> 6] >> (b & 63)) & 1;
}

/* Name of variable v, given at its binding (or first use if free: binders
   are named before anything under them is printed, so a variable first met
   at a use is free, and a def declares it). The pointer is good until the
   next name is given.
   A variable is mostly used soon after its binding: a small cache of
   recent names (vcache) spares most map lookups. A let's variable in a flat
   body held twice (its let and one use: rc 2) is named lazily: it enters
   the map only when the cache lets it go while it may still be used; once
   that use printed (VC_SINGLE, VC_USED: see flat_let_line, flat_kid), it is
   never looked up again, so a let chain's variables never fill the map. */
static const char *name_of(printer *p, const dp_var *v, int use, int lazy) {
  vslot *c = &p->vcache[vhash(v)];
  if (c->v == v) return p->nm + c->off - 1;
  uint32_t off = 0, len = 0, flags = VC_INMAP;
  if (lazy && v->e.h.rc == 2) {
    dp__ptrslot *sl = inmap_maybe(p, v) ? dp__ptrmap_find(&p->map, v) : NULL;
    if (sl) off = (uint32_t)sl->word;
    else if ((off = new_name(p, v, use, &len))) flags = 0;
  } else {
    int fresh;
    dp__ptrslot *sl = map_insert(p, v, &fresh);
    if (sl) inmap_set(p, v);
    if (sl && !sl->word) sl->word = new_name(p, v, use, &len);
    off = sl ? (uint32_t)sl->word : 0;
  }
  if (!off) {
    p->failed = 1;
    return "x";
  }
  if (!len) len = (uint32_t)strlen(p->nm + off - 1);
  if (c->v && !(c->flags & VC_INMAP) && (c->flags & (VC_SINGLE | VC_USED)) != (VC_SINGLE | VC_USED)) {
    dp__ptrslot *sl = map_insert(p, c->v, NULL); /* (it may still be used) */
    if (!sl) {
      p->failed = 1;
      return "x";
    }
    sl->word = c->off;
    inmap_set(p, c->v);
  }
  *c = (vslot){v, off, len, flags};
  return p->nm + off - 1;
}

static const char *var_name(printer *p, const dp_var *v) { return name_of(p, v, 1, 0); }

/* `%name` of variable v, a use: the name and its length from the cache of
   recent names (name_of puts it there). */
static inline void put_var(printer *p, dp__tb *b, const dp_var *v) {
  vslot *c = &p->vcache[vhash(v)];
  if (c->v != v && (name_of(p, v, 1, 0), c->v != v)) return; /* (failed) */
  uint32_t len = c->len;
  if (tb_room(b, (size_t)len + 1) < 0) return;
  b->s[b->n] = '%';
  memcpy(b->s + b->n + 1, p->nm + c->off - 1, len);
  b->n += (size_t)len + 1;
}

static const char *binder_name(printer *p, const dp_var *v) { return name_of(p, v, 0, 0); }

/* ---------------- pass 1: discover ---------------- */

static int discover(printer *p, const dp_expr *root) {
  frame *stack = NULL;
  uint32_t n = 0, cap = 0;
  uint32_t r = node_of(p, root, NULL);
  if (r == NONODE) return -1;
  p->nodes[r].flags |= F_ROOT | F_TRY | F_TAIL | USE1;
  if (add_edges(p, r) < 0 || !(stack = grow_array(stack, &cap, 1, sizeof *stack))) return -1;
  stack[n++] = (frame){r, 0};
  while (n) {
    frame *f = &stack[n - 1];
    uint32_t self = f->node;
    if (f->k >= p->nodes[self].nc) {
      uint32_t *o = grow_array(p->order, &p->caporder, p->norder + 1, sizeof *o);
      if (!o) goto oom;
      p->order = o;
      p->order[p->norder++] = self;
      n--;
      continue;
    }
    uint32_t k = f->k++;
    const dp_expr *c = child_of(p->nodes[self].e, k);
    if (!c) {
      p->edges[p->nodes[self].edge + k] = NONODE;
      continue;
    }
    if (is_atomic(c)) {
      if (c->h.kind == DP_VAR) p->edges[p->nodes[self].edge + k] = ATOM_VAR;
      continue;
    }
    int fresh;
    uint32_t ci = node_of(p, c, &fresh);
    if (ci == NONODE) goto oom;
    p->edges[p->nodes[self].edge + k] = ci;
    if ((p->nodes[ci].flags & USES) < 2 * USE1) p->nodes[ci].flags += USE1;
    if (!fresh) continue;
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
  if (ci >= ATOM_VAR) return;
  pnode *cn = &p->nodes[ci];
  cn->flags |= flags;
  cn->home = cn->home == NOSCOPE ? sc : lca(p, cn->home, sc);
}

static int tail_inline(const pnode *n) {
  return (n->flags & F_ROOT) || ((n->flags & USES) == USE1 && (n->flags & F_TAIL));
}

static int is_inline(const pnode *n) {
  return (n->flags & F_ROOT) || ((n->flags & USES) == USE1 && (n->flags & F_TRY));
}

/* (From the printer's node alone: the IR is not touched.) */
static void place_children(printer *p, uint32_t i) {
  pnode *n = &p->nodes[i];
  uint32_t h = n->home, nc = n->nc, s;
  switch (KIND_OF(n)) {
  case DP_FUNC: /* the body is the last child */
    if ((s = new_scopes(p, 1, h, 1)) == NOSCOPE) return;
    p->nodes[i].inner = s;
    p->scopes[s].direct = (n->flags & F_ROOT) != 0;
    use_in(p, kid(p, i, nc - 1), s, F_TRY | F_TAIL);
    return;
  case DP_IF: {
    if ((s = new_scopes(p, 2, h, 1)) == NOSCOPE) return;
    p->nodes[i].inner = s;
    use_in(p, kid(p, i, 0), h, 0);
    use_in(p, kid(p, i, 1), s, F_TRY | F_TAIL);
    /* an else branch that is an if used only here continues the chain at
       this if's level, so that a long `else if` chain prints flat (and in
       linear time); what it binds is bound before the chain's head */
    uint32_t e = kid(p, i, 2);
    if (e < ATOM_VAR && KIND_OF(&p->nodes[e]) == DP_IF && (p->nodes[e].flags & USES) == USE1) {
      p->nodes[e].flags |= F_ELSEIF;
      use_in(p, e, h, F_TRY | F_TAIL);
    } else {
      use_in(p, e, s + 1, F_TRY | F_TAIL);
    }
    return;
  }
  case DP_MATCH: /* the data, then a clause's right side each */
    if ((s = new_scopes(p, nc - 1, h, 2)) == NOSCOPE) return;
    p->nodes[i].inner = s;
    use_in(p, kid(p, i, 0), h, 0);
    for (uint32_t k = 1; k < nc; k++) use_in(p, kid(p, i, k), s + k - 1, F_TRY | F_TAIL);
    return;
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
    for (uint32_t k = 0; k < nc; k++) use_in(p, kid(p, i, k), h, 0);
  }
}

static void place_all(printer *p, uint32_t root) {
  p->nodes[root].home = 0;
  for (uint32_t j = p->norder; j-- > 0 && !p->failed;) place_children(p, p->order[j]);
}

/* ---------------- pass 3: print ---------------- */

/* `meta[KIND][i]` for a virtual device or a constant (DP_PRINT_META). */
static void put_meta(printer *p, dp__tb *b, const void *obj, int is_const) {
  int64_t i = p->meta ? dp__metaw_add(p->meta, obj, is_const) : -1;
  if (i < 0) {
    p->failed = 1;
    return;
  }
  char d[16];
  puts_(b, is_const ? "meta[relay.Constant][" : "meta[VirtualDevice][");
  put(b, d, fmt_u32(d, (uint32_t)i));
  putc_(b, ']');
}

/* A constant: a meta reference (DP_PRINT_META: all but scalars, as TVM),
   or inline. */
static void put_const(printer *p, dp__tb *b, const dp_const *c) {
  if ((p->flags & DP_PRINT_META) && c->ndim) put_meta(p, b, c, 1);
  else dp__put_const(b, c);
}

/* Append atomic expression c: a variable's name, a global, ... */
static void put_atom(printer *p, dp__tb *b, const dp_expr *c) {
  switch (c->h.kind) {
  case DP_VAR: put_var(p, b, (const dp_var *)c); return;
  case DP_GLOBAL:
    putc_(b, '@');
    puts_(b, ((const dp_global *)c)->name);
    return;
  case DP_OP: {
    const dp_op *op = (const dp_op *)c;
    int hit;
    uint32_t h = SLOT(p, ocache, op, &hit);
    if (!hit) {
      p->ocache[h].op = op;
      p->ocache[h].n = strlen(op->name);
    }
    put(b, op->name, p->ocache[h].n);
    return;
  }
  case DP_CTOR: puts_(b, ((const dp_ctor *)c)->name); return;
  case DP_CONST:
    put_const(p, b, (const dp_const *)c);
    put_type_comment(p, b, c);
    return;
  default: p->failed = 1;
  }
}

/* Append the reference to child k of node i: an atom, a graph binding,
   or an inline text (the next one in src). */
static void put_kid(printer *p, dp__tb *b, uint32_t i, uint32_t k) {
  uint32_t ci = kid(p, i, k);
  if (ci == ATOM_VAR) { /* not put_atom: the name needs no look at v */
    put_var(p, b, (const dp_var *)child_of(p->nodes[i].e, k));
    return;
  }
  if (ci == ATOM) {
    put_atom(p, b, child_of(p->nodes[i].e, k));
    return;
  }
  if (ci == NONODE) {
    p->failed = 1;
    return;
  }
  const pnode *n = &p->nodes[ci];
  if (n->flags & F_BOUND) {
    put_temp(b, n->aux);
    return;
  }
  if (p->cur >= p->ntexts) {
    p->failed = 1;
    return;
  }
  put_text(p, b, p->texts[p->cur++]);
}

/* `@cuda`: the short name of vd (DP_PRINT_SHORT_DEVICES). */
static void put_devname(printer *p, dp__tb *b, const dp_vdev *vd) {
  const char *name = dp__devname(p->devnames, vd);
  if (!name) {
    p->failed = 1;
    return;
  }
  putc_(b, '@');
  puts_(b, name);
}

static void put_vdev(printer *p, dp__tb *b, const dp_vdev *vd, const char *pre, const char *post) {
  if (!vd || dp_vdev_is_fully_unconstrained(vd)) return;
  if (p->flags & (DP_PRINT_SHORT_DEVICES | DP_PRINT_META)) {
    puts_(b, pre);
    puts_(b, "virtual_device=");
    if (p->flags & DP_PRINT_SHORT_DEVICES) put_devname(p, b, vd);
    else put_meta(p, b, vd, 0);
    puts_(b, post);
    return;
  }
  /* (a device's text is made once: parameters and functions share a few) */
  int hit;
  uint32_t h = SLOT(p, dcache, vd, &hit);
  if (!hit) {
    char *s = dp_vdev_str(vd);
    if (!s) {
      p->failed = 1;
      return;
    }
    free(p->dcache[h].s);
    p->dcache[h].vd = vd;
    p->dcache[h].s = s;
    p->dcache[h].n = strlen(s);
  }
  puts_(b, pre);
  puts_(b, "virtual_device=");
  put(b, p->dcache[h].s, p->dcache[h].n);
  puts_(b, post);
}

/* `%x {virtual_device=...}: T` and the type comment, at a binding. */
static void put_var_decl(printer *p, dp__tb *b, const dp_var *v, int is_param) {
  put_atom(p, b, &v->e);
  put_vdev(p, b, dp_var_vdev(v), " {", "}");
  if (dp_var_annot(v)) {
    put(b, ": ", 2);
    puts_(b, type_text(p, dp_var_annot(v)));
  }
  if (is_param) put_type_comment(p, b, &v->e);
}

static void put_aval(printer *p, dp__tb *b, const dp_aval *v) {
  if (v->kind == DP_AV_VDEV && v->u.vdev && (p->flags & DP_PRINT_SHORT_DEVICES)) {
    put_devname(p, b, v->u.vdev);
    return;
  }
  if (v->kind == DP_AV_VDEV && v->u.vdev && (p->flags & DP_PRINT_META)) {
    put_meta(p, b, v->u.vdev, 0);
    return;
  }
  if (v->kind == DP_AV_EXPR && v->u.expr && v->u.expr->h.kind == DP_CONST) {
    put_const(p, b, (const dp_const *)v->u.expr);
    return;
  }
  /* a float written without a suffix is a float32 attribute: TVM prints
     those as `2e-05f` */
  dp_aval f32 = *v;
  if (v->kind == DP_AV_FLOAT && !v->dtype) f32.dtype = DP_FLOAT32;
  char *s = dp_av_str(&f32);
  if (!s) {
    p->failed = 1;
    return;
  }
  puts_(b, s);
  free(s);
}

static void put_attrs(printer *p, dp__tb *b, const dp_attrs *a, int first) {
  if (!a || !a->n) return;
  if (!first) put(b, ", ", 2);
  int hit;
  uint32_t h = SLOT(p, acache, a, &hit);
  if (hit) {
    put(b, p->acache[h].s, p->acache[h].n);
    return;
  }
  size_t mark = b->n;
  for (uint32_t i = 0; i < a->n; i++) {
    if (i) put(b, ", ", 2);
    puts_(b, a->items[i].key);
    putc_(b, '=');
    put_aval(p, b, &a->items[i].val);
  }
  if (b->failed) return;
  char *s = dp_malloc(b->n - mark + 1);
  if (!s) return; /* (not cached: printed again next time) */
  memcpy(s, b->s + mark, b->n - mark);
  free(p->acache[h].s);
  p->acache[h].a = a;
  p->acache[h].s = s;
  p->acache[h].n = b->n - mark;
}

/* The lines of scope s (unless already there), then its result (child k
   of node i), then a newline. */
static void put_scope(printer *p, dp__tb *b, uint32_t s, uint32_t i, uint32_t k) {
  scope *sc = &p->scopes[s];
  rope lines = sc->lines;
  sc->lines = EMPTY_ROPE;
  put_text(p, b, lines);
  indent(b, sc->indent);
  put_kid(p, b, i, k);
  putc_(b, '\n');
}

/* `def @f(%x: T) -> U {` (is_def: the root of a definition) or `fn (...) {`,
   and the newline; home_indent: the indentation of the function's scope. */
static void put_func_head_of(printer *p, dp__tb *b, const dp_func *f, int is_def, uint32_t home_indent) {
  /* DP_PRINT_PARAM_LINES: `,` and a new line indented two levels past the head's */
  int lines = (p->flags & DP_PRINT_PARAM_LINES) && f->nparams > 1;
  uint32_t ind = home_indent + 2;
  const char *sep = lines ? ",\n" : ", ";
  if (is_def) {
    put(b, "def @", 5);
    puts_(b, p->def_name);
  } else {
    put(b, "fn ", 3);
  }
  for (uint32_t k = 0; k < f->ntparams; k++) { /* `[A, B]`, as TVM */
    put(b, k ? ", " : "[", k ? 2 : 1);
    puts_(b, type_text(p, f->tparams[k]));
  }
  if (f->ntparams) putc_(b, ']');
  putc_(b, '(');
  for (uint32_t k = 0; k < f->nparams; k++) {
    if (k) puts_(b, sep);
    if (k && lines) indent(b, ind);
    put_var_decl(p, b, f->params[k], 1);
  }
  if (lines && f->vdev && !dp_vdev_is_fully_unconstrained(f->vdev)) {
    puts_(b, sep);
    indent(b, ind);
    put_vdev(p, b, f->vdev, "", "");
  } else {
    put_vdev(p, b, f->vdev, f->nparams ? ", " : "", "");
  }
  int first = !f->nparams && !(f->vdev && !dp_vdev_is_fully_unconstrained(f->vdev));
  put_attrs(p, b, f->attrs, first);
  putc_(b, ')');
  if (f->ret) {
    put(b, " -> ", 4);
    puts_(b, type_text(p, f->ret));
  }
  put(b, " {\n", 3);
}

static void put_func_head(printer *p, dp__tb *b, uint32_t i) {
  const pnode *n = &p->nodes[i];
  put_func_head_of(p, b, (const dp_func *)n->e, (n->flags & F_ROOT) && p->def_name, p->scopes[n->home].indent);
}

/* A function whose body scope writes straight to the output has its head
   there already (before_child). */
static void put_func(printer *p, dp__tb *b, uint32_t i) {
  const pnode *n = &p->nodes[i];
  uint32_t home = n->home, inner = n->inner;
  if (!p->scopes[inner].direct) put_func_head(p, b, i);
  put_scope(p, b, inner, i, ((const dp_func *)n->e)->nparams);
  indent(b, p->scopes[home].indent);
  putc_(b, '}');
}

/* An if and the `else if` links of its chain (F_ELSEIF: their texts lie
   in order among the head's). */
static void put_if(printer *p, dp__tb *b, uint32_t i) {
  uint32_t ind = p->scopes[p->nodes[i].home].indent;
  put(b, "if (", 4);
  for (;;) {
    uint32_t s = p->nodes[i].inner, e = kid(p, i, 2);
    put_kid(p, b, i, 0);
    put(b, ") {\n", 4);
    put_scope(p, b, s, i, 1);
    indent(b, ind);
    if (e < ATOM_VAR && (p->nodes[e].flags & F_ELSEIF)) {
      put(b, "} else if (", 11);
      i = e;
      continue;
    }
    put(b, "} else {\n", 9);
    put_scope(p, b, s + 1, i, 2);
    indent(b, ind);
    putc_(b, '}');
    return;
  }
}

/* Patterns, with an explicit stack (they may nest deeply). With `bind`,
   only give the pattern's variables their names. */
static void walk_pattern(printer *p, dp__tb *b, const dp_pattern *pat, int bind) {
  struct pf { const dp_pattern *p; uint32_t k; } *st = NULL;
  uint32_t n = 0, cap = 0;
  if (!(st = grow_array(st, &cap, 1, sizeof *st))) goto oom;
  st[n++] = (struct pf){pat, 0};
  while (n) {
    struct pf *f = &st[n - 1];
    const dp_pattern *q = f->p;
    if (q->h.kind == DP_PAT_WILD || q->h.kind == DP_PAT_VAR) {
      if (q->h.kind == DP_PAT_VAR && bind) {
        binder_name(p, q->var);
      } else if (q->h.kind == DP_PAT_VAR) {
        put_var_decl(p, b, q->var, 0);
      } else if (!bind) {
        putc_(b, '_');
      }
      n--;
      continue;
    }
    if (f->k == 0 && !bind) {
      if (q->h.kind == DP_PAT_CTOR) puts_(b, q->ctor->name);
      if (q->h.kind == DP_PAT_TUPLE || q->n) putc_(b, '(');
    }
    if (f->k == q->n) {
      if (!bind && (q->h.kind == DP_PAT_TUPLE || q->n)) {
        if (q->h.kind == DP_PAT_TUPLE && q->n == 1) putc_(b, ',');
        putc_(b, ')');
      }
      n--;
      continue;
    }
    if (f->k && !bind) put(b, ", ", 2);
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

static void put_match(printer *p, dp__tb *b, uint32_t i) {
  const dp_match *m = (const dp_match *)p->nodes[i].e;
  uint32_t home = p->nodes[i].home, s = p->nodes[i].inner;
  uint32_t ind = p->scopes[home].indent;
  puts_(b, m->complete ? "match (" : "match? (");
  put_kid(p, b, i, 0);
  put(b, ") {\n", 4);
  for (uint32_t k = 0; k < m->n; k++) {
    indent(b, ind + 1);
    walk_pattern(p, b, m->clauses[k].pat, 0);
    put(b, " => ", 4);
    if (p->scopes[s + k].lines.head != NOSEG) { /* bindings: a braced block */
      put(b, "{\n", 2);
      put_scope(p, b, s + k, i, k + 1);
      indent(b, ind + 1);
      putc_(b, '}');
    } else {
      put_kid(p, b, i, k + 1);
    }
    put(b, ",\n", 2);
  }
  indent(b, ind);
  putc_(b, '}');
}

/* A let's text: its body's (the let lines are already in the scope), or a
   parenthesised block when it could not continue the enclosing scope. */
static void put_let(printer *p, dp__tb *b, uint32_t i) {
  if (p->nodes[i].flags & F_LETBLOCK) {
    put(b, "(\n", 2);
    put_scope(p, b, p->nodes[i].inner, i, 2);
    indent(b, p->scopes[p->nodes[i].home].indent);
    putc_(b, ')');
  } else {
    put_kid(p, b, i, 2);
  }
}

static void put_call(printer *p, dp__tb *b, uint32_t i) {
  const dp_call *c = (const dp_call *)p->nodes[i].e;
  put_kid(p, b, i, 0);
  if (c->fn->h.kind == DP_CTOR && !c->nargs && !((const dp_ctor *)c->fn)->ninputs)
    return; /* `Nil`, as TVM prints (and reads) a constructor of no fields */
  putc_(b, '(');
  for (uint32_t k = 0; k < c->nargs; k++) {
    if (k) put(b, ", ", 2);
    put_kid(p, b, i, k + 1);
  }
  put_attrs(p, b, c->attrs, c->nargs == 0);
  putc_(b, ')');
}

static void put_node(printer *p, dp__tb *b, uint32_t i) {
  const dp_expr *e = p->nodes[i].e;
  switch (KIND_OF(&p->nodes[i])) {
  case DP_CALL: put_call(p, b, i); break;
  case DP_FUNC: put_func(p, b, i); break;
  case DP_LET: put_let(p, b, i); return; /* the body carries the type */
  case DP_IF: put_if(p, b, i); break;
  case DP_MATCH: put_match(p, b, i); break;
  case DP_TUPLE: {
    const dp_tuple *t = (const dp_tuple *)e;
    putc_(b, '(');
    for (uint32_t k = 0; k < t->n; k++) {
      if (k) put(b, ", ", 2);
      put_kid(p, b, i, k);
    }
    puts_(b, t->n == 1 ? ",)" : ")");
    break;
  }
  case DP_PROJ: {
    char d[11];
    put_kid(p, b, i, 0);
    d[0] = '.';
    put(b, d, 1 + fmt_u32(d + 1, ((const dp_proj *)e)->index));
    break;
  }
  case DP_REF_CREATE:
    put(b, "ref(", 4);
    put_kid(p, b, i, 0);
    putc_(b, ')');
    break;
  case DP_REF_READ:
    put(b, "ref_read(", 9);
    put_kid(p, b, i, 0);
    putc_(b, ')');
    break;
  case DP_REF_WRITE:
    put(b, "ref_write(", 10);
    put_kid(p, b, i, 0);
    put(b, ", ", 2);
    put_kid(p, b, i, 1);
    putc_(b, ')');
    break;
  default: break;
  }
  if (!((p->nodes[i].flags & F_ROOT) && p->def_name)) put_type_comment(p, b, e);
}

/* finish without the text (DP__PRINT_NAMES_ONLY): the variables node i
   reads are named where its text would name them (a free one is named at
   its first use), in the order the text reads them (an `else if` chain's
   with its head's, a let's value before its body, in before_child), and a
   bound node takes its number. */
static void finish_names(printer *p, uint32_t i) {
  pnode *n = &p->nodes[i];
  n->flags |= F_DONE;
  if (n->flags & F_ELSEIF) return;
  for (uint32_t j = i;;) {
    uint32_t kind = KIND_OF(&p->nodes[j]), nc = p->nodes[j].nc, next = NONODE;
    for (uint32_t k = kind == DP_LET ? 2 : 0; k < nc; k++) {
      uint32_t ci = kid(p, j, k);
      if (ci == ATOM_VAR) var_name(p, (const dp_var *)child_of(p->nodes[j].e, k));
      else if (kind == DP_IF && k == 2 && ci < ATOM_VAR && (p->nodes[ci].flags & F_ELSEIF)) next = ci;
    }
    if (next == NONODE) break;
    j = next;
  }
  if (is_inline(n)) return;
  n->flags |= F_BOUND;
  n->aux = p->next_temp++;
  if (p->opts->on_name) report_name(p, n->e, 0);
}

/* Node i has all its children printed, their inline texts on the stack
   of texts from `mark`. An inline node's rope replaces them there, for its
   one user (the root's text goes to the output); a bound node writes its
   graph binding into its home scope. */
static void finish(printer *p, uint32_t i, uint32_t mark) {
  if (p->flags & DP__PRINT_NAMES_ONLY) {
    finish_names(p, i);
    return;
  }
  p->nodes[i].flags |= F_DONE;
  if (p->nodes[i].flags & F_ELSEIF) return; /* its texts stay for the chain's head */
  p->cur = mark;
  if (is_inline(&p->nodes[i]) && (p->nodes[i].flags & F_ROOT)) {
    put_node(p, p->out, i); /* after the outermost scope's lines */
    p->ntexts = mark;
    return;
  }
  if (is_inline(&p->nodes[i])) {
    rope r = EMPTY_ROPE;
    put_node(p, text_begin(p, &r), i);
    text_end(p);
    p->ntexts = mark; /* (room for one: its children's texts were there) */
    rope *t = grow_array(p->texts, &p->captexts, mark + 1, sizeof *t);
    if (!t) {
      p->failed = 1;
      return;
    }
    p->texts = t;
    t[p->ntexts++] = r;
    return;
  }
  pnode *n = &p->nodes[i];
  n->flags |= F_BOUND;
  n->aux = p->next_temp++;
  if (p->opts->on_name) report_name(p, n->e, 0);
  dp__tb *b = open_lines(p, n->home);
  indent(b, p->scopes[n->home].indent);
  put_temp(b, n->aux);
  put(b, " = ", 3);
  put_node(p, b, i);
  put(b, ";\n", 2);
  close_lines(p);
  if (b->failed) p->failed = 1;
  p->ntexts = mark;
}

/* Work due before child k of node i is printed: binders get their names
   in binding order, a let writes its line before its body. */
static void before_child(printer *p, uint32_t i, uint32_t k, uint32_t mark) {
  const dp_expr *e = p->nodes[i].e;
  uint32_t kind = KIND_OF(&p->nodes[i]);
  if (kind == DP_FUNC && k < ((const dp_func *)e)->nparams) {
    binder_name(p, ((const dp_func *)e)->params[k]);
  } else if ((p->flags & DP__PRINT_NAMES_ONLY) && kind != DP_LET && kind != DP_MATCH) {
    /* (no text: a function's head names nothing its parameters did not) */
  } else if ((p->flags & DP__PRINT_NAMES_ONLY) && kind == DP_LET && k == 2) {
    if (kid(p, i, 1) == ATOM_VAR) var_name(p, (const dp_var *)((const dp_let *)e)->value); /* (its line) */
  } else if (kind == DP_FUNC && p->scopes[p->nodes[i].inner].direct) {
    put_func_head(p, p->out, i); /* its body's lines follow it there */
    p->body_start = p->out->n;
  } else if (kind == DP_LET && k == 0) {
    binder_name(p, ((const dp_let *)e)->var);
  } else if (kind == DP_LET && k == 2) {
    /* the value's inline text, if any, is on the stack from mark */
    p->cur = mark;
    dp__tb *b = open_lines(p, p->nodes[i].inner);
    indent(b, p->scopes[p->nodes[i].inner].indent);
    put(b, "let ", 4);
    put_var_decl(p, b, ((const dp_let *)e)->var, 0);
    put(b, " = ", 3);
    put_kid(p, b, i, 1);
    put(b, ";\n", 2);
    close_lines(p);
    if (b->failed) p->failed = 1;
    p->ntexts = mark;
  } else if (kind == DP_MATCH && k >= 1) {
    walk_pattern(p, NULL, ((const dp_match *)e)->clauses[k - 1].pat, 1);
  }
}

static int print_nodes(printer *p, uint32_t root) {
  pframe *stack = NULL;
  uint32_t n = 0, cap = 0;
  if (!(stack = grow_array(stack, &cap, 1, sizeof *stack))) return -1;
  stack[n++] = (pframe){root, 0, p->ntexts};
  while (n && !p->failed && !p->arena.failed) {
    pframe *f = &stack[n - 1];
    uint32_t i = f->node;
    uint32_t mark = f->mark;
    if (f->k >= p->nodes[i].nc) {
      n--;
      finish(p, i, mark);
      /* streaming: the output's lines so far are final (nothing refers to
         their offsets between nodes) unless free variables were met,
         whose declarations go back to body_start */
      dp__tb *o = p->out;
      if (o->write && o->inner && o->n >= DP__TB_FLUSH_AT && !p->nfrees) {
        p->streamed = 1;
        if (dp__tb_flush(o) < 0) p->failed = 1;
      }
      continue;
    }
    uint32_t k = f->k++;
    /* a call's arguments are bound before its callee, as TVM prints them
       (no child of a call is inline, so no text depends on the order) */
    if (KIND_OF(&p->nodes[i]) == DP_CALL) k = k + 1 < p->nodes[i].nc ? k + 1 : 0;
    before_child(p, i, k, mark);
    uint32_t ci = kid(p, i, k);
    if (ci >= ATOM_VAR || (p->nodes[ci].flags & F_DONE)) continue;
    pframe *s = grow_array(stack, &cap, n + 1, sizeof *stack);
    if (!s) {
      p->failed = 1;
      break;
    }
    stack = s;
    stack[n++] = (pframe){ci, 0, p->ntexts};
  }
  free(stack);
  return p->failed || p->arena.failed ? -1 : 0;
}

/* ---------------- driver ---------------- */

static void printer_free(printer *p) {
  for (int i = 0; i < 64; i++) free(p->tcache[i].s);
  for (int i = 0; i < 64; i++) free(p->acache[i].s);
  for (int i = 0; i < 16; i++) free(p->dcache[i].s);
  free(p->nodes);
  free(p->order);
  free(p->edges);
  free(p->scopes);
  free(p->names);
  free(p->nm);
  free(p->frees);
  dp__tb_free(&p->arena);
  free(p->segs);
  free(p->texts);
  free(p->told);
  free(p->shared);
  free(p->oldmarks);
  dp__ptrmap_free(&p->map);
}

/* `free_var %x: T;` (as TVM declares a free variable), indented. */
static void put_free_var(printer *p, dp__tb *b, const dp_var *v, uint32_t ind) {
  indent(b, ind);
  put(b, "free_var ", 9);
  put_var_decl(p, b, v, 0);
  put(b, ";\n", 2);
}

/* Free variables of a bare expression take their names first, so that a
   bound variable with the same hint is the one renamed, and are declared
   first. */
static void name_free_vars(printer *p, const dp_expr *root) {
  uint32_t n = 0;
  dp_var **fv = dp_free_vars((dp_expr *)root, &n);
  if (!fv) {
    p->failed = 1;
    return;
  }
  for (uint32_t i = 0; i < n; i++) var_name(p, fv[i]);
  for (uint32_t i = 0; i < n && !(p->flags & DP__PRINT_NO_DECLS); i++) put_free_var(p, p->out, fv[i], 0);
  free(fv);
}

/* The free variables a def's body used, declared where the body starts
   (known only once printed: rare, so the text moves once). */
static void declare_frees(printer *p, dp__tb *out) {
  dp__tb d;
  dp__tb_init(&d);
  for (uint32_t i = 0; i < p->nfrees; i++) put_free_var(p, &d, p->frees[i], 1);
  if (d.failed || dp__tb_reserve(out, d.n) < 0) {
    p->failed = 1;
  } else {
    memmove(out->s + p->body_start + d.n, out->s + p->body_start, out->n - p->body_start + 1);
    memcpy(out->s + p->body_start, d.s, d.n);
    out->n += d.n;
  }
  dp__tb_free(&d);
}

/* ---------------- one pass: a body of one scope ---------------- */

/* Most bodies are one scope: a DAG of calls, tuples and projections, maybe
   under a chain of lets (every generated workload, the models). There every
   node's home is that scope, and a node is inline exactly where TVM inlines
   and it is held once (rc 1: a let's value, the scope's result), so the three
   passes above come down to one walk in the same post order: a node prints
   when its children have, a bound node's line straight into the output, a
   let's line before its body, with the same names, numbers and device names
   in the same order (so the text is byte for byte the three passes'). A body
   with anything else (a nested function, if, match, a let anywhere but a
   let's body, a shared let value or result) is not printed here (FLAT_NO):
   dp__print_root gives it to the three passes. */

#define FLAT_NO (-3)
#define IN_PROGRESS UINT64_MAX

/* How a node of a flat body is used: an operand (bound: `%n = ...;`), a
   let's value (inline in its line), the scope's result, a let continuing
   the scope, a bare expression's root (inline, after the lines). */
enum { R_ARG, R_VALUE, R_TAIL, R_CHAIN, R_ROOT };

typedef struct fframe {
  const dp_expr *e;
  uint32_t k, nc;
  uint32_t vbase; /* the binding numbers of its bound children: vals[vbase..] */
  uint32_t role;
} fframe;

typedef struct flat {
  fframe *st;
  uint32_t n, cap;
  uint64_t *vals; /* the trefs of finished children, for their parents */
  uint32_t nvals, capvals;
  const dp_expr *tail_atom; /* an atomic result (else its text is in p->arena) */
} flat;

/* Whether a node of kind `kind` prints in a flat body in role r. */
static int flat_kind(int kind, uint32_t r) {
  switch (kind) {
  case DP_CALL: case DP_TUPLE: case DP_PROJ: case DP_REF_CREATE: case DP_REF_READ: case DP_REF_WRITE:
    return r != R_CHAIN;
  case DP_LET: return r == R_CHAIN;
  default: return 0;
  }
}

/* A graph binding's name as it is written, `%12`, in a word (a tref): its
   bytes in memory order, up to 7 digits, then zeros; a larger number is
   the number (first byte not '%'). A name used many times (a DAG's shared
   nodes) is copied, not formatted, at each use. */
static inline uint64_t tref_of(const char *digits, uint32_t n, uint32_t t) {
  uint64_t x = ((uint64_t)t << 8) | 1;
  if (n > 7) return x;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  /* (one load of 8 bytes, cut to the n digits: digits is tnum, 12 bytes) */
  uint64_t d;
  memcpy(&d, digits, 8);
  x = (d << 8) | '%';
  return n == 7 ? x : x & ((1ull << (8 * (n + 1))) - 1);
#else
  char s[8] = {'%'};
  memcpy(s + 1, digits, n);
  memcpy(&x, s, 8);
  return x;
#endif
}

static inline void put_tref(dp__tb *b, uint64_t x) {
  unsigned char first;
  memcpy(&first, &x, 1);
  if (first != '%') {
    put_temp(b, (uint32_t)(x >> 8));
    return;
  }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  size_t n = (size_t)(71 - __builtin_clzll(x)) >> 3; /* up to its last non-zero byte */
#else
  char s[8];
  memcpy(s, &x, 8);
  size_t n = 1;
  while (n < 8 && s[n]) n++;
#endif
  if (tb_room(b, 8) < 0) return;
  memcpy(b->s + b->n, &x, 8);
  b->n += n;
}

size_t dp__print_tref_text(uint64_t x, char *buf) {
  unsigned char w[8];
  memcpy(w, &x, 8); /* (tref_of's layout: the bytes of `%12` in memory order) */
  size_t n = 0;
  if (w[0] != '%') {
    buf[0] = '%';
    n = 1 + fmt_u32(buf + 1, (uint32_t)(x >> 8));
  } else {
    while (n < 8 && w[n]) buf[n] = (char)w[n], n++;
  }
  buf[n] = 0;
  return n;
}

/* The tref of the next graph binding (next_temp, whose digits tnum keeps). */
static uint64_t next_tref(printer *p) {
  uint64_t x = tref_of(p->tnum, p->tnlen, p->next_temp);
  p->next_temp++;
  int i = (int)p->tnlen - 1;
  while (i >= 0 && p->tnum[i] == '9') p->tnum[i--] = '0';
  if (i >= 0) {
    p->tnum[i]++;
  } else { /* 99 -> 100 */
    memmove(p->tnum + 1, p->tnum, p->tnlen);
    p->tnum[0] = '1';
    p->tnlen++;
  }
  return x;
}

static int flat_push_val(flat *w, uint64_t v) {
  uint64_t *a = grow_array(w->vals, &w->capvals, w->nvals + 1, sizeof *a);
  if (!a) return -1;
  w->vals = a;
  a[w->nvals++] = v;
  return 0;
}

/* Child c of a flat node: an atom, or the next bound child's number. A
   variable's use is counted (see name_of). */
static inline void flat_kid(printer *p, dp__tb *b, const dp_expr *c, const uint64_t *v, uint32_t *vi) {
  if (c->h.kind == DP_VAR) {
    put_var(p, b, (const dp_var *)c);
    vslot *s = &p->vcache[vhash((const dp_var *)c)];
    if (s->v == (const dp_var *)c) s->flags |= VC_USED;
  } else if (is_atomic(c)) {
    put_atom(p, b, c);
  } else {
    put_tref(b, v[(*vi)++]);
  }
}

/* Node e's text (put_node's, for a flat body): its bound children's
   numbers are v[0..nv), in the order they were printed (a call's arguments
   before its callee). */
static void flat_node(printer *p, dp__tb *b, const dp_expr *e, const uint64_t *v, uint32_t nv) {
  uint32_t vi = 0;
  switch (e->h.kind) {
  case DP_CALL: {
    const dp_call *c = (const dp_call *)e;
    if (is_atomic(c->fn)) put_atom(p, b, c->fn);
    else put_tref(b, v[nv - 1]);
    if (c->fn->h.kind == DP_CTOR && !c->nargs && !((const dp_ctor *)c->fn)->ninputs) break; /* `Nil` */
    putc_(b, '(');
    for (uint32_t k = 0; k < c->nargs; k++) {
      if (k) put(b, ", ", 2);
      flat_kid(p, b, c->args[k], v, &vi);
    }
    put_attrs(p, b, c->attrs, c->nargs == 0);
    putc_(b, ')');
    break;
  }
  case DP_TUPLE: {
    const dp_tuple *t = (const dp_tuple *)e;
    putc_(b, '(');
    for (uint32_t k = 0; k < t->n; k++) {
      if (k) put(b, ", ", 2);
      flat_kid(p, b, t->fields[k], v, &vi);
    }
    puts_(b, t->n == 1 ? ",)" : ")");
    break;
  }
  case DP_PROJ: {
    char d[11];
    flat_kid(p, b, ((const dp_proj *)e)->tuple, v, &vi);
    d[0] = '.';
    put(b, d, 1 + fmt_u32(d + 1, ((const dp_proj *)e)->index));
    break;
  }
  case DP_REF_CREATE:
    put(b, "ref(", 4);
    flat_kid(p, b, ((const dp_ref_create *)e)->value, v, &vi);
    putc_(b, ')');
    break;
  case DP_REF_READ:
    put(b, "ref_read(", 9);
    flat_kid(p, b, ((const dp_ref_read *)e)->ref, v, &vi);
    putc_(b, ')');
    break;
  case DP_REF_WRITE:
    put(b, "ref_write(", 10);
    flat_kid(p, b, ((const dp_ref_write *)e)->ref, v, &vi);
    put(b, ", ", 2);
    flat_kid(p, b, ((const dp_ref_write *)e)->value, v, &vi);
    putc_(b, ')');
    break;
  default: p->failed = 1;
  }
  put_type_comment(p, b, e);
}

/* Names alone: what flat_node names, the variables e reads (as flat_kid
   and put_atom meet them), without its text. */
static void flat_names(printer *p, dp__tb *b, const dp_expr *e) {
  const dp_expr *const *kids = NULL;
  uint32_t n = 0;
  switch (e->h.kind) {
  case DP_CALL: {
    const dp_call *c = (const dp_call *)e;
    if (c->fn->h.kind == DP_VAR) put_var(p, b, (const dp_var *)c->fn); /* (put_atom's: not counted) */
    kids = (const dp_expr *const *)c->args;
    n = c->nargs;
    break;
  }
  case DP_TUPLE:
    kids = (const dp_expr *const *)((const dp_tuple *)e)->fields;
    n = ((const dp_tuple *)e)->n;
    break;
  case DP_PROJ: kids = (const dp_expr *const *)&((const dp_proj *)e)->tuple; n = 1; break;
  case DP_REF_CREATE: kids = (const dp_expr *const *)&((const dp_ref_create *)e)->value; n = 1; break;
  case DP_REF_READ: kids = (const dp_expr *const *)&((const dp_ref_read *)e)->ref; n = 1; break;
  case DP_REF_WRITE: {
    const dp_ref_write *w = (const dp_ref_write *)e;
    uint32_t vi = 0;
    if (w->ref->h.kind == DP_VAR) flat_kid(p, b, w->ref, NULL, &vi);
    if (w->value->h.kind == DP_VAR) flat_kid(p, b, w->value, NULL, &vi);
    return;
  }
  default: p->failed = 1; return;
  }
  for (uint32_t k = 0; k < n; k++) {
    uint32_t vi = 0;
    if (kids[k]->h.kind == DP_VAR) flat_kid(p, b, kids[k], NULL, &vi);
  }
}

/* The word of shared node e (its tref, or IN_PROGRESS while its children
   print), made when new (*fresh tells); NULL on out of memory. Without
   on_name (whose callback may read marks: the report's does) e is found
   by its mark (dp_expr.mark: its index in p->shared, checked against e,
   as the planner's numbering does), not in the map: a branchy module's
   nodes are nearly all shared, and the map was a probe each and 32 MB of
   tables at a million calls. The marks are put back once the walk is done
   (flat_marks_back): a walk of the planner that printed finds its own. */
static uint64_t *flat_shared(printer *p, const dp_expr *e, int *fresh) {
  if (p->fin && p->fin->slot) {
    uint64_t *w = p->fin->slot(p->fin->ud, p->def_name ? p->def_name : "", e, fresh);
    if (!w) p->slot_failed = 1;
    return w;
  }
  if (!p->by_mark) {
    dp__ptrslot *sl = dp__ptrmap_insert(&p->map, e, fresh);
    return sl ? &sl->word : NULL;
  }
  uint32_t m = e->mark;
  if (m < p->nshared && p->shared[m].e == e) {
    *fresh = 0;
    return &p->shared[m].tref;
  }
  if (p->nshared == p->capshared) {
    uint32_t cap = p->capshared;
    struct shared *s = grow_array(p->shared, &cap, p->nshared + 1, sizeof *s);
    if (!s) return NULL;
    p->shared = s;
    uint32_t c2 = p->capshared;
    uint32_t *o = grow_array(p->oldmarks, &c2, p->nshared + 1, sizeof *o);
    if (!o) return NULL;
    p->oldmarks = o;
    p->capshared = cap;
  }
  m = p->nshared++;
  p->shared[m] = (struct shared){e, 0};
  p->oldmarks[m] = e->mark;
  ((dp_expr *)e)->mark = m; /* (scratch, not the node's value: put back after) */
  *fresh = 1;
  return &p->shared[m].tref;
}

/* Shared node e (met by flat_shared) printed as tref t. */
static void flat_shared_set(printer *p, const dp_expr *e, uint64_t t) {
  if (p->fin && p->fin->slot) {
    int fresh;
    uint64_t *w = p->fin->slot(p->fin->ud, p->def_name ? p->def_name : "", e, &fresh);
    if (w) *w = t;
    return;
  }
  if (!p->by_mark) {
    dp__ptrslot *sl = dp__ptrmap_find(&p->map, e);
    if (sl) sl->word = t;
    return;
  }
  uint32_t m = e->mark;
  if (m < p->nshared && p->shared[m].e == e) p->shared[m].tref = t;
}

/* The marks of the shared nodes as they were before the walk. */
static void flat_marks_back(printer *p) {
  for (uint32_t i = p->nshared; i-- > 0;) ((dp_expr *)p->shared[i].e)->mark = p->oldmarks[i];
  p->nshared = 0;
}

/* Enter non-atomic child c in role r: FLAT_NO when the body is not flat,
   -1 on out of memory, else 0 (c is on the stack, or a shared node printed
   before has its number among the values). */
static int flat_enter(printer *p, flat *w, const dp_expr *c, uint32_t r) {
  if (!flat_kind(c->h.kind, r)) return FLAT_NO;
  if (c->h.rc != 1) {
    if (r != R_ARG) return FLAT_NO; /* (held elsewhere: used here once? the passes count) */
    int fresh;
    uint64_t *word = flat_shared(p, c, &fresh);
    if (!word) return p->slot_failed ? FLAT_NO : -1;
    if (!fresh) return *word == IN_PROGRESS ? FLAT_NO : flat_push_val(w, *word);
    *word = IN_PROGRESS;
  }
  fframe *s = grow_array(w->st, &w->cap, w->n + 1, sizeof *s);
  if (!s) return -1;
  w->st = s;
  uint32_t nc = c->h.kind == DP_CALL ? 1 + ((const dp_call *)c)->nargs
                : c->h.kind == DP_LET ? 3 : dp_expr_nchildren(c);
  s[w->n++] = (fframe){c, 0, nc, w->nvals, r};
  return 0;
}

/* `let %x = v;`, written when the value has printed (its text, if not an
   atom, in p->arena). From here on, a variable held by its let and one
   use is done with once that use prints (VC_SINGLE: see name_of). */
static void flat_let_line(printer *p, const dp_let *l, uint32_t ind) {
  dp__tb *b = p->out;
  indent(b, ind);
  put(b, "let ", 4);
  put_var_decl(p, b, l->var, 0);
  vslot *s = &p->vcache[vhash(l->var)];
  if (s->v == l->var && !(s->flags & VC_INMAP) && l->var->e.h.rc == 2) s->flags = VC_SINGLE;
  put(b, " = ", 3);
  if (is_atomic(l->value)) put_atom(p, b, l->value);
  else if (p->arena.n) put(b, p->arena.s, p->arena.n); /* (names alone: none) */
  put(b, ";\n", 2);
}

/* Node f (popped) has printed its children. */
static int flat_finish(printer *p, flat *w, const fframe *f, uint32_t ind) {
  const uint64_t *v = w->vals + f->vbase;
  uint32_t nv = w->nvals - f->vbase;
  dp__tb *out = p->out;
  switch (f->role) {
  case R_ARG: {
    uint64_t t = next_tref(p);
    if (p->opts->on_name) report_name(p, f->e, 0);
    if (p->fin) p->fin->fin(p->fin->ud, p->def_name ? p->def_name : "", f->e, t, v, nv);
    if (p->flags & DP__PRINT_NAMES_ONLY) {
      flat_names(p, out, f->e);
      w->nvals = f->vbase;
      if (f->e->h.rc != 1) flat_shared_set(p, f->e, t);
      return flat_push_val(w, t);
    }
    indent(out, ind);
    put_tref(out, t);
    put(out, " = ", 3);
    flat_node(p, out, f->e, v, nv);
    put(out, ";\n", 2);
    w->nvals = f->vbase;
    if (f->e->h.rc != 1) flat_shared_set(p, f->e, t);
    return flat_push_val(w, t);
  }
  case R_VALUE:
  case R_TAIL:
    if (p->fin) p->fin->fin(p->fin->ud, p->def_name ? p->def_name : "", f->e, 0, v, nv);
    p->arena.n = 0;
    if (p->flags & DP__PRINT_NAMES_ONLY) flat_names(p, &p->arena, f->e);
    else flat_node(p, &p->arena, f->e, v, nv);
    break;
  case R_ROOT:
    if (p->fin) p->fin->fin(p->fin->ud, p->def_name ? p->def_name : "", f->e, 0, v, nv);
    if (p->flags & DP__PRINT_NAMES_ONLY) flat_names(p, out, f->e);
    else flat_node(p, out, f->e, v, nv);
    break;
  default: break;
  }
  w->nvals = f->vbase;
  return 0;
}

static int flat_walk(printer *p, flat *w, uint32_t ind) {
  dp__tb *out = p->out;
  while (w->n) {
    fframe *f = &w->st[w->n - 1];
    const dp_expr *e = f->e, *c;
    if (f->k >= f->nc) {
      fframe done = *f;
      w->n--;
      if (flat_finish(p, w, &done, ind) < 0) return -1;
      if (p->failed || p->arena.failed || out->failed) break; /* (names and text: checked once a node) */
      /* names alone: the text is made (it names the variables as it
         reads them) but not kept (nothing of it is read again) */
      if ((p->flags & DP__PRINT_NAMES_ONLY) && out->n >= 65536) out->n = 0;
      /* streaming, as print_nodes */
      if (out->write && out->inner && out->n >= DP__TB_FLUSH_AT && !p->nfrees) {
        p->streamed = 1;
        if (dp__tb_flush(out) < 0) return -1;
      }
      continue;
    }
    uint32_t k = f->k++, r = R_ARG;
    if (e->h.kind == DP_CALL) { /* arguments before the callee, as TVM */
      const dp_call *call = (const dp_call *)e;
      c = k < call->nargs ? call->args[k] : call->fn;
    } else if (e->h.kind == DP_LET) {
      const dp_let *l = (const dp_let *)e;
      if (k == 0) {
        name_of(p, l->var, 0, 1);
        continue;
      }
      if (k == 1) {
        c = l->value;
        r = R_VALUE;
      } else {
        flat_let_line(p, l, ind);
        c = l->body;
        r = c && c->h.kind == DP_LET ? R_CHAIN : R_TAIL;
        if (c && is_atomic(c)) w->tail_atom = c;
        /* the let is done once its line is written (its finish would do
           nothing more, and came after its body's): its body takes its
           frame, so that a chain of a million lets keeps one frame, not a
           million (24 MB) */
        w->nvals = f->vbase;
        w->n--;
      }
    } else {
      c = dp_expr_child(e, k);
    }
    if (!c) return -1;
    if (is_atomic(c)) continue;
    int rc = flat_enter(p, w, c, r);
    if (rc < 0) return rc;
  }
  return p->failed || p->arena.failed || out->failed ? -1 : 0;
}

/* Print root in one walk when its body is one scope: 0, -1 (out of memory,
   a failed write), DP__PRINT_AGAIN (as run), or FLAT_NO before anything
   but names and text of the output changed. */
static int flat_print(printer *p, dp__tb *out, const dp_expr *root) {
  const dp_func *fn = root->h.kind == DP_FUNC ? (const dp_func *)root : NULL;
  const dp_expr *body = fn ? fn->body : root;
  uint32_t ind = fn ? 1 : 0, r;
  if (!body) return FLAT_NO;
  if (body->h.kind == DP_LET) r = R_CHAIN;
  else r = fn ? R_TAIL : R_ROOT;
  if (!is_atomic(body) && (!flat_kind(body->h.kind, r) || (fn && body->h.rc != 1))) return FLAT_NO;
  p->out = out;
  p->tnum[0] = '0';
  p->tnlen = 1;
  p->by_mark = !p->opts->on_name;
  flat w;
  memset(&w, 0, sizeof w);
  int rc = -1;
  if (!p->def_name) name_free_vars(p, root);
  /* most names are the let chain's variables: the set of names, should
     it be needed (make_exact), is made once at their number instead of
     doubling up to it (24 MB of fresh pages more at a million lets) */
  for (const dp_expr *x = body; x && x->h.kind == DP_LET && x->h.rc == 1 && p->nbinders < UINT32_MAX / 4;
       x = ((const dp_let *)x)->body)
    p->nbinders++;
  if (fn) {
    p->nbinders += fn->nparams < UINT32_MAX / 4 ? fn->nparams : 0;
    for (uint32_t k = 0; k < fn->nparams; k++) binder_name(p, fn->params[k]);
    put_func_head_of(p, out, fn, p->def_name != NULL, 0);
    p->body_start = out->n;
  }
  if (p->failed) goto done;
  if (is_atomic(body)) {
    w.tail_atom = body;
  } else {
    fframe *s = grow_array(NULL, &w.cap, 1, sizeof *s);
    if (!s) goto done;
    w.st = s;
    s[w.n++] = (fframe){body, 0, body->h.kind == DP_LET ? 3 : dp_expr_nchildren(body), 0, r};
    if ((rc = flat_walk(p, &w, ind)) != 0) goto done;
    rc = -1;
  }
  /* the result: after the lines, in a function's body a line of its own */
  if (fn) indent(out, 1);
  if (w.tail_atom) put_atom(p, out, w.tail_atom);
  else if (r != R_ROOT && p->arena.n) put(out, p->arena.s, p->arena.n);
  if (fn) {
    put(out, "\n}", 2);
    if (!p->def_name) put_type_comment(p, out, root);
  }
  if (p->nfrees && !(p->flags & (DP__PRINT_NO_DECLS | DP__PRINT_NAMES_ONLY))) {
    if (p->streamed) {
      rc = DP__PRINT_AGAIN;
      goto done;
    }
    declare_frees(p, out);
  }
  rc = p->failed || out->failed || p->arena.failed ? -1 : 0;
done:
  flat_marks_back(p);
  free(w.st);
  free(w.vals);
  return rc;
}

/* The lines of the outermost scope, and of the body of a root function
   after its head, go straight to the output, then the root's own text:
   so the bulk of the text is written once, where it ends up. Inline
   texts wait on a stack of their own. */
static int run(printer *p, dp__tb *out, const dp_expr *root) {
  p->out = out;
  int rc = -1;
  if (is_atomic(root)) {
    if (!p->def_name) name_free_vars(p, root);
    put_atom(p, out, root);
  } else {
    if (new_scopes(p, 1, NOSCOPE, 0) == NOSCOPE || discover(p, root) < 0) goto done;
    if (dp__ptrmap_reserve(&p->map, p->nbinders) < 0) goto done;
    if (!p->def_name) name_free_vars(p, root);
    place_all(p, 0);
    if (p->failed || print_nodes(p, 0) < 0) goto done;
    if (p->nfrees && !(p->flags & (DP__PRINT_NO_DECLS | DP__PRINT_NAMES_ONLY))) {
      if (p->streamed) { /* (their place was written out: the caller prints it again) */
        rc = DP__PRINT_AGAIN;
        goto done;
      }
      declare_frees(p, out);
    }
  }
  rc = p->failed || out->failed ? -1 : 0;
done:
  return rc;
}

/* A fresh printer of these options. */
static void printer_init(printer *p, const char *def_name, const dp_print_opts *o,
                         dp__devnames *dn, dp__metaw *mw) {
  static const dp_print_opts none = {0, NULL, NULL, NULL, NULL};
  memset(p, 0, sizeof *p);
  p->opts = o ? o : &none;
  p->flags = p->opts->flags;
  p->devnames = dn;
  p->meta = mw;
  p->def_name = def_name;
  p->map = DP__PTRMAP_INIT;
  if ((p->flags & DP__PRINT_FIN) && (p->flags & DP__PRINT_NAMES_ONLY)) p->fin = p->opts->ud;
}

int dp__print_root(dp__tb *out, const dp_expr *root, const char *def_name,
                   const dp_print_opts *o, dp__devnames *dn, dp__metaw *mw) {
  printer p;
  printer_init(&p, def_name, o, dn, mw);
  size_t start = out->n;
  uint64_t flushed = out->flushed;
  int rc = FLAT_NO;
  int names = (p.flags & DP__PRINT_NAMES_ONLY) != 0;
  p.defer = names && p.opts->on_name;
  if ((!p.opts->on_name || names) && !is_atomic(root)) rc = flat_print(&p, out, root);
  if (rc == 0 && p.defer) { /* the names it gave, told in the order given */
    p.defer = 0;
    for (uint32_t i = 0; i < p.ntold; i++) tell_name(&p, p.told[i].e, p.told[i].v, p.told[i].temp);
    if (p.failed) rc = -1;
  }
  if (rc == FLAT_NO && p.fin) p.fin->fin(p.fin->ud, def_name ? def_name : "", NULL, 0, NULL, 0);
  if (rc == FLAT_NO && out->flushed != flushed) {
    rc = DP__PRINT_AGAIN; /* (part of it was written out: the caller goes back) */
  } else if (rc == FLAT_NO) { /* the three passes, afresh */
    out->n = start;
    printer_free(&p);
    printer_init(&p, def_name, o, dn, mw);
    rc = run(&p, out, root);
  }
  printer_free(&p);
  return rc;
}
