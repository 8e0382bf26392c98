/*
 * The interning table: an open-addressing hash set with tombstones.
 * The table does not own its objects; an interned object removes itself
 * when it is freed.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define TOMB ((void *)&tomb_marker)
static char tomb_marker;

uint32_t dp__hash_bytes(uint32_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  if (!h) h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
  return h;
}

uint32_t dp__hash_string(uint32_t h, const char *s) {
  return dp__hash_bytes(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

uint32_t dp__hash_u64(uint32_t h, uint64_t v) { return dp__hash_bytes(h, &v, sizeof v); }

void *dp__itab_find(const dp__itab *t, uint32_t hash, dp__itab_eq eq, const void *key) {
  if (!t->cap) return NULL;
  uint32_t mask = t->cap - 1;
  for (uint32_t i = hash & mask;; i = (i + 1) & mask) {
    struct dp__islot *s = &t->slots[i];
    if (!s->obj) return NULL;
    if (s->obj != TOMB && s->hash == hash && eq(s->obj, key)) return s->obj;
  }
}

static int grow(dp__itab *t) {
  uint32_t cap = t->cap ? t->cap : 16;
  if (t->n * 2 >= cap) cap *= 2; /* else: same size, just drop tombstones */
  struct dp__islot *slots = dp_calloc(cap, sizeof *slots);
  if (!slots) return -1;
  for (uint32_t i = 0; i < t->cap; i++) {
    struct dp__islot s = t->slots[i];
    if (!s.obj || s.obj == TOMB) continue;
    uint32_t j = s.hash & (cap - 1);
    while (slots[j].obj) j = (j + 1) & (cap - 1);
    slots[j] = s;
  }
  free(t->slots);
  t->slots = slots;
  t->cap = cap;
  t->used = t->n;
  return 0;
}

int dp__itab_insert(dp__itab *t, uint32_t hash, void *obj) {
  if ((t->used + 1) * 4 >= t->cap * 3 && grow(t) < 0) return -1;
  uint32_t mask = t->cap - 1, i = hash & mask;
  while (t->slots[i].obj && t->slots[i].obj != TOMB) i = (i + 1) & mask;
  if (!t->slots[i].obj) t->used++;
  t->slots[i].hash = hash;
  t->slots[i].obj = obj;
  t->n++;
  return 0;
}

void dp__itab_remove(dp__itab *t, uint32_t hash, const void *obj) {
  if (!t->cap) return;
  uint32_t mask = t->cap - 1;
  for (uint32_t i = hash & mask;; i = (i + 1) & mask) {
    struct dp__islot *s = &t->slots[i];
    if (!s->obj) return;
    if (s->obj == obj) {
      s->obj = TOMB;
      t->n--;
      return;
    }
  }
}

void dp__itab_free(dp__itab *t) {
  free(t->slots);
  memset(t, 0, sizeof *t);
}
