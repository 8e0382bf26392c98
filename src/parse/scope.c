/*
 * Names in scope for the parser: an interning hash table of names (open
 * addressing; a name read from the text stays there, others are copied
 * into one arena) whose slots carry the current binding, an undo log
 * that restores shadowed bindings, and the slots of the names used lately
 * (tried before the table). See scope.h.
 */
#include <stdlib.h>
#include <string.h>
#include "devplan/core.h"
#include "scope.h"

/* FNV-1a of all but the last byte, plus the last byte: names that differ
   only in their last character (%10, %11, ... x18, x19: how generated
   programs name values) land in neighbouring buckets, so that a long
   program touches the table in order instead of at random (the table is
   kept half empty, so these short runs do not collide). */
static uint32_t hash_name(const char *p, size_t n) {
  uint32_t h = 2166136261u;
  if (n == 0) return h;
  for (size_t i = 0; i + 1 < n; i++) h = (h ^ (unsigned char)p[i]) * 16777619u;
  h ^= h >> 15; /* (the low bits choose the bucket: mix the high ones in) */
  return h + (unsigned char)p[n - 1];
}

/* a[0..len) == b[0..len): short names (nearly all) byte by byte, as
   memcmp's call costs more than comparing them (names of generated
   programs differ in their last bytes: compared from the end) */
static inline int same_name(const char *a, const char *b, size_t len) {
  if (len > 16) return memcmp(a, b, len) == 0;
  for (size_t i = len; i-- > 0;)
    if (a[i] != b[i]) return 0;
  return 1;
}

static int64_t probe(const dp__scope *s, const char *name, size_t len, uint32_t h, uint32_t *at) {
  uint32_t m = s->tmask, i = h & m, tag = h & ~m;
  for (;;) {
    uint32_t e = s->table[i];
    if (e == 0) {
      *at = i;
      return -1;
    }
    if ((e & ~m) == tag) {
      uint32_t k = (e & m) - 1;
      if (dp__scope_len(s, k) == len && same_name(dp__scope_name(s, k), name, len)) return k;
    }
    i = (i + 1) & m;
  }
}

/* The entry of name[0..len) (len > 0) among the recent names. */
static uint32_t *recent_at(dp__scope *s, const char *name, size_t len) {
  uint32_t k = (uint32_t)len * 7u + (unsigned char)name[0] * 3u + (unsigned char)name[len - 1];
  return &s->recent[k & (SCOPE_RECENT - 1)];
}

/* The slot of name[0..len) if it is the recent one of its entry, else -1. */
static int64_t recent_find(const dp__scope *s, const uint32_t *r, const char *name, size_t len) {
  uint32_t k = *r;
  if (!k--) return -1;
  return dp__scope_len(s, k) == len && same_name(dp__scope_name(s, k), name, len) ? (int64_t)k : -1;
}

/* A table of `size` entries (a power of two, more than twice the names). */
static int rehash(dp__scope *s, uint32_t size) {
  uint32_t *t = dp_calloc(size, sizeof *t), m = size - 1;
  if (!t) return -1;
  for (uint32_t k = 0; k < s->nslots; k++) {
    uint32_t h = hash_name(dp__scope_name(s, k), dp__scope_len(s, k)), i = h & m;
    while (t[i]) i = (i + 1) & m;
    t[i] = (h & ~m) | (k + 1);
  }
  free(s->table);
  s->table = t;
  s->tmask = size - 1;
  return 0;
}

/* Double the table (kept at most half full). */
static int grow_table(dp__scope *s) {
  return rehash(s, s->tmask ? (s->tmask + 1) * 2 : 1024);
}

int dp__scope_reserve(dp__scope *s, uint32_t n) {
  uint32_t size = 1024;
  while (size / 2 <= n && size < (1u << 30)) size *= 2;
  if (size > s->tmask + 1 && rehash(s, size) != 0) return -1;
  return dp_grow((void **)&s->slots, &s->capslots, n, sizeof *s->slots);
}

int64_t dp__scope_find(dp__scope *s, const char *name, size_t len) {
  if (!s->tmask) return -1;
  uint32_t at, *r = len ? recent_at(s, name, len) : NULL;
  int64_t k = r ? recent_find(s, r, name, len) : -1;
  if (k >= 0) return k;
  k = probe(s, name, len, hash_name(name, len), &at);
  if (k >= 0 && r) *r = (uint32_t)k + 1;
  return k;
}

/* The slot of name[0..len); a new one's name at text offset off when it
   is one (off < SCOPE_IN_TEXT), else copied into the arena. */
static int64_t intern(dp__scope *s, const char *name, size_t len, size_t off) {
  if (len > UINT32_MAX / 2 || s->nslots >= UNDO_SLOT) return -1;
  uint32_t *r = len ? recent_at(s, name, len) : NULL;
  int64_t k = r && s->tmask ? recent_find(s, r, name, len) : -1;
  if (k >= 0) return k;
  if ((s->nslots + 1) * 2 > s->tmask && grow_table(s) != 0) return -1;
  uint32_t h = hash_name(name, len), at;
  k = probe(s, name, len, h, &at);
  if (k >= 0) {
    if (r) *r = (uint32_t)k + 1;
    return k;
  }
  if (dp_grow((void **)&s->slots, &s->capslots, s->nslots + 1, sizeof *s->slots) != 0) return -1;
  size_t pre = len >= SCOPE_LONG ? 4 : 0; /* (a long name's length before it) */
  if (off < SCOPE_IN_TEXT && !pre) {
    off |= SCOPE_IN_TEXT;
  } else {
    if (s->alen + pre + len >= SCOPE_IN_TEXT) return -1;
    if (s->alen + pre + len > s->acap) {
      size_t c = s->acap ? s->acap : 4096;
      while (c < s->alen + pre + len) c *= 2;
      char *a = dp_realloc(s->arena, c);
      if (!a) return -1;
      s->arena = a;
      s->acap = c;
    }
    uint32_t n32 = (uint32_t)len;
    if (pre) memcpy(s->arena + s->alen, &n32, 4);
    memcpy(s->arena + s->alen + pre, name, len);
    off = s->alen + pre;
    s->alen += pre + len;
  }
  s->slots[s->nslots] = (dp__scope_slot){(uint32_t)off, 0, pre ? SCOPE_LONG : (uint32_t)len, 0};
  s->table[at] = (h & ~s->tmask) | ++s->nslots; /* (nslots * 2 <= tmask: it fits under the tag) */
  if (r) *r = s->nslots;
  return s->nslots - 1;
}

int64_t dp__scope_intern(dp__scope *s, const char *name, size_t len) {
  return intern(s, name, len, SIZE_MAX);
}

int64_t dp__scope_intern_text(dp__scope *s, size_t off, size_t len) {
  return intern(s, s->text + off, len, off);
}

int dp__scope_bind(dp__scope *s, uint32_t slot, uint32_t handle, uint32_t block) {
  if (s->nundo + 3 > s->capundo && dp_grow((void **)&s->undo, &s->capundo, s->nundo + 3, sizeof *s->undo) != 0)
    return -1;
  dp__scope_slot *sl = &s->slots[slot];
  uint32_t n = s->nundo, last = n > s->sealed ? s->undo[n - 1] : 0;
  if (sl->handle == 0 && sl->block == 0) {
    if (slot && last == ((slot - 1) | UNDO_FRESH | UNDO_RUN) && n - 2 >= s->sealed) {
      s->undo[n - 1] = slot | UNDO_FRESH | UNDO_RUN; /* the run grows */
    } else if (slot && last == ((slot - 1) | UNDO_FRESH)) { /* a run of two */
      s->undo[n - 1] = slot - 1;
      s->undo[s->nundo++] = slot | UNDO_FRESH | UNDO_RUN;
    } else {
      s->undo[s->nundo++] = slot | UNDO_FRESH;
    }
  } else {
    s->undo[s->nundo++] = sl->handle;
    s->undo[s->nundo++] = sl->block;
    s->undo[s->nundo++] = slot;
  }
  sl->handle = handle;
  if (block) sl->block = block;
  return 0;
}

void dp__scope_unbind(dp__scope *s, uint32_t mark) {
  while (s->nundo > mark) {
    uint32_t w = s->undo[--s->nundo];
    dp__scope_slot *sl = &s->slots[w & UNDO_SLOT];
    if (w & UNDO_RUN) {
      for (uint32_t k = s->undo[--s->nundo]; k <= (w & UNDO_SLOT); k++) s->slots[k].handle = s->slots[k].block = 0;
    } else if (w & UNDO_FRESH) {
      sl->handle = sl->block = 0;
    } else {
      sl->block = s->undo[--s->nundo];
      sl->handle = s->undo[--s->nundo];
    }
  }
  if (s->sealed > mark) s->sealed = mark; /* (the marks still open are below it) */
}

void dp__scope_free(dp__scope *s) {
  free(s->slots);
  free(s->table);
  free(s->arena);
  free(s->undo);
  memset(s, 0, sizeof *s);
}
