/*
 * Attribute values and attribute sets of calls and functions.
 *
 * An attribute set is an immutable, reference-counted list of key = value
 * pairs. For an operator with a schema (op.h), the set made by
 * dp_op_attrs holds only values that differ from the schema's defaults, in
 * the schema's order, so that a call written with or without a default
 * value is the same call (as TVM prints attributes: defaults omitted).
 */
#ifndef DEVPLAN_ATTRS_H
#define DEVPLAN_ATTRS_H

#include "core.h"
#include "type.h"

struct dp_vdev;
struct dp_expr;

typedef enum dp_avkind {
  DP_AV_NONE = 1, /* None */
  DP_AV_BOOL,     /* True / False */
  DP_AV_INT,      /* 3, -1 */
  DP_AV_FLOAT,    /* 2e-05f, 0.5f, 1.5 (dtype: suffix; 0 when none was written) */
  DP_AV_STR,      /* "NCHW" */
  DP_AV_LIST,     /* [1, 2] */
  DP_AV_VDEV,     /* meta[VirtualDevice][i] or VirtualDevice(...) */
  DP_AV_EXPR      /* a constant expression: meta[relay.Constant][i] or a literal */
} dp_avkind;

typedef struct dp_aval {
  uint8_t kind;          /* dp_avkind */
  dp_dtype dtype;        /* DP_AV_FLOAT: the written suffix; DP_AV_INT: suffix or 0 */
  uint32_t n;            /* DP_AV_LIST: number of items */
  union {
    int64_t i;           /* BOOL, INT */
    double f;            /* FLOAT */
    char *s;             /* STR (malloc'd, owned) */
    struct dp_aval *items; /* LIST (owned array) */
    struct dp_vdev *vdev;  /* VDEV (owned reference) */
    struct dp_expr *expr;  /* EXPR (owned reference) */
  } u;
} dp_aval;

typedef struct dp_attr {
  char *key;
  dp_aval val;
} dp_attr;

typedef struct dp_attrs {
  dp_obj h;
  uint32_t n;
  dp_attr items[];
} dp_attrs;

/* Value constructors (the value owns what it holds; strings are copied,
   vdev and expr are retained). A constructor that runs out of memory gives
   a value of kind 0, which dp_attrs_make reports as out of memory. */
dp_aval dp_av_none(void);
dp_aval dp_av_bool(int b);
dp_aval dp_av_int(int64_t i);
dp_aval dp_av_float(double f, dp_dtype suffix);
dp_aval dp_av_string(const char *s);
dp_aval dp_av_vdev(struct dp_vdev *v);
dp_aval dp_av_expr(struct dp_expr *e);
/* Takes ownership of items (n values, malloc'd array). */
dp_aval dp_av_list(uint32_t n, dp_aval *items);
dp_aval dp_av_copy(const dp_aval *v);
void dp_av_clear(dp_aval *v);
int dp_av_equal(const dp_aval *a, const dp_aval *b);
/* Text form as printed in calls ("[1, 1]", "2e-05f", "meta..." never: vdevs
   print inline). Appended to a malloc'd string. */
char *dp_av_str(const dp_aval *v);

/* A new attribute set; takes ownership of the values in items (keys are
   copied). Keys must be distinct (returns NULL + error otherwise). */
dp_attrs *dp_attrs_make(uint32_t n, dp_attr *items, dp_err **err);
/* Lookup by key; NULL when absent. */
const dp_aval *dp_attrs_get(const dp_attrs *a, const char *key);

#endif
