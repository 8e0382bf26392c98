/*
 * Node arenas (internal; the planner's capture phase makes a planned
 * module's nodes in one): nodes allocated in bulk, from chunks, instead of
 * one malloc each. A node of an arena is an ordinary node to everyone
 * else: reference counted, its children retained, freed when its last
 * reference goes. Only its memory differs: it lies in a chunk, which is
 * freed when the last of its nodes is (and the arena has moved on from
 * it). So a chunk lives as long as any of its nodes is held: Lua may keep
 * any node of a planned module after the module is dropped.
 *
 * A chunk is CHUNK bytes aligned on CHUNK (a node finds its chunk by its
 * address) and counts its live nodes; no free list: a planned module's
 * nodes are made once and dropped together. Chunks are cut from groups
 * (one block of memory for up to 128, freed with the last of its
 * chunks), first from blocks its user gave it (dp__arena_adopt: capture
 * gives it the domains' array it frees). Not thread-safe (neither are
 * reference counts).
 */
#ifndef DEVPLAN_ARENA_H
#define DEVPLAN_ARENA_H

#include <stddef.h>
#include "devplan/expr.h"

typedef struct dp__arena {
  struct dp__chunk *cur;   /* the chunk being filled (the arena holds it), or NULL */
  struct dp__group *group; /* the memory chunks are cut from (held too), or NULL */
  struct dp__group *given; /* blocks given to it (dp__arena_adopt), cut before new ones */
  uint32_t groups;         /* groups made */
} dp__arena;

#define DP__ARENA_INIT ((dp__arena){NULL, NULL, NULL, 0})

/* dp_obj.flags of an expression whose memory is an arena's (expr.c frees
   it through dp__arena_node_free). (Inference uses 0x8000 and 0x4000.) */
#define DP__OBJ_IN_ARENA 0x2000u

/* Memory for one node of `size` bytes (8-aligned, not cleared), from a
   (NULL arena: dp_malloc's, the node's own). NULL on out of memory. The
   caller marks the node (dp__arena_mark) once its header is set. */
void *dp__arena_alloc(dp__arena *a, size_t size, int *in_arena);
/* The arena makes no more nodes: its hold on its chunk goes (the nodes
   made keep theirs). The arena is empty and reusable after. */
void dp__arena_done(dp__arena *a);
/* The arena takes block mem (n bytes from dp_malloc, no longer used by
   its owner) as a group of chunks, cut before it asks for new memory: a
   block freed while the arena fills, whose pages are resident, is reused
   instead of fresh pages being faulted in. The block is freed with the
   last of its chunks (or by dp__arena_done where none was cut); one too
   small for a chunk is freed at once. -1 (the block freed) on out of
   memory, else 0. */
int dp__arena_adopt(dp__arena *a, void *mem, size_t n);
/* Frees the memory of node e (DP__OBJ_IN_ARENA): its chunk goes with its
   last node. */
void dp__arena_node_free(void *e);

/* Asks the system for the pages of [p, p + n), writable, in one go
   rather than one fault each as they are first written (a hint: nothing
   where the system has no way to say it, or for less than 16 pages). For
   memory about to be written whole: a chunk, a large array. */
void dp__prefault(void *p, size_t n);

/* Gives back the pages of block p past its first `used` bytes, p having
   been asked of dp_malloc or dp_realloc as n bytes (so it spans
   dp_huge_size(n): a large block lies on whole huge pages, and the rest of
   its last one, resident as soon as any of it is written, is up to 2 MiB
   the block never uses: at a million let calls the planner's arrays left
   some 4 MiB so). Those pages read as zero after, and come back if written.
   A block of one huge page is left whole (splitting it would put all of
   it on small pages). A hint: nothing where the system has no way to say
   it, nor in the sanitizer build. */
void dp__release_tail(void *p, size_t used, size_t n);
/* The bytes of block p (its first `used` in use, asked for as n) that
   dp__release_tail(p, used, n) leaves on small pages: those of its last
   huge page, which giving back the rest splits (0: none split). Each such
   page read costs more than on a huge page, far more on a virtual machine
   that maps the guest's pages itself (this one: a shadow fault per small
   page first touched after the split, some 7 us: PlanDevices' analysis at
   a million let calls 47 -> 64 ms for the 2.7 MiB its arrays' split pages
   held); a caller that can lay its arrays out so that fewer such bytes are
   read asks here. */
size_t dp__tail_small(const void *p, size_t used, size_t n);

/* Calls, lets and variables in an arena (NULL: on the heap): dp_call_new,
   dp_let_new and dp_var_new otherwise (projections: below). */
dp_call *dp__call_new_in(dp__arena *a, dp_expr *fn, uint32_t nargs, dp_expr *const *args,
                         dp_attrs *attrs, dp_span span);
dp_let *dp__let_new_in(dp__arena *a, dp_var *var, dp_expr *value, dp_expr *body, dp_span span);
/* e with children kids (as dp_expr_children orders them; NULL: out of
   memory, or a let whose first child is no variable): e itself (retained)
   when they are its own, a call or let made in arena a, any other kind as
   dp_expr_with_children makes it. A NULL child gives NULL. */
dp_expr *dp__expr_with_children_in(dp__arena *a, dp_expr *e, dp_expr *const *kids);
/* The same where the caller knows that a child is not e's own: always a
   new node, and e's children are not compared with kids (a call's
   arguments are not read: the node of a large body is out of the cache
   by the time it is made again). */
dp_expr *dp__expr_changed_in(dp__arena *a, dp_expr *e, dp_expr *const *kids);
dp_var *dp__var_new_in(dp__arena *a, const char *name, dp_type *annot, dp_vdev *vdev, dp_span span);
/* A tuple's projection in arena a (NULL: on the heap): dp_proj_new otherwise. */
dp_proj *dp__proj_new_in(dp__arena *a, dp_expr *tuple, uint32_t index, dp_span span);

#endif
