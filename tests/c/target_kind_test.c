/*
 * C checks of target kinds registered by a user (device.h,
 * dp_target_kind_register): a BYOC toolchain's kind with typed options and
 * defaults, used as any other target (text, configuration, canonical
 * devices), its errors, and a configuration with two CPUs told apart by
 * virtual_device_id (RFC 0038's first problem).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/devplan.h"

#define CHECK(cond) do { if (cond) (*passed)++; else { (*failed)++; \
  printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

void dp_test_target_kinds(int *passed, int *failed);

/* The error's message contains `want` (the error freed). */
static int says(dp_err *e, const char *want) {
  int ok = e && e->msg && strstr(e->msg, want) != NULL;
  if (!ok) printf("  message: %s\n", e && e->msg ? e->msg : "(none)");
  dp_err_free(e);
  return ok;
}

static char *str_of(dp_target *t) {
  char *s = dp_target_str(t);
  dp_release(t);
  return s;
}

void dp_test_target_kinds(int *passed, int *failed) {
  dp_ctx *ctx = dp_ctx_new();
  dp_err *e = NULL;
  const dp_target_kind_opt opts[] = {
    {"opt_level", DP_OPT_INT, "2"}, {"fast_math", DP_OPT_BOOL, NULL}, {"passes", DP_OPT_STRLIST, "a,b"}};
  CHECK(dp_target_kind_register(ctx, "ccompiler", DP_DEV_EXT_DEV, opts, 3, NULL, &e) == 0);
  CHECK(dp_target_kind_registered(ctx, "ccompiler") && !dp_target_kind_registered(ctx, "llvm"));
  CHECK(dp_target_kind_device_type(ctx, "ccompiler") == DP_DEV_EXT_DEV);
  CHECK(dp_target_kind_device_type(NULL, "ccompiler") == -1); /* only its context knows it */
  CHECK(!strcmp(dp_target_kind_keys(ctx, "ccompiler"), "ccompiler"));
  const char *dflt = NULL;
  dp_optkind type;
  CHECK(!strcmp(dp_target_kind_option(ctx, "ccompiler", 0, &type, &dflt), "opt_level") && type == DP_OPT_INT &&
        !strcmp(dflt, "2"));

  /* targets of the kind: defaults filled in, options typed, read back from their text */
  dp_target *t = dp_target_parse(ctx, "ccompiler -fast_math", &e);
  char *s = t ? dp_target_str(t) : NULL;
  CHECK(s && !strcmp(s, "ccompiler -keys=ccompiler -fast_math=1 -opt_level=2 -passes=a,b"));
  dp_target *again = s ? dp_target_parse(ctx, s, &e) : NULL;
  CHECK(again && again == t);
  dp_release(again);
  free(s);
  char *brief = t ? dp_target_brief(t) : NULL;
  CHECK(brief && !strcmp(brief, "ccompiler -fast_math=1"));
  free(brief);
  CHECK(!dp_target_parse(ctx, "ccompiler -opt_level=high", &e) && says(e, "-opt_level of kind ccompiler expects an integer"));
  e = NULL;
  CHECK(!dp_target_parse(ctx, "ccompiler -speed=1", &e) && says(e, "unknown option '-speed' for target kind 'ccompiler'"));
  e = NULL;
  CHECK(!dp_target_parse(ctx, "ccompilr", &e) && says(e, "did you mean 'ccompiler'?"));
  e = NULL;

  /* in a configuration, as any other target */
  dp_target *llvm = dp_target_parse(ctx, "llvm", &e);
  dp_target *ts[] = {llvm, t};
  dp_config *cfg = dp_config_make(ctx, ts, 2, NULL, DP_DEV_CPU, &e);
  CHECK(cfg != NULL);
  dp_vdev *ext = dp_vdev_make(ctx, DP_DEV_EXT_DEV, 0, NULL, NULL, &e);
  dp_vdev *c = cfg && ext ? dp_config_canonical(cfg, ext, &e) : NULL;
  CHECK(c && c->target && !strcmp(c->target->kind, "ccompiler") && c->target->host);
  dp_release(c);
  dp_release(ext);
  dp_release(cfg);

  /* registration errors */
  CHECK(dp_target_kind_register(ctx, "ccompiler", DP_DEV_CPU, NULL, 0, NULL, &e) < 0 && says(e, "registered already"));
  e = NULL;
  CHECK(dp_target_kind_register(ctx, "cuda", DP_DEV_CPU, NULL, 0, NULL, &e) < 0 && says(e, "built in already"));
  e = NULL;
  CHECK(dp_target_kind_register(ctx, "9lives", DP_DEV_CPU, NULL, 0, NULL, &e) < 0 && says(e, "malformed target kind name"));
  e = NULL;
  CHECK(dp_target_kind_register(ctx, "npu", 999, NULL, 0, NULL, &e) < 0 && says(e, "not a known device type"));
  e = NULL;
  const dp_target_kind_opt bad_default[] = {{"n", DP_OPT_INT, "many"}};
  CHECK(dp_target_kind_register(ctx, "npu", DP_DEV_EXT_DEV, bad_default, 1, NULL, &e) < 0 &&
        says(e, "-n of kind npu expects an integer"));
  e = NULL;
  const dp_target_kind_opt twice[] = {{"n", DP_OPT_INT, NULL}, {"n", DP_OPT_STR, NULL}};
  CHECK(dp_target_kind_register(ctx, "npu", DP_DEV_EXT_DEV, twice, 2, NULL, &e) < 0 && says(e, "declared twice"));
  e = NULL;
  const dp_target_kind_opt common[] = {{"keys", DP_OPT_STRLIST, NULL}};
  CHECK(dp_target_kind_register(ctx, "npu", DP_DEV_EXT_DEV, common, 1, NULL, &e) < 0 && says(e, "one every kind has"));
  e = NULL;
  CHECK(dp_target_kind_device_type(ctx, "npu") == -1); /* nothing was left registered */

  /* two CPUs, big and LITTLE, and an accelerator kind on the CPU's device type */
  CHECK(dp_target_kind_register(ctx, "ethos-u", DP_DEV_CPU, NULL, 0, "ethos-u", &e) == 0);
  dp_target *big = dp_target_parse(ctx, "llvm -mcpu=cortex-a76", &e);
  dp_target *little = dp_target_parse(ctx, "llvm -mcpu=cortex-a55", &e);
  dp_target *npu = dp_target_parse(ctx, "ethos-u", &e);
  dp_target *three[] = {big, little, npu};
  cfg = big && little && npu ? dp_config_make(ctx, three, 3, NULL, DP_DEV_CPU, &e) : NULL;
  CHECK(cfg != NULL);
  for (int id = 0; cfg && id < 3; id++) {
    dp_vdev *v = dp_vdev_make(ctx, DP_DEV_CPU, id, NULL, NULL, &e);
    dp_vdev *cv = v ? dp_config_canonical(cfg, v, &e) : NULL;
    CHECK(cv && cv->target == cfg->primitive_targets[id] && cv->virtual_device_id == id);
    dp_release(cv);
    dp_release(v);
  }
  dp_vdev *by_target = cfg ? dp_vdev_make(ctx, 0, -1, npu, NULL, &e) : NULL;
  dp_vdev *cv = by_target ? dp_config_canonical(cfg, by_target, &e) : NULL;
  CHECK(cv && cv->virtual_device_id == 2);
  dp_release(cv);
  dp_release(by_target);
  dp_vdev *four = dp_vdev_make(ctx, DP_DEV_CPU, 3, NULL, NULL, &e);
  CHECK(cfg && four && !dp_config_canonical(cfg, four, &e) && says(e, "no target for virtual_device_id 3"));
  dp_release(four);
  dp_release(cfg);
  dp_release(big);
  dp_release(little);
  dp_release(npu);
  free(str_of(llvm));
  dp_release(t);
  dp_release(ctx);
}
