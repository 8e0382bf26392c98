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

static void put_type(dp__tb *b, const dp_type *t) {
  char *s = dp_type_str(t);
  if (!s) {
    b->failed = 1;
    return;
  }
  dp__tb_puts(b, s);
  free(s);
}

static void put_buffer(dp__tb *b, const dp_buffer *buf) {
  put_type(b, buf->type);
  if (buf->scope && buf->scope[0]) {
    dp__tb_puts(b, " scope=");
    dp__tb_put_quoted(b, buf->scope);
  }
}

/* primfn @gem(T scope="a", T) -> T scope="a"; (without the newline) */
static void put_primfn(dp__tb *b, const dp_primfn *pf) {
  dp__tb_printf(b, "primfn @%s(", pf->name);
  for (uint32_t i = 0; i < pf->nargs; i++) {
    if (i) dp__tb_puts(b, ", ");
    put_buffer(b, &pf->args[i]);
  }
  dp__tb_puts(b, ") -> ");
  put_buffer(b, &pf->result);
  dp__tb_putc(b, ';');
}

char *dp_print_primfn(const dp_primfn *pf) {
  dp__tb b;
  dp__tb_init(&b);
  put_primfn(&b, pf);
  return dp__tb_take(&b);
}

/* type List[A] {
     Cons(A, List[A]),
     Nil,
   }  (without the newline) */
static void put_typedef(dp__tb *b, const dp_typedef *td) {
  dp__tb_printf(b, "type %s", td->name);
  for (uint32_t i = 0; i < td->ntparams; i++) {
    dp__tb_puts(b, i ? ", " : "[");
    put_type(b, td->tparams[i]);
  }
  dp__tb_puts(b, td->ntparams ? "] {\n" : " {\n");
  for (uint32_t i = 0; i < td->nctors; i++) {
    const dp_ctor *c = td->ctors[i];
    dp__tb_printf(b, "  %s", c->name);
    for (uint32_t k = 0; k < c->ninputs; k++) {
      dp__tb_puts(b, k ? ", " : "(");
      put_type(b, c->items[c->ntparams + k]);
    }
    dp__tb_puts(b, c->ninputs ? "),\n" : ",\n");
  }
  dp__tb_putc(b, '}');
}

char *dp_print_typedef(const dp_typedef *td) {
  dp__tb b;
  dp__tb_init(&b);
  put_typedef(&b, td);
  return dp__tb_take(&b);
}

/* Writes the head of p: all of a leaf ("_", "%x", "Nil"), or "Ctor(" / "("
   of a pattern with subpatterns. Returns 1 when subpatterns follow. */
static int pattern_open(dp__tb *b, const dp_pattern *p) {
  switch (p->h.kind) {
  case DP_PAT_WILD: dp__tb_putc(b, '_'); return 0;
  case DP_PAT_VAR: dp__tb_printf(b, "%%%s", p->var->name); return 0;
  case DP_PAT_CTOR: dp__tb_puts(b, p->ctor->name); if (!p->n) return 0; break;
  default: break;
  }
  dp__tb_putc(b, '(');
  return 1;
}

/* Patterns nest as deep as the user wrote them: an explicit stack of open
   patterns (each with the next subpattern to print) keeps the C stack flat. */
char *dp_print_pattern(const dp_pattern *root) {
  struct open { const dp_pattern *p; uint32_t next; } *st = NULL;
  uint32_t n = 0, cap = 0;
  dp__tb b;
  dp__tb_init(&b);
  const dp_pattern *p = root;
  while (!b.failed) {
    if (p && pattern_open(&b, p)) {
      if (dp_grow((void **)&st, &cap, n + 1, sizeof *st) < 0) {
        b.failed = 1;
        break;
      }
      st[n++] = (struct open){p, 0};
    }
    p = NULL;
    if (!n) break;
    struct open *f = &st[n - 1];
    if (f->next < f->p->n) {
      if (f->next) dp__tb_puts(&b, ", ");
      p = f->p->sub[f->next++];
    } else {
      dp__tb_puts(&b, f->p->h.kind == DP_PAT_TUPLE && f->p->n == 1 ? ",)" : ")");
      n--;
    }
  }
  free(st);
  return dp__tb_take(&b);
}

/* What the functions of one text share: device names (short devices),
   meta entries (meta). */
typedef struct session {
  dp__devnames dn;
  dp__metaw mw;
} session;

/* The functions after the header: each a `def`. */
static int put_functions(dp__tb *b, const dp_module *m, const dp_print_opts *o, session *s) {
  for (uint32_t i = 0; i < m->nfuncs && !b->failed; i++) {
    if (dp__print_root(b, &m->funcs[i].fn->e, m->funcs[i].global->name, o, &s->dn, &s->mw) < 0) return -1;
    dp__tb_putc(b, '\n');
  }
  return b->failed ? -1 : 0;
}

/* The text out (a head, then body when the head has a legend: the device
   names are known only once everything is printed), and the metadata
   section after it (as TVM: a newline, #[metadata], the JSON). Frees body. */
static char *finish_text(dp__tb *out, dp__tb *body, session *s, const dp_print_opts *o, size_t *len) {
  if (body) {
    if (s->dn.n && dp__devlegend(out, &s->dn) < 0) out->failed = 1;
    dp__tb_putn(out, body->s ? body->s : "", body->n);
    dp__tb_free(body);
  }
  if (o && (o->flags & DP_PRINT_META) && (s->mw.nvdevs || s->mw.nconsts)) {
    dp__tb_puts(out, "\n#[metadata]\n");
    if (dp__metaw_write(out, &s->mw) < 0) out->failed = 1;
  }
  dp__devnames_free(&s->dn);
  dp__metaw_free(&s->mw);
  if (len) *len = out->n;
  return dp__tb_take(out);
}

char *dp_print_module_with(const dp_module *m, const dp_print_opts *o, size_t *len) {
  dp_print_opts own;
  if (o && !o->ctx) { /* spans resolve through the module's context */
    own = *o;
    own.ctx = m->ctx;
    o = &own;
  }
  dp__tb b, body;
  session s;
  memset(&s, 0, sizeof s);
  int shortdev = o && (o->flags & DP_PRINT_SHORT_DEVICES);
  dp__metaw_init(&s.mw);
  dp__tb_init_block(&b, o ? o->block : NULL);
  dp__tb_init(&body);
  dp__tb_puts(&b, "#[version = \"0.0.5\"]\n");
  for (uint32_t i = 0; i < m->nprims; i++) {
    put_primfn(&b, m->prims[i]);
    dp__tb_putc(&b, '\n');
  }
  for (uint32_t i = 0; i < m->ntypedefs; i++) {
    put_typedef(&b, m->typedefs[i]);
    dp__tb_putc(&b, '\n');
  }
  if (put_functions(shortdev ? &body : &b, m, o, &s) == 0) return finish_text(&b, shortdev ? &body : NULL, &s, o, len);
  dp__tb_free(&b);
  dp__tb_free(&body);
  dp__devnames_free(&s.dn);
  dp__metaw_free(&s.mw);
  return NULL;
}

/* (fin: o->ud is a dp__print_fin, dp__print_module_names_fin's; a caller of
   the public function cannot ask for it by a flag) */
static int module_names(const dp_module *m, const dp_print_opts *o, int fin) {
  dp_print_opts own = o ? *o : (dp_print_opts){0, NULL, NULL, NULL, NULL};
  own.flags = DP__PRINT_NAMES_ONLY | (fin ? DP__PRINT_FIN : 0);
  if (!own.ctx) own.ctx = m->ctx;
  dp__tb b; /* (nothing is written to it) */
  session s;
  memset(&s, 0, sizeof s);
  dp__metaw_init(&s.mw);
  dp__tb_init(&b);
  int rc = put_functions(&b, m, &own, &s);
  dp__tb_free(&b);
  dp__devnames_free(&s.dn);
  dp__metaw_free(&s.mw);
  return rc;
}

int dp_print_module_names(const dp_module *m, const dp_print_opts *o) { return module_names(m, o, 0); }

int dp__print_module_names_fin(const dp_module *m, const dp__print_fin *f) {
  dp_print_opts o = {DP__PRINT_FIN, NULL, (void *)f, NULL, NULL};
  return module_names(m, &o, 1);
}

int dp_print_module_to(const dp_module *m, const dp_print_opts *o, const dp_print_sink *sink) {
  dp_print_opts own = o ? *o : (dp_print_opts){0, NULL, NULL, NULL, NULL};
  if (!own.ctx) own.ctx = m->ctx; /* spans resolve through the module's context */
  own.block = NULL;
  if (own.flags & DP_PRINT_SHORT_DEVICES) {
    /* the legend goes first, and its names are known once all is printed */
    size_t len = 0;
    char *s = dp_print_module_with(m, &own, &len);
    int rc = !s ? -1 : sink->write(sink->ud, s, len);
    free(s);
    return rc < 0 ? -1 : 0;
  }
  dp__tb b;
  session s;
  memset(&s, 0, sizeof s);
  dp__metaw_init(&s.mw);
  dp__tb_init(&b);
  b.write = sink->write;
  b.ud = sink->ud;
  b.inner = sink->rewind != NULL;
  dp__tb_puts(&b, "#[version = \"0.0.5\"]\n");
  for (uint32_t i = 0; i < m->nprims; i++) {
    put_primfn(&b, m->prims[i]);
    dp__tb_putc(&b, '\n');
  }
  for (uint32_t i = 0; i < m->ntypedefs; i++) {
    put_typedef(&b, m->typedefs[i]);
    dp__tb_putc(&b, '\n');
  }
  int rc = 0;
  for (uint32_t i = 0; i < m->nfuncs && rc == 0 && !b.failed; i++) {
    if (b.n >= DP__TB_FLUSH_AT && dp__tb_flush(&b) < 0) break;
    uint64_t start = b.flushed + b.n;
    rc = dp__print_root(&b, &m->funcs[i].fn->e, m->funcs[i].global->name, &own, &s.dn, &s.mw);
    if (rc == DP__PRINT_AGAIN) { /* its free variables go at its start */
      b.n = 0;
      b.inner = 0;
      b.flushed = start;
      rc = sink->rewind(sink->ud, start) < 0 ? -1
           : dp__print_root(&b, &m->funcs[i].fn->e, m->funcs[i].global->name, &own, &s.dn, &s.mw);
      b.inner = 1;
    }
    dp__tb_putc(&b, '\n');
  }
  if (rc == 0 && (own.flags & DP_PRINT_META) && (s.mw.nvdevs || s.mw.nconsts)) {
    dp__tb_puts(&b, "\n#[metadata]\n");
    if (dp__metaw_write(&b, &s.mw) < 0) b.failed = 1;
  }
  if (rc == 0) rc = dp__tb_flush(&b);
  dp__tb_free(&b);
  dp__devnames_free(&s.dn);
  dp__metaw_free(&s.mw);
  return rc < 0 ? -1 : 0;
}

char *dp_print_expr_with(const dp_expr *e, const dp_print_opts *o, size_t *len) {
  dp__tb b, body;
  session s;
  memset(&s, 0, sizeof s);
  int shortdev = o && (o->flags & DP_PRINT_SHORT_DEVICES);
  dp__metaw_init(&s.mw);
  dp__tb_init_block(&b, o ? o->block : NULL); /* (the common case writes straight to the result) */
  dp__tb_init(&body);
  if (dp__print_root(shortdev ? &body : &b, e, NULL, o, &s.dn, &s.mw) == 0)
    return finish_text(&b, shortdev ? &body : NULL, &s, o, len);
  dp__tb_free(&b);
  dp__tb_free(&body);
  dp__devnames_free(&s.dn);
  dp__metaw_free(&s.mw);
  return NULL;
}

char *dp_print_module(const dp_module *m, int flags, size_t *len) {
  dp_print_opts o = {flags, NULL, NULL, NULL, NULL};
  return dp_print_module_with(m, &o, len);
}

char *dp_print_expr(const dp_expr *e, int flags, size_t *len) {
  dp_print_opts o = {flags, NULL, NULL, NULL, NULL};
  return dp_print_expr_with(e, &o, len);
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
