/*
 * Heap byte counter for the benchmarks, loaded with LD_PRELOAD (bench/plan.sh
 * builds it). It wraps malloc/calloc/realloc/free around glibc's own entry
 * points and keeps the live and peak heap bytes (malloc_usable_size). The
 * Lua script reads it through os.getenv, the one C call plain Lua makes
 * with a string we choose: getenv("DEVPLAN_HEAP_RESET") starts a
 * measurement (peak := live), getenv("DEVPLAN_HEAP_PEAK") returns the peak
 * growth since then in bytes, as text, getenv("DEVPLAN_HEAP_LIVE") the
 * live growth. Peak RSS would miss memory that the
 * pass takes from chunks the parser freed. Anonymous memory the library
 * maps itself (an arena's large groups, dp__map_huge) counts too: mmap and
 * munmap called from outside glibc come here (glibc's malloc maps its own
 * blocks through its internal entry, counted by their usable size above).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <sys/mman.h>
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

void *mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off) {
  static void *(*next)(void *, size_t, int, int, int, off_t);
  if (!next) *(void **)&next = dlsym(RTLD_NEXT, "mmap");
  void *p = next(addr, n, prot, flags, fd, off);
  if (p != MAP_FAILED && (flags & MAP_ANONYMOUS)) {
    live += (long long)n;
    if (live > peak) peak = live;
  }
  return p;
}
int munmap(void *addr, size_t n) {
  static int (*next)(void *, size_t);
  if (!next) *(void **)&next = dlsym(RTLD_NEXT, "munmap");
  int rc = next(addr, n);
  if (rc == 0) live -= (long long)n; /* (the library unmaps only what it mapped) */
  return rc;
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
