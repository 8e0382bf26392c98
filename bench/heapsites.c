/*
 * Heap bytes by allocation site at a step's peak, for the benchmarks
 * (LD_PRELOAD, as bench/heapcount.c, whose getenv protocol it speaks:
 * DEVPLAN_HEAP_RESET starts a measurement, DEVPLAN_HEAP_PEAK gives the
 * peak growth). From the reset on, every malloc, calloc, realloc,
 * memalign and anonymous mmap is recorded with its call stack (6 frames
 * above the allocator); with HEAPSITE_AT=BYTES (a first run's peak) the
 * live bytes of every stack are copied when the growth first reaches
 * BYTES, and written to HEAPSITE_OUT (default /tmp/heapsites.txt) when the
 * peak is asked for: "bytes frame frame ..." with each frame as
 * "object+offset", for addr2line (bench/heapsites.sh resolves them).
 * Build: cc -O2 -shared -fPIC -o bin/heapsites.so bench/heapsites.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

#define DEPTH 7
#define NSITES 16384
#define NLIVE (1u << 24) /* live blocks recorded at once */

typedef struct { void *f[DEPTH]; long long live, at; } site;
typedef struct { void *p; uint64_t n : 40, s : 24; } rec; /* s: site + 1 */

static long long live, peak, base, at_bytes;
static int on, snapped;
static __thread int busy;
static site *sites;
static rec *recs;
static uint32_t nsites;

static void *raw_map(size_t n) {
  return (void *)syscall(SYS_mmap, NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
}

static void setup(void) {
  if (sites) return;
  busy = 1;
  sites = raw_map(sizeof(site) * NSITES);
  recs = raw_map(sizeof(rec) * NLIVE);
  void *b[4];
  backtrace(b, 4); /* (loads the unwinder now, not inside a hook) */
  const char *a = getenv("HEAPSITE_AT");
  at_bytes = a ? atoll(a) : 0;
  busy = 0;
}

static uint32_t site_of(void) {
  void *b[DEPTH + 2];
  int n = backtrace(b, DEPTH + 2);
  void *f[DEPTH] = {0};
  for (int i = 2; i < n && i - 2 < DEPTH; i++) f[i - 2] = b[i];
  uint64_t h = 0;
  for (int i = 0; i < DEPTH; i++) h = (h ^ (uintptr_t)f[i]) * 0x100000001b3ull;
  for (uint32_t i = (uint32_t)(h % NSITES);; i = (i + 1) % NSITES) {
    if (!memcmp(sites[i].f, f, sizeof f)) return i;
    if (!sites[i].f[0] && !sites[i].f[1]) {
      memcpy(sites[i].f, f, sizeof f);
      nsites++;
      return i;
    }
  }
}

static void snap(void) {
  if (snapped || !at_bytes || live - base < at_bytes) return;
  snapped = 1;
  for (uint32_t i = 0; i < NSITES; i++) sites[i].at = sites[i].live;
}

static void put(void *p, size_t n) {
  if (!p) return;
  live += (long long)n;
  if (live > peak) peak = live;
  if (!on || busy) return;
  busy = 1;
  uint32_t s = site_of();
  sites[s].live += (long long)n;
  uint32_t i = (uint32_t)(((uintptr_t)p >> 4) * 0x9E3779B1u) % NLIVE;
  while (recs[i].p && recs[i].p != (void *)1) i = (i + 1) % NLIVE;
  recs[i] = (rec){p, n, s + 1};
  snap();
  busy = 0;
}

/* p's record removed (its site's bytes given back); n: bytes of the heap. */
static void take(void *p, size_t n) {
  live -= (long long)n;
  if (!on || !p) return;
  uint32_t i = (uint32_t)(((uintptr_t)p >> 4) * 0x9E3779B1u) % NLIVE;
  for (; recs[i].p; i = (i + 1) % NLIVE)
    if (recs[i].p == p) {
      sites[recs[i].s - 1].live -= (long long)recs[i].n;
      recs[i].p = (void *)1; /* (a tombstone) */
      return;
    }
}

void *malloc(size_t n) {
  void *p = __libc_malloc(n);
  if (p) put(p, malloc_usable_size(p));
  return p;
}
void *calloc(size_t a, size_t b) {
  void *p = __libc_calloc(a, b);
  if (p) put(p, malloc_usable_size(p));
  return p;
}
void *realloc(void *q, size_t n) {
  size_t old = q ? malloc_usable_size(q) : 0;
  void *p = __libc_realloc(q, n);
  if (p || n == 0) take(q, old);
  if (p) put(p, malloc_usable_size(p));
  return p;
}
void *memalign(size_t a, size_t n) {
  void *p = __libc_memalign(a, n);
  if (p) put(p, malloc_usable_size(p));
  return p;
}
void *aligned_alloc(size_t a, size_t n) { return memalign(a, n); }
int posix_memalign(void **r, size_t a, size_t n) {
  void *p = memalign(a, n);
  if (!p) return 12;
  *r = p;
  return 0;
}
void free(void *q) {
  if (q) take(q, malloc_usable_size(q));
  __libc_free(q);
}

/* mmaps: recorded whole; a munmap of part of one (a trim) gives back its
   bytes from the mapping's site, found by a scan of the few live ones. */
#define NMAPS 4096
static struct { char *p; size_t n; uint32_t s; } maps[NMAPS];

void *mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off) {
  static void *(*next)(void *, size_t, int, int, int, off_t);
  if (!next) *(void **)&next = dlsym(RTLD_NEXT, "mmap");
  void *p = next(addr, n, prot, flags, fd, off);
  if (p != MAP_FAILED && (flags & MAP_ANONYMOUS)) {
    live += (long long)n;
    if (live > peak) peak = live;
    if (on && !busy) {
      busy = 1;
      uint32_t s = site_of();
      sites[s].live += (long long)n;
      for (int i = 0; i < NMAPS; i++)
        if (!maps[i].p) {
          maps[i].p = p, maps[i].n = n, maps[i].s = s;
          break;
        }
      snap();
      busy = 0;
    }
  }
  return p;
}
int munmap(void *addr, size_t n) {
  static int (*next)(void *, size_t);
  if (!next) *(void **)&next = dlsym(RTLD_NEXT, "munmap");
  int rc = next(addr, n);
  if (rc != 0) return rc;
  live -= (long long)n;
  char *a = addr;
  for (int i = 0; on && i < NMAPS; i++)
    if (maps[i].p && a >= maps[i].p && a < maps[i].p + maps[i].n) {
      sites[maps[i].s].live -= (long long)n;
      if (a == maps[i].p && n >= maps[i].n) maps[i].p = NULL;
      else if (a == maps[i].p) maps[i].p += n, maps[i].n -= n;
      else maps[i].n = (size_t)(a - maps[i].p); /* (a tail trimmed) */
      break;
    }
  return rc;
}

static void dump(void) {
  const char *o = getenv("HEAPSITE_OUT");
  FILE *f = fopen(o ? o : "/tmp/heapsites.txt", "w");
  if (!f) return;
  fprintf(f, "# peak growth %lld, snapshot at %lld (%s), sites %u\n", peak - base, at_bytes,
          snapped ? "taken" : "not reached", nsites);
  for (uint32_t i = 0; i < NSITES; i++) {
    long long b = snapped ? sites[i].at : sites[i].live;
    if (!sites[i].f[0] || b < 65536) continue;
    fprintf(f, "%lld", b);
    for (int k = 0; k < DEPTH && sites[i].f[k]; k++) {
      Dl_info d;
      if (dladdr(sites[i].f[k], &d) && d.dli_fname)
        fprintf(f, " %s+0x%lx", d.dli_fname, (unsigned long)((char *)sites[i].f[k] - (char *)d.dli_fbase - 1));
      else
        fprintf(f, " ?+%p", sites[i].f[k]);
    }
    fprintf(f, "\n");
  }
  fclose(f);
}

extern char **environ;
char *getenv(const char *name) {
  static char buf[32];
  if (strcmp(name, "DEVPLAN_HEAP_RESET") == 0) {
    setup();
    base = peak = live;
    on = 1;
    return NULL;
  }
  if (strcmp(name, "DEVPLAN_HEAP_PEAK") == 0) {
    int was = busy;
    busy = 1;
    dump();
    busy = was;
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
