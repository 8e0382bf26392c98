/*
 * C checks of a variable's layout (include/devplan/expr.h, dp_var_extra):
 * a variable with neither a type annotation nor a virtual_device is its
 * header and its name, nothing more (a million let variables are 16 MB
 * smaller for it); one with either carries the record right before the
 * node, read through dp_var_annot / dp_var_vdev, on the heap and in an
 * arena alike, and freed with it (ASan's leak and use-after-free checks
 * see the rest).
 */
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include "devplan/devplan.h"
#include "../../src/core/arena.h"

#define CHECK(cond) do { if (cond) (*passed)++; else { (*failed)++; \
  printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

void dp_test_var_layout(int *passed, int *failed);

void dp_test_var_layout(int *passed, int *failed) {
  dp_ctx *ctx = dp_ctx_new();
  CHECK(ctx != NULL);
  if (!ctx) return;
  dp_type *t = dp_type_tensor(ctx, DP_FLOAT32, 1, (int64_t[]){4});
  dp_vdev *vd = dp_vdev_make(ctx, DP_DEV_CUDA, 0, NULL, "global", NULL);
  CHECK(t != NULL && vd != NULL);
  /* every combination, on the heap (NULL) and in an arena */
  dp__arena a = DP__ARENA_INIT;
  dp__arena *where[] = {NULL, &a};
  for (int w = 0; w < 2; w++)
    for (int k = 0; k < 4; k++) {
      dp_type *ta = k & 1 ? t : NULL;
      dp_vdev *va = k & 2 ? vd : NULL;
      dp_var *v = dp__var_new_in(where[w], "x123456", ta, va, DP_NOSPAN);
      CHECK(v != NULL);
      if (!v) continue;
      CHECK(dp_var_annot(v) == ta && dp_var_vdev(v) == va && strcmp(v->name, "x123456") == 0);
      CHECK(!(v->e.h.flags & DP_VAR_ANNOTATED) == !(ta || va));
      CHECK(!(v->e.h.flags & DP__OBJ_IN_ARENA) == !w);
      dp_release(v);
    }
  /* in an arena, consecutive plain variables are 40 bytes apart (32 of
     header, "x123456" and its NUL), annotated ones 56: the record's 16 */
  dp_var *p[3], *q[3];
  for (int i = 0; i < 3; i++) p[i] = dp__var_new_in(&a, "x123456", NULL, NULL, DP_NOSPAN);
  for (int i = 0; i < 3; i++) q[i] = dp__var_new_in(&a, "x123456", t, NULL, DP_NOSPAN);
  CHECK(p[0] && p[1] && p[2] && q[0] && q[1] && q[2]);
  if (p[0] && p[1] && p[2] && q[0] && q[1] && q[2]) {
    CHECK((char *)p[1] - (char *)p[0] == 40 && (char *)p[2] - (char *)p[1] == 40);
    CHECK((char *)q[1] - (char *)q[0] == 56 && (char *)q[2] - (char *)q[1] == 56);
    CHECK((uintptr_t)q[1] % _Alignof(dp_var) == 0 && dp_var_annot(q[1]) == t);
  }
  dp__arena_done(&a);
  /* the nodes outlive the arena; each frees from its own start */
  for (int i = 0; i < 3; i++) {
    dp_release(p[i]);
    dp_release(q[i]);
  }
  /* inference's flags on the same header leave the record readable */
  dp_var *x = dp_var_new("x", t, vd, DP_NOSPAN);
  CHECK(x != NULL);
  if (x) {
    x->e.h.flags |= 0x8000u | 0x4000u | 0x1000u;
    CHECK(dp_var_annot(x) == t && dp_var_vdev(x) == vd);
    x->e.h.flags &= (uint16_t)~(0x8000u | 0x4000u | 0x1000u);
    dp_release(x);
  }
  dp_release(t);
  dp_release(vd);
  dp_release(ctx);
}
