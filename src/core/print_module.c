/*
 * Printing modules and the public entry points of print.h. A module prints
 * as `#[version = "0.0.5"]`, its primfn declarations, its type definitions,
 * then its global functions in definition order (each a `def`, printed by
 * the expression printer of print.c with names and bindings afresh).
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "print_internal.h"
#include "textbuf.h"

static void put_type(dp_tb *b, const dp_type *t) {
  char *s = dp_type_str(t);
  if (!s) {
    b->failed = 1;
    return;
  }
  dp_tb_puts(b, s);
  free(s);
}

static void put_buffer(dp_tb *b, const dp_buffer *buf) {
  put_type(b, buf->type);
  if (buf->scope && buf->scope[0]) {
    dp_tb_puts(b, " scope=");
    dp_tb_put_quoted(b, buf->scope);
  }
}

/* primfn @gem(T scope="a", T) -> T scope="a"; (without the newline) */
static void put_primfn(dp_tb *b, const dp_primfn *pf) {
  dp_tb_printf(b, "primfn @%s(", pf->name);
  for (uint32_t i = 0; i < pf->nargs; i++) {
    if (i) dp_tb_puts(b, ", ");
    put_buffer(b, &pf->args[i]);
  }
  dp_tb_puts(b, ") -> ");
  put_buffer(b, &pf->result);
  dp_tb_putc(b, ';');
}

char *dp_print_primfn(const dp_primfn *pf) {
  dp_tb b;
  dp_tb_init(&b);
  put_primfn(&b, pf);
  return dp_tb_take(&b);
}

/* type List[A] {
     Cons(A, List[A]),
     Nil,
   } */
static void put_typedef(dp_tb *b, const dp_typedef *td) {
  dp_tb_printf(b, "type %s", td->name);
  for (uint32_t i = 0; i < td->ntparams; i++) {
    dp_tb_puts(b, i ? ", " : "[");
    put_type(b, td->tparams[i]);
  }
  dp_tb_puts(b, td->ntparams ? "] {\n" : " {\n");
  for (uint32_t i = 0; i < td->nctors; i++) {
    const dp_ctor *c = td->ctors[i];
    dp_tb_printf(b, "  %s", c->name);
    for (uint32_t k = 0; k < c->ninputs; k++) {
      dp_tb_puts(b, k ? ", " : "(");
      put_type(b, c->items[c->ntparams + k]);
    }
    dp_tb_puts(b, c->ninputs ? "),\n" : ",\n");
  }
  dp_tb_puts(b, "}\n");
}

/* What the functions of one text share: device names (short devices),
   meta entries (meta). */
typedef struct session {
  dp__devnames dn;
  dp__metaw mw;
} session;

/* The functions after the header: each a `def`. */
static int put_functions(dp_tb *b, const dp_module *m, const dp_print_opts *o, session *s) {
  for (uint32_t i = 0; i < m->nfuncs && !b->failed; i++) {
    if (dp__print_root(b, &m->funcs[i].fn->e, m->funcs[i].global->name, o, &s->dn, &s->mw) < 0) return -1;
    dp_tb_putc(b, '\n');
  }
  return b->failed ? -1 : 0;
}

/* The text out (a head, then body when the head has a legend: the device
   names are known only once everything is printed), and the metadata
   section after it (as TVM: a newline, #[metadata], the JSON). Frees body. */
static char *finish_text(dp_tb *out, dp_tb *body, session *s, const dp_print_opts *o, size_t *len) {
  if (body) {
    if (s->dn.n && dp__devlegend(out, &s->dn) < 0) out->failed = 1;
    dp_tb_putn(out, body->s ? body->s : "", body->n);
    dp_tb_free(body);
  }
  if (o && (o->flags & DP_PRINT_META) && (s->mw.nvdevs || s->mw.nconsts)) {
    dp_tb_puts(out, "\n#[metadata]\n");
    if (dp__metaw_write(out, &s->mw) < 0) out->failed = 1;
  }
  dp__devnames_free(&s->dn);
  dp__metaw_free(&s->mw);
  if (len) *len = out->n;
  return dp_tb_take(out);
}

char *dp_print_module_with(const dp_module *m, const dp_print_opts *o, size_t *len) {
  dp_print_opts own;
  if (o && !o->ctx) { /* spans resolve through the module's context */
    own = *o;
    own.ctx = m->ctx;
    o = &own;
  }
  dp_tb b, body;
  session s;
  memset(&s, 0, sizeof s);
  int shortdev = o && (o->flags & DP_PRINT_SHORT_DEVICES);
  dp__metaw_init(&s.mw);
  dp_tb_init(&b);
  dp_tb_init(&body);
  dp_tb_puts(&b, "#[version = \"0.0.5\"]\n");
  for (uint32_t i = 0; i < m->nprims; i++) {
    put_primfn(&b, m->prims[i]);
    dp_tb_putc(&b, '\n');
  }
  for (uint32_t i = 0; i < m->ntypedefs; i++) put_typedef(&b, m->typedefs[i]);
  if (put_functions(shortdev ? &body : &b, m, o, &s) == 0) return finish_text(&b, shortdev ? &body : NULL, &s, o, len);
  dp_tb_free(&b);
  dp_tb_free(&body);
  dp__devnames_free(&s.dn);
  dp__metaw_free(&s.mw);
  return NULL;
}

char *dp_print_expr_with(const dp_expr *e, const dp_print_opts *o, size_t *len) {
  dp_tb b, body;
  session s;
  memset(&s, 0, sizeof s);
  int shortdev = o && (o->flags & DP_PRINT_SHORT_DEVICES);
  dp__metaw_init(&s.mw);
  dp_tb_init(&b); /* (the common case writes straight to the result) */
  dp_tb_init(&body);
  if (dp__print_root(shortdev ? &body : &b, e, NULL, o, &s.dn, &s.mw) == 0)
    return finish_text(&b, shortdev ? &body : NULL, &s, o, len);
  dp_tb_free(&b);
  dp_tb_free(&body);
  dp__devnames_free(&s.dn);
  dp__metaw_free(&s.mw);
  return NULL;
}

char *dp_print_module(const dp_module *m, int flags, size_t *len) {
  dp_print_opts o = {flags, NULL, NULL, NULL};
  return dp_print_module_with(m, &o, len);
}

char *dp_print_expr(const dp_expr *e, int flags, size_t *len) {
  dp_print_opts o = {flags, NULL, NULL, NULL};
  return dp_print_expr_with(e, &o, len);
}

char *dp_print_type(const dp_type *t) {
  return dp_type_str(t);
}

char *dp__print_short(const dp_expr *e, int maxlines) {
  char *s = dp_print_expr(e, DP__PRINT_NO_DECLS, NULL);
  if (!s) return NULL;
  char *p = s;
  for (int i = 0; i < maxlines && p; i++) {
    p = strchr(p, '\n');
    if (p) p++;
  }
  if (p && strlen(p) >= 3) strcpy(p, "...");
  return s;
}
