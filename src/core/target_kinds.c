/*
 * The target kinds devplan knows and their options, as TVM registers them
 * (src/target/target_kind.cc at the Relay-era commit the tvm-peer cases
 * come from): option names, types, defaults and default keys; and what
 * TVM's Target constructor does with the options a user gives: reject the
 * undeclared ones, type the values, fill in defaults, apply the kinds'
 * target parsers (with no device to query), and compute "keys".
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/suggest.h"
#include "internal.h"
#include "target_internal.h"
#include "textbuf.h"

/* ---------------- the table ---------------- */

/* An option: its name and default (a target string value, or NULL). */
#define STR(key, dflt) {key, DP_OPT_STR, dflt, DP__RULE_ANY}
#define INT(key, dflt) {key, DP_OPT_INT, dflt, DP__RULE_ANY}
#define BOOL(key, dflt) {key, DP_OPT_BOOL, dflt, DP__RULE_ANY}
#define LIST(key, dflt) {key, DP_OPT_STRLIST, dflt, DP__RULE_ANY}
/* A string option whose value a target parser checks (or fixes). */
#define CHECKED(key, type, dflt, rule) {key, DP_OPT_##type, dflt, rule}
#define END {NULL, DP_OPT_STR, NULL, DP__RULE_ANY}

/* Every kind (TVM's TVM_REGISTER_TARGET_KIND adds them); "host" is a field. */
static const dp__optdecl common_opts[] = {
  LIST("keys", NULL), STR("tag", NULL), STR("device", NULL),
  STR("model", NULL), LIST("libs", NULL), INT("from_device", NULL),
  INT("target_device_type", NULL), END};

static const dp__optdecl llvm_opts[] = {
  LIST("mattr", NULL), STR("mcpu", NULL), STR("mtriple", NULL),
  STR("mfloat-abi", NULL), STR("mabi", NULL), INT("num-cores", NULL),
  BOOL("fast-math", NULL), BOOL("fast-math-nnan", NULL), BOOL("fast-math-ninf", NULL),
  BOOL("fast-math-nsz", NULL), BOOL("fast-math-arcp", NULL),
  BOOL("fast-math-contract", NULL), BOOL("fast-math-reassoc", NULL),
  INT("opt-level", NULL), LIST("cl-opt", NULL), STR("jit", NULL),
  INT("vector-width", NULL), END};

static const dp__optdecl c_opts[] = {
  STR("mcpu", NULL), STR("march", NULL), INT("workspace-byte-alignment", NULL),
  INT("constants-byte-alignment", NULL), END};

static const dp__optdecl cuda_opts[] = {
  STR("mcpu", NULL), CHECKED("arch", STR, "sm_50", DP__RULE_SM),
  INT("max_shared_memory_per_block", NULL), INT("max_threads_per_block", NULL),
  INT("thread_warp_size", "32"), INT("registers_per_block", NULL),
  INT("l2_cache_size_bytes", NULL), INT("max_num_threads", "1024"), END};

static const dp__optdecl nvptx_opts[] = {
  CHECKED("mcpu", STR, "sm_20", DP__RULE_SM),
  CHECKED("mtriple", STR, "nvptx64-nvidia-cuda", DP__RULE_FIXED),
  INT("max_num_threads", "1024"), INT("thread_warp_size", "32"), END};

static const dp__optdecl rocm_opts[] = {
  CHECKED("mcpu", STR, "gfx900", DP__RULE_GFX),
  CHECKED("mtriple", STR, "amdgcn-amd-amdhsa-hcc", DP__RULE_FIXED), LIST("mattr", NULL),
  INT("max_num_threads", "256"), INT("max_threads_per_block", "256"),
  INT("max_shared_memory_per_block", "65536"), INT("thread_warp_size", "64"),
  END};

static const dp__optdecl opencl_opts[] = {
  INT("max_threads_per_block", "256"),
  INT("max_shared_memory_per_block", "16384"), INT("max_num_threads", "256"),
  INT("thread_warp_size", "1"), INT("texture_spatial_limit", "16384"),
  INT("max_function_args", "128"), END};

static const dp__optdecl metal_opts[] = {
  INT("max_num_threads", "256"), INT("max_threads_per_block", "256"),
  INT("max_shared_memory_per_block", "32768"), INT("thread_warp_size", "16"),
  INT("max_function_args", "31"), END};

static const dp__optdecl vulkan_opts[] = {
  LIST("mattr", NULL),
  /* feature support */
  BOOL("supports_float16", NULL), BOOL("supports_float32", "1"),
  BOOL("supports_float64", NULL), BOOL("supports_int8", NULL),
  BOOL("supports_int16", NULL), BOOL("supports_int32", "1"),
  BOOL("supports_int64", NULL), BOOL("supports_8bit_buffer", NULL),
  BOOL("supports_16bit_buffer", NULL), BOOL("supports_storage_buffer_storage_class", NULL),
  BOOL("supports_push_descriptor", NULL), BOOL("supports_dedicated_allocation", NULL),
  BOOL("supports_integer_dot_product", NULL), BOOL("supports_cooperative_matrix", NULL),
  INT("supported_subgroup_operations", NULL),
  /* physical device limits */
  INT("max_num_threads", "256"), INT("max_threads_per_block", "256"),
  INT("thread_warp_size", "1"), INT("max_block_size_x", NULL),
  INT("max_block_size_y", NULL), INT("max_block_size_z", NULL),
  INT("max_push_constants_size", NULL), INT("max_uniform_buffer_range", NULL),
  INT("max_storage_buffer_range", NULL), INT("max_per_stage_descriptor_storage_buffer", NULL),
  INT("max_shared_memory_per_block", NULL),
  /* other device properties */
  STR("device_type", NULL), STR("device_name", NULL), STR("driver_name", NULL),
  INT("driver_version", NULL), INT("vulkan_api_version", NULL),
  INT("max_spirv_version", NULL), END};

static const dp__optdecl webgpu_opts[] = {INT("max_num_threads", "256"), END};

static const dp__optdecl hexagon_opts[] = {
  LIST("mattr", NULL), STR("mcpu", NULL), STR("mtriple", NULL),
  LIST("llvm-options", NULL), INT("num-cores", NULL), INT("vtcm-capacity", NULL),
  END};

static const dp__optdecl no_opts[] = {END};

static const dp__kind kinds[] = {
  {"llvm", DP_DEV_CPU, "cpu", llvm_opts},
  {"c", DP_DEV_CPU, "cpu", c_opts},
  {"cuda", DP_DEV_CUDA, "cuda,gpu", cuda_opts},
  {"nvptx", DP_DEV_CUDA, "cuda,gpu", nvptx_opts},
  {"rocm", DP_DEV_ROCM, "rocm,gpu", rocm_opts},
  {"opencl", DP_DEV_OPENCL, "opencl,gpu", opencl_opts},
  {"vulkan", DP_DEV_VULKAN, "vulkan,gpu", vulkan_opts},
  {"metal", DP_DEV_METAL, "metal,gpu", metal_opts},
  {"hexagon", DP_DEV_HEXAGON, "hexagon,cpu", hexagon_opts},
  {"webgpu", DP_DEV_WEBGPU, "webgpu,gpu", webgpu_opts},
  {"ext_dev", DP_DEV_EXT_DEV, "", no_opts},
  {"stackvm", DP_DEV_CPU, "cpu", no_opts},
  {"hybrid", DP_DEV_CPU, "", no_opts},
  {"sdaccel", DP_DEV_OPENCL, "sdaccel,hls", no_opts},
  {"aocl", 32, "aocl,hls", no_opts},        /* TVM's kDLAOCL */
  {"aocl_sw_emu", 32, "aocl,hls", no_opts},
};

#define NKINDS (sizeof kinds / sizeof kinds[0])

/* The i-th kind: the built-in ones, then those registered in ctx. */
static const dp__kind *kind_at(const dp_ctx *ctx, uint32_t i) {
  if (i < NKINDS) return &kinds[i];
  i -= NKINDS;
  return ctx && i < ctx->nkinds ? ctx->kinds[i] : NULL;
}

const dp__kind *dp__kind_find(const dp_ctx *ctx, const char *name) {
  const dp__kind *k;
  for (uint32_t i = 0; name && (k = kind_at(ctx, i)); i++)
    if (strcmp(k->name, name) == 0) return k;
  return NULL;
}

const char *dp_target_kind_at(const dp_ctx *ctx, uint32_t i) {
  const dp__kind *k = kind_at(ctx, i);
  return k ? k->name : NULL;
}

int dp_target_kind_device_type(const dp_ctx *ctx, const char *kind) {
  const dp__kind *k = dp__kind_find(ctx, kind);
  return k ? k->device_type : -1;
}

const char *dp_target_kind_keys(const dp_ctx *ctx, const char *kind) {
  const dp__kind *k = dp__kind_find(ctx, kind);
  return k ? k->keys : NULL;
}

int dp_target_kind_registered(const dp_ctx *ctx, const char *kind) {
  const dp__kind *k = dp__kind_find(ctx, kind);
  return k && (k < kinds || k >= kinds + NKINDS);
}

/* The i-th declared option of k: the kind's own, then the common ones. */
static const dp__optdecl *decl_at(const dp__kind *k, uint32_t i) {
  uint32_t n = 0;
  while (k->opts[n].key) n++;
  if (i < n) return &k->opts[i];
  i -= n;
  return i < sizeof common_opts / sizeof common_opts[0] - 1 ? &common_opts[i] : NULL;
}

const char *dp_target_kind_option(const dp_ctx *ctx, const char *kind, uint32_t i, dp_optkind *type,
                                  const char **dflt) {
  const dp__kind *k = dp__kind_find(ctx, kind);
  const dp__optdecl *d = k ? decl_at(k, i) : NULL;
  if (!d) return NULL;
  if (type) *type = d->type;
  if (dflt) *dflt = d->dflt;
  return d->key;
}

static const dp__optdecl *find_decl(const dp__kind *k, const char *key) {
  const dp__optdecl *d;
  for (uint32_t i = 0; (d = decl_at(k, i)); i++)
    if (!strcmp(d->key, key)) return d;
  return NULL;
}

const char *dp_target_kind_suggest(const dp_ctx *ctx, const char *kind) {
  static _Thread_local char best[128]; /* (a registered name may go with its context) */
  dp_suggest s;
  const dp__kind *k;
  dp_suggest_init(&s, kind);
  for (uint32_t i = 0; (k = kind_at(ctx, i)); i++) dp_suggest_add(&s, k->name);
  const char *b = dp_suggest_best(&s);
  if (!b) return NULL;
  snprintf(best, sizeof best, "%s", b);
  return best;
}

dp_err *dp__kind_unknown(const dp_ctx *ctx, const char *name) {
  if (name && strchr(name, '/')) {
    const char *tag = dp_target_tag_suggest(name);
    if (tag)
      return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "unknown target tag '%s'; did you mean '%s'?", name,
                        tag);
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                      "unknown target tag '%s' (devplan knows TVM's CUDA tags, as "
                      "'nvidia/tesla-p40'; else give the kind and its options, as 'cuda -arch=sm_61')",
                      name);
  }
  const char *best = dp_target_kind_suggest(ctx, name);
  if (best)
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "unknown target kind '%s'; did you mean '%s'?",
                      name ? name : "", best);
  dp__tb b;
  dp__tb_init(&b);
  const dp__kind *k;
  for (uint32_t i = 0; (k = kind_at(ctx, i)); i++) dp__tb_printf(&b, "%s%s", i ? ", " : "", k->name);
  char *list = dp__tb_take(&b);
  dp_err *e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                         "unknown target kind '%s' (known kinds: %s; a toolchain's kind is "
                         "registered with dp_target_kind_register, in Lua dp.register_target_kind)",
                         name ? name : "", list ? list : "?");
  free(list);
  return e;
}

static dp_err *unknown_option(const dp__kind *k, const char *key) {
  dp_suggest s;
  const dp__optdecl *d;
  dp_suggest_init(&s, key);
  for (uint32_t i = 0; (d = decl_at(k, i)); i++) dp_suggest_add(&s, d->key);
  if (!strcmp(key, "host") || !strcmp(key, "kind"))
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "'%s' is not an option (it is a field of the target)",
                      key);
  const char *best = dp_suggest_best(&s);
  if (best)
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                      "unknown option '-%s' for target kind '%s'; did you mean '-%s'?", key,
                      k->name, best);
  dp__tb b;
  dp__tb_init(&b);
  for (uint32_t i = 0; (d = decl_at(k, i)); i++) dp__tb_printf(&b, "%s-%s", i ? ", " : "", d->key);
  char *list = dp__tb_take(&b);
  dp_err *e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                         "unknown option '-%s' for target kind '%s' (its options: %s)", key,
                         k->name, list ? list : "?");
  free(list);
  return e;
}

/* ---------------- option values ---------------- */

void dp__opt_clear(dp_target_opt *o) {
  free(o->key);
  free(o->str);
  for (uint32_t i = 0; i < o->nitems; i++) free(o->items[i]);
  free(o->items);
  memset(o, 0, sizeof *o);
}

void dp__opts_free(dp_target_opt *opts, uint32_t n) {
  for (uint32_t i = 0; opts && i < n; i++) dp__opt_clear(&opts[i]);
  free(opts);
}

static const char *type_name(dp_optkind t) {
  switch (t) {
  case DP_OPT_INT: return "an integer";
  case DP_OPT_BOOL: return "a boolean (true/false, 1/0)";
  case DP_OPT_STRLIST: return "a list of strings";
  default: return "a string";
  }
}

/* A key is a word of letters, digits, '_', '-' and '.'. */
static int valid_key(const char *key) {
  if (!key || !*key) return 0;
  for (const char *p = key; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '-' || *p == '.')) return 0;
  return 1;
}

/* A copy of s without blanks around it (NULL on out of memory). */
static char *trimmed(const char *s, size_t n) {
  while (n && isspace((unsigned char)*s)) s++, n--;
  while (n && isspace((unsigned char)s[n - 1])) n--;
  return dp_strndup(s, n);
}

static int parse_int(const char *s, int64_t *out) {
  char *end;
  while (isspace((unsigned char)*s)) s++;
  if (!*s) return -1;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  while (isspace((unsigned char)*end)) end++;
  if (*end || errno == ERANGE) return -1;
  *out = v;
  return 0;
}

static int parse_bool(const char *s, int64_t *out) {
  char w[8];
  size_t n = 0;
  while (isspace((unsigned char)*s)) s++;
  while (*s && !isspace((unsigned char)*s) && n < sizeof w - 1) w[n++] = (char)tolower((unsigned char)*s++);
  w[n] = '\0';
  while (isspace((unsigned char)*s)) s++;
  if (*s) return -1;
  if (!strcmp(w, "true") || !strcmp(w, "1")) *out = 1;
  else if (!strcmp(w, "false") || !strcmp(w, "0")) *out = 0;
  else return -1;
  return 0;
}

/* Appends item s[0..n) (trimmed; dropped when empty) to o's list. */
static int add_item(dp_target_opt *o, const char *s, size_t n) {
  char *item = trimmed(s, n);
  if (!item) return -1;
  if (!*item) {
    free(item);
    return 0;
  }
  char **items = dp_realloc(o->items, (o->nitems + 1) * sizeof *items);
  if (!items) {
    free(item);
    return -1;
  }
  o->items = items;
  o->items[o->nitems++] = item;
  return 0;
}

/* Appends the comma-separated items of s to o's list. */
static int split_items(dp_target_opt *o, const char *s) {
  for (const char *p = s;; p++) {
    const char *c = strchr(p, ',');
    size_t n = c ? (size_t)(c - p) : strlen(p);
    if (add_item(o, p, n) < 0) return -1;
    if (!c) return 0;
    p = c;
  }
}

static dp_err *oom(void) { return dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"); }

/* What a given value looks like, for messages ("'lots'", "true", "a list"). */
static char *shown(const dp_target_opt *in) {
  dp__tb b;
  dp__tb_init(&b);
  switch (in->kind) {
  case DP_OPT_INT: dp__tb_printf(&b, "%lld", (long long)in->num); break;
  case DP_OPT_BOOL: dp__tb_puts(&b, in->num ? "true" : "false"); break;
  case DP_OPT_STRLIST: dp__tb_puts(&b, "a list"); break;
  default: dp__tb_printf(&b, "'%.200s'", in->str ? in->str : ""); break;
  }
  return dp__tb_take(&b);
}

static dp_err *wrong_type(const dp__kind *k, const dp__optdecl *d, const dp_target_opt *in) {
  char *got = shown(in);
  dp_err *e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target option -%s of kind %s expects %s, got %s",
                         d->key, k->name, type_name(d->type), got ? got : "?");
  free(got);
  return e;
}

/* A value read from a target string, as d's type says. */
static dp_err *from_text(const dp__kind *k, const dp__optdecl *d, const dp_target_opt *in,
                         dp_target_opt *out) {
  const char *s = in->str;
  if (!s) { /* a bare -key: true for a boolean (TVM's reading), else no value */
    if (d->type == DP_OPT_BOOL) return out->num = 1, NULL;
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target option -%s of kind %s needs a value (-%s=...)",
                      d->key, k->name, d->key);
  }
  switch (d->type) {
  case DP_OPT_INT:
    return parse_int(s, &out->num) < 0 ? wrong_type(k, d, in) : NULL;
  case DP_OPT_BOOL:
    return parse_bool(s, &out->num) < 0 ? wrong_type(k, d, in) : NULL;
  case DP_OPT_STRLIST:
    return split_items(out, s) < 0 ? oom() : NULL;
  default:
    return (out->str = trimmed(s, strlen(s))) ? NULL : oom();
  }
}

/* A typed value (from a table or JSON): it must have d's type. */
static dp_err *from_typed(const dp__kind *k, const dp__optdecl *d, const dp_target_opt *in,
                          dp_target_opt *out) {
  if (d->type == DP_OPT_BOOL && in->kind == DP_OPT_INT && (in->num == 0 || in->num == 1)) {
    out->num = in->num;
    return NULL;
  }
  if (in->kind != d->type) return wrong_type(k, d, in);
  switch (d->type) {
  case DP_OPT_INT: out->num = in->num; return NULL;
  case DP_OPT_BOOL: out->num = in->num != 0; return NULL;
  case DP_OPT_STRLIST:
    for (uint32_t i = 0; i < in->nitems; i++) {
      const char *item = in->items[i] ? in->items[i] : "";
      if (strchr(item, ','))
        return dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                          "target option -%s of kind %s: the item '%.200s' has a ',' (the string "
                          "form could not read it back)",
                          d->key, k->name, item);
      if (add_item(out, item, strlen(item)) < 0) return oom();
    }
    return NULL;
  default:
    return (out->str = trimmed(in->str ? in->str : "", strlen(in->str ? in->str : ""))) ? NULL
                                                                                        : oom();
  }
}

/* out = in typed as k declares; out->key NULL when the value is empty
   (the option is then not set). */
static dp_err *type_option(const dp__kind *k, const dp_target_opt *in, dp_target_opt *out) {
  memset(out, 0, sizeof *out);
  if (!valid_key(in->key))
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "malformed target option name '%s'",
                      in->key ? in->key : "");
  const dp__optdecl *d = find_decl(k, in->key);
  if (!d) return unknown_option(k, in->key);
  out->kind = d->type;
  dp_err *e = in->kind == DP_OPT_TEXT ? from_text(k, d, in, out) : from_typed(k, d, in, out);
  int empty = (d->type == DP_OPT_STR && out->str && !out->str[0]) ||
              (d->type == DP_OPT_STRLIST && out->nitems == 0);
  if (!e && !empty && !(out->key = dp_strdup(in->key))) e = oom();
  if (e || empty) dp__opt_clear(out);
  return e;
}

/* ---------------- what the constructor derives ---------------- */

static int opt_cmp(const void *a, const void *b) {
  return strcmp(((const dp_target_opt *)a)->key, ((const dp_target_opt *)b)->key);
}

static dp_target_opt *find(dp_target_opt *opts, uint32_t n, const char *key) {
  for (uint32_t i = 0; i < n; i++)
    if (!strcmp(opts[i].key, key)) return &opts[i];
  return NULL;
}

/* "sm_" digits, maybe one letter after (sm_90a); "gfx" and a version. */
static int follows_rule(int rule, const char *v, const char *dflt) {
  const char *p;
  switch (rule) {
  case DP__RULE_FIXED: return strcmp(v, dflt) == 0;
  case DP__RULE_SM:
    if (strncmp(v, "sm_", 3) || !isdigit((unsigned char)v[3])) return 0;
    for (p = v + 3; isdigit((unsigned char)*p); p++) {}
    return !*p || (islower((unsigned char)p[0]) && !p[1]);
  case DP__RULE_GFX:
    if (strncmp(v, "gfx", 3) || !v[3]) return 0;
    for (p = v + 3; *p; p++)
      if (!isalnum((unsigned char)*p) && *p != ':' && *p != '+' && *p != '-') return 0;
    return 1;
  default: return 1;
  }
}

static dp_err *rule_error(const dp__kind *k, const dp__optdecl *d, const char *v) {
  const char *want = d->rule == DP__RULE_SM ? "sm_<number> (as sm_80)"
                     : d->rule == DP__RULE_GFX ? "gfx<version> (as gfx900)"
                                              : d->dflt;
  return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target option -%s of kind %s must be %s, got '%.200s'",
                    d->key, k->name, want, v);
}

/* Defaults for the kind's options that were not given, and the checks of
   its target parser on those that were. opts has room for them. */
static dp_err *defaults(const dp__kind *k, dp_target_opt *opts, uint32_t *n) {
  for (const dp__optdecl *d = k->opts; d->key; d++) {
    dp_target_opt *o = find(opts, *n, d->key);
    if (o) {
      if (d->rule != DP__RULE_ANY && !follows_rule(d->rule, o->str, d->dflt))
        return rule_error(k, d, o->str);
      continue;
    }
    if (!d->dflt) continue;
    dp_target_opt in = {(char *)d->key, DP_OPT_TEXT, (char *)d->dflt, 0, 0, NULL};
    dp_err *e = type_option(k, &in, &opts[*n]);
    if (e) return e;
    (*n)++;
  }
  return NULL;
}

/* TVM's keys: the ones given, else the kind's defaults; the device's name
   after the given ones (before the defaults); no repeats. A list given
   empty was dropped as not set, so the defaults apply then. */
static dp_err *keys(const dp__kind *k, dp_target_opt *opts, uint32_t *n) {
  dp_target_opt *given = find(opts, *n, "keys"), *device = find(opts, *n, "device");
  dp_target_opt out = {0};
  out.kind = DP_OPT_STRLIST;
  int fail = 0;
  for (uint32_t i = 0; given && i < given->nitems; i++)
    fail |= add_item(&out, given->items[i], strlen(given->items[i]));
  if (device) fail |= add_item(&out, device->str, strlen(device->str));
  if (!given) fail |= split_items(&out, k->keys);
  uint32_t m = 0;
  for (uint32_t i = 0; i < out.nitems; i++) {
    int seen = 0;
    for (uint32_t j = 0; j < m && !seen; j++) seen = !strcmp(out.items[j], out.items[i]);
    if (seen) free(out.items[i]);
    else out.items[m++] = out.items[i];
  }
  out.nitems = m;
  if (!fail && m && !(out.key = dp_strdup("keys"))) fail = 1;
  if (fail) {
    dp__opt_clear(&out);
    return oom();
  }
  if (given) {
    dp__opt_clear(given);
    *given = out;
  } else if (m) {
    opts[(*n)++] = out;
  }
  return NULL;
}

/* The device type: target_device_type when given (a known device type). */
static dp_err *device_type(const dp__kind *k, dp_target_opt *opts, uint32_t n, int *out) {
  const dp_target_opt *o = find(opts, n, "target_device_type");
  *out = k->device_type;
  if (!o) return NULL;
  if (o->num <= 0 || o->num > 1024 || !dp_device_type_name((int)o->num))
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                      "target option -target_device_type of kind %s: %lld is not a known device type",
                      k->name, (long long)o->num);
  *out = (int)o->num;
  return NULL;
}

/* Types the given options into out (empty values dropped, from_device
   dropped once checked); a repeated option is an error. */
static dp_err *given(const dp__kind *k, const dp_target_opt *in, uint32_t nin, dp_target_opt *out,
                     uint32_t *n) {
  for (uint32_t i = 0; i < nin; i++) {
    dp_err *e = type_option(k, &in[i], &out[*n]);
    if (e) return e;
    if (out[*n].key) (*n)++;
  }
  /* repeats: compare the given names (empty values were dropped above) */
  for (uint32_t i = 0; i < nin; i++)
    for (uint32_t j = 0; j < i; j++)
      if (!strcmp(in[i].key, in[j].key))
        return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target option -%s given twice", in[i].key);
  dp_target_opt *fd = find(out, *n, "from_device");
  if (fd) {
    dp__opt_clear(fd);
    *fd = out[--*n];
  }
  return NULL;
}

dp_err *dp__kind_options(const dp__kind *k, const dp_target_opt *in, uint32_t nin,
                         dp_target_opt **out, uint32_t *nout, int *dtype) {
  uint32_t ndecl = 0, n = 0;
  while (decl_at(k, ndecl)) ndecl++;
  /* given options, then defaults and keys: at most nin + ndecl + 1 */
  dp_target_opt *opts = dp_calloc((size_t)nin + ndecl + 1, sizeof *opts);
  if (!opts) return oom();
  dp_err *e = given(k, in, nin, opts, &n);
  if (!e) e = defaults(k, opts, &n);
  if (!e) e = keys(k, opts, &n);
  if (!e) e = device_type(k, opts, n, dtype);
  if (e) {
    dp__opts_free(opts, n);
    return e;
  }
  qsort(opts, n, sizeof *opts, opt_cmp);
  *out = opts;
  *nout = n;
  return NULL;
}

/* ---------------- what a brief string may leave out ---------------- */

static int default_value(const dp__kind *k, const dp_target_opt *o) {
  const dp__optdecl *d = find_decl(k, o->key);
  if (!d || !d->dflt) return 0;
  dp_target_opt in = {(char *)d->key, DP_OPT_TEXT, (char *)d->dflt, 0, 0, NULL}, dv;
  dp_err *e = type_option(k, &in, &dv);
  if (e) {
    int oom = e->code == DP_ERR_MEMORY;
    dp_err_free(e);
    return oom ? -1 : 0;
  }
  int same = dv.kind == o->kind && (o->kind == DP_OPT_STR ? !strcmp(dv.str, o->str) : dv.num == o->num);
  dp__opt_clear(&dv);
  return same;
}

/* keys equal to the device's name followed by the default keys, no repeats. */
static int derived_keys(const dp__kind *k, const dp_target *t, const dp_target_opt *o) {
  const dp_target_opt *device = dp_target_opt_get(t, "device");
  dp_target_opt want = {0};
  int same = -1; /* out of memory unless the items were made */
  if ((!device || add_item(&want, device->str, strlen(device->str)) == 0) &&
      split_items(&want, k->keys) == 0) {
    uint32_t m = 0;
    same = 1;
    for (uint32_t i = 0; same && i < want.nitems; i++) {
      int seen = 0;
      for (uint32_t j = 0; j < i && !seen; j++) seen = !strcmp(want.items[j], want.items[i]);
      if (!seen) same = m < o->nitems && !strcmp(o->items[m++], want.items[i]);
    }
    same = same && m == o->nitems;
  }
  dp__opt_clear(&want);
  return same;
}

int dp__kind_derives(const dp__kind *k, const dp_target *t, const dp_target_opt *o) {
  if (!k) return 0;
  if (!strcmp(o->key, "keys")) return derived_keys(k, t, o);
  return default_value(k, o);
}

/* ---------------- kinds users register ---------------- */

/* A kind's name: a letter, then letters, digits, '_', '-' and '.'. */
static int valid_kind_name(const char *name) {
  if (!name || !isalpha((unsigned char)name[0])) return 0;
  for (const char *p = name; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '-' || *p == '.')) return 0;
  return 1;
}

static void kind_free(dp__kind *k) {
  if (!k) return;
  for (dp__optdecl *d = (dp__optdecl *)k->opts; d && d->key; d++) {
    free((char *)d->key);
    free((char *)d->dflt);
  }
  free((void *)k->opts);
  free((char *)k->name);
  free((char *)k->keys);
  free(k);
}

void dp__kinds_free(dp_ctx *ctx) {
  for (uint32_t i = 0; i < ctx->nkinds; i++) kind_free(ctx->kinds[i]);
  free(ctx->kinds);
  ctx->kinds = NULL;
  ctx->nkinds = ctx->capkinds = 0;
}

/* "a,b , c" -> "a,b,c" (items trimmed, empty ones dropped), malloc'd. */
static char *clean_keys(const char *keys) {
  dp_target_opt list = {0};
  if (split_items(&list, keys) < 0) {
    dp__opt_clear(&list);
    return NULL;
  }
  dp__tb b;
  dp__tb_init(&b);
  for (uint32_t i = 0; i < list.nitems; i++) dp__tb_printf(&b, "%s%s", i ? "," : "", list.items[i]);
  dp__opt_clear(&list);
  char *r = dp__tb_take(&b);
  return r ? r : dp_strdup("");
}

/* Checks the declarations of a kind being registered (k: its options so far). */
static dp_err *check_decls(const dp__kind *k, const dp_target_kind_opt *opts, uint32_t nopts) {
  for (uint32_t i = 0; i < nopts; i++) {
    const dp_target_kind_opt *o = &opts[i];
    if (!valid_key(o->name))
      return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target kind %s: malformed option name '%s' (letters, "
                        "digits, '_', '-' and '.')", k->name, o->name ? o->name : "");
    for (const dp__optdecl *c = common_opts; c->key; c++)
      if (!strcmp(c->key, o->name))
        return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target kind %s: option '%s' is one every kind has",
                          k->name, o->name);
    for (uint32_t j = 0; j < i; j++)
      if (!strcmp(opts[j].name, o->name))
        return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target kind %s: option '%s' declared twice", k->name,
                          o->name);
    if (o->type != DP_OPT_STR && o->type != DP_OPT_INT && o->type != DP_OPT_BOOL && o->type != DP_OPT_STRLIST)
      return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target kind %s: option '%s' has no type (string, "
                        "integer, boolean or list of strings)", k->name, o->name);
  }
  return NULL;
}

int dp_target_kind_register(dp_ctx *ctx, const char *name, int device_type,
                            const dp_target_kind_opt *opts, uint32_t nopts, const char *keys,
                            dp_err **err) {
  dp_err *e = NULL;
  dp__kind *k = NULL;
  if (!ctx) e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target kind: no context");
  else if (!valid_kind_name(name))
    e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "malformed target kind name '%s' (a letter, then letters, "
                   "digits, '_', '-' and '.')", name ? name : "");
  else if (dp__kind_find(ctx, name))
    e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target kind '%s' is %s already", name,
                   dp_target_kind_registered(ctx, name) ? "registered" : "built in");
  else if (device_type <= 0 || !dp_device_type_name(device_type))
    e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target kind %s: %d is not a known device type", name, device_type);
  else if (nopts && !opts)
    e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target kind %s: no options given", name);
  if (e) goto fail;
  dp__optdecl *decls = dp_calloc((size_t)nopts + 1, sizeof *decls);
  k = dp_calloc(1, sizeof *k);
  if (k) k->opts = decls;
  if (!k || !decls || !(k->name = dp_strdup(name)) || !(k->keys = clean_keys(keys ? keys : name))) {
    if (!k) free(decls);
    e = oom();
    goto fail;
  }
  k->device_type = device_type;
  if ((e = check_decls(k, opts, nopts))) goto fail;
  for (uint32_t i = 0; i < nopts; i++) {
    decls[i] = (dp__optdecl){dp_strdup(opts[i].name), opts[i].type, NULL, DP__RULE_ANY};
    if (!decls[i].key || (opts[i].dflt && !(decls[i].dflt = dp_strdup(opts[i].dflt)))) {
      e = oom();
      goto fail;
    }
  }
  /* each default reads as its option's type, as a target string's value would */
  for (uint32_t i = 0; i < nopts; i++) {
    if (!decls[i].dflt) continue;
    dp_target_opt in = {(char *)decls[i].key, DP_OPT_TEXT, (char *)decls[i].dflt, 0, 0, NULL}, out;
    if ((e = type_option(k, &in, &out))) goto fail;
    dp__opt_clear(&out);
  }
  if (dp_grow((void **)&ctx->kinds, &ctx->capkinds, ctx->nkinds + 1, sizeof *ctx->kinds) < 0) {
    e = oom();
    goto fail;
  }
  ctx->kinds[ctx->nkinds++] = k;
  return 0;
fail:
  kind_free(k);
  dp_err_set(err, e);
  return -1;
}
