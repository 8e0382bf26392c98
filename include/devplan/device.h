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

/* A device type name or number ("cpu", "cuda", "2") -> its number; -1 when
   unknown. The names are TVM's (tvm.runtime.Device): the DLPack names of the
   enum above, the target kinds that name a device type ("llvm", "c",
   "stackvm", "nvptx", "cl", "sdaccel"...), "gpu" for cuda, and TVM's own
   device types above DLPack's (aocl = 32, sdaccel = 33, opengl = 34,
   microdev = 35). */
int dp_device_type_parse(const char *name);
/* 1 -> "cpu" ...; NULL when unknown. */
const char *dp_device_type_name(int device_type);
/* The known device type name closest to an unknown `name` (suggest.h), or NULL. */
const char *dp_device_type_suggest(const char *name);

/* ---------------- targets ----------------

   A target is what TVM's Target is: a kind, typed options (TVM's "keys"
   and attributes) and an optional host. Each kind declares its options as
   TVM registers them (their names, types and defaults; seed 003), and
   building a target does what TVM's Target constructor does:

   - an option the kind does not declare is an error naming the option and
     the kind (with a "did you mean"); a value of the wrong type is an error;
   - the kind's defaults are filled in (cuda: max_num_threads=1024,
     thread_warp_size=32, ...), and what TVM's target parsers derive when no
     device is present to query (cuda -arch=sm_50; nvptx -mcpu=sm_20 and
     its fixed -mtriple; rocm -mcpu=gfx900 and its fixed -mtriple);
   - "keys" is the list given, else the kind's default keys (cuda: cuda,
     gpu); the value of "device" comes after the given keys (before the
     defaults); duplicates are removed;
   - "from_device" (a device to query) is accepted and dropped: devplan
     queries no device; "target_device_type" overrides the kind's device type;
   - an empty string or empty list means the option is not set.

   Options are DP_OPT_STR, DP_OPT_INT (int64), DP_OPT_BOOL or DP_OPT_STRLIST
   (items without ',' so the string form reads them back). When building,
   DP_OPT_TEXT stands for a value written in a target string, read as the
   declared type says: integers in decimal; booleans true/false in any case,
   1 or 0; lists comma-separated (empty items dropped); blanks around a
   value removed. A typed value (from a table or JSON) must have the
   declared type: a boolean option also takes the integers 0 and 1. */

typedef enum dp_optkind {
  DP_OPT_STR, DP_OPT_INT, DP_OPT_BOOL, DP_OPT_STRLIST, DP_OPT_TEXT
} dp_optkind;

typedef struct dp_target_opt {
  char *key;
  dp_optkind kind;
  char *str;       /* DP_OPT_STR, DP_OPT_TEXT */
  int64_t num;     /* DP_OPT_INT, DP_OPT_BOOL */
  uint32_t nitems; /* DP_OPT_STRLIST */
  char **items;
} dp_target_opt;

typedef struct dp_target {
  dp_obj h;
  dp_ctx *ctx;
  char *kind;              /* "llvm", "cuda", ... */
  int device_type;         /* the kind's, unless target_device_type says otherwise */
  uint32_t nopts;          /* sorted by key; "keys" among them */
  dp_target_opt *opts;
  struct dp_target *host;  /* or NULL */
  uint32_t hash;
  char *text, *brief;      /* dp_target_str and dp_target_brief, made once */
} dp_target;

/* The kinds: TVM's (llvm, c, stackvm, hybrid (cpu); cuda, nvptx (cuda);
   rocm; opencl, sdaccel (opencl); aocl, aocl_sw_emu (aocl); vulkan; metal;
   hexagon; webgpu; ext_dev), then those registered in a context (a BYOC
   toolchain: "ccompiler" running on ext_dev). Each query takes the context
   whose registered kinds it sees (NULL: the built-in ones only).
   Device type a kind runs on ("cuda" -> DP_DEV_CUDA); -1 when unknown. */
int dp_target_kind_device_type(const dp_ctx *ctx, const char *kind);
/* The i-th kind name (NULL past the last) and the known kind closest to an
   unknown one (suggest.h), or NULL. */
const char *dp_target_kind_at(const dp_ctx *ctx, uint32_t i);
const char *dp_target_kind_suggest(const dp_ctx *ctx, const char *kind);
/* The i-th option a kind declares (NULL past the last, or for an unknown
   kind): its name, type and default (a target string value, or NULL). */
const char *dp_target_kind_option(const dp_ctx *ctx, const char *kind, uint32_t i, dp_optkind *type,
                                  const char **dflt);
/* The kind's default keys, comma-separated ("cuda,gpu"; "" for none), or
   NULL for an unknown kind. */
const char *dp_target_kind_keys(const dp_ctx *ctx, const char *kind);
/* Was the kind registered in ctx (not built in)? */
int dp_target_kind_registered(const dp_ctx *ctx, const char *kind);

/* An option a registered kind declares: its name, type (DP_OPT_STR, INT,
   BOOL or STRLIST) and default as a target string writes it ("3", "true",
   "a,b"; NULL: none). */
typedef struct dp_target_kind_opt {
  const char *name;
  dp_optkind type;
  const char *dflt;
} dp_target_kind_opt;

/* Registers target kind `name` in ctx (TVM's TVM_REGISTER_TARGET_KIND, for
   a toolchain: a BYOC compiler, an accelerator's): the device type its code
   runs on, its options (besides every kind's: keys, tag, device, ...) and
   its default keys (comma-separated; NULL: the kind's name). Targets of the
   kind are then built, read from text and printed as any other
   (dp_target_parse(ctx, "ccompiler -opt=3")). The name is a letter, then
   letters, digits, '_', '-' and '.', and no kind known already; defaults
   must read as their options' types. 0, or -1 + error. */
int dp_target_kind_register(dp_ctx *ctx, const char *name, int device_type,
                            const dp_target_kind_opt *opts, uint32_t nopts, const char *keys,
                            dp_err **err);

/* TVM's target tags ("nvidia/tesla-p40", "nvidia/jetson-nano", ...: the
   CUDA tags of TVM's tag registry devplan carries): the i-th tag name (NULL
   past the last), a tag's configuration in the JSON form (NULL when the
   name is no tag), and the tag closest to an unknown name, or NULL. A
   target string that is a tag's name reads as its configuration. */
const char *dp_target_tag_at(uint32_t i);
const char *dp_target_tag_config(const char *name);
const char *dp_target_tag_suggest(const char *name);

/* A host target has no host of its own (an error otherwise), so target
   chains are never deeper than two. */

/* One target from text: the string form "cuda -arch=sm_80 -host=llvm" as
   TVM reads it (options "-key=value", "-key value", "--key=value", a bare
   "-key" for a true boolean; the host as "-host=..." or "--host ...",
   quoted when it has options: -host='llvm -mcpu=skylake'; values quoted
   with '...' or "..."), or TVM's JSON object form '{"kind": "cuda",
   "max_num_threads": 1024, "host": ...}' (as Target.export() writes it;
   "tag": "" is accepted). Several comma-separated targets are an error. */
dp_target *dp_target_parse(dp_ctx *ctx, const char *text, dp_err **err);
/* A list of targets as tvmc's --target reads it: "cuda, llvm -mcpu=x" or
   "cuda,llvm". A comma separates targets inside a kind name, at the end of
   a word or at the start of one; a comma inside an option value belongs to
   the value (-mattr=+avx2,+fma). Returns a malloc'd array of *n new
   references (free with dp_targets_free), or NULL + error. */
dp_target **dp_targets_parse(dp_ctx *ctx, const char *text, uint32_t *n, dp_err **err);
void dp_targets_free(dp_target **targets, uint32_t n);
/* From fields: opts may be NULL; host may be NULL. Checks, types and
   completes the options as described above. */
dp_target *dp_target_make(dp_ctx *ctx, const char *kind, const dp_target_opt *opts,
                          uint32_t nopts, dp_target *host, dp_err **err);
/* The same target with `host` as its host (NULL removes it). */
dp_target *dp_target_with_host(dp_target *t, dp_target *host, dp_err **err);
/* True when a and b have the same kind and options (hosts aside). */
int dp_target_same_but_host(const dp_target *a, const dp_target *b);
/* The canonical string TVM prints (TargetNode::str): the kind, "-keys=..."
   first, then the options sorted by name with booleans as 1/0, lists
   comma-joined, values with blanks quoted '...'; then, so the string reads
   back to the same target, " -host=..." when there is a host.
   dp_target_parse of it gives the same (interned) target. malloc'd. */
char *dp_target_str(const dp_target *t);
/* The brief string: the same without the options construction derives
   (defaults, default keys), so "cuda -host=llvm" rather than the canonical
   "cuda -keys=cuda,gpu -arch=sm_50 ... -host='llvm -keys=cpu'". It too
   reads back to the same target. The text format's VirtualDevice literal
   and messages use it. malloc'd. */
char *dp_target_brief(const dp_target *t);
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
  /* Bytes per second copied between devices (placement by cost): pairs of
     device types (dp_config_bandwidth picks one), then default_bandwidth;
     each pair of types at most once. */
  uint32_t nbandwidths;
  struct dp_bandwidth *bandwidths;
  double default_bandwidth;      /* 0: not given */
  /* Memory budgets in bytes per device type (each device of the type has
     its own): the latency and min_bytes placements keep every device's peak
     within (schedule.h, dp_sched_memory); each device type at most once. */
  uint32_t nmemory;
  struct dp_memory_budget *memory;
} dp_config;

/* One device type's budget (bytes > 0). */
typedef struct dp_memory_budget { int device_type; double bytes; } dp_memory_budget;

/* One pair: src and dst device types (0 matches any). */
typedef struct dp_bandwidth { int src, dst; double bytes_per_second; } dp_bandwidth;

/* Rules 1..6 of planner.md. default_device_type 0: not given. host may be NULL. */
dp_config *dp_config_make(dp_ctx *ctx, dp_target *const *targets, uint32_t ntargets,
                          dp_target *host, int default_device_type, dp_err **err);
/* A copy of cfg with the bandwidths given (n pairs, each > 0, no two for
   the same pair of types; dflt: for pairs none matches, > 0, or 0 for
   none), replacing cfg's. New reference, or NULL + error. */
dp_config *dp_config_with_bandwidths(const dp_config *cfg, const dp_bandwidth *bw, uint32_t n,
                                     double dflt, dp_err **err);
/* Is v a bandwidth: a number of bytes per second > 0 and finite (at most
   1e300)? The one rule of every bandwidth devplan reads (the configuration's,
   PlanDevices' option, a bandwidth hook's answer). */
int dp_bandwidth_ok(double v);
/* A bandwidth key "SRC->DST": device type names, "*" for any (0). 0, or
   -1 + error naming what is wrong (with a suggestion for a misspelt name). */
int dp_bandwidth_key(const char *key, int *src, int *dst, dp_err **err);
/* Does cfg give bandwidths? */
int dp_config_has_bandwidths(const dp_config *cfg);
/* Bytes per second from src to dst: the pair that names both device
   types, else "src->*", else "*->dst", else "*->*", else the default; 0
   when cfg gives none. */
double dp_config_bandwidth(const dp_config *cfg, const dp_vdev *src, const dp_vdev *dst);
/* A copy of cfg with the memory budgets given (n, each device type > 0
   once, bytes > 0), replacing cfg's. New reference, or NULL + error. */
dp_config *dp_config_with_memory(const dp_config *cfg, const dp_memory_budget *m, uint32_t n,
                                 dp_err **err);
/* A size in bytes: a number with an optional unit, B, kB/KB, MB, GB, TB
   (powers of 1000) or KiB, MiB, GiB, TiB (of 1024), case as written, as
   "2GiB", "512 MB", "1e9". 0, or -1 when it is not one (or <= 0). */
int dp_bytes_parse(const char *s, double *bytes);
/* The budget of a device of device_type, 0 when cfg gives none. */
double dp_config_memory(const dp_config *cfg, int device_type);
/* Rule 6: the canonical form of vd (new reference), or NULL + error. */
dp_vdev *dp_config_canonical(const dp_config *cfg, dp_vdev *vd, dp_err **err);

#endif
