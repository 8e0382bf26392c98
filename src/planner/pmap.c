/*
 * The planner's pointer map: node (or other key) -> an id and an
 * auxiliary word. Open addressing with linear probing; never iterated, so the
 * output cannot depend on its order.
 */
#include <stdlib.h>
#include "planner.h"

/* Keys of one 4 KiB page land in one block of 256 slots, in address
   order; pages are scattered (Fibonacci hashing). The planner looks nodes
   up roughly in allocation order, so neighbouring lookups touch
   neighbouring slots instead of a random cache line each. */
static uint32_t hash_ptr(uintptr_t k) {
  uint64_t page = (uint64_t)k >> 12;
  uint32_t block = (uint32_t)((page * 0x9E3779B97F4A7C15ULL) >> 32);
  return (block << 8) | (uint32_t)((k >> 4) & 255);
}

static int grow(dp_pmap *m) {
  uint32_t cap = m->cap ? m->cap * 2 : 1024;
  struct dp_pslot *s = dp_calloc(cap, sizeof *s);
  if (!s) return -1;
  for (uint32_t i = 0; i < m->cap; i++) {
    if (!m->slots[i].key) continue;
    uint32_t j = hash_ptr(m->slots[i].key) & (cap - 1);
    while (s[j].key) j = (j + 1) & (cap - 1);
    s[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = s;
  m->cap = cap;
  return 0;
}

struct dp_pslot *dp__pmap_get(const dp_pmap *m, uintptr_t key) {
  if (!m->cap) return NULL;
  uint32_t j = hash_ptr(key) & (m->cap - 1);
  while (m->slots[j].key) {
    if (m->slots[j].key == key) return &m->slots[j];
    j = (j + 1) & (m->cap - 1);
  }
  return NULL;
}

int dp__pmap_put(dp_pmap *m, uintptr_t key, uint32_t val, uint32_t aux) {
  struct dp_pslot *s = dp__pmap_get(m, key);
  if (s) {
    s->val = val;
    s->aux = aux;
    return 0;
  }
  return dp__pmap_add(m, key, val, aux);
}

int dp__pmap_add(dp_pmap *m, uintptr_t key, uint32_t val, uint32_t aux) {
  /* keep the load under 2/3 */
  if ((m->n + 1) * 3 >= m->cap * 2 && grow(m) < 0) return -1;
  uint32_t j = hash_ptr(key) & (m->cap - 1);
  while (m->slots[j].key) j = (j + 1) & (m->cap - 1);
  m->slots[j].key = key;
  m->slots[j].val = val;
  m->slots[j].aux = aux;
  m->n++;
  return 0;
}

void dp__pmap_free(dp_pmap *m) {
  free(m->slots);
  m->slots = NULL;
  m->cap = m->n = 0;
}
