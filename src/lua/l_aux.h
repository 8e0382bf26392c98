/*
 * The Lua binding's auxiliary library (internal to src/lua), as lauxlib is
 * Lua's: what every binding file uses, with no knowledge of which parts
 * the binding has (l_init.c opens those).
 *
 * - The context of a Lua state (one per state, with the built-in operators).
 * - Objects as userdata: one interned or shared C object is one Lua value
 *   (dp__lua_push keeps a weak cache from C pointer to userdata, so pushing
 *   the same object twice gives rawequal values); each userdata holds one
 *   reference, dropped by __gc. Metatables per object type.
 * - Checks of arguments with clear messages, option tables, spans, lists.
 * - Errors: devplan.Error values, raised or pushed, and user callbacks'
 *   errors turned into dp_err.
 *
 * Rule for every constructor binding: do all the checks that may raise a
 * Lua error first, collecting only borrowed pointers (kept alive by the
 * Lua values on the stack); take new C references only after that, so an
 * error never leaks a half-built node.
 */
#ifndef DEVPLAN_L_AUX_H
#define DEVPLAN_L_AUX_H

#include <string.h>
#include <lua.h>
#include <lauxlib.h>
#include "devplan/devplan.h"

typedef struct dp__lud {
  dp_obj *obj;
} dp__lud;

/* The context of this Lua state: made on first use, with the built-in
   operators, and closed when the state closes. */
dp_ctx *dp__lua_ctx(lua_State *L);

/* --- objects as userdata --- */

/* Creates the metatable for objects of `type` (name is its registry name,
   e.g. "devplan.Expr"), with __gc and __name set, and leaves it on the
   stack for the caller to fill (__index, __tostring, ...). For expressions
   and types one metatable serves all kinds. */
void dp__lua_newmeta(lua_State *L, int type, const char *name);
/* Like dp__lua_newmeta, with __index and __tostring set; pops the metatable.
   The usual shape of a class whose fields are read by one C function. */
void dp__lua_newclass(lua_State *L, int type, const char *name, lua_CFunction index,
                      lua_CFunction tostring);

/* Push the Lua value of obj (nil for NULL); the caller keeps its reference. */
void dp__lua_push(lua_State *L, void *obj);
/* Push and drop the caller's reference (for new references). */
void dp__lua_push_owned(lua_State *L, void *obj);
/* The ending of a binding that made obj (a new reference): pushes it and
   returns 1. With err set, releases obj and raises err instead; with obj
   NULL and no err, raises "out of memory". */
int dp__lua_push_new(lua_State *L, void *obj, dp_err *err);
/* Pushes the malloc'd string s and frees it (returns 1); NULL raises "out
   of memory". _lstr takes the length, _cstr uses strlen. */
int dp__lua_push_lstr(lua_State *L, char *s, size_t len);
int dp__lua_push_cstr(lua_State *L, char *s);
/* Pushes a list (a Lua table) of the Lua values of n C objects. */
void dp__lua_push_list(lua_State *L, void *const *items, uint32_t n);
/* Pushes t[name] of the table t at the top, first making it an empty table
   when it is not a table (parts of the binding share dp.debug, dp.passes). */
void dp__lua_subtable(lua_State *L, const char *name);
/* Pushes the text of the module or expression at idx (flags of print.h);
   raises a Lua argument error for anything else. Returns 1. */
int dp__lua_push_printed(lua_State *L, int idx, int flags);
/* A printed text Lua takes as a string without a copy (l_text.c): init
   sets t->block for dp_print_opts.block (NULL where this Lua's strings
   cannot be read: then the text is malloc'd); push pushes the text s of
   length len the printer returned (NULL raises "out of memory") and
   returns 1. t lives in the caller's frame until then. */
typedef struct dp__lua_text {
  const dp_print_block *block;
  dp_print_block blk;
  lua_Alloc f; /* the state's allocator */
  void *ud;
  void *pending; /* the block the next string of size bytes takes */
  size_t size;
  const char *src; /* the text, of len bytes */
  size_t len;
  int taken;       /* pending was taken */
} dp__lua_text;
void dp__lua_text_init(lua_State *L, dp__lua_text *t);
int dp__lua_text_push(lua_State *L, dp__lua_text *t, char *s, size_t len);
/* A string built piece by piece in such a block: _new pushes its holder (a
   userdata that frees the block if an error ends the building) with room
   for cap bytes (0: the block is made at the first _room, as big as
   asked); _add appends (raising "out of memory"); _push pushes the string
   (the holder stays where it is, empty) and returns 1. _try_grow makes
   room for extra more bytes without raising (-1 when out of memory: for a
   caller that must let go of something first, a file); _drop frees the
   block now. */
typedef struct dp__lua_sbuf {
  dp__lua_text t;
  char *s; /* the text so far, n of cap bytes (the block's head before s) */
  size_t n, cap;
} dp__lua_sbuf;
dp__lua_sbuf *dp__lua_sbuf_new(lua_State *L, size_t cap);
int dp__lua_sbuf_try_grow(dp__lua_sbuf *b, size_t extra);
void dp__lua_sbuf_grow(lua_State *L, dp__lua_sbuf *b, size_t extra);
void dp__lua_sbuf_drop(dp__lua_sbuf *b);
static inline void dp__lua_sbuf_room(lua_State *L, dp__lua_sbuf *b, size_t extra) {
  if (!b->s || b->cap - b->n <= extra) dp__lua_sbuf_grow(L, b, extra);
}
static inline void dp__lua_sbuf_add(lua_State *L, dp__lua_sbuf *b, const char *s, size_t n) {
  dp__lua_sbuf_room(L, b, n);
  memcpy(b->s + b->n, s, n);
  b->n += n;
}
int dp__lua_sbuf_push(lua_State *L, dp__lua_sbuf *b);
/* The DP_PRINT_* flags of the print options at idx (dp.astext's, names
   aside; nil: none), checked for unknown keys in the name of who (NULL:
   the caller checked them). (l_irmodule.c) */
int dp__lua_print_flags(lua_State *L, int idx, const char *who);

/* The object at idx if it is of `type`, else NULL / a Lua argument error
   naming the type (dp_objtype_name). */
void *dp__lua_test(lua_State *L, int idx, int type);
void *dp__lua_check(lua_State *L, int idx, int type);
/* Any core object at idx, or NULL. */
dp_obj *dp__lua_testobj(lua_State *L, int idx);

/* --- option tables and spans --- */

/* Raises a Lua argument error unless idx is none, nil or a table. */
void dp__lua_check_opts(lua_State *L, int idx);
/* Raises an argument error naming `who` when the option table at idx (if
   a table) has a key not in `keys` (NULL-terminated): unknown options are
   errors, never ignored. */
void dp__lua_check_opt_keys(lua_State *L, int idx, const char *const keys[], const char *who);
/* Field `key` of the option table at idx pushed (nil when absent). */
int dp__lua_opt_field(lua_State *L, int idx, const char *key);
/* Pushes t[i] of the table at idx, or t[key] when t[i] is nil: entries
   written {a, b} or {name_a =, name_b =}. Returns the pushed value's type. */
int dp__lua_item(lua_State *L, int idx, lua_Integer i, const char *key);
/* opts.span of the option table at idx (nil or none: no span). */
dp_span dp__lua_opt_span(lua_State *L, int idx);
/* Returns dp__lua_opt_span of the option table at idx after checking that
   it is none, nil or a table with no key but `span`: the common trailing
   `opts` argument of the constructors. */
dp_span dp__lua_span_opts(lua_State *L, int idx);
/* Pushes {source=, line=, col=} or nil for an absent span. */
void dp__lua_push_span(lua_State *L, dp_span s);

/* --- argument checks with clear messages --- */

dp_expr *dp__lua_check_expr(lua_State *L, int idx);
dp_var *dp__lua_check_var(lua_State *L, int idx);
dp_type *dp__lua_check_type(lua_State *L, int idx);
/* nil/none -> NULL, else a type */
dp_type *dp__lua_opt_type(lua_State *L, int idx);
dp_vdev *dp__lua_opt_vdev(lua_State *L, int idx, const char *what);
/* Borrowed pointers of the list (a table) at idx, each of `type` (and,
   for expressions, kind `kind` when not 0), into a scratch buffer that the
   Lua GC owns (or `small` when it fits `nsmall`). `what` names the list in
   messages. *n receives the length. */
void **dp__lua_check_list(lua_State *L, int idx, int type, int kind, const char *what,
                          void **small, uint32_t nsmall, uint32_t *n);
/* The same for an optional list: none or nil gives `small` with *n = 0. */
void **dp__lua_opt_list(lua_State *L, int idx, int type, int kind, const char *what,
                        void **small, uint32_t nsmall, uint32_t *n);
/* An optional list of type parameters (each a dp.type.var) at idx. */
void **dp__lua_opt_type_params(lua_State *L, int idx, void **small, uint32_t nsmall, uint32_t *n);

/* --- errors --- */

/* Raise e as a Lua error (a devplan.Error value: fields message, code,
   source, line, col, notes = { {message=, line=, col=}, ... }, with a
   __tostring giving dp_err_format). Frees e. Does not return. */
int dp__lua_error(lua_State *L, dp_err *e);
/* Raise the devplan.Error "out of memory" (code "memory"): what a C
   allocation that failed becomes. Does not return. */
int dp__lua_oom(lua_State *L);
/* Push e as a devplan.Error value (frees e). */
void dp__lua_push_error(lua_State *L, dp_err *e);
/* dp.Error{message =, code =, ...} and dp.is_error(v) (see l_aux.c). */
int dp__lua_error_new(lua_State *L);
int dp__lua_is_error(lua_State *L);
/* Turn the Lua error value at the top of the stack (from lua_pcall of a
   user callback) into a dp_err (DP_ERR_CALLBACK); pops it. */
dp_err *dp__lua_toerr(lua_State *L, const char *what);
/* Replaces the error value at the top of the stack by its text and returns
   it; never raises, even when the value's __tostring does. */
const char *dp__lua_errtext(lua_State *L);
/* core._error_text(v): the same text for the Lua side (cli, passes). */
int dp__lua_error_text(lua_State *L);

/* A user's hook called from C (capability, costs, bandwidths): the function
   at stack index idx called as fn(a, b), a and b core objects pushed as
   their Lua values; protected, so a raise (or running out of memory) is
   err (a "callback" error naming `what`). Its one result at the top, or -1
   + err. */
int dp__lua_call_hook(lua_State *L, int idx, void *a, void *b, const char *what, dp_err **err);
/* Pops the hook's result: a number into *out (0), else -1 + err ("WHAT
   must return UNIT"). */
int dp__lua_hook_number(lua_State *L, const char *what, const char *unit, double *out, dp_err **err);

#endif
