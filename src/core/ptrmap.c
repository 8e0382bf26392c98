/*
 * Pointer-keyed hash map for identity sets and memo tables (see ptrmap.h).
 * Kept at most half full so probes stay short on million-node graphs.
 */
#include <stdlib.h>
#include "ptrmap.h"

static uint32_t slot_of(const void *key, uint32_t mask) {
  uint64_t h = (uint64_t)(uintptr_t)key * 0x9E3779B97F4A7C15ull;
  return (uint32_t)(h >> 32) & mask;
}

void **dp_ptrmap_get(const dp_ptrmap *m, const void *key) {
  if (!m->cap) return NULL;
  uint32_t mask = m->cap - 1;
  for (uint32_t i = slot_of(key, mask);; i = (i + 1) & mask) {
    if (m->slots[i].key == key) return &m->slots[i].val;
    if (!m->slots[i].key) return NULL;
  }
}

static int grow(dp_ptrmap *m) {
  uint32_t cap = m->cap ? m->cap * 2 : 64;
  struct dp_pmslot *slots = calloc(cap, sizeof *slots);
  if (!slots) return -1;
  for (uint32_t i = 0; i < m->cap; i++) {
    if (!m->slots[i].key) continue;
    uint32_t j = slot_of(m->slots[i].key, cap - 1);
    while (slots[j].key) j = (j + 1) & (cap - 1);
    slots[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = slots;
  m->cap = cap;
  return 0;
}

int dp_ptrmap_put(dp_ptrmap *m, const void *key, void *val) {
  void **slot = dp_ptrmap_get(m, key);
  if (slot) {
    *slot = val;
    return 0;
  }
  if ((m->n + 1) * 2 > m->cap && grow(m) < 0) return -1;
  uint32_t mask = m->cap - 1, i = slot_of(key, mask);
  while (m->slots[i].key) i = (i + 1) & mask;
  m->slots[i].key = key;
  m->slots[i].val = val;
  m->n++;
  return 1;
}

int dp_ptrmap_remove(dp_ptrmap *m, const void *key) {
  if (!m->cap) return 0;
  uint32_t mask = m->cap - 1, i = slot_of(key, mask);
  while (m->slots[i].key != key) {
    if (!m->slots[i].key) return 0;
    i = (i + 1) & mask;
  }
  /* Backward shift: move later entries of the probe run into the hole. */
  for (uint32_t j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
    uint32_t home = slot_of(m->slots[j].key, mask);
    if (((j - home) & mask) >= ((j - i) & mask)) {
      m->slots[i] = m->slots[j];
      i = j;
    }
  }
  m->slots[i].key = NULL;
  m->slots[i].val = NULL;
  m->n--;
  return 1;
}

void dp_ptrmap_free(dp_ptrmap *m) {
  free(m->slots);
  *m = DP_PTRMAP_INIT;
}
