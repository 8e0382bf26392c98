/*
 * Which conflicts are independent (all_conflicts; explain.c words them).
 *
 * A conflict is a unification of two classes that cannot be one; analysis
 * keeps the two apart and goes on, so later constraints on either side
 * still unify and their own conflicts are found. A later conflict between
 * two classes that hold the two sides of an earlier one is that conflict
 * met again (the same two groups of values, each bound to one device, are
 * asked once more to be one): one root cause, one error. A conflict
 * between other classes is independent, whatever constraints it names.
 *
 * The classes are followed by a union-find of their own that mirrors every
 * link the domains make (explain.c's replay tells dp__indep_link each link
 * the domains tell it of: a failed unification, undone, never reaches here). Each independent
 * conflict's pair of roots sits in a hash, kept current: when two classes
 * merge, the conflicts listed under the one with fewer move to the other,
 * so each conflict moves O(log n) times and the whole is near linear.
 */
#include <stdlib.h>
#include <string.h>
#include "planner.h"

struct dp__indep {
  uint32_t *parent;       /* mirror union-find over domain ids (cap of them) */
  uint32_t *head, *count; /* per root: its first entry + 1 (0: none), how many */
  uint32_t cap;
  uint32_t *side, *next;  /* entry 2k + s: conflict k's side s (its root), next entry + 1 */
  uint32_t nent, capent;
  uint64_t *keys;         /* open addressing, linear probing: root pairs (0: empty) */
  uint32_t *uses;         /* how many conflicts have that pair (two may come to share one) */
  uint32_t kcap, kn;
};

dp__indep *dp__indep_new(void) { return dp_calloc(1, sizeof(dp__indep)); }

void dp__indep_free(dp__indep *t) {
  if (!t) return;
  free(t->parent);
  free(t->head);
  free(t->count);
  free(t->side);
  free(t->next);
  free(t->keys);
  free(t->uses);
  free(t);
}

/* Domains up to id x followed (a domain never seen is its own class). */
static int cover(dp__indep *t, uint32_t x) {
  if (x < t->cap) return 0;
  uint32_t old = t->cap;
  void **const arrs[] = {(void **)&t->parent, (void **)&t->head, (void **)&t->count};
  const size_t sizes[] = {sizeof *t->parent, sizeof *t->head, sizeof *t->count};
  if (x == UINT32_MAX || dp_grow_arrays(&t->cap, x + 1, 3, arrs, sizes) < 0) return -1;
  for (uint32_t i = old; i < t->cap; i++) t->parent[i] = i;
  memset(t->head + old, 0, (size_t)(t->cap - old) * sizeof *t->head);
  memset(t->count + old, 0, (size_t)(t->cap - old) * sizeof *t->count);
  return 0;
}

static uint32_t find(dp__indep *t, uint32_t x) {
  uint32_t r = x;
  while (t->parent[r] != r) r = t->parent[r];
  while (t->parent[x] != r) {
    uint32_t n = t->parent[x];
    t->parent[x] = r;
    x = n;
  }
  return r;
}

/* ---- the hash of root pairs ---- */

static uint64_t pair_key(uint32_t x, uint32_t y) {
  if (x > y) {
    uint32_t s = x;
    x = y;
    y = s;
  }
  return ((uint64_t)x + 1) << 32 | ((uint64_t)y + 1);
}

static uint32_t slot_of(const dp__indep *t, uint64_t k) {
  k ^= k >> 31;
  k *= 0x9E3779B97F4A7C15u;
  return (uint32_t)(k >> 32) & (t->kcap - 1);
}

/* The slot holding k, or the empty slot where it would go. */
static uint32_t probe(const dp__indep *t, uint64_t k) {
  uint32_t i = slot_of(t, k);
  while (t->keys[i] && t->keys[i] != k) i = (i + 1) & (t->kcap - 1);
  return i;
}

static int has(const dp__indep *t, uint64_t k) { return t->kcap && t->keys[probe(t, k)] == k; }

static int rehash(dp__indep *t) {
  uint32_t ocap = t->kcap, cap = ocap ? ocap * 2 : 64;
  uint64_t *ok = t->keys;
  uint32_t *ou = t->uses;
  t->keys = dp_calloc(cap, sizeof *t->keys);
  t->uses = dp_calloc(cap, sizeof *t->uses);
  if (!t->keys || !t->uses) {
    free(t->keys);
    free(t->uses);
    t->keys = ok;
    t->uses = ou;
    return -1;
  }
  t->kcap = cap;
  for (uint32_t i = 0; i < ocap; i++)
    if (ok[i]) {
      uint32_t j = probe(t, ok[i]);
      t->keys[j] = ok[i];
      t->uses[j] = ou[i];
    }
  free(ok);
  free(ou);
  return 0;
}

static int add_key(dp__indep *t, uint64_t k) {
  if ((t->kn + 1) * 3 > t->kcap * 2 && rehash(t) < 0) return -1;
  uint32_t i = probe(t, k);
  if (!t->keys[i]) {
    t->keys[i] = k;
    t->kn++;
  }
  t->uses[i]++;
  return 0;
}

/* One use of k gone; the key with the last (backward-shift deletion: a
   key after the hole moves into it unless its home lies between them). */
static void drop_key(dp__indep *t, uint64_t k) {
  uint32_t i = probe(t, k), m = t->kcap - 1;
  if (t->keys[i] != k || --t->uses[i]) return;
  t->kn--;
  for (uint32_t j = i;;) {
    j = (j + 1) & m;
    if (!t->keys[j]) break;
    uint32_t home = slot_of(t, t->keys[j]);
    if (((home - i - 1) & m) < ((j - i) & m)) continue; /* home in (i, j]: stays */
    t->keys[i] = t->keys[j];
    t->uses[i] = t->uses[j];
    i = j;
  }
  t->keys[i] = 0;
  t->uses[i] = 0;
}

/* ---- the domains' links and the conflicts ---- */

int dp__indep_link(dp__indep *t, uint32_t x, uint32_t y) {
  if (cover(t, x > y ? x : y) < 0) return -1;
  uint32_t rx = find(t, x), ry = find(t, y);
  if (rx == ry) return 0;
  if (t->count[rx] < t->count[ry]) { /* the class with fewer conflicts moves */
    uint32_t s = rx;
    rx = ry;
    ry = s;
  }
  t->parent[ry] = rx;
  uint32_t last = 0;
  for (uint32_t e = t->head[ry]; e; e = t->next[e - 1]) {
    uint32_t k = (e - 1) & ~1u;
    drop_key(t, pair_key(t->side[k], t->side[k + 1]));
    t->side[e - 1] = rx;
    if (add_key(t, pair_key(t->side[k], t->side[k + 1])) < 0) return -1;
    last = e;
  }
  if (last) {
    t->next[last - 1] = t->head[rx];
    t->head[rx] = t->head[ry];
    t->head[ry] = 0;
  }
  t->count[rx] += t->count[ry];
  t->count[ry] = 0;
  return 0;
}

int dp__indep_conflict(dp__indep *t, uint32_t a, uint32_t b) {
  if (cover(t, a > b ? a : b) < 0) return -1;
  uint32_t ra = find(t, a), rb = find(t, b);
  uint64_t k = pair_key(ra, rb);
  if (ra == rb || has(t, k)) return 0;
  void **const arrs[] = {(void **)&t->side, (void **)&t->next};
  const size_t sizes[] = {sizeof *t->side, sizeof *t->next};
  if (dp_grow_arrays(&t->capent, t->nent + 2, 2, arrs, sizes) < 0 || add_key(t, k) < 0) return -1;
  uint32_t roots[2] = {ra, rb};
  for (int s = 0; s < 2; s++) {
    uint32_t e = t->nent++;
    t->side[e] = roots[s];
    t->next[e] = t->head[roots[s]];
    t->head[roots[s]] = e + 1;
    t->count[roots[s]]++;
  }
  return 1;
}
