/*
 * Pointer-keyed hash map for the printer and structural equality: one slot
 * per distinct node, so that DAGs are walked once per node and a 1,000,000
 * node chain costs a few dozen bytes per node. Keys and values share a
 * slot, so a lookup touches one cache line.
 */
#include <stdlib.h>
#include "print_internal.h"

void dp_pmap_init(dp_pmap *m) {
  m->slots = NULL;
  m->cap = m->n = 0;
}

void dp_pmap_free(dp_pmap *m) {
  free(m->slots);
  dp_pmap_init(m);
}

/* Nodes are at least 16 bytes apart, so address / 16 tells them apart;
   keeping the address order (no mixing) means nodes allocated one after
   the other, as a chain is, sit in neighbouring slots: a walk over a
   million-node chain then hits the cache instead of missing on every
   probe. */
static uint32_t slot_of(const void *p, uint32_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  return (uint32_t)((x >> 4) ^ (x >> 36)) & (cap - 1);
}

uint64_t *dp_pmap_get(const dp_pmap *m, const void *key) {
  if (!m->cap) return NULL;
  for (uint32_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (m->slots[i].key == key) return &m->slots[i].val;
    if (!m->slots[i].key) return NULL;
  }
}

static dp_pmap_slot *find_slot(dp_pmap *m, const void *key) {
  uint32_t i = slot_of(key, m->cap);
  while (m->slots[i].key && m->slots[i].key != key) i = (i + 1) & (m->cap - 1);
  return &m->slots[i];
}

/* Rehash into a table of cap slots (a power of two above the entries). */
static int rehash(dp_pmap *m, uint32_t cap) {
  dp_pmap old = *m;
  m->slots = calloc(cap, sizeof *m->slots);
  if (!m->slots) {
    *m = old;
    return -1;
  }
  m->cap = cap;
  for (uint32_t i = 0; i < old.cap; i++)
    if (old.slots[i].key) *find_slot(m, old.slots[i].key) = old.slots[i];
  free(old.slots);
  return 0;
}

static int grow(dp_pmap *m) {
  return rehash(m, m->cap ? m->cap * 2 : 64);
}

int dp_pmap_reserve(dp_pmap *m, uint32_t more) {
  uint64_t need = (uint64_t)m->n + more, cap = m->cap ? m->cap : 64;
  while (need * 10 > cap * 7) cap *= 2;
  if (cap > UINT32_MAX / 2 + 1) return -1;
  return cap == m->cap ? 0 : rehash(m, (uint32_t)cap);
}

uint64_t *dp_pmap_upsert(dp_pmap *m, const void *key, uint64_t val, int *fresh) {
  /* keep the load under 0.7 so probes stay short */
  if ((uint64_t)(m->n + 1) * 10 > (uint64_t)m->cap * 7 && grow(m) < 0) return NULL;
  dp_pmap_slot *s = find_slot(m, key);
  *fresh = !s->key;
  if (!s->key) {
    s->key = key;
    s->val = val;
    m->n++;
  }
  return &s->val;
}

int dp_pmap_put(dp_pmap *m, const void *key, uint64_t val) {
  int fresh;
  uint64_t *v = dp_pmap_upsert(m, key, val, &fresh);
  if (!v) return -1;
  *v = val;
  return 0;
}
