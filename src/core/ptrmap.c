/*
 * The pointer map (see ptrmap.h).
 */
#include <stdlib.h>
#include "devplan/core.h"
#include "ptrmap.h"

/* Keys of one 4 KiB page land in one block of 256 slots, in address order;
   pages are scattered (Fibonacci hashing). Traversals meet nodes roughly
   in allocation order, so neighbouring lookups touch neighbouring slots
   instead of a random cache line each (a million-node chain then hits the
   cache), while nodes of distant pages do not pile up in one run. */
static uint32_t slot_of(const void *key, uint32_t mask) {
  uint64_t k = (uint64_t)(uintptr_t)key;
  uint32_t block = (uint32_t)(((k >> 12) * 0x9E3779B97F4A7C15ull) >> 32);
  return ((block << 8) | (uint32_t)((k >> 4) & 255)) & mask;
}

/* The slot where key is, or the empty slot where it would go. */
static dp__ptrslot *probe(const dp__ptrmap *m, const void *key) {
  uint32_t mask = m->cap - 1, i = slot_of(key, mask);
  while (m->slots[i].key && m->slots[i].key != key) i = (i + 1) & mask;
  return &m->slots[i];
}

static int rehash(dp__ptrmap *m, uint32_t cap) {
  dp__ptrmap old = *m;
  m->slots = dp_calloc(cap, sizeof *m->slots);
  if (!m->slots) {
    *m = old;
    return -1;
  }
  m->cap = cap;
  for (uint32_t i = 0; i < old.cap; i++)
    if (old.slots[i].key) *probe(m, old.slots[i].key) = old.slots[i];
  free(old.slots);
  return 0;
}

/* Keeps the load at most 2/3 with `more` keys added. */
int dp__ptrmap_reserve(dp__ptrmap *m, uint32_t more) {
  uint64_t need = (uint64_t)m->n + more, cap = m->cap ? m->cap : 64;
  while (need * 3 > cap * 2) cap *= 2;
  if (cap > UINT32_MAX / 2 + 1) return -1;
  return cap == m->cap ? 0 : rehash(m, (uint32_t)cap);
}

dp__ptrslot *dp__ptrmap_find(const dp__ptrmap *m, const void *key) {
  if (!m->cap) return NULL;
  dp__ptrslot *s = probe(m, key);
  return s->key ? s : NULL;
}

dp__ptrslot *dp__ptrmap_insert(dp__ptrmap *m, const void *key, int *fresh) {
  if (((uint64_t)m->n + 1) * 3 > (uint64_t)m->cap * 2 && dp__ptrmap_reserve(m, 1) < 0) return NULL;
  dp__ptrslot *s = probe(m, key);
  if (fresh) *fresh = !s->key;
  if (!s->key) {
    s->key = key;
    m->n++;
  }
  return s;
}

int dp__ptrmap_put(dp__ptrmap *m, const void *key, void *ptr) {
  int fresh;
  dp__ptrslot *s = dp__ptrmap_insert(m, key, &fresh);
  if (!s) return -1;
  s->ptr = ptr;
  return fresh;
}

int dp__ptrmap_set(dp__ptrmap *m, const void *key, uint32_t val, uint32_t aux) {
  dp__ptrslot *s = dp__ptrmap_insert(m, key, NULL);
  if (!s) return -1;
  s->val = val;
  s->aux = aux;
  return 0;
}

int dp__ptrmap_remove(dp__ptrmap *m, const void *key) {
  if (!m->cap) return 0;
  uint32_t mask = m->cap - 1;
  dp__ptrslot *s = probe(m, key);
  if (!s->key) return 0;
  uint32_t i = (uint32_t)(s - m->slots);
  /* Backward shift: move later entries of the probe run into the hole. */
  for (uint32_t j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
    uint32_t home = slot_of(m->slots[j].key, mask);
    if (((j - home) & mask) >= ((j - i) & mask)) {
      m->slots[i] = m->slots[j];
      i = j;
    }
  }
  m->slots[i] = (dp__ptrslot){0};
  m->n--;
  return 1;
}

void dp__ptrmap_free(dp__ptrmap *m) {
  free(m->slots);
  *m = DP__PTRMAP_INIT;
}
