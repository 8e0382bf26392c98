/*
 * Targets, virtual devices and the compilation configuration
 * (docs: ../shared/docs/planner.md "Devices and targets", "CompilationConfig";
 * seed 000 for Join/Default).
 *
 * Targets and virtual devices are interned in their context: two built from
 * equal fields are the same pointer, so pointer equality is structural
 * equality. Both are immutable and reference counted (dp_retain/dp_release);
 * an interned object leaves its table when its last reference goes.
 */
#ifndef DEVPLAN_DEVICE_H
#define DEVPLAN_DEVICE_H

#include "core.h"

/* DLPack device types. 0 means unconstrained. */
enum {
  DP_DEV_NONE = 0, DP_DEV_CPU = 1, DP_DEV_CUDA = 2, DP_DEV_CUDA_HOST = 3,
  DP_DEV_OPENCL = 4, DP_DEV_VULKAN = 7, DP_DEV_METAL = 8, DP_DEV_VPI = 9,
  DP_DEV_ROCM = 10, DP_DEV_ROCM_HOST = 11, DP_DEV_EXT_DEV = 12,
  DP_DEV_CUDA_MANAGED = 13, DP_DEV_ONEAPI = 14, DP_DEV_WEBGPU = 15,
  DP_DEV_HEXAGON = 16
};

/* "cpu" -> 1 ...; -1 when unknown. */
int dp_device_type_parse(const char *name);
/* 1 -> "cpu" ...; NULL when unknown. */
const char *dp_device_type_name(int device_type);

/* ---------------- targets ---------------- */

typedef enum dp_optkind { DP_OPT_STR, DP_OPT_INT, DP_OPT_BOOL, DP_OPT_STRLIST } dp_optkind;

typedef struct dp_target_opt {
  char *key;
  dp_optkind kind;
  char *str;      /* DP_OPT_STR; also the raw text for DP_OPT_STRLIST ("a,b") */
  int64_t num;    /* DP_OPT_INT, DP_OPT_BOOL */
} dp_target_opt;

typedef struct dp_target {
  dp_obj h;
  dp_ctx *ctx;
  char *kind;              /* "llvm", "cuda", ... */
  int device_type;         /* fixed by the kind */
  uint32_t nopts;          /* sorted by key */
  dp_target_opt *opts;
  struct dp_target *host;  /* or NULL */
  uint32_t hash;
} dp_target;

/* Device type a target kind runs on ("cuda" -> DP_DEV_CUDA); -1 when the
   kind is unknown. Kinds: llvm, c (cpu); cuda, nvptx (cuda); rocm; opencl;
   vulkan; metal; hexagon; webgpu; ext_dev. */
int dp_target_kind_device_type(const char *kind);
/* A host target has no host of its own (an error otherwise), so target
   chains are never deeper than two. */

/* "cuda -arch=sm_80", "llvm -mcpu=skylake -host=...": a kind and options;
   or a JSON object string '{"kind": "cuda", "max_num_threads": 1024, "host": ...}'. */
dp_target *dp_target_parse(dp_ctx *ctx, const char *text, dp_err **err);
/* From fields: opts may be NULL; host may be NULL. Options are typed by the
   kind's declared options (an undeclared option is kept as a string). */
dp_target *dp_target_make(dp_ctx *ctx, const char *kind, const dp_target_opt *opts,
                          uint32_t nopts, dp_target *host, dp_err **err);
/* The same target with `host` as its host (NULL removes it). */
dp_target *dp_target_with_host(dp_target *t, dp_target *host, dp_err **err);
/* String form, parseable by dp_target_parse: "cuda -arch=sm_80 -host=llvm". malloc'd. */
char *dp_target_str(const dp_target *t);
/* Value of an option, or NULL. */
const dp_target_opt *dp_target_opt_get(const dp_target *t, const char *key);

/* ---------------- virtual devices ---------------- */

typedef struct dp_vdev {
  dp_obj h;
  dp_ctx *ctx;
  int device_type;         /* 0: unconstrained */
  int virtual_device_id;   /* -1: unconstrained */
  dp_target *target;       /* NULL: unconstrained */
  char *memory_scope;      /* "" : unconstrained (never NULL) */
  uint32_t hash;
} dp_vdev;

/* Interned virtual device (new reference). device_type 0 with a target takes
   the target's device type; a device type that disagrees with the target's
   is an error. scope NULL means "". */
dp_vdev *dp_vdev_make(dp_ctx *ctx, int device_type, int virtual_device_id,
                      dp_target *target, const char *memory_scope, dp_err **err);
/* The fully unconstrained device of ctx (new reference). */
dp_vdev *dp_vdev_unconstrained(dp_ctx *ctx);
/* Join per seed 000: NULL when a constrained field disagrees (new reference). */
dp_vdev *dp_vdev_join(dp_vdev *a, dp_vdev *b);
/* Default per seed 000 (new reference, never NULL unless out of memory). */
dp_vdev *dp_vdev_default(dp_vdev *a, dp_vdev *b);
int dp_vdev_is_fully_unconstrained(const dp_vdev *v);
int dp_vdev_is_fully_constrained(const dp_vdev *v);
/* "VirtualDevice(device_type=cuda, virtual_device_id=0, target=\"cuda -host=llvm\",
   memory_scope=\"global\")", omitting unconstrained fields; the text format's
   inline literal. malloc'd. */
char *dp_vdev_str(const dp_vdev *v);

/* ---------------- compilation configuration ---------------- */

typedef struct dp_config {
  dp_obj h;
  dp_ctx *ctx;
  dp_target *host_target;
  dp_vdev *host_vdev;            /* (host device type, 0, host target) */
  uint32_t ntargets;
  dp_target **primitive_targets; /* with host replaced by host_target */
  int default_device_type;
  dp_vdev *default_vdev;         /* canonical (default device type, 0) */
} dp_config;

/* Rules 1..6 of planner.md. default_device_type 0: not given. host may be NULL. */
dp_config *dp_config_make(dp_ctx *ctx, dp_target *const *targets, uint32_t ntargets,
                          dp_target *host, int default_device_type, dp_err **err);
/* Rule 6: the canonical form of vd (new reference), or NULL + error. */
dp_vdev *dp_config_canonical(const dp_config *cfg, dp_vdev *vd, dp_err **err);

#endif
