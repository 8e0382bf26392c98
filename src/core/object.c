/*
 * Reference counting for every core object, with deferred freeing.
 *
 * Releasing the last reference of a node must not recurse into its
 * children: a 1,000,000-deep chain would overflow the C stack. dp_release
 * runs a work list instead: each type's free function hands its children to
 * dp_release_deferred, which queues those whose count reaches zero, and the
 * loop frees them in turn.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

struct dp_worklist {
  dp_obj **items;
  size_t n, cap;
  dp_obj *inline_items[32];
};

void *dp_retain(void *obj) {
  if (obj) ((dp_obj *)obj)->rc++;
  return obj;
}

static void push(dp_worklist *wl, dp_obj *o) {
  if (wl->n == wl->cap) {
    size_t cap = wl->cap * 2;
    dp_obj **items;
    /* Plain malloc, not dp_malloc: releasing must not be made to fail by
       the injection of allocation failures (it would only report leaks). */
    if (wl->items == wl->inline_items) {
      items = malloc(cap * sizeof *items);
      if (items) memcpy(items, wl->inline_items, wl->n * sizeof *items);
    } else {
      items = realloc(wl->items, cap * sizeof *items);
    }
    if (!items) {
      /* Out of memory while freeing: leak this object rather than crash. */
      return;
    }
    wl->items = items;
    wl->cap = cap;
  }
  wl->items[wl->n++] = o;
}

void dp_release_deferred(dp_worklist *wl, void *obj) {
  dp_obj *o = obj;
  if (!o) return;
  if (--o->rc == 0) push(wl, o);
}

void dp_release(void *obj) {
  dp_obj *o = obj;
  if (!o) return;
  if (--o->rc != 0) return;
  dp_worklist wl;
  wl.items = wl.inline_items;
  wl.n = 0;
  wl.cap = sizeof wl.inline_items / sizeof wl.inline_items[0];
  push(&wl, o);
  while (wl.n > 0) {
    dp_obj *cur = wl.items[--wl.n];
    dp_free_fn fn = dp__objtypes[cur->type].free_fn; /* type is 8 bits: always in the table */
    if (fn) fn(cur, &wl);
    else free(cur);
  }
  if (wl.items != wl.inline_items) free(wl.items);
}

/* --- allocation failure injection (testing aid, see core.h) ---
   Every allocation of the library goes through the three functions below,
   so a test can make the n-th of them fail and check the error path it
   takes. The counter only runs while injection is armed, so a normal run
   pays one predictable branch per allocation. */
static uint64_t fail_at;      /* 0: injection off */
static uint64_t alloc_count;  /* allocations since arming (or all, see below) */
static int fail_persistent;   /* every allocation from the fail_at-th fails */
static int env_read;

/* DEVPLAN_FAIL_ALLOC=N (one-shot) or N+ (persistent), read once: the first
   allocation of the process arms it, so the count starts at the start. */
static void read_env(void) {
  env_read = 1;
  const char *s = getenv("DEVPLAN_FAIL_ALLOC");
  if (!s || !*s) return;
  char *end;
  unsigned long long n = strtoull(s, &end, 10);
  if (end == s || n == 0 || (*end && strcmp(end, "+"))) return;
  dp_debug_fail_alloc(n, *end == '+');
}

void dp_debug_fail_alloc(uint64_t n, int persistent) {
  env_read = 1;
  fail_at = n;
  fail_persistent = persistent != 0;
  alloc_count = 0;
}

uint64_t dp_debug_alloc_count(void) { return alloc_count; }

/* 1 when this allocation is to fail. */
static int inject(void) {
  if (!env_read) read_env();
  if (!fail_at) return 0;
  uint64_t k = ++alloc_count;
  return fail_persistent ? k >= fail_at : k == fail_at;
}

void *dp_malloc(size_t n) { return inject() ? NULL : malloc(n ? n : 1); }
void *dp_calloc(size_t n, size_t size) {
  return inject() ? NULL : calloc(n ? n : 1, size ? size : 1);
}
void *dp_realloc(void *p, size_t n) { return inject() ? NULL : realloc(p, n ? n : 1); }

char *dp_strdup(const char *s) {
  if (!s) s = "";
  size_t n = strlen(s) + 1;
  char *d = dp_malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

char *dp_strndup(const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *d = dp_malloc(len + 1);
  if (!d) return NULL;
  memcpy(d, s, len);
  d[len] = 0;
  return d;
}

/* The capacity dp_grow grows cap to for need items of elem bytes, or 0
   when that many do not fit. */
static uint64_t grown(uint32_t cap, uint32_t need, size_t elem) {
  uint64_t c = cap ? cap : 16;
  while (c < need) c *= 2;
  return c > UINT32_MAX || c * elem / elem != c ? 0 : c;
}

int dp_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap) return 0;
  uint64_t c = grown(*cap, need, elem);
  void *a = c ? dp_realloc(*arr, (size_t)c * elem) : NULL;
  if (!a) return -1;
  *arr = a;
  *cap = (uint32_t)c;
  return 0;
}

int dp_grow_arrays(uint32_t *cap, uint32_t need, uint32_t n, void **const arrs[], const size_t elems[]) {
  if (need <= *cap) return 0;
  uint64_t c = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t ci = grown(*cap, need, elems[i]);
    if (!ci) return -1;
    c = ci; /* (the same for every size that fits) */
  }
  for (uint32_t i = 0; i < n; i++) {
    void *a = dp_realloc(*arrs[i], (size_t)c * elems[i]);
    if (!a) return -1;
    *arrs[i] = a;
  }
  *cap = (uint32_t)c;
  return 0;
}
