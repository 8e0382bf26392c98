/*
 * A pointer-keyed hash map (internal; any core file may use it): visited
 * sets and memo tables of the traversals, keyed by node identity.
 * Open addressing with linear probing and backward-shift deletion, so
 * there are no tombstones. Keys must not be NULL.
 */
#ifndef DEVPLAN_PTRMAP_H
#define DEVPLAN_PTRMAP_H

#include <stdint.h>

typedef struct dp_ptrmap {
  struct dp_pmslot { const void *key; void *val; } *slots; /* key NULL: empty */
  uint32_t cap, n;
} dp_ptrmap;

#define DP_PTRMAP_INIT ((dp_ptrmap){NULL, 0, 0})

/* The value slot of key, or NULL when absent. */
void **dp_ptrmap_get(const dp_ptrmap *m, const void *key);
/* Insert or replace: 1 when the key was new, 0 when replaced, -1 on out of memory. */
int dp_ptrmap_put(dp_ptrmap *m, const void *key, void *val);
/* Remove key; returns 1 when it was there. */
int dp_ptrmap_remove(dp_ptrmap *m, const void *key);
/* Frees the table (not the keys or values: iterate slots first if needed). */
void dp_ptrmap_free(dp_ptrmap *m);

#endif
