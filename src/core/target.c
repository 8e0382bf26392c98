/*
 * Targets: a kind (which fixes the device type), typed options and an
 * optional host target; interned per context, so equal targets are the
 * same pointer. This file holds the kind table, construction from fields
 * (dp_target_make, which every other constructor ends in), with_host and
 * the canonical string form. Parsing text and JSON is in target_parse.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/device.h"
#include "internal.h"
#include "textbuf.h"

/* ---------------- the kinds and their declared options ---------------- */

typedef struct optdecl { const char *key; dp_optkind kind; } optdecl;

/* Options every kind accepts. */
static const optdecl common_opts[] = {
  {"keys", DP_OPT_STRLIST}, {"libs", DP_OPT_STRLIST}, {"tag", DP_OPT_STR},
  {"device", DP_OPT_STR}, {"model", DP_OPT_STR}, {"from_device", DP_OPT_INT}, {NULL, 0}};

static const optdecl llvm_opts[] = {
  {"mcpu", DP_OPT_STR}, {"mtriple", DP_OPT_STR}, {"mattr", DP_OPT_STRLIST},
  {"mabi", DP_OPT_STR}, {"mfloat-abi", DP_OPT_STR}, {"num-cores", DP_OPT_INT},
  {"opt-level", DP_OPT_INT}, {"fast-math", DP_OPT_BOOL}, {"link-params", DP_OPT_BOOL},
  {"system-lib", DP_OPT_BOOL}, {"cl-opt", DP_OPT_STRLIST}, {NULL, 0}};
static const optdecl c_opts[] = {
  {"mcpu", DP_OPT_STR}, {"mtriple", DP_OPT_STR}, {"march", DP_OPT_STR},
  {"constants-byte-alignment", DP_OPT_INT}, {"workspace-byte-alignment", DP_OPT_INT},
  {"system-lib", DP_OPT_BOOL}, {NULL, 0}};
static const optdecl cuda_opts[] = {
  {"arch", DP_OPT_STR}, {"mcpu", DP_OPT_STR}, {"max_num_threads", DP_OPT_INT},
  {"thread_warp_size", DP_OPT_INT}, {"max_shared_memory_per_block", DP_OPT_INT},
  {"max_threads_per_block", DP_OPT_INT}, {"registers_per_block", DP_OPT_INT},
  {"l2_cache_size_bytes", DP_OPT_INT}, {NULL, 0}};
static const optdecl nvptx_opts[] = {
  {"mcpu", DP_OPT_STR}, {"mtriple", DP_OPT_STR}, {"max_num_threads", DP_OPT_INT},
  {"thread_warp_size", DP_OPT_INT}, {NULL, 0}};
static const optdecl rocm_opts[] = {
  {"mcpu", DP_OPT_STR}, {"mtriple", DP_OPT_STR}, {"mattr", DP_OPT_STRLIST},
  {"max_num_threads", DP_OPT_INT}, {"thread_warp_size", DP_OPT_INT},
  {"max_shared_memory_per_block", DP_OPT_INT}, {"max_threads_per_block", DP_OPT_INT},
  {NULL, 0}};
static const optdecl gpu_opts[] = { /* opencl, metal, webgpu */
  {"max_num_threads", DP_OPT_INT}, {"thread_warp_size", DP_OPT_INT},
  {"max_function_args", DP_OPT_INT}, {"max_shared_memory_per_block", DP_OPT_INT},
  {NULL, 0}};
static const optdecl vulkan_opts[] = {
  {"max_num_threads", DP_OPT_INT}, {"thread_warp_size", DP_OPT_INT},
  {"supports_float16", DP_OPT_BOOL}, {"supports_float64", DP_OPT_BOOL},
  {"supports_int8", DP_OPT_BOOL}, {"supports_int16", DP_OPT_BOOL},
  {"supports_int64", DP_OPT_BOOL}, {"max_shared_memory_per_block", DP_OPT_INT},
  {NULL, 0}};
static const optdecl hexagon_opts[] = {
  {"mcpu", DP_OPT_STR}, {"mtriple", DP_OPT_STR}, {"mattr", DP_OPT_STRLIST},
  {"llvm-options", DP_OPT_STRLIST}, {"num-cores", DP_OPT_INT},
  {"vtcm-capacity", DP_OPT_INT}, {NULL, 0}};
static const optdecl no_opts[] = {{NULL, 0}};

static const struct kinddecl {
  const char *name;
  int device_type;
  const optdecl *opts;
} kinds[] = {
  {"llvm", DP_DEV_CPU, llvm_opts},       {"c", DP_DEV_CPU, c_opts},
  {"cuda", DP_DEV_CUDA, cuda_opts},      {"nvptx", DP_DEV_CUDA, nvptx_opts},
  {"rocm", DP_DEV_ROCM, rocm_opts},      {"opencl", DP_DEV_OPENCL, gpu_opts},
  {"vulkan", DP_DEV_VULKAN, vulkan_opts}, {"metal", DP_DEV_METAL, gpu_opts},
  {"hexagon", DP_DEV_HEXAGON, hexagon_opts}, {"webgpu", DP_DEV_WEBGPU, gpu_opts},
  {"ext_dev", DP_DEV_EXT_DEV, no_opts},
};

static const struct kinddecl *find_kind(const char *name) {
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcmp(kinds[i].name, name) == 0) return &kinds[i];
  return NULL;
}

static const char *kind_list(void) {
  return "llvm, c, cuda, nvptx, rocm, opencl, vulkan, metal, hexagon, webgpu, ext_dev";
}

/* Declared type of `key` for kind k; -1 when undeclared. */
static int declared(const struct kinddecl *k, const char *key) {
  for (const optdecl *d = k->opts; d->key; d++)
    if (strcmp(d->key, key) == 0) return (int)d->kind;
  for (const optdecl *d = common_opts; d->key; d++)
    if (strcmp(d->key, key) == 0) return (int)d->kind;
  return -1;
}

int dp_target_kind_device_type(const char *kind) {
  const struct kinddecl *k = kind ? find_kind(kind) : NULL;
  return k ? k->device_type : -1;
}

/* ---------------- option values ---------------- */

static void opt_clear(dp_target_opt *o) {
  free(o->key);
  free(o->str);
  o->key = o->str = NULL;
}

static void opts_free(dp_target_opt *opts, uint32_t n) {
  for (uint32_t i = 0; opts && i < n; i++) opt_clear(&opts[i]);
  free(opts);
}

static int parse_int(const char *s, int64_t *out) {
  char *end;
  if (!*s) return -1;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*end || errno == ERANGE) return -1;
  *out = v;
  return 0;
}

static int parse_bool(const char *s, int64_t *out) {
  if (!strcmp(s, "true") || !strcmp(s, "1")) *out = 1;
  else if (!strcmp(s, "false") || !strcmp(s, "0")) *out = 0;
  else return -1;
  return 0;
}

static const char *optkind_name(int k) {
  switch (k) {
  case DP_OPT_INT: return "an integer";
  case DP_OPT_BOOL: return "a boolean (true/false)";
  case DP_OPT_STRLIST: return "a comma-separated list";
  default: return "a string";
  }
}

/* A key is a word of letters, digits, '_', '-' and '.'. */
static int valid_key(const char *key) {
  if (!key || !*key) return 0;
  for (const char *p = key; *p; p++)
    if (!(*p == '_' || *p == '-' || *p == '.' || (*p >= '0' && *p <= '9') ||
          (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
      return 0;
  return 1;
}

/* Text of an option as given (for undeclared options and messages). */
static char *opt_text(const dp_target_opt *in) {
  char buf[32];
  switch (in->kind) {
  case DP_OPT_INT: snprintf(buf, sizeof buf, "%lld", (long long)in->num); return dp_strdup(buf);
  case DP_OPT_BOOL: return dp_strdup(in->num ? "true" : "false");
  default: return dp_strdup(in->str ? in->str : "");
  }
}

/* Canonical copy of `in` typed as kind k declares. */
static dp_err *coerce(const struct kinddecl *k, const dp_target_opt *in, dp_target_opt *out) {
  memset(out, 0, sizeof *out);
  if (!valid_key(in->key))
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "malformed target option name '%s'",
                      in->key ? in->key : "");
  if (!strcmp(in->key, "host") || !strcmp(in->key, "kind"))
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "'%s' is not an option (it is a field of the target)",
                      in->key);
  int want = declared(k, in->key);
  out->key = dp_strdup(in->key);
  if (!out->key) return dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  if (want < 0 || want == DP_OPT_STR || want == DP_OPT_STRLIST) {
    if (want >= 0 && in->kind != DP_OPT_STR && in->kind != DP_OPT_STRLIST) goto wrong;
    if (want == DP_OPT_STR && in->kind == DP_OPT_STRLIST) goto wrong;
    out->kind = want < 0 ? DP_OPT_STR : (dp_optkind)want;
    out->str = opt_text(in);
    if (!out->str) goto oom;
    return NULL;
  }
  out->kind = (dp_optkind)want;
  if (in->kind == (dp_optkind)want) {
    out->num = want == DP_OPT_BOOL ? (in->num != 0) : in->num;
    return NULL;
  }
  if (in->kind == DP_OPT_STR && in->str &&
      (want == DP_OPT_INT ? parse_int(in->str, &out->num) : parse_bool(in->str, &out->num)) == 0)
    return NULL;
wrong:;
  char *text = opt_text(in);
  dp_err *e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                         "target option -%s of kind %s expects %s, got '%s'", in->key, k->name,
                         optkind_name(want), text ? text : "?");
  free(text);
  opt_clear(out);
  return e;
oom:
  opt_clear(out);
  return dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
}

static int opt_cmp(const void *a, const void *b) {
  return strcmp(((const dp_target_opt *)a)->key, ((const dp_target_opt *)b)->key);
}

static int opt_equal(const dp_target_opt *a, const dp_target_opt *b) {
  if (strcmp(a->key, b->key) || a->kind != b->kind) return 0;
  if (a->kind == DP_OPT_STR || a->kind == DP_OPT_STRLIST) return strcmp(a->str, b->str) == 0;
  return a->num == b->num;
}

/* ---------------- interning ---------------- */

typedef struct tkey {
  const char *kind;
  const dp_target_opt *opts;
  uint32_t nopts;
  const dp_target *host;
} tkey;

static uint32_t tkey_hash(const tkey *k) {
  uint32_t h = dp_hash_str(0, k->kind);
  for (uint32_t i = 0; i < k->nopts; i++) {
    const dp_target_opt *o = &k->opts[i];
    h = dp_hash_str(h, o->key);
    h = dp_hash_u64(h, (uint64_t)o->kind);
    if (o->kind == DP_OPT_STR || o->kind == DP_OPT_STRLIST) h = dp_hash_str(h, o->str);
    else h = dp_hash_u64(h, (uint64_t)o->num);
  }
  return dp_hash_u64(h, (uint64_t)(uintptr_t)k->host);
}

static int tkey_eq(const void *obj, const void *key) {
  const dp_target *t = obj;
  const tkey *k = key;
  if (t->host != k->host || t->nopts != k->nopts || strcmp(t->kind, k->kind)) return 0;
  for (uint32_t i = 0; i < k->nopts; i++)
    if (!opt_equal(&t->opts[i], &k->opts[i])) return 0;
  return 1;
}

void dp__target_free_fn(dp_obj *o, dp_worklist *wl) {
  dp_target *t = (dp_target *)o;
  dp_itab_remove(&t->ctx->targets, t->hash, t);
  opts_free(t->opts, t->nopts);
  free(t->kind);
  dp_release_deferred(wl, t->host);
  dp_release_deferred(wl, t->ctx);
  free(t);
}

/* The interned target for normalized options `opts` (ownership taken). */
static dp_target *intern(dp_ctx *ctx, const struct kinddecl *k, dp_target_opt *opts,
                         uint32_t nopts, dp_target *host, dp_err **err) {
  tkey key = {k->name, opts, nopts, host};
  uint32_t h = tkey_hash(&key);
  dp_target *t = dp_itab_find(&ctx->targets, h, tkey_eq, &key);
  if (t) {
    opts_free(opts, nopts);
    return dp_retain(t);
  }
  t = calloc(1, sizeof *t);
  char *kind = dp_strdup(k->name);
  if (!t || !kind || dp_itab_insert(&ctx->targets, h, t) < 0) {
    free(t);
    free(kind);
    opts_free(opts, nopts);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  t->h.rc = 1;
  t->h.type = DP_OBJ_TARGET;
  t->ctx = dp_retain(ctx);
  t->kind = kind;
  t->device_type = k->device_type;
  t->nopts = nopts;
  t->opts = opts;
  t->host = dp_retain(host);
  t->hash = h;
  return t;
}

/* Checks that `host` may serve as a host target here. */
static dp_err *check_host(dp_ctx *ctx, const dp_target *host) {
  if (!host) return NULL;
  if (host->ctx != ctx)
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "host target belongs to another context");
  if (host->host) {
    char *s = dp_target_str(host);
    dp_err *e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                           "a host target cannot have a host of its own: '%s'", s ? s : "?");
    free(s);
    return e;
  }
  return NULL;
}

dp_target *dp_target_make(dp_ctx *ctx, const char *kind, const dp_target_opt *opts,
                          uint32_t nopts, dp_target *host, dp_err **err) {
  if (!ctx) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target: no context"));
    return NULL;
  }
  const struct kinddecl *k = kind ? find_kind(kind) : NULL;
  if (!k) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "unknown target kind '%s' (known: %s)",
                               kind ? kind : "", kind_list()));
    return NULL;
  }
  dp_err *e = check_host(ctx, host);
  if (e) {
    dp_err_set(err, e);
    return NULL;
  }
  dp_target_opt *norm = dp_calloc(nopts, sizeof *norm);
  if (!norm) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  for (uint32_t i = 0; i < nopts; i++) {
    if ((e = coerce(k, &opts[i], &norm[i]))) {
      opts_free(norm, i);
      dp_err_set(err, e);
      return NULL;
    }
  }
  qsort(norm, nopts, sizeof *norm, opt_cmp);
  for (uint32_t i = 1; i < nopts; i++) {
    if (!strcmp(norm[i].key, norm[i - 1].key)) {
      dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target option -%s given twice",
                                 norm[i].key));
      opts_free(norm, nopts);
      return NULL;
    }
  }
  return intern(ctx, k, norm, nopts, host, err);
}

dp_target *dp_target_with_host(dp_target *t, dp_target *host, dp_err **err) {
  if (!t) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "with_host: no target"));
    return NULL;
  }
  if (t->host == host) return dp_retain(t);
  /* options are already normalized, so this is a pure re-intern */
  return dp_target_make(t->ctx, t->kind, t->opts, t->nopts, host, err);
}

const dp_target_opt *dp_target_opt_get(const dp_target *t, const char *key) {
  for (uint32_t i = 0; t && key && i < t->nopts; i++)
    if (!strcmp(t->opts[i].key, key)) return &t->opts[i];
  return NULL;
}

/* ---------------- string form ---------------- */

/* A value as the tokenizer of target_parse.c reads it back: bare when it
   has no blank, quote or backslash; else single-quoted when it has no
   single quote; else double-quoted with \" and \\ escaped. */
static void put_value(dp_tb *b, const char *v) {
  if (*v && !strpbrk(v, " \t\n\r'\"\\")) {
    dp_tb_puts(b, v);
  } else if (!strchr(v, '\'')) {
    dp_tb_printf(b, "'%s'", v);
  } else {
    dp_tb_putc(b, '"');
    for (const char *p = v; *p; p++) {
      if (*p == '"' || *p == '\\') dp_tb_putc(b, '\\');
      dp_tb_putc(b, *p);
    }
    dp_tb_putc(b, '"');
  }
}

static void put_target(dp_tb *b, const dp_target *t) {
  dp_tb_puts(b, t->kind);
  for (uint32_t i = 0; i < t->nopts; i++) {
    const dp_target_opt *o = &t->opts[i];
    dp_tb_printf(b, " -%s=", o->key);
    if (o->kind == DP_OPT_INT) dp_tb_printf(b, "%lld", (long long)o->num);
    else if (o->kind == DP_OPT_BOOL) dp_tb_puts(b, o->num ? "true" : "false");
    else put_value(b, o->str);
  }
}

char *dp_target_str(const dp_target *t) {
  if (!t) return dp_strdup("");
  dp_tb b;
  dp_tb_init(&b);
  put_target(&b, t);
  if (t->host) {
    dp_tb hb;
    dp_tb_init(&hb);
    put_target(&hb, t->host); /* a host has no host of its own */
    char *host = dp_tb_take(&hb);
    dp_tb_puts(&b, " -host=");
    if (host) put_value(&b, host);
    else b.failed = 1;
    free(host);
  }
  return dp_tb_take(&b);
}
