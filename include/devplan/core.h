/*
 * devplan core: objects, reference counts, contexts, source spans, errors.
 *
 * Every heap object of the core starts with a dp_obj header and is reference
 * counted. dp_retain/dp_release work on any of them; releasing the last
 * reference frees the object and releases what it holds, with an explicit
 * work list (never recursion on the C stack), so freeing a 1,000,000-deep
 * expression chain is safe.
 *
 * Each object has a type (dp_objtype): the core's own are fixed; a layer
 * above (the planner's state) registers its own with a name and a free
 * function, so the core never names them.
 *
 * A dp_ctx owns the interning tables (targets, virtual devices, types), the
 * operator registry and the table of source names. A new context is empty:
 * Relay's operators are a layer above it (op.h, dp_register_builtin_ops).
 * Interned objects retain their context, so a context lives until the last
 * object made in it goes.
 *
 * No function of the core aborts or exits on bad input: a function that can
 * fail returns NULL (or a negative number) and, when `err` is not NULL,
 * stores a new dp_err in *err that the caller frees with dp_err_free.
 */
#ifndef DEVPLAN_CORE_H
#define DEVPLAN_CORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define DP_VERSION "0.1.0"

/* The types of the core's objects (dp_obj.type). A layer above the core
   (the planner's state) registers its own with dp_objtype_register. */
typedef enum dp_objtype {
  DP_OBJ_CTX = 1,
  DP_OBJ_TARGET,
  DP_OBJ_VDEV,
  DP_OBJ_CONFIG,
  DP_OBJ_TYPE,
  DP_OBJ_EXPR,
  DP_OBJ_PATTERN,
  DP_OBJ_ATTRS,
  DP_OBJ_TYPEDEF,
  DP_OBJ_PRIMFN,
  DP_OBJ_MODULE,
  DP_OBJ__CORE_END /* the first id dp_objtype_register gives */
} dp_objtype;

/* Header of every core object. `kind` is the sub-kind (expression kind,
   type kind, ...), `flags` free for the object's own use. */
typedef struct dp_obj {
  uint32_t rc;
  uint8_t type;
  uint8_t kind;
  uint16_t flags;
} dp_obj;

/* Add a reference; returns its argument (NULL is allowed and ignored). */
void *dp_retain(void *obj);
/* Drop a reference; frees when it was the last one (NULL ignored). */
void dp_release(void *obj);

/* --- object types: each frees itself without recursion ---
   A type's free function releases its children with dp_release_deferred,
   which decrements and, on zero, queues the child on the running work list
   instead of recursing, then frees the object's own memory. */
typedef struct dp_worklist dp_worklist;
typedef void (*dp_free_fn)(dp_obj *obj, dp_worklist *wl);
void dp_release_deferred(dp_worklist *wl, void *obj);
/* Registers an object type made outside the core: `name` says what it is
   in messages ("Domains"; kept, not copied), `free_fn` frees one. Returns
   the new type id for dp_obj.type, or 0 when all ids (up to 255) are taken.
   Register once and keep the id (e.g. in a function-local static). */
int dp_objtype_register(const char *name, dp_free_fn free_fn);
/* The name of an object type ("Expr", "VirtualDevice", ...), or NULL. */
const char *dp_objtype_name(int type);

/* --- source spans --- */
/* `source` is an id from dp_ctx_source (0: no source known). line and col
   count from 1; line 0 means the span is absent; col 0 a position with no
   column (an imported ONNX node: source its name, line 1 + its index). */
typedef struct dp_span {
  uint32_t source;
  uint32_t line;
  uint32_t col;
} dp_span;

#define DP_NOSPAN ((dp_span){0, 0, 0})

/* --- contexts --- */
typedef struct dp_ctx dp_ctx;

/* A new, empty context (rc = 1): no operator is registered in it. Most
   users want the built-in operators as well: dp_register_builtin_ops
   (op.h) adds them. */
dp_ctx *dp_ctx_new(void);
/* The owner's end of a context: empties the operator registry (calls that
   hold an operator keep it) and drops the owner's reference. Use it instead
   of dp_release(ctx) when operators were registered with an object (virtual
   device, constant) as an attribute default: such a default retains the
   context, so only closing breaks that cycle. */
void dp_ctx_close(dp_ctx *ctx);
/* Id of a source name ("model.relay", "<string>"), interned in the context. */
uint32_t dp_ctx_source(dp_ctx *ctx, const char *name); /* 0: out of memory */
/* The name behind a source id, or "<unknown>". */
const char *dp_ctx_source_name(const dp_ctx *ctx, uint32_t id);
/* Live interned targets, virtual devices and types of ctx (any pointer may
   be NULL): a way to check that dropped objects left their tables. */
void dp_ctx_counts(const dp_ctx *ctx, size_t *ntargets, size_t *nvdevs, size_t *ntypes);

/* --- errors --- */
typedef enum dp_errcode {
  DP_ERR_GENERIC = 1,
  DP_ERR_MEMORY,   /* out of memory */
  DP_ERR_VALUE,    /* bad argument value (unknown kind, malformed option...) */
  DP_ERR_TYPE,     /* type inference */
  DP_ERR_SYNTAX,   /* text input */
  DP_ERR_NAME,     /* unknown or duplicate name */
  DP_ERR_CONFLICT, /* planner: constraints that cannot be unified */
  DP_ERR_CALLBACK, /* a user callback (e.g. Lua) raised an error */
  DP_ERR_VERIFY    /* planner: a planned module that is not consistent (dp_plan_verify) */
} dp_errcode;

/* A note attached to an error: another position that explains it
   (the other constraint of a conflict, a step of a unification chain). */
typedef struct dp_note {
  char *msg;
  dp_span span;
} dp_note;

typedef struct dp_err {
  dp_errcode code;
  char *msg;        /* what is wrong, without the position */
  dp_span span;     /* where (line 0 if unknown) */
  char *source;     /* source name of span, or NULL */
  uint32_t nnotes;
  dp_note *notes;
} dp_err;

/* Make an error (printf-style message). Never returns NULL: on out of
   memory a static error is returned, which dp_err_free ignores. */
dp_err *dp_err_new(dp_errcode code, dp_span span, const char *fmt, ...);
/* Same with the source name resolved through ctx. */
dp_err *dp_err_at(dp_ctx *ctx, dp_errcode code, dp_span span, const char *fmt, ...);
/* Append a note (printf-style). Returns 0, or -1 on out of memory. */
int dp_err_note(dp_err *err, dp_span span, const char *fmt, ...);
/* Set *out = e if out is not NULL, else free e. Convenience for callers. */
void dp_err_set(dp_err **out, dp_err *e);
/* Whole message: "source:line:col: msg" followed by the notes, one per line.
   Returned string is malloc'd. */
char *dp_err_format(const dp_err *err);
void dp_err_free(dp_err *err);

/* --- memory --- */
/* malloc/calloc/realloc that return NULL on failure (callers handle it). */
void *dp_malloc(size_t n);
void *dp_calloc(size_t n, size_t size);
void *dp_realloc(void *p, size_t n);
/* Asks that block p of n bytes (just allocated by malloc or realloc, not
   yet written) be backed by huge pages, as dp_malloc's large blocks are:
   fewer page faults. A hint: nothing under a huge page, or where the
   system has none. Returns p. (For allocators of a host's, such as a Lua
   state's.) */
void *dp_advise_huge(void *p, size_t n);
/* The size to ask malloc for, for a block of n bytes: n, or for a block of
   a megabyte and more where the system has huge pages, a little less than
   whole huge pages, so that the block lies on them (Linux maps such a
   block on a huge page boundary). dp_malloc and friends use it. */
size_t dp_huge_size(size_t n);
/* 1 when the system backs memory with transparent huge pages only where a
   program asks for them (Linux's "madvise" mode, a common default): glibc's
   own heap then has none unless its glibc.malloc.hugetlb tunable is set,
   which the devplan executable does (src/cli/main.c). 0 otherwise. */
int dp_huge_pages_on_request(void);
char *dp_strdup(const char *s);
/* vsnprintf into a string of its own (malloc'd), or NULL. */
char *dp_vformat(const char *fmt, va_list ap);
/* At most n bytes of s, NUL-terminated (malloc'd), or NULL. */
char *dp_strndup(const char *s, size_t n);
/* Grow *arr (of *cap items of `elem` bytes) to hold at least `need` items,
   doubling from 16. 0, or -1 on out of memory (*arr is left as it was). */
int dp_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem);
/* dp_grow eight times at a step (at least to need), for arrays that grow
   with a module (a walk's stack, records, copies): realloc copies a block
   it cannot grow in place onto pages never touched before, and at eight
   times a step those copies come to an eighth of the final size, not its
   whole; capacity never written is never touched. */
int dp_grow8(void **arr, uint32_t *cap, uint32_t need, size_t elem);
/* dp_grow for parallel arrays: the n arrays *arrs[i] (of elems[i] bytes an
   item) share the capacity *cap, grown as dp_grow grows one to hold at
   least `need` items. 0, or -1 on out of memory (*cap is left as it was;
   every array keeps its items, some may have room for more). */
int dp_grow_arrays(uint32_t *cap, uint32_t need, uint32_t n, void **const arrs[], const size_t elems[]);

/* --- testing aid: allocation failure injection ---
   Every heap allocation of the library (core, parser, patterns, planner,
   the Lua binding's own) goes through dp_malloc/dp_calloc/dp_realloc.
   dp_debug_fail_alloc(n, 0) makes the n-th of them from now fail once;
   with persistent = 1 the n-th and every later one fail; n = 0 turns
   injection off. The environment variable DEVPLAN_FAIL_ALLOC=N (one-shot)
   or N+ (persistent) arms it from the process's first allocation. Each
   failure must come out as a DP_ERR_MEMORY error (or a NULL result the
   caller reports), never a crash or a leak. Not thread-safe (a test aid). */
void dp_debug_fail_alloc(uint64_t n, int persistent);
/* Allocations counted since injection was armed (0 when it is off): after a
   run with n beyond the count, this says how many there were. */
uint64_t dp_debug_alloc_count(void);

#endif
