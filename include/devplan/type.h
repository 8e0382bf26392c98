/*
 * Types of the IR: tensors (static and unknown dimensions), tuples,
 * functions, type variables, ADT type applications, references and storage.
 *
 * Types are immutable and interned in their context (hash-consed): two
 * structurally equal types are the same pointer, except type variables,
 * which are distinct objects compared by identity (alpha-equivalence is the
 * job of dp_structural_equal).
 */
#ifndef DEVPLAN_TYPE_H
#define DEVPLAN_TYPE_H

#include "core.h"

/* Data types, packed: code (8 bits) | bits (8) | lanes (16). */
typedef uint32_t dp_dtype;
enum { DP_DT_INT = 0, DP_DT_UINT = 1, DP_DT_FLOAT = 2, DP_DT_BOOL = 3, DP_DT_BFLOAT = 4 };
#define DP_DTYPE(code, bits, lanes) ((dp_dtype)(((code) << 24) | ((bits) << 16) | (lanes)))
#define DP_DTYPE_CODE(d) ((int)((d) >> 24))
#define DP_DTYPE_BITS(d) ((int)(((d) >> 16) & 0xff))
#define DP_DTYPE_LANES(d) ((int)((d) & 0xffff))
#define DP_FLOAT32 DP_DTYPE(DP_DT_FLOAT, 32, 1)
#define DP_INT64 DP_DTYPE(DP_DT_INT, 64, 1)
#define DP_INT32 DP_DTYPE(DP_DT_INT, 32, 1)
#define DP_BOOL DP_DTYPE(DP_DT_BOOL, 1, 1)
/* "float32", "int64", "bool", "uint8", "float16", "float32x4" -> dtype; 0 on error
   (0 is never a valid dtype). */
dp_dtype dp_dtype_parse(const char *s);
/* Writes the name into buf (at least 16 bytes); returns buf. */
const char *dp_dtype_name(dp_dtype d, char *buf);
/* Byte size of one element (bool: 1). */
size_t dp_dtype_bytes(dp_dtype d);
/* The scalar dtype name ("float32", "int8", "bool", ...) closest to an
   unknown one (suggest.h), or NULL. */
const char *dp_dtype_suggest(const char *name);

typedef enum dp_typekind {
  DP_TY_TENSOR = 1, /* Tensor[(d0, ..), dtype]; a scalar has ndim 0 */
  DP_TY_TUPLE,      /* (T1, T2) */
  DP_TY_FUNC,       /* fn (T1, T2) -> T3; with type params fn [A, B](A) -> B (as TVM) */
  DP_TY_VAR,        /* a type variable (ADT parameter, polymorphic constructor) */
  DP_TY_ADT,        /* List[T]: an ADT applied to arguments */
  DP_TY_REF,        /* ref(T) */
  DP_TY_STORAGE     /* Storage[] */
} dp_typekind;

#define DP_DIM_ANY (-1) /* `?` */

typedef struct dp_type {
  dp_obj h;          /* h.kind = dp_typekind */
  uint32_t hash;
  dp_ctx *ctx;
} dp_type;

typedef struct dp_tensor_type {
  dp_type t;
  dp_dtype dtype;
  uint32_t ndim;
  int64_t dims[];    /* DP_DIM_ANY for `?` */
} dp_tensor_type;

typedef struct dp_tuple_type {
  dp_type t;
  uint32_t n;
  dp_type *fields[];
} dp_tuple_type;

typedef struct dp_func_type {
  dp_type t;
  dp_type *ret;
  uint32_t ntparams;  /* type parameters (DP_TY_VAR), first in items */
  uint32_t nargs;
  dp_type *items[];   /* ntparams type vars, then nargs argument types */
} dp_func_type;

typedef struct dp_type_var {
  dp_type t;
  uint64_t id;        /* unique in the context */
  char name[];
} dp_type_var;

typedef struct dp_adt_type {
  dp_type t;
  char *name;         /* the type definition's name, "List" */
  uint32_t nargs;
  dp_type *args[];
} dp_adt_type;

typedef struct dp_ref_type {
  dp_type t;
  dp_type *elem;
} dp_ref_type;

/* Constructors return a new reference, or NULL on out of memory. */
dp_type *dp_type_tensor(dp_ctx *ctx, dp_dtype dtype, uint32_t ndim, const int64_t *dims);
dp_type *dp_type_tuple(dp_ctx *ctx, uint32_t n, dp_type *const *fields);
dp_type *dp_type_func(dp_ctx *ctx, uint32_t ntparams, dp_type *const *tparams,
                      uint32_t nargs, dp_type *const *args, dp_type *ret);
dp_type *dp_type_var_new(dp_ctx *ctx, const char *name); /* always a fresh variable */
dp_type *dp_type_adt(dp_ctx *ctx, const char *name, uint32_t nargs, dp_type *const *args);
dp_type *dp_type_ref(dp_ctx *ctx, dp_type *elem);
dp_type *dp_type_storage(dp_ctx *ctx);
/* `_` written inside a type (`(Tensor[(3), float32], _)`): a part left for
   inference to fill, TVM's IncompleteType. A fresh type variable named "_"
   each call; it and every type built over it carry DP_TYPE_HOLE in h.flags,
   and inference gives each hole a fresh unknown wherever the annotation is
   read. It prints as `_`. */
dp_type *dp_type_hole(dp_ctx *ctx);
#define DP_TYPE_HOLE 0x1

/* Text form of relay-text.md ("Tensor[(5, 7), float32]"). malloc'd. */
char *dp_type_str(const dp_type *t);

/* The bytes a value of type t holds: its tensors' elements times the size
   of their dtype, summed over tuples (functions, references and ADTs hold
   no tensor storage here: 0). Exact or nothing: DP_BYTES_KNOWN with *bytes
   set, DP_BYTES_UNKNOWN when a dimension is unknown (?), DP_BYTES_TOO_LARGE
   when the count does not fit in an int64; -1 when out of memory. Tuples
   nest as deep as written: no recursion. (The report and the picture
   count with it.) */
enum { DP_BYTES_KNOWN = 0, DP_BYTES_UNKNOWN = 1, DP_BYTES_TOO_LARGE = 2 };
int dp_type_bytes(const dp_type *t, int64_t *bytes);

#endif
