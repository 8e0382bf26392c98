/*
 * Importing ONNX models (src/import): an ONNX file's graph becomes a
 * module whose @main takes the graph's inputs and returns its outputs,
 * each node mapped to Relay operators as TVM's relay.frontend.from_onnx
 * mapped it (Conv -> nn.conv2d + nn.bias_add, Gemm -> nn.dense + add, ...).
 *
 * - The bytes are decoded by protobuf-c with code generated from ONNX's
 *   own schema (onnx.proto) at build time; nesting is bounded first, so no
 *   input can exhaust the C stack.
 * - Shapes are static after import: the parts of the graph that compute on
 *   shapes and constants (Shape, Gather, Concat, Range, Where, ...) are
 *   evaluated at import; a dimension nothing fixes is an error naming the
 *   input (fix it with the shapes option).
 * - Every call made for a node carries the node's span: its name as the
 *   source (or "OpType_k" for an unnamed node, the k-th of its type, as
 *   TVM named them), line = 1 + its index in graph.node, column 0 (a
 *   node has no column).
 * - Weights (initializers) become constants, or parameters of @main after
 *   the graph's inputs (DP_ONNX_WEIGHTS_PARAMS: their values are handed
 *   back; DP_ONNX_WEIGHTS_NONE: their values are not even read). Values a
 *   node needs at import (shapes, split sizes, pads, scales) are read from
 *   initializers and constants in every mode.
 * - Bad input (malformed or truncated bytes, no graph, an unsupported
 *   operator or opset, a node that does not type-check) is an error naming
 *   the file, the node (graph.node[i], its name and operator) and what is
 *   wrong; nothing leaks.
 */
#ifndef DEVPLAN_ONNX_H
#define DEVPLAN_ONNX_H

#include "module.h"

typedef enum dp_onnx_weights {
  DP_ONNX_WEIGHTS_CONST = 0, /* initializers become constants (the default) */
  DP_ONNX_WEIGHTS_PARAMS,    /* parameters of @main; values in the result's params */
  DP_ONNX_WEIGHTS_NONE       /* parameters of @main; values not read */
} dp_onnx_weights;

/* The size of a graph input's every dimension (fixes dynamic ones). */
typedef struct dp_onnx_shape {
  const char *name;
  uint32_t ndim;
  const int64_t *dims;
} dp_onnx_shape;

typedef struct dp_onnx_opts {
  const char *source;          /* the name errors give the model ("model.onnx"); NULL: "<bytes>" */
  dp_onnx_weights weights;
  uint32_t nshapes;
  const dp_onnx_shape *shapes; /* graph inputs' shapes, overriding the file's */
} dp_onnx_opts;

/* What an import says besides the module (dp_onnx_import's `info`). */
typedef struct dp_onnx_param {
  char *name;
  dp_const *value;    /* DP_ONNX_WEIGHTS_PARAMS: a weight parameter's value */
} dp_onnx_param;

typedef struct dp_onnx_typed {
  char *name;
  dp_type *type;      /* the type devplan gave the ONNX value of that name */
} dp_onnx_typed;

typedef struct dp_onnx_info {
  uint32_t nodes;        /* the graph's nodes */
  uint32_t nparams;
  dp_onnx_param *params; /* the weights' values (DP_ONNX_WEIGHTS_PARAMS) */
  uint32_t ntypes;
  dp_onnx_typed *types;  /* every value of the graph made or computed, in order */
} dp_onnx_info;

/* Imports the ONNX model in bytes[0..n) (borrowed). opts may be NULL (the
   defaults); info may be NULL, else receives the weights' values and the
   values' types (free with dp_onnx_info_free). Returns a type-checked
   module (new reference) or NULL with *err. */
dp_module *dp_onnx_import(dp_ctx *ctx, const void *bytes, size_t n, const dp_onnx_opts *opts,
                          dp_onnx_info *info, dp_err **err);
/* The same from a file (opts->source defaults to path). */
dp_module *dp_onnx_import_file(dp_ctx *ctx, const char *path, const dp_onnx_opts *opts,
                               dp_onnx_info *info, dp_err **err);
void dp_onnx_info_free(dp_onnx_info *info);

#endif
