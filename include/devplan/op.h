/*
 * The operator registry of a context.
 *
 * An operator has a name, a number of inputs (-1: any), an attribute schema
 * (names, kinds, defaults, in TVM's declaration order) and a type relation.
 * Operators are expressions (DP_OP) so that a call's callee is always an
 * expression; they are owned by the registry and retained by the calls that
 * use them.
 */
#ifndef DEVPLAN_OP_H
#define DEVPLAN_OP_H

#include "expr.h"

/* What an attribute accepts (checked when a call is made). */
typedef enum dp_attrkind {
  DP_AK_ANY = 0,
  DP_AK_BOOL, DP_AK_INT, DP_AK_FLOAT, DP_AK_STR,
  DP_AK_INTS,      /* a list of integers */
  DP_AK_INT_OR_INTS, /* an integer or a list of integers (split's indices_or_sections) */
  DP_AK_INT_OR_NONE, /* nn.dense units */
  DP_AK_DTYPE,     /* a dtype given as a string ("float32", or "" for none) */
  DP_AK_VDEV
} dp_attrkind;

typedef struct dp_attr_field {
  const char *name;
  dp_attrkind kind;
  int has_default;
  dp_aval dflt;            /* owned by the op */
} dp_attr_field;

/* A type relation: given the call's argument types, all fully known (no
   type variables left), and its attributes, return the result type (new
   reference); or NULL with *err set for a type error (NULL with *err left
   NULL: out of memory, as when a type constructor failed). `ud` is the op's
   user data (a Lua function, for operators registered from Lua). */
typedef dp_type *(*dp_type_rel)(dp_ctx *ctx, dp_type *const *args, uint32_t nargs,
                                const dp_attrs *attrs, void *ud, dp_err **err);

/* TVM's operator pattern kind (TOpPattern, OpPatternKind), with TVM's
   values: what fusion and the pattern language (`TOpPattern`) read. */
typedef enum dp_oppattern {
  DP_OPP_NONE = -1,             /* not registered (an operator from Lua without one) */
  DP_OPP_ELEMWISE = 0,          /* one output element from the same input element */
  DP_OPP_BROADCAST = 1,         /* elementwise with broadcasting */
  DP_OPP_INJECTIVE = 2,         /* each output element from one input element (reshape) */
  DP_OPP_COMM_REDUCE = 3,       /* commutative reduction (sum) */
  DP_OPP_OUT_ELEMWISE_FUSABLE = 4, /* complex op whose output takes elementwise fusion (conv2d) */
  DP_OPP_TUPLE = 7,             /* produces a tuple */
  DP_OPP_OPAQUE = 8             /* nothing fuses with it */
} dp_oppattern;

/* "elemwise", "broadcast", "injective", "comm_reduce", "out_elemwise_fusable",
   "tuple", "opaque"; NULL for DP_OPP_NONE or an unknown value. */
const char *dp_oppattern_name(int kind);
/* The kind of a name above; -2 when the name is unknown. */
int dp_oppattern_parse(const char *name);

enum {
  DP_OPF_IDENTITY = 1,   /* result type = type of the first argument, unified
                            even when unknown (on_device, device_copy) */
  DP_OPF_CHECK_ATTRS = 2 /* with IDENTITY: the relation is run too, as a check of
                            the attributes (on_device's soft weight) */
};

typedef struct dp_op {
  dp_expr e;               /* e.h.kind = DP_OP */
  dp_ctx *ctx;             /* not retained: the registry lives in ctx */
  char *name;
  int num_inputs;          /* -1: variadic */
  uint32_t flags;
  uint32_t nfields;
  dp_attr_field *fields;   /* schema, or NULL: attributes unchecked, kept as written */
  dp_type_rel rel;
  void *ud;
  void (*ud_free)(void *ud);
  uint32_t id;             /* registration order */
  int pattern;             /* dp_oppattern; DP_OPP_NONE until set */
} dp_op;

/* The operator pattern kind of op (DP_OPP_NONE when it has none). A new
   operator has none; set it once after registering (dp_op_set_pattern
   returns -1 for a value that is not a dp_oppattern). */
int dp_op_set_pattern(dp_op *op, int kind);

/* Look up an operator by name (borrowed; NULL when unknown). */
dp_op *dp_op_get(dp_ctx *ctx, const char *name);
/* Register (or, for a name registered by a user before, replace is an error).
   Copies name and fields (taking ownership of the default values, and of
   ud, even on error). fields NULL: no schema (attributes kept as written);
   fields non-NULL with nfields 0: the operator takes no attributes.
   Returns the op (borrowed) or NULL + error. */
dp_op *dp_op_register(dp_ctx *ctx, const char *name, int num_inputs, uint32_t flags,
                      const dp_attr_field *fields, uint32_t nfields,
                      dp_type_rel rel, void *ud, void (*ud_free)(void *), dp_err **err);
/* Number of registered operators and the i-th in registration order. */
uint32_t dp_op_count(dp_ctx *ctx);
dp_op *dp_op_at(dp_ctx *ctx, uint32_t i);

/* Check and normalise the attributes written for a call of op: unknown key,
   wrong kind, are errors naming the attribute; values equal to the default
   are dropped; order follows the schema. Takes ownership of items' values.
   With no schema, the attributes are kept as written. Forms that mean the
   same value are converted: an integer for a float field, 0/1 for a bool,
   a single integer for a list field; None is accepted where the default is
   None. The result may be an empty set (n = 0); NULL means an error. */
dp_attrs *dp_op_attrs(const dp_op *op, uint32_t n, dp_attr *items, dp_err **err);
/* Value of an attribute for a call: the call's own, else the default, else NULL. */
const dp_aval *dp_op_attr(const dp_op *op, const dp_attrs *attrs, const char *key);

/* Registers the built-in operators (ops_*.c: tensor, nn, device) in ctx:
   a layer above the context, asked for by whoever makes a context for
   Relay programs (dp_ctx_new makes an empty one). 0, or -1 with *err. */
int dp_register_builtin_ops(dp_ctx *ctx, dp_err **err);

#endif
