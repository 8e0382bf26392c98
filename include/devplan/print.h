/*
 * Leaving the IR: the printer (text format of relay-text.md) and
 * structural equality with alpha-equivalence.
 */
#ifndef DEVPLAN_PRINT_H
#define DEVPLAN_PRINT_H

#include "module.h"

enum {
  DP_PRINT_TYPES = 1,         /* add the checked types as comments: `/ * ty=... * /` */
  DP_PRINT_SHORT_DEVICES = 2, /* a virtual device prints as a short name (`@cpu`,
                                 `@cuda:1.texture`), each named once in a legend of
                                 `//` comments at the top: for reading, the text no
                                 longer re-parses */
  DP_PRINT_PARAM_LINES = 4,   /* a function of two or more parameters has each on
                                 a line of its own */
  DP_PRINT_SPANS = 8,         /* each node's source position as TVM prints spans:
                                 `/ * span=model.relay:3:9 * /` (with the type when
                                 DP_PRINT_TYPES: `/ * ty=T span=... * /`); the source
                                 name is found in dp_print_opts.ctx */
  DP_PRINT_META = 16          /* tensor constants and virtual devices as meta[KIND][i]
                                 references, the #[metadata] section (TVM's JSON)
                                 after the text */
};

/* Text of a module / expression; re-parses to an equal module (unless
   DP_PRINT_SHORT_DEVICES). malloc'd; *len (if not NULL) receives the
   length. NULL on out of memory. */
char *dp_print_module(const dp_module *m, int flags, size_t *len);
char *dp_print_expr(const dp_expr *e, int flags, size_t *len);

/* Told each printed name as it is given: a graph binding `%3` or a
   variable `%x` (its binding or first use) of function `fn` ("" when a
   bare expression is printed). Lets a reader find the node behind a name
   it sees in the text. */
typedef void (*dp_print_name_fn)(void *ud, const char *fn, const dp_expr *e, const char *name);

/* Where dp_print_module_with / dp_print_expr_with build the text when
   dp_print_opts.block is set: one block of alloc (realloc's contract, as a
   lua_Alloc: alloc(ud, p, osize, nsize), p NULL makes a block, nsize 0
   frees it and returns NULL), the text at offset head. The text returned
   then lies in that block, which is head + length + 1 bytes (the NUL
   last) and the caller's to free with alloc: a caller whose strings are
   such blocks (a Lua string after its header) takes the text as it is. */
typedef struct dp_print_block {
  void *(*alloc)(void *ud, void *p, size_t osize, size_t nsize);
  void *ud;
  size_t head;
} dp_print_block;

typedef struct dp_print_opts {
  int flags;                /* DP_PRINT_* */
  dp_print_name_fn on_name; /* NULL: no names reported */
  void *ud;
  const dp_ctx *ctx;        /* the sources of spans (DP_PRINT_SPANS); NULL: a module's own */
  const dp_print_block *block; /* NULL: the text is malloc'd */
} dp_print_opts;

/* dp_print_module / dp_print_expr with options (o NULL: none). */
char *dp_print_module_with(const dp_module *m, const dp_print_opts *o, size_t *len);
char *dp_print_expr_with(const dp_expr *e, const dp_print_opts *o, size_t *len);
/* The names dp_print_module_with(m, o) gives, told to o->on_name (a
   definition's once it is named whole), without keeping the text (a report
   naming nodes as the text does; o->flags are not read: they change no
   name). 0, or -1 on out of memory. */
int dp_print_module_names(const dp_module *m, const dp_print_opts *o);
/* Where dp_print_module_to writes: write(ud, s, n) takes the next n bytes
   (0, or -1: a failed write, which ends printing); rewind(ud, offset)
   goes back to byte offset of what was written, dropping what follows
   (0, or -1), or NULL where that cannot be done (a pipe). */
typedef struct dp_print_sink {
  int (*write)(void *ud, const char *s, size_t n);
  int (*rewind)(void *ud, uint64_t offset);
  void *ud;
} dp_print_sink;
/* The text of dp_print_module_with, written out as it is printed: a large
   module's text is never held whole (a megabyte or so at a time; with
   rewind NULL, a definition at a time; with DP_PRINT_SHORT_DEVICES, whose
   legend comes first, all of it). 0, or -1 (out of memory, or a write
   failed: the sink knows why). */
int dp_print_module_to(const dp_module *m, const dp_print_opts *o, const dp_print_sink *sink);
/* `primfn @gem(Tensor[(2), float32] scope="a", ...) -> T scope="b";` malloc'd. */
char *dp_print_primfn(const dp_primfn *pf);
/* `type List[A] {\n  Cons(A, List[A]),\n  Nil,\n}` as a module prints it. malloc'd. */
char *dp_print_typedef(const dp_typedef *td);
/* A match pattern as written: `Cons(%h, _)`, `(%a, %b)`, `(_,)`. malloc'd. */
char *dp_print_pattern(const dp_pattern *p);

/* The first difference found by structural equality. */
typedef struct dp_diff {
  char *path;   /* "@main.body.args[1].fn", malloc'd */
  char *lhs;    /* the two sides printed, malloc'd */
  char *rhs;
} dp_diff;

/* Structural equality as TVM's structural_equal with map_free_vars=True:
   variables (and type variables) are matched by binding position, free
   variables are mapped on first meeting; attributes, virtual devices, type
   annotations, checked types are not compared (annotations are), constants
   by value. Returns 1 when equal, 0 when not (diff filled in if not NULL),
   -1 when memory ran out before it could tell. */
int dp_expr_equal(const dp_expr *a, const dp_expr *b, dp_diff *diff);
int dp_module_equal(const dp_module *a, const dp_module *b, dp_diff *diff);
int dp_type_equal(const dp_type *a, const dp_type *b);
void dp_diff_clear(dp_diff *d);

/* Structural hash, consistent with dp_expr_equal. */
uint64_t dp_expr_hash(const dp_expr *e);

#endif
