/*
 * Internals shared by the target files (not installed): the kinds' option
 * schemas (target_kinds.c), used by construction (target.c).
 */
#ifndef DEVPLAN_TARGET_INTERNAL_H
#define DEVPLAN_TARGET_INTERNAL_H

#include "devplan/device.h"

/* What a declared value must look like beyond its type (TVM's target
   parsers check these). */
enum { DP__RULE_ANY, DP__RULE_FIXED /* must equal the default */, DP__RULE_SM /* sm_80 */,
       DP__RULE_GFX /* gfx900 */ };

typedef struct dp__optdecl {
  const char *key;
  dp_optkind type;
  const char *dflt; /* a target string value, or NULL */
  int rule;
} dp__optdecl;

typedef struct dp__kind {
  const char *name;
  int device_type;
  const char *keys; /* default keys, comma-separated */
  const dp__optdecl *opts;
} dp__kind;

/* The kind named `name`: built in, else registered in ctx (may be NULL). */
const dp__kind *dp__kind_find(const dp_ctx *ctx, const char *name);
/* The unknown-kind error, with a suggestion or the list of kinds. */
dp_err *dp__kind_unknown(const dp_ctx *ctx, const char *name);

void dp__opt_clear(dp_target_opt *o);
void dp__opts_free(dp_target_opt *opts, uint32_t n);

/* Checks and types the given options against kind k, fills in what TVM's
   constructor derives (defaults, keys, parser values), and sorts them by
   key. On success *out is a malloc'd array of *nout options (maybe none)
   and *device_type the target's device type. */
dp_err *dp__kind_options(const dp__kind *k, const dp_target_opt *in, uint32_t nin,
                         dp_target_opt **out, uint32_t *nout, int *device_type);

/* True when building a target of t's kind from t's other options derives
   option o as it is (a default, or keys the kind and "device" give), so a
   brief string can leave it out. -1 on out of memory. */
int dp__kind_derives(const dp__kind *k, const dp_target *t, const dp_target_opt *o);

#endif
