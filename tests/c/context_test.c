/*
 * C checks of contexts used from C alone: several contexts coexist, each
 * with its own interning tables and operator registry, and each is freed
 * when the last object made in it goes (valgrind checks the "freed" part).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/devplan.h"

#define CHECK(cond) do { if (cond) (*passed)++; else { (*failed)++; \
  printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

void dp_test_contexts(int *passed, int *failed);

void dp_test_contexts(int *passed, int *failed) {
  dp_ctx *a = dp_ctx_new(), *b = dp_ctx_new();
  CHECK(a && b && a != b);
  if (!a || !b) return;
  CHECK(!dp_op_get(a, "add")); /* empty until the built-ins are asked for */
  CHECK(dp_register_builtin_ops(a, NULL) == 0 && dp_register_builtin_ops(b, NULL) == 0);
  dp_target *ta = dp_target_parse(a, "cuda -arch=sm_80", NULL);
  dp_target *ta2 = dp_target_parse(a, "cuda -arch=sm_80", NULL);
  dp_target *tb = dp_target_parse(b, "cuda -arch=sm_80", NULL);
  CHECK(ta && ta == ta2);      /* interned within a context */
  CHECK(tb && tb != ta);       /* separate tables across contexts */
  dp_vdev *va = dp_vdev_make(a, 0, 0, ta, "global", NULL);
  dp_vdev *vb = dp_vdev_make(b, 0, 0, tb, "global", NULL);
  CHECK(va && vb && va != vb && va->device_type == DP_DEV_CUDA);
  /* operators are per context: registering in one leaves the other alone */
  dp_op *mine = dp_op_register(a, "test.only_in_a", 1, DP_OPF_IDENTITY, NULL, 0, NULL, NULL,
                               NULL, NULL);
  CHECK(mine != NULL);
  CHECK(dp_op_get(a, "test.only_in_a") == mine);
  CHECK(dp_op_get(b, "test.only_in_a") == NULL);
  CHECK(dp_op_get(a, "add") && dp_op_get(b, "add") && dp_op_get(a, "add") != dp_op_get(b, "add"));
  /* dropping the context's own reference first: objects keep it alive */
  dp_release(a);
  dp_release(b);
  char *s = dp_vdev_str(va);
  CHECK(s && strstr(s, "cuda -arch=sm_80"));
  free(s);
  dp_release(va);
  dp_release(vb);
  dp_release(ta);
  dp_release(ta2);
  dp_release(tb); /* the last references: both contexts are freed here */
}

/* An operator whose attribute default is a virtual device of its own
   context: the default retains the context, so only dp_ctx_close frees
   them (LeakSanitizer and valgrind check the rest). */
void dp_test_context_close(int *passed, int *failed);

void dp_test_context_close(int *passed, int *failed) {
  dp_ctx *ctx = dp_ctx_new();
  CHECK(ctx != NULL);
  if (!ctx) return;
  dp_vdev *cpu = dp_vdev_make(ctx, DP_DEV_CPU, 0, NULL, "", NULL);
  dp_attr_field f = {.name = "where", .kind = DP_AK_VDEV, .has_default = 1, .dflt = dp_av_vdev(cpu)};
  dp_op *op = dp_op_register(ctx, "test.with_vdev_default", 1, DP_OPF_IDENTITY, &f, 1, NULL, NULL,
                             NULL, NULL);
  CHECK(op != NULL);
  dp_release(cpu); /* the op's default now holds the only reference */
  size_t nvdevs = 0;
  dp_ctx_counts(ctx, NULL, &nvdevs, NULL);
  CHECK(nvdevs == 1);
  dp_retain(ctx); /* to look at the context after its owner closed it */
  dp_ctx_close(ctx);
  dp_ctx_counts(ctx, NULL, &nvdevs, NULL);
  CHECK(nvdevs == 0);              /* the registry (and the default) went */
  CHECK(dp_op_get(ctx, "add") == NULL);
  dp_release(ctx);                 /* the last reference: freed here */
}

/* An object type registered from outside the core: named, and freed by its
   own function when its last reference goes (with what it holds). */
typedef struct boxed {
  dp_obj h;
  dp_obj *held;
} boxed;

static int nfreed;

static void boxed_free(dp_obj *o, dp_worklist *wl) {
  dp_release_deferred(wl, ((boxed *)o)->held);
  free(o);
  nfreed++;
}

void dp_test_objtypes(int *passed, int *failed);

void dp_test_objtypes(int *passed, int *failed) {
  CHECK(strcmp(dp_objtype_name(DP_OBJ_VDEV), "VirtualDevice") == 0);
  CHECK(dp_objtype_name(0) == NULL && dp_objtype_name(255) == NULL);
  int type = dp_objtype_register("Boxed", boxed_free);
  CHECK(type >= DP_OBJ__CORE_END && strcmp(dp_objtype_name(type), "Boxed") == 0);
  CHECK(dp_objtype_register("Other", boxed_free) == type + 1);
  dp_ctx *ctx = dp_ctx_new();
  boxed *b = calloc(1, sizeof *b);
  CHECK(ctx && b);
  if (!ctx || !b) return;
  b->h.rc = 1;
  b->h.type = (uint8_t)type;
  b->held = (dp_obj *)ctx; /* takes the reference: freeing b frees the context */
  dp_release(b);
  CHECK(nfreed == 1);
}

/* dp_grow and dp_grow_arrays: doubling from 16, the items kept, parallel
   arrays sharing one capacity, and a size that cannot fit refused. */
void dp_test_grow(int *passed, int *failed);

void dp_test_grow(int *passed, int *failed) {
  uint32_t *a = NULL, cap = 0;
  CHECK(dp_grow((void **)&a, &cap, 1, sizeof *a) == 0 && cap == 16);
  for (uint32_t i = 0; i < 16; i++) a[i] = i;
  CHECK(dp_grow((void **)&a, &cap, 40, sizeof *a) == 0 && cap == 64 && a[15] == 15);
  CHECK(dp_grow((void **)&a, &cap, 64, sizeof *a) == 0 && cap == 64); /* room already */
  uint32_t cap2 = cap;
  CHECK(dp_grow((void **)&a, &cap2, UINT32_MAX, (size_t)1 << 40) == -1 && cap2 == cap);
  uint64_t *b = dp_calloc(cap, sizeof *b);
  uint8_t *c = dp_calloc(cap, sizeof *c);
  CHECK(b && c);
  if (!b || !c) return;
  b[63] = 7;
  c[63] = 9;
  void **const arrs[] = {(void **)&a, (void **)&b, (void **)&c};
  const size_t sizes[] = {sizeof *a, sizeof *b, sizeof *c};
  CHECK(dp_grow_arrays(&cap, 65, 3, arrs, sizes) == 0 && cap == 128);
  a[127] = 1, b[127] = 2, c[127] = 3; /* (ASan: each has room for cap items) */
  CHECK(a[15] == 15 && b[63] == 7 && c[63] == 9);
  CHECK(dp_grow_arrays(&cap, 100, 3, arrs, sizes) == 0 && cap == 128);
  const size_t huge[] = {sizeof *a, (size_t)1 << 40, 1};
  CHECK(dp_grow_arrays(&cap, UINT32_MAX, 3, arrs, huge) == -1 && cap == 128 && a[15] == 15);
  free(a);
  free(b);
  free(c);
}
