/*
 * Every allocation of the library: malloc, calloc and realloc behind one
 * door (dp_malloc, dp_calloc, dp_realloc), so that a test can make the n-th
 * fail (DEVPLAN_FAIL_ALLOC) and so that large blocks are asked to be backed
 * by huge pages; and the arrays grown by doubling (dp_grow).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include "internal.h"

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

size_t dp__page_size(void) {
  static size_t page;
#if defined(__linux__)
  if (!page) {
    long ps = sysconf(_SC_PAGESIZE);
    page = ps > 0 ? (size_t)ps : 4096;
  }
#else
  page = 4096;
#endif
  return page;
}

/* What a file of the kernel's says, in buf; 0 when it cannot be read. */
static int read_sys(const char *path, char *buf, int n) {
  FILE *f = fopen(path, "r");
  int ok = f && fgets(buf, n, f) != NULL;
  if (f) fclose(f);
  return ok;
}

size_t dp__huge_page_size(void) {
  static size_t size = 1; /* (1: not read yet) */
  if (size != 1) return size;
  size = 0;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  char buf[128];
  unsigned long long v;
  if (read_sys("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf) &&
      !strstr(buf, "[never]") &&
      read_sys("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", buf, sizeof buf) &&
      sscanf(buf, "%llu", &v) == 1 && v >= 4096 && (v & (v - 1)) == 0)
    size = (size_t)v;
#endif
  return size;
}

int dp_huge_pages_on_request(void) {
  static int on = -1;
  if (on >= 0) return on;
  char buf[128];
  on = read_sys("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf) &&
       strstr(buf, "[madvise]") != NULL;
  return on;
}

/* A fresh page costs a fault, and a million-call module's arrays and
   node blocks take hundreds of MB: 4 KiB a fault, some 20 us each on a
   virtual machine. A block of at least a huge page asks for huge pages
   (where transparent huge pages are in "madvise" mode, the usual default):
   512 times fewer faults on x86-64 for the huge pages that lie wholly
   inside it (dp_huge_size makes that all of them). The hint covers the
   block's whole mapping (glibc maps a large block on its own, and
   malloc_usable_size reaches its end): a hint on part of it would split
   the mapping, and realloc could then no longer grow it in place (mremap
   fails across mappings, and glibc copies instead). A failed hint changes
   nothing. */
#define HUGE_MIN ((size_t)1 << 20) /* (glibc's own mapping from here: main's threshold) */
#define HEADER ((size_t)64)        /* more than glibc's chunk header and rounding */

void *dp_advise_huge(void *p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  size_t h = p && n >= HUGE_MIN ? dp__huge_page_size() : 0; /* (a small block: no read) */
  if (!h || n < h) return p;
#ifdef __GLIBC__
  size_t extent = malloc_usable_size(p);
#else
  size_t extent = n;
#endif
  uintptr_t page = dp__page_size(), a = (uintptr_t)p & ~(page - 1);
  uintptr_t b = ((uintptr_t)p + extent + page - 1) & ~(page - 1);
  (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
  (void)n;
#endif
  return p;
}

/* glibc maps a block of a megabyte and more on its own (devplan's main
   sets that threshold), at a page boundary: the huge pages cut by its two
   ends stay small, up to 1,022 faults of some 10-30 us each on a virtual
   machine (a 1.2 MB array of PlanDevices at 100,000 calls: 300). Linux
   puts an anonymous mapping that is whole huge pages long on a huge page
   boundary, so a block asked for as whole huge pages less glibc's header
   lies on whole huge pages: one fault each. The cost is the rest of its
   last huge page, resident once the block's end is written (at most 2 MiB
   a block, and only blocks of a megabyte and more); before Linux 6.7 the
   rounding buys nothing. (Such a block is freed with free, so it must be
   malloc's: dp__map_huge, below, is for blocks the library unmaps itself.) */
size_t dp_huge_size(size_t n) {
  size_t h = n >= HUGE_MIN ? dp__huge_page_size() : 0;
  if (!h || n > SIZE_MAX - h - HEADER) return n;
  return (n + HEADER + h - 1) / h * h - HEADER;
}

/* glibc maps a large block at a page boundary, not a huge page's: the
   partial huge pages at its two ends stay small, up to 1,022 faults a
   block (an arena's 8 MiB group lost a quarter of its pages so). This
   one is mapped with a huge page's room to spare and trimmed to start and
   end on huge page boundaries. Not in the sanitizer build, whose leak
   check sees only its allocator's blocks (*oom stays 0: malloc instead). */
void *dp__map_huge(size_t n, int *oom) {
  *oom = 0;
  if (inject()) {
    *oom = 1;
    return NULL;
  }
#if defined(__linux__) && defined(MADV_HUGEPAGE) && !DP__SANITIZED
  size_t h = dp__huge_page_size();
  if (!h || n < h || n % h || n > SIZE_MAX - h) return NULL;
  char *m = mmap(NULL, n + h, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  char *p = (char *)(((uintptr_t)m + h - 1) & ~(uintptr_t)(h - 1));
  if (p > m) (void)munmap(m, (size_t)(p - m));
  if (p + n < m + n + h) (void)munmap(p + n, (size_t)(m + n + h - (p + n)));
  (void)madvise(p, n, MADV_HUGEPAGE);
  return p;
#else
  (void)n;
  return NULL;
#endif
}

void dp__unmap_huge(void *p, size_t n) {
#if defined(__linux__)
  if (p) (void)munmap(p, n);
#else
  (void)p;
  (void)n;
#endif
}

void *dp_malloc(size_t n) {
  if (inject()) return NULL;
  n = dp_huge_size(n ? n : 1);
  return dp_advise_huge(malloc(n), n);
}
void *dp_calloc(size_t n, size_t size) {
  if (inject()) return NULL;
  if (!n || !size) return calloc(1, 1);
  if (n > SIZE_MAX / size) return NULL;
  size_t total = dp_huge_size(n * size);
  return dp_advise_huge(calloc(1, total), total);
}
void *dp_realloc(void *p, size_t n) {
  if (inject()) return NULL;
  n = dp_huge_size(n ? n : 1);
  return dp_advise_huge(realloc(p, n), n);
}

char *dp_strdup(const char *s) {
  if (!s) s = "";
  size_t n = strlen(s) + 1;
  char *d = dp_malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

char *dp_vformat(const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return NULL;
  char *s = dp_malloc((size_t)n + 1);
  if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
  return s;
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

int dp_grow8(void **arr, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap) return 0;
  uint64_t want = (uint64_t)*cap * 8;
  return dp_grow(arr, cap, want > need && want <= UINT32_MAX / 2 ? (uint32_t)want : need, elem);
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
