/*
 * Internals shared by the printer and structural equality (not installed):
 * the short printed form used in difference reports, the metadata writer.
 */
#ifndef DEVPLAN_PRINT_INTERNAL_H
#define DEVPLAN_PRINT_INTERNAL_H

#include <stdint.h>
#include "devplan/print.h"
#include "ptrmap.h"


/* A print flag of the core's own messages (above the public DP_PRINT_*):
   no `free_var` declarations, for an expression quoted in a message. */
#define DP__PRINT_NO_DECLS (1 << 16)
/* Names only (dp_print_module_names): the printer gives every name and
   binding number as a print would; the three passes make no text, the one
   walk of a flat body makes it and keeps none (it names the variables as
   it writes their uses). */
#define DP__PRINT_NAMES_ONLY (1 << 17)

/* Names only, each node told as the one walk of a flat body finishes it
   (dp__print_module_names_fin): with this flag o->ud is a dp__print_fin
   and o->on_name is NULL. */
#define DP__PRINT_FIN (1 << 18)

/* What dp__print_module_names_fin tells: node e of def fn finished (in
   post order, as the walk meets the non-atomic nodes; its children before
   it), tref the word of its graph binding's name (dp__print_tref_text; 0:
   not bound, as a let's value or a body's result), kids the words of its
   non-atomic children as printed (a call's arguments, then a non-atomic
   callee). e NULL: the one walk of def fn gave up (its names then come
   from the three passes, which tell nothing here). Read while the walk
   holds the node in the cache: the report names its copies with it, not
   with a walk of its own (report.c). */
typedef struct dp__print_fin {
  void (*fin)(void *ud, const char *fn, const dp_expr *e, uint64_t tref, const uint64_t *kids, uint32_t nkids);
  /* Where the walk keeps the word of shared node e of def fn (its marks
     are then the caller's: a walk of its own may number the nodes by
     them as it goes): a word, 0 when first asked in the def (*fresh set),
     which stays the node's until the def is done; NULL: the walk gives up
     (as for a body it does not print). NULL slot: the printer's own. */
  uint64_t *(*slot)(void *ud, const char *fn, const dp_expr *e, int *fresh);
  void *ud;
} dp__print_fin;

/* dp_print_module_names telling f each node instead of on_name each name.
   0, or -1 on out of memory. */
int dp__print_module_names_fin(const dp_module *m, const dp__print_fin *f);
/* The text of a binding's word (`%12`), NUL-terminated in buf (16 bytes
   or more); its length. */
size_t dp__print_tref_text(uint64_t tref, char *buf);

struct dp__tb;
/* Append constant c as a literal: a scalar literal (`1f`, `3i64`, `True`)
   when the text format has one, else the devplan extension
   `Constant(Tensor[(2), int64], [3, 2])` (flat row-major values). */
void dp__put_const(struct dp__tb *b, const dp_const *c);
/* Numbers as the text format writes them (print_const.c). A real: the
   shortest decimal that reads back to f (to the same float when single),
   `inf`, `-inf`, `nan` or `-nan`, then dt's suffix (`f` for float32, `f16`,
   `f64`; with dt 0, `.0` when the digits alone would read as an integer).
   An integer: its digits (unsigned for a uint dtype), then `i64`, `u8`, ...
   (nothing for int32 and for 0). */
void dp__put_real(struct dp__tb *b, double f, dp_dtype dt, int single);
void dp__put_int(struct dp__tb *b, int64_t v, dp_dtype dt);

/* Short names of the virtual devices a text uses (DP_PRINT_SHORT_DEVICES,
   print_devices.c), in order of first use. Zero-initialised when empty. */
typedef struct dp__devnames {
  const dp_vdev **vdevs;
  char **names;
  uint32_t n, cap;
} dp__devnames;

/* vd's short name (without the `@`), given on first use; NULL on out of memory. */
const char *dp__devname(dp__devnames *d, const dp_vdev *vd);
/* One `// @name = VirtualDevice(...)` line per named device; 0, or -1 on out of memory. */
int dp__devlegend(struct dp__tb *b, const dp__devnames *d);
void dp__devnames_free(dp__devnames *d);

/* The objects a text refers to as meta[KIND][i] (DP_PRINT_META), in order
   of first use per kind, and the metadata section that holds them
   (meta_write.c). Zero-initialised by dp__metaw_init. */
typedef struct dp__metaw {
  dp__ptrmap index;             /* object -> its index in its kind */
  const dp_vdev **vdevs;      /* meta[VirtualDevice] */
  uint32_t nvdevs, capvdevs;
  const dp_const **consts;    /* meta[relay.Constant] */
  uint32_t nconsts, capconsts;
} dp__metaw;

void dp__metaw_init(dp__metaw *w);
void dp__metaw_free(dp__metaw *w);
/* The index of a virtual device or (is_const) a constant, given on first
   use; -1 on out of memory. */
int64_t dp__metaw_add(dp__metaw *w, const void *obj, int is_const);
/* The section's JSON (TVM's save_json layout); 0, or -1 on out of memory. */
int dp__metaw_write(struct dp__tb *b, const dp__metaw *w);

/* Print root into b: an expression, or when def_name is not NULL a global
   definition `def @name(...) {...}` of the function root. Names and graph
   binding numbers start afresh; device names (DP_PRINT_SHORT_DEVICES) are
   given in dn, and meta references (DP_PRINT_META) in mw, shared by the
   functions of a module. 0, or -1 on out of memory (or a failed write).
   Streaming (b->write and b->inner): the output is written out between
   nodes once a good part of it waits; DP__PRINT_AGAIN when a definition
   met free variables after part of its text was written out (their
   declarations go at its start): the caller goes back to where the
   definition started and prints it again with b->inner off. */
#define DP__PRINT_AGAIN (-2)
int dp__print_root(struct dp__tb *b, const dp_expr *root, const char *def_name,
                   const dp_print_opts *o, dp__devnames *dn, dp__metaw *mw);

/* dp_print_expr cut to at most `maxlines` lines ("..." marks the cut). */
char *dp__print_short(const dp_expr *e, int maxlines);

#endif
