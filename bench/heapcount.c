/*
 * Heap byte counter for the benchmarks, loaded with LD_PRELOAD (bench/plan.sh
 * builds it). It wraps malloc/calloc/realloc/free around glibc's own entry
 * points and keeps the live and peak heap bytes (malloc_usable_size). The
 * Lua script reads it through os.getenv, the one C call plain Lua makes
 * with a string we choose: getenv("DEVPLAN_HEAP_RESET") starts a
 * measurement (peak := live), getenv("DEVPLAN_HEAP_PEAK") returns the peak
 * growth since then in bytes, as text, getenv("DEVPLAN_HEAP_LIVE") the
 * live growth. Peak RSS would miss memory that the
 * pass takes from chunks the parser freed.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static long long live, peak, base;

static void grew(void *p) {
  if (!p) return;
  live += (long long)malloc_usable_size(p);
  if (live > peak) peak = live;
}

void *malloc(size_t n) {
  void *p = __libc_malloc(n);
  grew(p);
  return p;
}
void *calloc(size_t a, size_t b) {
  void *p = __libc_calloc(a, b);
  grew(p);
  return p;
}
void *realloc(void *q, size_t n) {
  size_t old = q ? malloc_usable_size(q) : 0;
  void *p = __libc_realloc(q, n);
  if (p || n == 0) live -= (long long)old;
  grew(p);
  return p;
}
void *memalign(size_t a, size_t n) {
  void *p = __libc_memalign(a, n);
  grew(p);
  return p;
}
void *aligned_alloc(size_t a, size_t n) { return memalign(a, n); }
int posix_memalign(void **r, size_t a, size_t n) {
  void *p = memalign(a, n);
  if (!p) return 12; /* ENOMEM */
  *r = p;
  return 0;
}
void free(void *q) {
  if (q) live -= (long long)malloc_usable_size(q);
  __libc_free(q);
}

/* getenv from the environment block itself (no recursion into ourselves). */
extern char **environ;
char *getenv(const char *name) {
  static char buf[32];
  if (strcmp(name, "DEVPLAN_HEAP_RESET") == 0) {
    base = peak = live;
    return NULL;
  }
  if (strcmp(name, "DEVPLAN_HEAP_PEAK") == 0) {
    snprintf(buf, sizeof buf, "%lld", peak - base);
    return buf;
  }
  if (strcmp(name, "DEVPLAN_HEAP_LIVE") == 0) {
    snprintf(buf, sizeof buf, "%lld", live - base);
    return buf;
  }
  size_t k = strlen(name);
  for (char **e = environ; e && *e; e++)
    if (strncmp(*e, name, k) == 0 && (*e)[k] == '=') return *e + k + 1;
  return NULL;
}
