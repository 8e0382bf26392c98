/*
 * The ONNX importer's internals (src/import), one file per part:
 *   read.c    bytes to the decoded ModelProto (protobuf-c), nesting bounded
 *             first; tensors' data and attributes of the decoded messages
 *   value.c   tensors known at import (dp__ot) and their arithmetic: the
 *             evaluation of shape and constant subgraphs
 *   import.c  the driver: graph inputs, initializers, nodes in order,
 *             weights, @main, errors naming the node
 *   conv_*.c  each ONNX operator's mapping to Relay (as TVM's frontend)
 */
#ifndef DEVPLAN_IMPORT_INTERNAL_H
#define DEVPLAN_IMPORT_INTERNAL_H

#include <stdarg.h>
#include "devplan/devplan.h"
#include "devplan/onnx.h"
#include "onnx.pb-c.h"

#define DP__OT_MAXDIM 64

/* ---- read.c ---- */

/* Decodes bytes as an onnx.ModelProto (allocations through dp_malloc).
   NULL with *err (naming `source`) when they are not one. */
Onnx__ModelProto *dp__onnx_decode(const void *bytes, size_t n, const char *source, dp_err **err);
void dp__onnx_free(Onnx__ModelProto *m);
/* The dtype of an ONNX element type (TensorProto.DataType), 0 when devplan
   has none (string, complex, undefined). */
dp_dtype dp__onnx_dtype(int32_t elem);
/* The ONNX name of an element type ("FLOAT", "STRING", ...). */
const char *dp__onnx_elem_name(int32_t elem);

/* ---- value.c: tensors known at import ---- */

typedef struct dp__ot {
  dp_dtype dtype;
  uint32_t ndim;
  int64_t dims[DP__OT_MAXDIM];
  size_t n;      /* elements */
  void *data;    /* n elements, row-major (malloc'd; NULL when n is 0) */
} dp__ot;

/* A new tensor of dtype and shape, zeros; NULL on out of memory or when
   larger than the import limit (*why says which). */
dp__ot *dp__ot_new(dp_dtype dtype, uint32_t ndim, const int64_t *dims, const char **why);
void dp__ot_free(dp__ot *t);
int64_t dp__ot_int(const dp__ot *t, size_t i);    /* element i as an integer (floats truncated) */
double dp__ot_real(const dp__ot *t, size_t i);    /* element i as a real */
void dp__ot_set_int(dp__ot *t, size_t i, int64_t v);
void dp__ot_set_real(dp__ot *t, size_t i, double v);
int dp__ot_is_real(const dp__ot *t);

/* ---- the importer ---- */

struct dp__onnx;
/* ONNX Reshape's new shape of an input of shape in[0..ndim) (want: n
   values, 0 copies unless allowzero, -1 infers) into out; 0, or -1 with
   the node's error set (eval.c). */
int dp__onnx_reshape_dims(struct dp__onnx *X, uint32_t ndim, const int64_t *in, const int64_t *want,
                          int n, int allowzero, int64_t *out);

typedef struct dp__onnx dp__onnx;

/* A converter: maps the current node (X->node) to Relay, binding its
   outputs with dp__ox_out. 0, or -1 with the error set (dp__ox_fail). */
typedef int (*dp__onnx_conv)(dp__onnx *X);

/* The converter of an operator of the default domain, or NULL
   (conv_tensor.c; it asks conv_nn.c's dp__onnx_nn_converter too). */
dp__onnx_conv dp__onnx_converter(const char *op_type);
dp__onnx_conv dp__onnx_nn_converter(const char *op_type);
/* The evaluator of an operator at import (every input known), or NULL
   when the operator is never evaluated at import. */
dp__onnx_conv dp__onnx_evaluator(const char *op_type);

struct dp__onnx {
  dp_ctx *ctx;
  const char *source;           /* the model's name in errors */
  const dp_onnx_opts *opts;
  int64_t opset;                /* of the default domain */
  const Onnx__NodeProto *node;  /* the node being converted */
  uint32_t node_index;
  dp_span span;                 /* of the node being converted */
  dp_err *err;
  struct dp__ox_state *st;      /* the rest (import.c's own) */
};

/* ---- helpers for converters (import.c) ---- */

/* Sets the error: "SOURCE: graph.node[i] 'name' (Op): MESSAGE"; returns -1. */
int dp__ox_fail(dp__onnx *X, dp_errcode code, const char *fmt, ...);
/* Number of inputs of the node (trailing optional ones may be missing). */
uint32_t dp__ox_nin(dp__onnx *X);
/* Is input i given (present and not the empty name)? */
int dp__ox_has(dp__onnx *X, uint32_t i);
/* The expression of input i (borrowed; a known value becomes a constant),
   or NULL with the error set. */
dp_expr *dp__ox_in(dp__onnx *X, uint32_t i);
/* The tensor type of input i, or NULL with the error set. */
const dp_tensor_type *dp__ox_type(dp__onnx *X, uint32_t i);
/* The value of input i, which must be known at import (`what` names it in
   the error), or NULL with the error set. */
const dp__ot *dp__ox_value(dp__onnx *X, uint32_t i, const char *what);
/* The known value of input i, NULL (no error) when it is not known. */
const dp__ot *dp__ox_known(dp__onnx *X, uint32_t i);
/* Does the node's output i have a consumer or is it a graph output? */
int dp__ox_used(dp__onnx *X, uint32_t i);
/* Binds output i to e (the reference is taken, also on error); the
   expression must be typed (dp__ox_call's are). */
int dp__ox_out(dp__onnx *X, uint32_t i, dp_expr *e);
/* Binds output i to a known value (taken). */
int dp__ox_out_value(dp__onnx *X, uint32_t i, dp__ot *v);

/* Attributes of the node. */
const Onnx__AttributeProto *dp__ox_attr(dp__onnx *X, const char *name);
int64_t dp__ox_attr_int(dp__onnx *X, const char *name, int64_t dflt);
double dp__ox_attr_float(dp__onnx *X, const char *name, double dflt);
/* The string, or dflt (borrowed; the returned text is NUL-terminated in buf
   when it fits, else an error is set and NULL returned). */
const char *dp__ox_attr_str(dp__onnx *X, const char *name, const char *dflt, char *buf, size_t n);
/* A list of integers into out (at most max): its length, -1 when absent,
   -2 (error set) when malformed or too long. */
int dp__ox_attr_ints(dp__onnx *X, const char *name, int64_t *out, int max);
int dp__ox_attr_floats(dp__onnx *X, const char *name, double *out, int max);
/* A tensor attribute's value (new), NULL with the error set. */
dp__ot *dp__ox_attr_tensor(dp__onnx *X, const Onnx__AttributeProto *a);

/* Attribute lists for calls. */
typedef struct dp__ab {
  uint32_t n;
  dp_attr items[16];
} dp__ab;
void dp__ab_int(dp__ab *b, const char *key, int64_t v);
void dp__ab_float(dp__ab *b, const char *key, double v);
void dp__ab_bool(dp__ab *b, const char *key, int v);
void dp__ab_str(dp__ab *b, const char *key, const char *v);
void dp__ab_ints(dp__ab *b, const char *key, const int64_t *v, uint32_t n);
void dp__ab_val(dp__ab *b, const char *key, dp_aval v);
void dp__ab_clear(dp__ab *b);

/* A call of operator `op` on args (borrowed) with the attributes in b
   (taken; b may be NULL), made with the node's span and typed by the
   operator's relation: a new reference, or NULL with the error set (a
   type error names the node). */
dp_expr *dp__ox_call(dp__onnx *X, const char *op, uint32_t nargs, dp_expr *const *args, dp__ab *b);
/* Field i of a tuple-typed expression, typed (new reference). */
dp_expr *dp__ox_proj(dp__onnx *X, dp_expr *tuple, uint32_t i);
/* A tuple of the expressions, typed (new reference). */
dp_expr *dp__ox_tuple(dp__onnx *X, uint32_t n, dp_expr *const *fields);
/* A scalar constant of dtype (new reference), typed. */
dp_expr *dp__ox_scalar(dp__onnx *X, dp_dtype dtype, double v);
/* A constant of a known value (new reference), typed. */
dp_expr *dp__ox_const(dp__onnx *X, const dp__ot *v);
/* The tensor type of a typed expression. */
const dp_tensor_type *dp__ox_tensor_type(dp__onnx *X, const dp_expr *e);

#endif
