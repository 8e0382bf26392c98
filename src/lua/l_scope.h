/*
 * Scoped names for the parser's builder (src/lua/l_build.c): each distinct
 * name is interned once into a slot, and the slot holds what the name means
 * right now, so that resolving a variable is one hash lookup and no Lua
 * string or table is made per name.
 *
 * A slot holds the handle the name is bound to (0: unbound), the block in
 * which it was last defined (duplicate definitions are errors in a block),
 * and one cached handle for another use of the same key (the callee of an
 * identifier, or a meta[...] entry). Bindings are undone in reverse order
 * from an undo log: a mark taken before a block and restored after it puts
 * every shadowed binding back.
 *
 * Plain C, no Lua. Handles are builder handles (uint32_t, 0 = none).
 */
#ifndef DEVPLAN_L_SCOPE_H
#define DEVPLAN_L_SCOPE_H

#include <stddef.h>
#include <stdint.h>

typedef struct dp_scope_slot {
  uint32_t off, len;   /* the name's bytes in the arena */
  uint32_t hash;
  uint32_t handle;     /* current binding, 0: unbound */
  uint32_t block;      /* block of the last definition, 0: none */
  uint32_t cached;     /* callee or meta entry handle, 0: none */
} dp_scope_slot;

typedef struct dp_scope_undo {
  uint32_t slot, handle, block;
} dp_scope_undo;

typedef struct dp_scope {
  dp_scope_slot *slots;
  uint32_t nslots, capslots;
  /* open addressing: {hash, slot index + 1}, slot 0 = empty; the hash is
     kept here so that a probe touches one array until the name matches */
  struct dp_scope_entry { uint32_t hash, slot; } *table;
  uint32_t tmask;      /* table size - 1 (a power of two), 0 = no table yet */
  char *arena;
  size_t alen, acap;
  dp_scope_undo *undo;
  uint32_t nundo, capundo;
} dp_scope;

/* The slot of name[0..len), made if new; -1 when out of memory. */
int64_t dp_scope_intern(dp_scope *s, const char *name, size_t len);
/* The slot of name[0..len) if it exists, else -1. */
int64_t dp_scope_find(const dp_scope *s, const char *name, size_t len);
/* Bind slot to handle (recorded for undo); with block != 0 the slot is
   also marked as defined in that block. 0, or -1 when out of memory. */
int dp_scope_bind(dp_scope *s, uint32_t slot, uint32_t handle, uint32_t block);
/* Undo the bindings made after mark (a value of s->nundo). */
void dp_scope_unbind(dp_scope *s, uint32_t mark);
/* The name of a slot (not NUL-terminated: see slot->len). */
static inline const char *dp_scope_name(const dp_scope *s, uint32_t slot) {
  return s->arena + s->slots[slot].off;
}
void dp_scope_free(dp_scope *s);

#endif
