/*
 * The compilation configuration (planner.md, "CompilationConfig", rules
 * 1-6): the host target and host virtual device, the primitive targets (the
 * given targets with their host replaced by the host target), the default
 * device type and default virtual device, and canonical(vd), which every
 * virtual device entering planning goes through.
 *
 * One reading of rule 6 that planner.md leaves open: a target matches a
 * primitive target when kind and options agree even if the hosts differ
 * (the user's Target("cuda") is the configuration's "cuda -host=llvm").
 * As in TVM (FindPrimitiveTargetForDeviceOrFail), a device type no
 * primitive target serves is an error, the default device type's included;
 * the host target does not stand in for a missing cpu target.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/device.h"
#include "internal.h"

void dp__config_free_fn(dp_obj *o, dp_worklist *wl) {
  dp_config *c = (dp_config *)o;
  for (uint32_t i = 0; i < c->ntargets; i++) dp_release_deferred(wl, c->primitive_targets[i]);
  free(c->primitive_targets);
  dp_release_deferred(wl, c->host_target);
  dp_release_deferred(wl, c->host_vdev);
  dp_release_deferred(wl, c->default_vdev);
  dp_release_deferred(wl, c->ctx);
  free(c->bandwidths);
  free(c->memory);
  free(c);
}

/* "llvm -host=llvm, cuda -host=llvm": the primitive targets, for messages. */
static char *targets_text(const dp_config *c) {
  size_t len = 0;
  char *out = dp_strdup("");
  for (uint32_t i = 0; out && i < c->ntargets; i++) {
    char *s = dp_target_brief(c->primitive_targets[i]);
    char *grown = s ? dp_realloc(out, len + strlen(s) + 3) : NULL;
    if (!grown) {
      free(s);
      free(out);
      return NULL;
    }
    out = grown;
    len += (size_t)sprintf(out + len, "%s%s", i ? ", " : "", s);
    free(s);
  }
  return out;
}

static int host_capable(int device_type) {
  return device_type == DP_DEV_CPU || device_type == DP_DEV_HEXAGON;
}

/* "no target for [the default] device type X (targets: ...; host: ...)" */
static dp_err *no_target_error(const dp_config *c, int device_type, const char *which) {
  char *known = targets_text(c), *host = dp_target_brief(c->host_target);
  const char *name = dp_device_type_name(device_type);
  char num[16];
  if (!name) snprintf(num, sizeof num, "%d", device_type), name = num;
  dp_err *e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                         "CompilationConfig: no target for %sdevice type %s (targets: %s; host: %s)",
                         which, name, known ? known : "?", host ? host : "?");
  free(host);
  free(known);
  return e;
}

/* Rule 1: the given host; else the host of the first target that has one;
   else the first cpu (or hexagon) target without its host; else llvm. */
static dp_target *choose_host(dp_ctx *ctx, dp_target *const *targets, uint32_t n,
                              dp_target *host, dp_err **err) {
  if (host) return dp_target_with_host(host, NULL, err);
  for (uint32_t i = 0; i < n; i++)
    if (targets[i]->host) return dp_retain(targets[i]->host);
  for (uint32_t i = 0; i < n; i++)
    if (host_capable(targets[i]->device_type)) return dp_target_with_host(targets[i], NULL, err);
  return dp_target_make(ctx, "llvm", NULL, 0, NULL, err);
}

/* Rule 3: each target with the host replaced. Several targets may share a
   kind or a device type (two CPUs, big and LITTLE; a CPU and an Ethos-U):
   virtual_device_id tells them apart (canonical below); the same target
   twice is an error. */
static int primitive_targets(dp_config *c, dp_target *const *targets, uint32_t n, dp_err **err) {
  c->primitive_targets = dp_calloc(n, sizeof *c->primitive_targets);
  if (!c->primitive_targets) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  for (uint32_t i = 0; i < n; i++) {
    for (uint32_t j = 0; j < i; j++) {
      if (!dp_target_same_but_host(targets[i], targets[j])) continue;
      char *a = dp_target_brief(targets[j]);
      dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                                 "CompilationConfig: the target '%s' is given twice (targets %u and %u)",
                                 a ? a : "?", j + 1, i + 1));
      free(a);
      return -1;
    }
    c->primitive_targets[i] = dp_target_with_host(targets[i], c->host_target, err);
    if (!c->primitive_targets[i]) return -1;
    c->ntargets = i + 1;
  }
  return 0;
}

/* Whether a primitive target has the device type (rule 6 finds one). */
static int serves(const dp_config *c, int device_type) {
  for (uint32_t i = 0; i < c->ntargets; i++)
    if (c->primitive_targets[i]->device_type == device_type) return 1;
  return 0;
}

/* Rule 4. */
static int default_type(dp_target *const *targets, uint32_t n, int given) {
  if (given) return given;
  for (uint32_t i = 1; i < n; i++)
    if (targets[i]->device_type != targets[0]->device_type) return DP_DEV_CPU;
  return targets[0]->device_type;
}

static dp_err *check_inputs(dp_ctx *ctx, dp_target *const *targets, uint32_t n, dp_target *host,
                            int default_device_type) {
  if (!ctx) return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "CompilationConfig: no context");
  if (n == 0 || !targets)
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                      "CompilationConfig: no targets given (at least one target is needed)");
  for (uint32_t i = 0; i < n; i++) {
    if (!targets[i])
      return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "CompilationConfig: target %u is missing", i + 1);
    if (targets[i]->ctx != ctx)
      return dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                        "CompilationConfig: target %u belongs to another context", i + 1);
  }
  if (host && host->ctx != ctx)
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "CompilationConfig: host belongs to another context");
  if (default_device_type < 0)
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                      "CompilationConfig: invalid default device type %d (device types are 1 "
                      "and up: cpu = 1, cuda = 2, ...)",
                      default_device_type);
  return NULL;
}

dp_config *dp_config_make(dp_ctx *ctx, dp_target *const *targets, uint32_t ntargets,
                          dp_target *host, int default_device_type, dp_err **err) {
  dp_err *e = check_inputs(ctx, targets, ntargets, host, default_device_type);
  if (e) {
    dp_err_set(err, e);
    return NULL;
  }
  dp_config *c = dp_calloc(1, sizeof *c);
  if (!c) {
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  c->h.rc = 1;
  c->h.type = DP_OBJ_CONFIG;
  c->ctx = dp_retain(ctx);
  dp_vdev *dflt = NULL;
  if (!(c->host_target = choose_host(ctx, targets, ntargets, host, err))) goto fail;
  c->host_vdev = dp_vdev_make(ctx, c->host_target->device_type, 0, c->host_target, "", err);
  if (!c->host_vdev || primitive_targets(c, targets, ntargets, err) < 0) goto fail;
  c->default_device_type = default_type(targets, ntargets, default_device_type);
  if (!serves(c, c->default_device_type)) {
    dp_err_set(err, no_target_error(c, c->default_device_type, "the default "));
    goto fail;
  }
  if (!(dflt = dp_vdev_make(ctx, c->default_device_type, 0, NULL, "", err))) goto fail;
  c->default_vdev = dp_config_canonical(c, dflt, err);
  dp_release(dflt);
  if (!c->default_vdev) goto fail;
  return c;
fail:
  dp_release(c); /* frees what was built so far */
  return NULL;
}

/* A primitive or host target with t's kind and options (host aside): a
   target the user built before the configuration replaced its host.
   The host device is (host device type, id 0, host target) (rule 2):
   host_id says the device has id 0, so the host target itself is the
   host's, as TVM has it. Any other device naming the host target names a
   device by its target alone, and a primitive target with the same kind
   and options comes first: a user's VirtualDevice{device_type = "cpu",
   target = Target("llvm")} is the configuration's CPU ("llvm -host=llvm"),
   not a second device beside it. */
static dp_target *same_target(const dp_config *c, const dp_target *t, int host_id) {
  for (uint32_t i = 0; i < c->ntargets; i++)
    if (t == c->primitive_targets[i]) return c->primitive_targets[i];
  if (host_id && t == c->host_target) return c->host_target;
  for (uint32_t i = 0; i < c->ntargets; i++)
    if (dp_target_same_but_host(c->primitive_targets[i], t)) return c->primitive_targets[i];
  if (t == c->host_target) return c->host_target;
  return NULL;
}

/* How many primitive targets have device type dt; *slot: the index of t
   among them (when t is one). */
static uint32_t targets_of_type(const dp_config *cfg, int dt, const dp_target *t, uint32_t *slot) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < cfg->ntargets; i++) {
    if (cfg->primitive_targets[i]->device_type != dt) continue;
    if (cfg->primitive_targets[i] == t && slot) *slot = n;
    n++;
  }
  return n;
}

/* The k-th primitive target of device type dt, or NULL. */
static dp_target *target_of_type(const dp_config *cfg, int dt, uint32_t k) {
  for (uint32_t i = 0; i < cfg->ntargets; i++)
    if (cfg->primitive_targets[i]->device_type == dt && k-- == 0) return cfg->primitive_targets[i];
  return NULL;
}

/* "0 = \"llvm -mcpu=a76 -host=llvm\", 1 = \"llvm -mcpu=a55 -host=llvm\"" (malloc'd). */
static char *slots_text(const dp_config *cfg, int dt) {
  char *out = dp_strdup("");
  size_t len = 0;
  dp_target *t;
  for (uint32_t k = 0; out && (t = target_of_type(cfg, dt, k)); k++) {
    char *b = dp_target_brief(t);
    char *grown = b ? dp_realloc(out, len + strlen(b) + 32) : NULL;
    if (!grown) {
      free(b);
      free(out);
      return NULL;
    }
    out = grown;
    len += (size_t)sprintf(out + len, "%s%u = \"%s\"", k ? ", " : "", k, b);
    free(b);
  }
  return out;
}

static dp_err *slot_error(const dp_config *cfg, const dp_vdev *vd, const char *why) {
  char *list = slots_text(cfg, vd->device_type);
  const char *name = dp_device_type_name(vd->device_type);
  dp_err *e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                         "CompilationConfig: %s (the targets of device type %s, by virtual_device_id: %s)",
                         why, name ? name : "?", list ? list : "?");
  free(list);
  return e;
}

/* Rule 6, and the targets of one device type told apart: where several
   primitive targets share the device type, virtual_device_id k names the
   k-th of them (none: the first), and a device that gives a target without
   an id gets that target's id (with another id it is an error: 0 is an id
   like any other). Where one target serves the type, the id is the user's
   (uninterpreted, as TVM's). */
dp_vdev *dp_config_canonical(const dp_config *cfg, dp_vdev *vd, dp_err **err) {
  if (!cfg || !vd) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "canonical: no virtual device"));
    return NULL;
  }
  dp_target *target = vd->target;
  int id = vd->virtual_device_id;
  if (target) {
    dp_target *same = same_target(cfg, target, id == 0);
    if (same) target = same;
    uint32_t slot = 0, n = targets_of_type(cfg, target->device_type, target, &slot);
    if (n > 1 && target != cfg->host_target) {
      if (id >= 0 && (uint32_t)id != slot) {
        char why[160];
        snprintf(why, sizeof why, "virtual_device_id %d names another target than the device's", id);
        dp_err_set(err, slot_error(cfg, vd, why));
        return NULL;
      }
      id = (int)slot;
    }
  } else if (vd->device_type) {
    uint32_t n = targets_of_type(cfg, vd->device_type, NULL, NULL);
    if (n == 0) {
      dp_err_set(err, no_target_error(cfg, vd->device_type, ""));
      return NULL;
    }
    if (n > 1 && id >= (int)n) {
      char why[160];
      snprintf(why, sizeof why, "no target for virtual_device_id %d", id);
      dp_err_set(err, slot_error(cfg, vd, why));
      return NULL;
    }
    target = target_of_type(cfg, vd->device_type, n > 1 && id > 0 ? (uint32_t)id : 0);
  }
  if (target == vd->target && id == vd->virtual_device_id) return dp_retain(vd);
  return dp_vdev_make(cfg->ctx, vd->device_type, id, target, vd->memory_scope, err);
}

/* A new configuration with everything of cfg (its own arrays). */
static dp_config *config_copy(const dp_config *cfg) {
  dp_config *c = dp_calloc(1, sizeof *c);
  dp_target **ts = c ? dp_calloc(cfg->ntargets ? cfg->ntargets : 1, sizeof *ts) : NULL;
  dp_bandwidth *b = ts && cfg->nbandwidths ? dp_malloc(cfg->nbandwidths * sizeof *b) : NULL;
  dp_memory_budget *m = ts && cfg->nmemory ? dp_malloc(cfg->nmemory * sizeof *m) : NULL;
  if (!c || !ts || (cfg->nbandwidths && !b) || (cfg->nmemory && !m)) {
    free(c);
    free(ts);
    free(b);
    free(m);
    return NULL;
  }
  *c = *cfg;
  c->h.rc = 1;
  c->h.flags = 0;
  dp_retain(c->ctx);
  dp_retain(c->host_target);
  dp_retain(c->host_vdev);
  dp_retain(c->default_vdev);
  for (uint32_t i = 0; i < cfg->ntargets; i++) ts[i] = dp_retain(cfg->primitive_targets[i]);
  c->primitive_targets = ts;
  if (b) memcpy(b, cfg->bandwidths, cfg->nbandwidths * sizeof *b);
  if (m) memcpy(m, cfg->memory, cfg->nmemory * sizeof *m);
  c->bandwidths = b;
  c->memory = m;
  return c;
}

/* *out = a copy of n items sorted by cmp (one order whatever the caller's;
   NULL for none), for c, a configuration just copied. -1 when c or the copy
   could not be made: c is released and err set. */
static int sorted_copy(dp_config *c, const void *items, uint32_t n, size_t size,
                       int (*cmp)(const void *, const void *), void **out, dp_err **err) {
  void *copy = c && n ? dp_malloc(n * size) : NULL;
  if (!c || (n && !copy)) {
    dp_release(c);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return -1;
  }
  if (n) {
    memcpy(copy, items, n * size);
    qsort(copy, n, size, cmp);
  }
  *out = copy;
  return 0;
}

/* ---- memory budgets ---- */

static int cmp_budget(const void *x, const void *y) {
  const dp_memory_budget *a = x, *b = y;
  return a->device_type < b->device_type ? -1 : a->device_type > b->device_type;
}

dp_config *dp_config_with_memory(const dp_config *cfg, const dp_memory_budget *mb, uint32_t n,
                                 dp_err **err) {
  if (!cfg || (n && !mb)) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "CompilationConfig: no configuration"));
    return NULL;
  }
  for (uint32_t i = 0; i < n; i++) {
    if (mb[i].device_type <= 0 || !dp_device_type_name(mb[i].device_type)) {
      dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "CompilationConfig: invalid device type "
                                 "in a memory budget"));
      return NULL;
    }
    if (!(mb[i].bytes > 0) || mb[i].bytes > 1e300) {
      dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "CompilationConfig: the memory budget of "
                                 "%s must be a number of bytes > 0, got %g",
                                 dp_device_type_name(mb[i].device_type), mb[i].bytes));
      return NULL;
    }
    for (uint32_t j = 0; j < i; j++)
      if (mb[j].device_type == mb[i].device_type) {
        dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "CompilationConfig: two memory budgets "
                                   "for %s", dp_device_type_name(mb[i].device_type)));
        return NULL;
      }
  }
  dp_config *c = config_copy(cfg);
  void *m;
  if (sorted_copy(c, mb, n, sizeof *mb, cmp_budget, &m, err) < 0) return NULL;
  free(c->memory);
  c->memory = m;
  c->nmemory = n;
  return c;
}

int dp_bytes_parse(const char *s, double *bytes) {
  static const struct { const char *unit; double scale; } units[] = {
    {"", 1}, {"B", 1}, {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  char *end;
  double v = s ? strtod(s, &end) : 0;
  if (!s || end == s) return -1;
  while (*end == ' ') end++;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcmp(end, units[i].unit) == 0) {
      v *= units[i].scale;
      if (!(v > 0) || v > 1e300) return -1;
      *bytes = v;
      return 0;
    }
  return -1;
}

double dp_config_memory(const dp_config *cfg, int device_type) {
  for (uint32_t i = 0; cfg && i < cfg->nmemory; i++)
    if (cfg->memory[i].device_type == device_type) return cfg->memory[i].bytes;
  return 0;
}

/* ---- bandwidths (placement by cost) ---- */

int dp_bandwidth_ok(double v) { return v > 0 && v <= 1e300; } /* (NaN fails both) */

static dp_err *bad_bandwidth(double v) {
  char got[32];
  snprintf(got, sizeof got, v != v ? "nan" : "%g", v); /* (no "-nan") */
  return dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                    "CompilationConfig: a bandwidth must be a number of bytes per second > 0 and finite, got %s", got);
}

static int cmp_pair(const void *x, const void *y) {
  const dp_bandwidth *a = x, *b = y;
  if (a->src != b->src) return a->src < b->src ? -1 : 1;
  return a->dst < b->dst ? -1 : a->dst > b->dst;
}

dp_config *dp_config_with_bandwidths(const dp_config *cfg, const dp_bandwidth *bw, uint32_t n,
                                     double dflt, dp_err **err) {
  if (!cfg || (n && !bw)) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "CompilationConfig: no configuration"));
    return NULL;
  }
  if (dflt != 0 && !dp_bandwidth_ok(dflt)) {
    dp_err_set(err, bad_bandwidth(dflt));
    return NULL;
  }
  for (uint32_t i = 0; i < n; i++)
    if (!dp_bandwidth_ok(bw[i].bytes_per_second) || bw[i].src < 0 || bw[i].dst < 0) {
      dp_err_set(err, bw[i].src < 0 || bw[i].dst < 0
                          ? dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "CompilationConfig: invalid device type in a bandwidth")
                          : bad_bandwidth(bw[i].bytes_per_second));
      return NULL;
    }
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t j = 0; j < i; j++)
      if (bw[i].src == bw[j].src && bw[i].dst == bw[j].dst) {
        dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "CompilationConfig: two bandwidths for "
                                   "the same pair of device types"));
        return NULL;
      }
  dp_config *c = config_copy(cfg);
  void *b;
  if (sorted_copy(c, bw, n, sizeof *bw, cmp_pair, &b, err) < 0) return NULL;
  free(c->bandwidths);
  c->bandwidths = b;
  c->nbandwidths = n;
  c->default_bandwidth = dflt;
  return c;
}

int dp_config_has_bandwidths(const dp_config *cfg) {
  return cfg && (cfg->nbandwidths || cfg->default_bandwidth > 0);
}

/* How well pair b matches (s, d): 4 exact, 3 "s->*", 2 "*->d", 1 "*->*", 0 no. */
static int match_rank(const dp_bandwidth *b, int s, int d) {
  if ((b->src && b->src != s) || (b->dst && b->dst != d)) return 0;
  return b->src ? (b->dst ? 4 : 3) : (b->dst ? 2 : 1);
}

double dp_config_bandwidth(const dp_config *cfg, const dp_vdev *src, const dp_vdev *dst) {
  if (!cfg) return 0;
  int s = src ? src->device_type : 0, d = dst ? dst->device_type : 0, best = 0;
  double bw = cfg->default_bandwidth;
  for (uint32_t i = 0; i < cfg->nbandwidths; i++) {
    int r = match_rank(&cfg->bandwidths[i], s, d);
    if (r > best) best = r, bw = cfg->bandwidths[i].bytes_per_second;
  }
  return bw;
}

static int key_side(const char *key, const char *name, size_t n, int *out, dp_err **err) {
  char buf[64];
  if (n == 1 && name[0] == '*') return *out = 0, 0;
  if (n == 0 || n >= sizeof buf) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "CompilationConfig: bandwidth key '%s' is not "
                               "SRC->DST (device type names or *, as \"cpu->cuda\")", key));
    return -1;
  }
  memcpy(buf, name, n);
  buf[n] = 0;
  int t = dp_device_type_parse(buf);
  if (t <= 0) {
    const char *best = dp_device_type_suggest(buf);
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "CompilationConfig: unknown device type '%s' "
                               "in bandwidth key '%s'%s%s%s", buf, key, best ? "; did you mean '" : "",
                               best ? best : "", best ? "'?" : ""));
    return -1;
  }
  *out = t;
  return 0;
}

int dp_bandwidth_key(const char *key, int *src, int *dst, dp_err **err) {
  const char *arrow = key ? strstr(key, "->") : NULL;
  if (!arrow) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "CompilationConfig: bandwidth key '%s' is not "
                               "SRC->DST (device type names or *, as \"cpu->cuda\")", key ? key : ""));
    return -1;
  }
  return key_side(key, key, (size_t)(arrow - key), src, err) < 0 ||
                 key_side(key, arrow + 2, strlen(arrow + 2), dst, err) < 0 ? -1 : 0;
}
