/*
 * Names in scope for the parser: each distinct name is interned once into
 * a slot, and the slot holds what the name means right now, so that
 * resolving a name is one hash lookup and nothing is allocated per use.
 *
 * A slot holds the handle the name is bound to (0: unbound) and the block
 * in which it was last defined (a name defined twice in one block is an
 * error). Scoped bindings (variables, type variables) are undone in reverse
 * order from an undo log: a mark taken when a block opens and restored when
 * it closes puts every shadowed binding back. The log is a run of words:
 * a binding of a name that had none (nearly every one: a million lets bind
 * a million new names) is one word, its slot with UNDO_FRESH set; one that
 * shadows is three, the old handle, the old block, then the slot (read
 * backwards, the last word tells which), and a run of such bindings of
 * consecutive slots (a million lets binding x0, x1, ..., each name new)
 * two: the run's first slot, then its last with UNDO_FRESH and UNDO_RUN
 * set (4 MB less undo log at a million lets). A run grows only above the
 * last mark taken (dp__scope_mark), so undoing to a mark never splits
 * one. What holds for the whole text
 * (an operator or constructor named by an identifier, a global, a meta
 * entry, a type definition) is set without an undo entry.
 *
 * The parser keys names by their text with the sigil (`%x`, `@f`, `add`),
 * so variables, globals and identifiers never collide.
 */
#ifndef DEVPLAN_PARSE_SCOPE_H
#define DEVPLAN_PARSE_SCOPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct dp__scope_slot {
  uint32_t off;        /* the name's bytes: in the arena, or with SCOPE_IN_TEXT
                          set in off, in the text (dp__scope_intern_text) */
  uint32_t handle;     /* current binding, 0: unbound */
  uint32_t len : 8;    /* the name's length (dp__scope_len); SCOPE_LONG: 255 bytes
                          or more, that length in the 4 bytes before the name (in
                          the arena: a long name is always copied) */
  uint32_t block : 24; /* block of the last definition (its depth + 1, as only
                          an open block's is ever here), 1: defined for good, 0: none */
} dp__scope_slot;      /* (12 bytes: 16 with the length and block a word each) */

#define SCOPE_LONG 255u
#define SCOPE_BLOCKS ((1u << 24) - 2) /* the deepest block: its mark fits */

#define SCOPE_IN_TEXT 0x80000000u

#define SCOPE_RECENT 64 /* a power of two */

/* A slot's word in the undo log when the slot was unbound before, and
   the last word of a run of them (slots are fewer than 2^30:
   dp__scope_intern refuses more). */
#define UNDO_FRESH 0x80000000u
#define UNDO_RUN 0x40000000u
#define UNDO_SLOT 0x3fffffffu

typedef struct dp__scope {
  dp__scope_slot *slots;
  uint32_t nslots, capslots;
  /* open addressing, one word an entry: 0 empty, else the slot index + 1
     in the bits of tmask (the table is kept more than twice the slots, so
     it fits) and the hash's bits above them, which the bucket does not
     use: a probe compares those and touches one array until the name
     matches (4 bytes an entry, from 8 with the whole hash) */
  uint32_t *table;
  uint32_t tmask;      /* table size - 1 (a power of two), 0 = no table yet */
  char *arena;
  size_t alen, acap;
  const char *text;    /* where names interned from the text are (borrowed) */
  uint32_t *undo;      /* the undo log, in words; a mark is a value of nundo */
  uint32_t nundo, capundo;
  uint32_t sealed;     /* the last mark taken: words below it are not rewritten */
  /* the slots of names looked up or made lately (slot + 1, 0: none), by
     their length, first and last byte: a statement mostly reads names the
     statements just before it read or made (`add`, `%b`, the value
     defined on the line above), found here without hashing and probing */
  uint32_t recent[SCOPE_RECENT];
} dp__scope;

/* The slot of name[0..len), made if new; -1 when out of memory. */
int64_t dp__scope_intern(dp__scope *s, const char *name, size_t len);
/* The same for the name s->text[off..off + len): a new slot's name stays
   there (the text outlives the scope), not copied. */
int64_t dp__scope_intern_text(dp__scope *s, size_t off, size_t len);
/* The slot of name[0..len) if it exists, else -1. */
int64_t dp__scope_find(dp__scope *s, const char *name, size_t len);
/* Room for n names in all, so that interning them never rehashes; 0, or -1
   when out of memory. */
int dp__scope_reserve(dp__scope *s, uint32_t n);
/* Bind slot to handle (recorded for undo); with block != 0 the slot is
   also marked as defined in that block. 0, or -1 when out of memory. */
int dp__scope_bind(dp__scope *s, uint32_t slot, uint32_t handle, uint32_t block);
/* Set a slot for good (no undo entry). */
static inline void dp__scope_set(dp__scope *s, uint32_t slot, uint32_t handle, uint32_t block) {
  s->slots[slot].handle = handle;
  s->slots[slot].block = block;
}
/* The handle name[0..len) is bound to, 0 when none. */
static inline uint32_t dp__scope_get(dp__scope *s, const char *name, size_t len) {
  int64_t k = dp__scope_find(s, name, len);
  return k < 0 ? 0 : s->slots[k].handle;
}
/* A mark to undo the bindings made after it to (dp__scope_unbind). */
static inline uint32_t dp__scope_mark(dp__scope *s) {
  s->sealed = s->nundo;
  return s->nundo;
}
/* Undo the bindings made after mark (a value of dp__scope_mark). */
void dp__scope_unbind(dp__scope *s, uint32_t mark);
/* The length of a slot's name. */
static inline size_t dp__scope_len(const dp__scope *s, uint32_t slot) {
  const dp__scope_slot *sl = &s->slots[slot];
  if (sl->len != SCOPE_LONG) return sl->len;
  uint32_t n;
  memcpy(&n, s->arena + sl->off - 4, 4);
  return n;
}
/* The name of a slot (not NUL-terminated: see dp__scope_len). */
static inline const char *dp__scope_name(const dp__scope *s, uint32_t slot) {
  uint32_t off = s->slots[slot].off;
  return off & SCOPE_IN_TEXT ? s->text + (off & ~SCOPE_IN_TEXT) : s->arena + off;
}
void dp__scope_free(dp__scope *s);

#endif
