/*
 * Targets: a kind (which fixes the device type), typed options and an
 * optional host target; interned per context, so equal targets are the
 * same pointer. This file holds construction from fields (dp_target_make,
 * which every other constructor ends in), with_host and the canonical
 * string form. The kinds' schemas and what construction derives from them
 * are in target_kinds.c; reading text and JSON is in target_parse.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/device.h"
#include "internal.h"
#include "target_internal.h"
#include "textbuf.h"

/* ---------------- equality and hashing of typed options ---------------- */

static int opt_equal(const dp_target_opt *a, const dp_target_opt *b) {
  if (strcmp(a->key, b->key) || a->kind != b->kind) return 0;
  switch (a->kind) {
  case DP_OPT_STR: return strcmp(a->str, b->str) == 0;
  case DP_OPT_STRLIST:
    if (a->nitems != b->nitems) return 0;
    for (uint32_t i = 0; i < a->nitems; i++)
      if (strcmp(a->items[i], b->items[i])) return 0;
    return 1;
  default: return a->num == b->num;
  }
}

static int opts_equal(const dp_target_opt *a, uint32_t na, const dp_target_opt *b, uint32_t nb) {
  if (na != nb) return 0;
  for (uint32_t i = 0; i < na; i++)
    if (!opt_equal(&a[i], &b[i])) return 0;
  return 1;
}

int dp_target_same_but_host(const dp_target *a, const dp_target *b) {
  if (!a || !b) return 0;
  return a == b || (!strcmp(a->kind, b->kind) && a->device_type == b->device_type &&
                    opts_equal(a->opts, a->nopts, b->opts, b->nopts));
}

static char *target_str(const dp_target *t, int brief);

/* ---------------- interning ---------------- */

typedef struct tkey {
  const char *kind;
  const dp_target_opt *opts;
  uint32_t nopts;
  const dp_target *host;
} tkey;

static uint32_t tkey_hash(const tkey *k) {
  uint32_t h = dp__hash_string(0, k->kind);
  for (uint32_t i = 0; i < k->nopts; i++) {
    const dp_target_opt *o = &k->opts[i];
    h = dp__hash_string(h, o->key);
    h = dp__hash_u64(h, (uint64_t)o->kind);
    if (o->kind == DP_OPT_STR) h = dp__hash_string(h, o->str);
    else if (o->kind == DP_OPT_STRLIST)
      for (uint32_t j = 0; j < o->nitems; j++) h = dp__hash_string(h, o->items[j]);
    else h = dp__hash_u64(h, (uint64_t)o->num);
  }
  return dp__hash_u64(h, (uint64_t)(uintptr_t)k->host);
}

static int tkey_eq(const void *obj, const void *key) {
  const dp_target *t = obj;
  const tkey *k = key;
  return t->host == k->host && !strcmp(t->kind, k->kind) &&
         opts_equal(t->opts, t->nopts, k->opts, k->nopts);
}

void dp__target_free_fn(dp_obj *o, dp_worklist *wl) {
  dp_target *t = (dp_target *)o;
  dp__itab_remove(&t->ctx->targets, t->hash, t);
  dp__opts_free(t->opts, t->nopts);
  free(t->kind);
  free(t->text);
  free(t->brief);
  dp_release_deferred(wl, t->host);
  dp_release_deferred(wl, t->ctx);
  free(t);
}

/* The interned target for complete options `opts` (ownership taken). The
   device type follows from kind and options, so it is not part of the key. */
static dp_target *intern(dp_ctx *ctx, const dp__kind *k, int device_type, dp_target_opt *opts,
                         uint32_t nopts, dp_target *host, dp_err **err) {
  tkey key = {k->name, opts, nopts, host};
  uint32_t h = tkey_hash(&key);
  dp_target *t = dp__itab_find(&ctx->targets, h, tkey_eq, &key);
  if (t) {
    dp__opts_free(opts, nopts);
    return dp_retain(t);
  }
  t = dp_calloc(1, sizeof *t);
  char *kind = dp_strdup(k->name);
  if (t && kind) { /* the strings print the kind */
    *t = (dp_target){.kind = kind, .nopts = nopts, .opts = opts, .host = host, .ctx = ctx}; /* (retained below) */
    /* the strings are made once: printers ask for them for every annotation */
    t->text = target_str(t, 0);
    t->brief = target_str(t, 1);
  }
  if (!t || !kind || !t->text || !t->brief || dp__itab_insert(&ctx->targets, h, t) < 0) {
    if (t) free(t->text), free(t->brief);
    free(t);
    free(kind);
    dp__opts_free(opts, nopts);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  t->h.rc = 1;
  t->h.type = DP_OBJ_TARGET;
  t->ctx = dp_retain(ctx);
  t->device_type = device_type;
  dp_retain(host);
  t->hash = h;
  return t;
}

/* Checks that `host` may serve as a host target here. */
static dp_err *check_host(dp_ctx *ctx, const dp_target *host) {
  if (!host) return NULL;
  if (host->ctx != ctx)
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "host target belongs to another context");
  if (host->host) {
    char *s = dp_target_brief(host);
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
  const dp__kind *k = dp__kind_find(ctx, kind);
  dp_err *e = k ? check_host(ctx, host) : dp__kind_unknown(ctx, kind);
  dp_target_opt *full = NULL;
  uint32_t nfull = 0;
  int device_type = 0;
  if (!e && nopts && !opts) e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target: no options given");
  if (!e) e = dp__kind_options(k, opts, nopts, &full, &nfull, &device_type);
  if (e) {
    dp_err_set(err, e);
    return NULL;
  }
  return intern(ctx, k, device_type, full, nfull, host, err);
}

dp_target *dp_target_with_host(dp_target *t, dp_target *host, dp_err **err) {
  if (!t) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "with_host: no target"));
    return NULL;
  }
  if (t->host == host) return dp_retain(t);
  dp_err *e = check_host(t->ctx, host);
  if (e) {
    dp_err_set(err, e);
    return NULL;
  }
  /* the options are complete already: copy them and re-intern */
  dp_target_opt *copy = dp_calloc(t->nopts ? t->nopts : 1, sizeof *copy);
  int fail = !copy;
  for (uint32_t i = 0; !fail && i < t->nopts; i++) {
    const dp_target_opt *o = &t->opts[i];
    dp_target_opt *c = &copy[i];
    *c = (dp_target_opt){dp_strdup(o->key), o->kind, NULL, o->num, 0, NULL};
    fail = !c->key || (o->str && !(c->str = dp_strdup(o->str)));
    if (!fail && o->nitems && !(c->items = dp_calloc(o->nitems, sizeof *c->items))) fail = 1;
    for (uint32_t j = 0; !fail && j < o->nitems; j++, c->nitems++)
      fail = !(c->items[j] = dp_strdup(o->items[j]));
  }
  if (fail) {
    dp__opts_free(copy, t->nopts);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  return intern(t->ctx, dp__kind_find(t->ctx, t->kind), t->device_type, copy, t->nopts, host, err);
}

const dp_target_opt *dp_target_opt_get(const dp_target *t, const char *key) {
  for (uint32_t i = 0; t && key && i < t->nopts; i++)
    if (!strcmp(t->opts[i].key, key)) return &t->opts[i];
  return NULL;
}

/* ---------------- string form ---------------- */

/* A value as the tokenizer of target_parse.c reads it back: bare when it
   has no blank, quote or backslash; else single-quoted when it has no
   single quote (TVM's own quoting); else double-quoted with \" and \\
   escaped. */
static void put_value(dp__tb *b, const char *v) {
  if (*v && !strpbrk(v, " \t\n\r\f\v'\"\\")) {
    dp__tb_puts(b, v);
  } else if (!strchr(v, '\'')) {
    dp__tb_printf(b, "'%s'", v);
  } else {
    dp__tb_putc(b, '"');
    for (const char *p = v; *p; p++) {
      if (*p == '"' || *p == '\\') dp__tb_putc(b, '\\');
      dp__tb_putc(b, *p);
    }
    dp__tb_putc(b, '"');
  }
}

static void put_option(dp__tb *b, const dp_target_opt *o) {
  dp__tb_printf(b, " -%s=", o->key);
  if (o->kind == DP_OPT_INT) {
    dp__tb_printf(b, "%lld", (long long)o->num);
  } else if (o->kind == DP_OPT_BOOL) {
    dp__tb_putc(b, o->num ? '1' : '0');
  } else if (o->kind == DP_OPT_STR) {
    put_value(b, o->str);
  } else {
    dp__tb list;
    dp__tb_init(&list);
    for (uint32_t i = 0; i < o->nitems; i++) dp__tb_printf(&list, "%s%s", i ? "," : "", o->items[i]);
    char *s = dp__tb_take(&list);
    if (s) put_value(b, s);
    else b->failed = 1;
    free(s);
  }
}

/* TVM's TargetNode::str: kind, keys, then the other options sorted; the
   brief form leaves out what construction derives. */
/* Whether the brief form leaves option o of t out (derived from the rest). */
static int left_out(dp__tb *b, const dp__kind *k, const dp_target *t, const dp_target_opt *o) {
  int derived = dp__kind_derives(k, t, o);
  if (derived < 0) b->failed = 1; /* out of memory: the string is dropped */
  return derived == 1;
}

static void put_target(dp__tb *b, const dp_target *t, int brief) {
  const dp__kind *k = brief ? dp__kind_find(t->ctx, t->kind) : NULL;
  dp__tb_puts(b, t->kind);
  const dp_target_opt *keys = dp_target_opt_get(t, "keys");
  if (keys && !(brief && left_out(b, k, t, keys))) put_option(b, keys);
  for (uint32_t i = 0; i < t->nopts; i++)
    if (&t->opts[i] != keys && !(brief && left_out(b, k, t, &t->opts[i])))
      put_option(b, &t->opts[i]);
}

static char *target_str(const dp_target *t, int brief) {
  if (!t) return dp_strdup("");
  dp__tb b;
  dp__tb_init(&b);
  put_target(&b, t, brief);
  if (t->host) { /* interned already, so its strings are made; it has no host */
    dp__tb_puts(&b, " -host=");
    put_value(&b, brief ? t->host->brief : t->host->text);
  }
  return dp__tb_take(&b);
}

char *dp_target_str(const dp_target *t) { return dp_strdup(t ? t->text : ""); }

char *dp_target_brief(const dp_target *t) { return dp_strdup(t ? t->brief : ""); }
