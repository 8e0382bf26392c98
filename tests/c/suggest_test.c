/*
 * C checks of the "did you mean" utility as other parts of the core use
 * it (include/devplan/suggest.h): the incremental search over candidates
 * offered one by one, the hint text, the array form, and the distance.
 */
#include <stdio.h>
#include <string.h>
#include "devplan/devplan.h"

#define CHECK(cond) do { if (cond) (*passed)++; else { (*failed)++; \
  printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

void dp_test_suggest(int *passed, int *failed);

void dp_test_suggest(int *passed, int *failed) {
  /* offered one by one, as from an operator registry */
  static const char *const ops[] = {"add", "nn.conv2d", "nn.dense", "nn.conv2d_transpose"};
  dp_suggest s;
  char hint[DP_SUGGEST_HINT];
  dp_suggest_init(&s, "nn.conv2dd");
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) dp_suggest_add(&s, ops[i]);
  CHECK(dp_suggest_best(&s) && !strcmp(dp_suggest_best(&s), "nn.conv2d"));
  CHECK(!strcmp(dp_suggest_hint(&s, hint, sizeof hint), "; did you mean 'nn.conv2d'?"));
  /* nothing close: an empty hint */
  dp_suggest_init(&s, "softmax");
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) dp_suggest_add(&s, ops[i]);
  CHECK(dp_suggest_best(&s) == NULL);
  CHECK(!strcmp(dp_suggest_hint(&s, hint, sizeof hint), ""));
  /* a small buffer is cut, never overrun */
  dp_suggest_init(&s, "ad");
  dp_suggest_add(&s, "add");
  char small[8];
  CHECK(strlen(dp_suggest_hint(&s, small, sizeof small)) == sizeof small - 1);
  /* the array form, NULL entries skipped, NULL names and candidates ignored */
  static const char *const dtypes[] = {"int32", NULL, "float16", "float32"};
  CHECK(!strcmp(dp_suggest_in("flaot32", dtypes, 4), "float32"));
  CHECK(dp_suggest_in(NULL, dtypes, 4) == NULL);
  CHECK(dp_suggest_in("x", NULL, 3) == NULL);
  dp_suggest_init(&s, "cuda");
  dp_suggest_add(&s, NULL);
  dp_suggest_add(&s, "cuda"); /* the name itself */
  CHECK(dp_suggest_best(&s) == NULL);
  /* distances */
  CHECK(dp_suggest_distance("cuda", "cdua", 5) == 1);
  CHECK(dp_suggest_distance("kitten", "sitting", 5) == 3);
  CHECK(dp_suggest_distance("kitten", "sitting", 2) == 3); /* above max: max + 1 */
  CHECK(dp_suggest_distance("CUDA", "cuda", 0) == 0);
  CHECK(dp_suggest_distance("conv2d", "nn.conv2d", 2) == 1);
  CHECK(dp_suggest_distance("", "abc", 5) == 3);
  /* through an accessor */
  CHECK(!strcmp(dp_target_kind_suggest(NULL, "ext-dev"), "ext_dev"));
  CHECK(dp_suggest_among("ext-dev", NULL) == NULL);
  /* the kinds' and device types' own searches */
  CHECK(!strcmp(dp_target_kind_suggest(NULL, "vulcan"), "vulkan"));
  CHECK(dp_target_kind_suggest(NULL, "quantum") == NULL);
  CHECK(!strcmp(dp_device_type_suggest("rcom"), "rocm"));
}
