/*
 * Virtual devices: the quadruple (device type, virtual device id, target,
 * memory scope), interned per context so pointer equality is structural
 * equality; Join and Default field by field (seed 000, with the slip that
 * planner.md points out: the rules win over the seed's second example);
 * and the inline text form.
 *
 * virtual_device_id: -1 alone means unconstrained; 0 is an ordinary id like
 * any other (not "not significant"), so Join(id 1, id 0) has no result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/device.h"
#include "internal.h"

typedef struct vkey {
  int device_type, id;
  const dp_target *target;
  const char *scope;
} vkey;

static uint32_t vkey_hash(const vkey *k) {
  uint32_t h = dp__hash_u64(0, (uint64_t)(uint32_t)k->device_type);
  h = dp__hash_u64(h, (uint64_t)(uint32_t)k->id);
  h = dp__hash_u64(h, (uint64_t)(uintptr_t)k->target);
  return dp__hash_string(h, k->scope);
}

static int vkey_eq(const void *obj, const void *key) {
  const dp_vdev *v = obj;
  const vkey *k = key;
  return v->device_type == k->device_type && v->virtual_device_id == k->id &&
         v->target == k->target && strcmp(v->memory_scope, k->scope) == 0;
}

void dp__vdev_free_fn(dp_obj *o, dp_worklist *wl) {
  dp_vdev *v = (dp_vdev *)o;
  dp__itab_remove(&v->ctx->vdevs, v->hash, v);
  free(v->memory_scope);
  dp_release_deferred(wl, v->target);
  dp_release_deferred(wl, v->ctx);
  free(v);
}

static const char *type_text(int device_type, char *buf, size_t n) {
  const char *name = dp_device_type_name(device_type);
  if (name) return name;
  snprintf(buf, n, "%d", device_type);
  return buf;
}

/* The fields' own checks: ranges, context, target/device type agreement. */
static dp_err *check_fields(dp_ctx *ctx, int *device_type, int id, const dp_target *target) {
  char b1[16], b2[16];
  if (*device_type < 0)
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "virtual device: bad device type %d", *device_type);
  if (id < -1)
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                      "virtual device: virtual_device_id must be -1 (unconstrained) or >= 0, got %d",
                      id);
  if (!target) return NULL;
  if (target->ctx != ctx)
    return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "virtual device: target belongs to another context");
  if (*device_type == 0) {
    *device_type = target->device_type;
    return NULL;
  }
  if (*device_type == target->device_type) return NULL;
  char *ts = dp_target_brief(target);
  dp_err *e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                         "virtual device: device type %s disagrees with target '%s' (device type %s)",
                         type_text(*device_type, b1, sizeof b1), ts ? ts : target->kind,
                         type_text(target->device_type, b2, sizeof b2));
  free(ts);
  return e;
}

dp_vdev *dp_vdev_make(dp_ctx *ctx, int device_type, int virtual_device_id, dp_target *target,
                      const char *memory_scope, dp_err **err) {
  if (!ctx) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "virtual device: no context"));
    return NULL;
  }
  dp_err *e = check_fields(ctx, &device_type, virtual_device_id, target);
  if (e) {
    dp_err_set(err, e);
    return NULL;
  }
  vkey key = {device_type, virtual_device_id, target, memory_scope ? memory_scope : ""};
  uint32_t h = vkey_hash(&key);
  dp_vdev *v = dp__itab_find(&ctx->vdevs, h, vkey_eq, &key);
  if (v) return dp_retain(v);
  v = dp_calloc(1, sizeof *v);
  char *scope = dp_strdup(key.scope);
  if (!v || !scope || dp__itab_insert(&ctx->vdevs, h, v) < 0) {
    free(v);
    free(scope);
    dp_err_set(err, dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"));
    return NULL;
  }
  v->h.rc = 1;
  v->h.type = DP_OBJ_VDEV;
  v->ctx = dp_retain(ctx);
  v->device_type = device_type;
  v->virtual_device_id = virtual_device_id;
  v->target = dp_retain(target);
  v->memory_scope = scope;
  v->hash = h;
  return v;
}

dp_vdev *dp_vdev_unconstrained(dp_ctx *ctx) { return dp_vdev_make(ctx, 0, -1, NULL, "", NULL); }

int dp_vdev_is_fully_unconstrained(const dp_vdev *v) {
  return v && v->device_type == 0 && v->virtual_device_id == -1 && !v->target &&
         !v->memory_scope[0];
}

int dp_vdev_is_fully_constrained(const dp_vdev *v) {
  return v && v->target && v->virtual_device_id != -1 && v->memory_scope[0];
}

dp_vdev *dp_vdev_join(dp_vdev *a, dp_vdev *b) {
  if (!a || !b) return NULL;
  if (a == b) return dp_retain(a);
  if (a->device_type && b->device_type && a->device_type != b->device_type) return NULL;
  if (a->virtual_device_id != -1 && b->virtual_device_id != -1 &&
      a->virtual_device_id != b->virtual_device_id)
    return NULL;
  if (a->target && b->target && a->target != b->target) return NULL;
  if (a->memory_scope[0] && b->memory_scope[0] && strcmp(a->memory_scope, b->memory_scope))
    return NULL;
  /* Each field: the constrained side. A target always agrees with its own
     side's device type, and the device types agree, so the result is valid. */
  return dp_vdev_make(a->ctx, a->device_type ? a->device_type : b->device_type,
                      a->virtual_device_id != -1 ? a->virtual_device_id : b->virtual_device_id,
                      a->target ? a->target : b->target,
                      a->memory_scope[0] ? a->memory_scope : b->memory_scope, NULL);
}

dp_vdev *dp_vdev_default(dp_vdev *a, dp_vdev *b) {
  if (!a || !b) return a ? dp_retain(a) : dp_retain(b);
  int type = a->device_type ? a->device_type : b->device_type;
  dp_target *target = a->target;
  /* the rhs target only when it agrees with the defaulted device type */
  if (!target && b->target && b->target->device_type == type) target = b->target;
  return dp_vdev_make(a->ctx, type,
                      a->virtual_device_id != -1 ? a->virtual_device_id : b->virtual_device_id,
                      target, a->memory_scope[0] ? a->memory_scope : b->memory_scope, NULL);
}

/* Appends s to the buffer as a double-quoted string with \" \\ escaped. */
static size_t quoted(char *out, const char *s) {
  size_t n = 0;
  out[n++] = '"';
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') out[n++] = '\\';
    out[n++] = *s;
  }
  out[n++] = '"';
  return n;
}

char *dp_vdev_str(const dp_vdev *v) {
  if (!v) return dp_strdup("VirtualDevice()");
  char *ts = v->target ? dp_target_brief(v->target) : NULL;
  if (v->target && !ts) return NULL;
  size_t cap = 128 + 2 * (strlen(v->memory_scope) + (ts ? strlen(ts) : 0));
  char *out = dp_malloc(cap), b[16];
  if (!out) {
    free(ts);
    return NULL;
  }
  size_t n = 0;
  const char *sep = "";
  n += (size_t)sprintf(out + n, "VirtualDevice(");
  if (v->device_type) {
    n += (size_t)sprintf(out + n, "device_type=%s", type_text(v->device_type, b, sizeof b));
    sep = ", ";
  }
  if (v->virtual_device_id != -1) {
    n += (size_t)sprintf(out + n, "%svirtual_device_id=%d", sep, v->virtual_device_id);
    sep = ", ";
  }
  if (ts) {
    n += (size_t)sprintf(out + n, "%starget=", sep);
    n += quoted(out + n, ts);
    sep = ", ";
  }
  if (v->memory_scope[0]) {
    n += (size_t)sprintf(out + n, "%smemory_scope=", sep);
    n += quoted(out + n, v->memory_scope);
  }
  out[n++] = ')';
  out[n] = '\0';
  free(ts);
  return out;
}
