/*
 * The pointer map (internal; the core, the printer, the planner and the
 * pattern matcher use this one): node identity -> a value, for the visited
 * sets and memo tables of the traversals and the planner's node numbers.
 *
 * Open addressing with linear probing, at most two thirds full, backward-
 * shift deletion (no tombstones). A slot holds the key and its value
 * together, so a probe touches one cache line. Keys must not be NULL.
 * The map is never iterated in an order anything depends on.
 */
#ifndef DEVPLAN_PTRMAP_H
#define DEVPLAN_PTRMAP_H

#include <stdint.h>

typedef struct dp__ptrslot {
  const void *key; /* NULL: empty */
  union {          /* one value, read the way its map is used: */
    void *ptr;     /*   node -> object (memo tables) */
    uint64_t word; /*   node -> a number or a hash */
    struct {
      uint32_t val, aux; /* node -> an id and a second word (the planner) */
    };
  };
} dp__ptrslot;

typedef struct dp__ptrmap {
  dp__ptrslot *slots;
  uint32_t cap, n;
} dp__ptrmap;

#define DP__PTRMAP_INIT ((dp__ptrmap){NULL, 0, 0})

/* The slot of key, or NULL when absent. */
dp__ptrslot *dp__ptrmap_find(const dp__ptrmap *m, const void *key);
/* The slot of key, added (its value zero) when absent: *fresh (when not
   NULL) tells which. One probe sequence for both. NULL on out of memory. */
dp__ptrslot *dp__ptrmap_insert(dp__ptrmap *m, const void *key, int *fresh);
/* key -> ptr, added or replaced: 1 when key was new, 0 when replaced
   (the old pointer is dropped: release it first if it was owned), -1 on
   out of memory. */
int dp__ptrmap_put(dp__ptrmap *m, const void *key, void *ptr);
/* key -> (val, aux), added or replaced: 0, or -1 on out of memory. */
int dp__ptrmap_set(dp__ptrmap *m, const void *key, uint32_t val, uint32_t aux);
/* Room for `more` keys without growing (a walk that knows how many keys
   it will add spares the rehashes): 0, or -1 on out of memory. */
int dp__ptrmap_reserve(dp__ptrmap *m, uint32_t more);
/* Removes key; 1 when it was there. */
int dp__ptrmap_remove(dp__ptrmap *m, const void *key);
/* Frees the table (not what the values point to: walk the slots first). */
void dp__ptrmap_free(dp__ptrmap *m);

#endif
