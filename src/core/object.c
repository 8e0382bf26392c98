/*
 * Reference counting for every core object, with deferred freeing.
 *
 * Releasing the last reference of a node must not recurse into its
 * children: a 1,000,000-deep chain would overflow the C stack. dp_release
 * runs a work list instead: each type's free function hands its children to
 * dp_release_deferred, which queues those whose count reaches zero, and the
 * loop frees them in turn.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

struct dp_worklist {
  dp_obj **items;
  size_t n, cap;
  dp_obj *inline_items[32];
};

void *dp_retain(void *obj) {
  if (obj) ((dp_obj *)obj)->rc++;
  return obj;
}

static void push(dp_worklist *wl, dp_obj *o) {
  if (wl->n == wl->cap) {
    size_t cap = wl->cap * 2;
    dp_obj **items;
    /* Plain malloc, not dp_malloc: releasing must not be made to fail by
       the injection of allocation failures (it would only report leaks). */
    if (wl->items == wl->inline_items) {
      items = malloc(cap * sizeof *items);
      if (items) memcpy(items, wl->inline_items, wl->n * sizeof *items);
    } else {
      items = realloc(wl->items, cap * sizeof *items);
    }
    if (!items) {
      /* Out of memory while freeing: leak this object rather than crash. */
      return;
    }
    wl->items = items;
    wl->cap = cap;
  }
  wl->items[wl->n++] = o;
}

void dp_release_deferred(dp_worklist *wl, void *obj) {
  dp_obj *o = obj;
  if (!o) return;
  if (--o->rc == 0) push(wl, o);
}

void dp_release(void *obj) {
  dp_obj *o = obj;
  if (!o) return;
  if (--o->rc != 0) return;
  dp_worklist wl;
  wl.items = wl.inline_items;
  wl.n = 0;
  wl.cap = sizeof wl.inline_items / sizeof wl.inline_items[0];
  push(&wl, o);
  while (wl.n > 0) {
    dp_obj *cur = wl.items[--wl.n];
    dp_free_fn fn = dp__objtypes[cur->type].free_fn; /* type is 8 bits: always in the table */
    if (fn) fn(cur, &wl);
    else free(cur);
  }
  if (wl.items != wl.inline_items) free(wl.items);
}
