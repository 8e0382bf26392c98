/*
 * Internals shared by the core's files (not installed, not for users):
 * the context's layout and the interning table.
 */
#ifndef DEVPLAN_INTERNAL_H
#define DEVPLAN_INTERNAL_H

#include "devplan/core.h"
#include "devplan/op.h"

/* An open-addressing set of interned objects keyed by their hash. Lookup
   takes an equality predicate against a probe key, so a caller can look up
   by fields without building the object first. */
typedef struct dp_itab {
  struct dp_islot { uint32_t hash; void *obj; } *slots; /* obj NULL: empty; ITAB_TOMB: removed */
  uint32_t cap, n, used;
} dp_itab;

typedef int (*dp_itab_eq)(const void *obj, const void *key);
void *dp_itab_find(const dp_itab *t, uint32_t hash, dp_itab_eq eq, const void *key);
int dp_itab_insert(dp_itab *t, uint32_t hash, void *obj);   /* 0, or -1 on out of memory */
void dp_itab_remove(dp_itab *t, uint32_t hash, const void *obj);
void dp_itab_free(dp_itab *t);

uint32_t dp_hash_bytes(uint32_t h, const void *p, size_t n);
uint32_t dp_hash_str(uint32_t h, const char *s);
uint32_t dp_hash_u64(uint32_t h, uint64_t v);

struct dp_ctx {
  dp_obj h;
  dp_itab targets;          /* interned dp_target (not retained by the table) */
  dp_itab vdevs;            /* interned dp_vdev */
  dp_itab types;            /* interned dp_type */
  char **sources;           /* source names; id = index + 1 */
  uint32_t nsources, capsources;
  dp_op **ops;              /* registry, registration order (retained) */
  uint32_t nops, capops;
  dp_itab opnames;          /* name -> op */
  uint64_t next_tvar_id;
};

#endif
