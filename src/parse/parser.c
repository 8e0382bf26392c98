/*
 * The parser object: what a parse holds (tokens, handles, names, blocks,
 * the reader's stacks), positions and errors, the dispatch of actions, and
 * the results.
 *
 * Handles: every value an action gives back, every variable and every value
 * bound to a name is kept in objs with one reference (handle h is objs[h -
 * 1]), so that an error at any point leaves a parser whose release frees
 * everything. Positions are token indices until an error or a node needs a
 * (line, column): a line table made once answers, the line of the previous
 * question tried first (tokens come mostly in order).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/meta.h"
#include "devplan/suggest.h"
#include "internal.h"
#include "../core/internal.h" /* dp__err_vat */

static const struct {
  const char *name;
  char kind;
  const char *text;
} token_kinds[] = {
  {"LPAREN", DP_TOK_LPAREN, "'('"}, {"RPAREN", DP_TOK_RPAREN, "')'"},
  {"LBRACK", DP_TOK_LBRACK, "'['"}, {"RBRACK", DP_TOK_RBRACK, "']'"},
  {"LBRACE", DP_TOK_LBRACE, "'{'"}, {"RBRACE", DP_TOK_RBRACE, "'}'"},
  {"COMMA", DP_TOK_COMMA, "','"}, {"SEMI", DP_TOK_SEMI, "';'"}, {"COLON", DP_TOK_COLON, "':'"},
  {"EQ", DP_TOK_EQ, "'='"}, {"DOT", DP_TOK_DOT, "'.'"}, {"QUESTION", DP_TOK_QUESTION, "'?'"},
  {"PLUS", DP_TOK_PLUS, "'+'"}, {"MINUS", DP_TOK_MINUS, "'-'"}, {"STAR", DP_TOK_STAR, "'*'"},
  {"SLASH", DP_TOK_SLASH, "'/'"}, {"LT", DP_TOK_LT, "'<'"}, {"GT", DP_TOK_GT, "'>'"},
  {"LE", DP_TOK_LE, "'<='"}, {"GE", DP_TOK_GE, "'>='"}, {"EQEQ", DP_TOK_EQEQ, "'=='"},
  {"NE", DP_TOK_NE, "'!='"}, {"ARROW", DP_TOK_ARROW, "'->'"}, {"FATARROW", DP_TOK_FATARROW, "'=>'"},
  {"VAR", DP_TOK_VAR, "a variable"}, {"BIND", DP_TOK_BIND, "'%name ='"},
  {"CALLEE", DP_TOK_CALLEE, "a call"}, {"KEY", DP_TOK_KEY, "an attribute"},
  {"GLOBAL", DP_TOK_GLOBAL, "a global name ('@name')"},
  {"IDENT", DP_TOK_IDENT, "a name"}, {"NUMBER", DP_TOK_NUMBER, "a number"},
  {"INDEX", DP_TOK_INDEX, "an index"},
  {"STRING", DP_TOK_STRING, "a string"}, {"META", DP_TOK_META, "a meta reference"},
  {"UNDERSCORE", DP_TOK_UNDERSCORE, "'_'"}, {"HEADER", DP_TOK_HEADER, "a version header"},
  {"METADATA", DP_TOK_METADATA, "the metadata section"}, {"LPBLOCK", DP_TOK_LPBLOCK, "'('"},
  {"INVALID", DP_TOK_INVALID, "a character"}, {"ERROR", DP_TOK_ERROR, "an error"},
  {"FN", DP_TOK_FN, "'fn'"}, {"LET", DP_TOK_LET, "'let'"}, {"IF", DP_TOK_IF, "'if'"},
  {"ELSE", DP_TOK_ELSE, "'else'"}, {"MATCH", DP_TOK_MATCH, "'match'"}, {"DEF", DP_TOK_DEF, "'def'"},
  {"TYPE", DP_TOK_TYPE, "'type'"}, {"EXTERN", DP_TOK_EXTERN, "'extern'"},
  {"PRIMFN", DP_TOK_PRIMFN, "'primfn'"}, {"FREE_VAR", DP_TOK_FREE_VAR, "'free_var'"},
  {"REF", DP_TOK_REF, "'ref'"}, {"REF_READ", DP_TOK_REF_READ, "'ref_read'"},
  {"REF_WRITE", DP_TOK_REF_WRITE, "'ref_write'"}, {"CONSTANT", DP_TOK_CONSTANT, "'Constant'"},
  {"TRUE", DP_TOK_TRUE, "'True'"}, {"FALSE", DP_TOK_FALSE, "'False'"}, {"NONE", DP_TOK_NONE, "'None'"},
  {"VDEV", DP_TOK_VDEV, "'VirtualDevice'"}, {"TENSOR", DP_TOK_TENSOR, "'Tensor'"},
  {"STORAGE", DP_TOK_STORAGE, "'Storage'"},
};

#define NKINDS (sizeof token_kinds / sizeof token_kinds[0])

const char *dp_token_kind_name(int i, char *kind) {
  if (i < 0 || (size_t)i >= NKINDS) return NULL;
  *kind = token_kinds[i].kind;
  return token_kinds[i].name;
}

const char *dp_token_kind_text(char kind) {
  for (size_t i = 0; i < NKINDS; i++)
    if (token_kinds[i].kind == kind) return token_kinds[i].text;
  return "a token";
}

/* ---------------- life cycle ---------------- */

dp_parser *dp_parser_new(dp_ctx *ctx, const char *text, size_t len, const char *source) {
  dp_parser *p = dp_calloc(1, sizeof *p);
  if (!p) return NULL;
  p->ctx = dp_retain(ctx);
  p->text = text;
  p->len = len;
  p->source = dp_ctx_source(ctx, source ? source : "<string>"); /* 0: out of memory */
  p->names.text = p->types.text = text;
  const char *nl = len ? memchr(text, '\n', len) : NULL; /* (the first line's end: the line cursor starts there) */
  p->lc[0].next = p->lc[1].next = nl ? (size_t)(nl - text) + 1 : SIZE_MAX;
  /* (a name per binding, room made at once: interning them never rehashes) */
  if (!p->source || dp__lex(p) != 0 || dp__scope_reserve(&p->names, p->nbinds + 1024) != 0) {
    dp_parser_free(p);
    return NULL;
  }
  /* (16,384 tokens make some 1,500 calls: a few chunks' worth of nodes) */
  p->nodes = p->ntok >= 16384 ? &p->arena : NULL;
  p->vars = p->nodes ? &p->var_arena : NULL;
  return p;
}

/* What only parsing needs: tokens, names, handles, scratch. Freed before
   type inference, so that its peak memory does not add to the parser's. */
static void drop_parse_state(dp_parser *p) {
  dp__reader_reset(p);
  while (p->lets) { /* (of a parse that failed: each body made a reference again) */
    dp_let *let = p->lets;
    p->lets = (dp_let *)let->body;
    let->body = dp_retain(let->value);
    dp_release(let);
  }
  /* later objects hold earlier ones: release in reverse */
  while (p->nobjs > 0) dp_release(p->objs[--p->nobjs]);
  dp__scope_free(&p->names);
  dp__scope_free(&p->types);
  dp_release(p->no_attrs);
  dp__attrs_cache_free(p);
  dp__arena_done(&p->arena);
  dp__arena_done(&p->var_arena);
  p->nodes = p->vars = NULL;
  if (!p->kinds_shared) free(p->kinds);
  void *arrays[] = {p->objs, p->tb, p->tbase, p->tbigat, p->tbig, p->grefs, p->blocks, p->params, p->tps,
                    p->td_items, p->vals, p->frames, p->ops, p->attrs, p->avs, p->marks, p->bytes,
                    p->namebuf, p->sev, p->sr, p->pend};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) free(arrays[i]);
  memset((char *)p + offsetof(dp_parser, kinds), 0, sizeof *p - offsetof(dp_parser, kinds));
}

void dp_parser_free(dp_parser *p) {
  if (!p) return;
  drop_parse_state(p);
  dp_release(p->mod);
  dp_meta_free(p->metadata);
  dp_err_free(p->lex_err);
  dp_err_free(p->err);
  free(p->lmarks);
  dp_release(p->ctx);
  free(p);
}

const char *dp_parser_tokens(const dp_parser *p, size_t *n) {
  *n = p->ntok;
  return p->kinds ? p->kinds : "";
}

void dp_parser_share_tokens(dp_parser *p, const char *kinds) {
  if (!p->kinds || p->kinds_shared || kinds == p->kinds) return;
  free(p->kinds);
  p->kinds = (char *)kinds; /* (only the lexer writes kinds: it has run) */
  p->kinds_shared = 1;
}

void dp_parser_set_meta(dp_parser *p, dp_meta_resolver fn, void *ud) {
  p->meta = fn;
  p->meta_ud = ud;
  p->meta_given = fn != NULL;
}

/* ---------------- positions ---------------- */

#define LMARK 64 /* a line of every LMARK has its start kept */

/* The line of offset off: the other line kept, or found from the line
   asked for last, a line at a time (memchr forwards; backwards, a scan of
   the lines before when near, else from the mark before off): as the
   parser asks, the text is scanned about once, and no table of every
   line's start is kept (4 MB at a million lines). */
static dp_span span_at_offset(dp_parser *p, size_t off) {
  struct pline l = p->lc[0];
  if (off >= p->lc[1].start && off < p->lc[1].next) {
    p->lc[0] = p->lc[1];
    p->lc[1] = l;
    return (dp_span){p->source, p->lc[0].line + 1, (uint32_t)(off - p->lc[0].start) + 1};
  }
  const char *t = p->text;
  p->lc[1] = l;
  while (off < l.start && l.start - off < 1024) { /* (start > 0: the '\n' before it ends the line before) */
    size_t j = l.start - 1;
    while (j > 0 && t[j - 1] != '\n') j--;
    l.next = l.start;
    l.start = j;
    l.line--;
  }
  if (off < l.start) { /* far back: from the last mark at or before off */
    uint32_t lo = 0, hi = p->nlmarks; /* (marks ascend: the number of them at or before off) */
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (p->lmarks[mid] <= off) lo = mid + 1; else hi = mid;
    }
    l.start = lo ? p->lmarks[lo - 1] : 0;
    l.line = lo * LMARK;
    const char *nl = memchr(t + l.start, '\n', p->len - l.start);
    l.next = nl ? (size_t)(nl - t) + 1 : SIZE_MAX;
  }
  while (off >= l.next) {
    l.start = l.next;
    l.line++;
    if (l.line % LMARK == 0 && l.line / LMARK == p->nlmarks + 1 &&
        dp_grow((void **)&p->lmarks, &p->caplmarks, p->nlmarks + 1, sizeof *p->lmarks) == 0)
      p->lmarks[p->nlmarks++] = l.start;
    const char *nl = memchr(t + l.start, '\n', p->len - l.start);
    l.next = nl ? (size_t)(nl - t) + 1 : SIZE_MAX;
  }
  p->lc[0] = l;
  return (dp_span){p->source, l.line + 1, (uint32_t)(off - l.start) + 1};
}

/* The span of token tok (past the last: the end of the text). */
dp_span dp__span_slow(dp_parser *p, uint32_t tok) {
  size_t off = tok >= 1 && tok <= p->ntok && p->tb ? dp__tok_off(p, tok) : p->len;
  return span_at_offset(p, off);
}

/* (a token of 31 bytes or more: its end found again) */
const char *dp__tok_text_long(dp_parser *p, uint32_t tok, size_t *len) {
  size_t off = dp__tok_off(p, tok);
  *len = dp__token_end(p->text, p->len, off, p->kinds[tok - 1]) - off;
  return p->text + off;
}

char *dp__scratch(dp_parser *p, size_t n) {
  if (n > p->capname) {
    size_t c = n + 64;
    char *s = dp_realloc(p->namebuf, c);
    if (!s) return NULL;
    p->namebuf = s;
    p->capname = c;
  }
  return p->namebuf;
}

const char *dp__cname(dp_parser *p, const char *text, size_t len) {
  char *s = dp__scratch(p, len + 1);
  if (!s) return NULL;
  memmove(s, text, len);
  s[len] = '\0';
  return s;
}

/* ---------------- errors ---------------- */

int dp__fail(dp_parser *p, dp_errcode code, uint32_t tok, const char *fmt, ...) {
  if (p->err) return -1;
  va_list ap;
  va_start(ap, fmt);
  p->err = dp__err_vat(p->ctx, code, dp__span(p, tok), fmt, ap);
  va_end(ap);
  return -1;
}

int dp__oom(dp_parser *p, uint32_t tok) {
  return dp__fail(p, DP_ERR_MEMORY, tok, "out of memory");
}

int dp__fail_core(dp_parser *p, dp_err *err, uint32_t tok) {
  if (!err) return dp__oom(p, tok);
  if (p->err) {
    dp_err_free(err);
    return -1;
  }
  if (err->span.line == 0 && err->code != DP_ERR_MEMORY) {
    dp_err *e = dp_err_at(p->ctx, err->code, dp__span(p, tok), "%s", err->msg);
    dp_err_free(err);
    err = e;
  }
  p->err = err;
  return -1;
}

dp_err *dp_parser_error(dp_parser *p) {
  dp_err *e = p->err;
  p->err = NULL;
  return e ? e : dp_err_new(DP_ERR_GENERIC, DP_NOSPAN, "parser: no error pending");
}

/* How the token at tok reads in "found ...". */
static void found_text(dp_parser *p, size_t tok, char *buf, size_t n) {
  if (tok < 1 || tok > p->ntok) {
    snprintf(buf, n, "end of input");
    return;
  }
  size_t len;
  const char *s = dp__tok_text(p, (uint32_t)tok, &len);
  if (p->kinds[tok - 1] == DP_TOK_METADATA) len = 2;
  if (len > 40) len = 40;
  snprintf(buf, n, "'%.*s'", (int)len, s);
}

dp_err *dp_parser_syntax_error(dp_parser *p, size_t tok, const char *expected) {
  if (tok >= 1 && tok <= p->ntok && p->kinds[tok - 1] == DP_TOK_ERROR && p->lex_err) {
    dp_err *e = p->lex_err;
    p->lex_err = NULL;
    return e;
  }
  char found[64];
  found_text(p, tok, found, sizeof found);
  return dp_err_at(p->ctx, DP_ERR_SYNTAX, dp__span(p, (uint32_t)tok), "expected %s, found %s",
                   expected, found);
}

dp_err *dp_parser_error_here(dp_parser *p, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return dp_err_at(p->ctx, DP_ERR_SYNTAX, dp__span(p, p->progress + 1), "%s", msg);
}

/* ---------------- did you mean ---------------- */

/* Offers the scope name of slot k (copied: scope names are not
   NUL-terminated) to s, keeping the best one in best. */
static void offer(dp_suggest *s, const dp__scope *sc, uint32_t k, char *cand, char *best) {
  size_t len = dp__scope_len(sc, k);
  if (len > DP_SUGGEST_MAXLEN) return;
  memcpy(cand, dp__scope_name(sc, k), len);
  cand[len] = '\0';
  dp_suggest_add(s, cand);
  if (s->best == cand) {
    memcpy(best, cand, len + 1);
    s->best = best;
  }
}

static int is_candidate(const dp_parser *p, int what, const dp__scope_slot *sl, const char *name) {
  const dp_obj *o = sl->handle ? p->objs[sl->handle - 1] : NULL;
  switch (what) {
  case HINT_VAR: return name[0] == '%' && o && o->type == DP_OBJ_EXPR && o->kind == DP_VAR;
  case HINT_GLOBAL: return name[0] == '@' && sl->block;
  case HINT_CTOR: return o && o->type == DP_OBJ_EXPR && o->kind == DP_CTOR;
  default: return sl->handle || sl->block;
  }
}

const char *dp__hint_in(const char *name, const char *best, char *hint) {
  dp_suggest s;
  dp_suggest_init(&s, name);
  dp_suggest_add(&s, best);
  return dp_suggest_hint(&s, hint, DP_SUGGEST_HINT);
}

const char *dp__hint(const dp_parser *p, int what, const char *name, char *hint) {
  const dp__scope *sc = what == HINT_TYPE ? &p->types : &p->names;
  char cand[DP_SUGGEST_MAXLEN + 1], best[DP_SUGGEST_MAXLEN + 1];
  dp_suggest s;
  dp_suggest_init(&s, name);
  for (uint32_t k = 0; k < sc->nslots; k++)
    if (is_candidate(p, what, &sc->slots[k], dp__scope_name(sc, k))) offer(&s, sc, k, cand, best);
  if (what == HINT_TYPE) dp_suggest_add(&s, dp_dtype_suggest(name)); /* (a dtype's name is static) */
  return dp_suggest_hint(&s, hint, DP_SUGGEST_HINT);
}

/* ---------------- handles ---------------- */

uint32_t dp__keep(dp_parser *p, void *obj, dp_err *err, uint32_t tok) {
  if (!obj) {
    dp__fail_core(p, err, tok);
    return 0;
  }
  dp_err_free(err);
  if (p->nobjs == p->capobjs &&
      dp_grow((void **)&p->objs, &p->capobjs, p->nobjs + 1, sizeof *p->objs) != 0) {
    dp_release(obj);
    dp__oom(p, tok);
    return 0;
  }
  p->objs[p->nobjs++] = obj;
  return p->nobjs;
}

int64_t dp__tok_slot(dp_parser *p, dp__scope *s, uint32_t tok) {
  size_t len;
  const char *text = dp__tok_text(p, tok, &len);
  int64_t slot = dp__scope_intern_text(s, (size_t)(text - p->text), len);
  if (slot < 0) dp__oom(p, tok);
  return slot;
}

int dp__grow_slow(dp_parser *p, void **arr, uint32_t *cap, uint32_t need, size_t elem, uint32_t tok) {
  if (need <= *cap) return 0;
  return dp_grow(arr, cap, need, elem) == 0 ? 0 : dp__oom(p, tok);
}

dp_module *dp__module(dp_parser *p, uint32_t tok) {
  if (!p->mod) p->mod = dp_module_new(p->ctx);
  if (!p->mod) dp__oom(p, tok);
  return p->mod;
}

/* ---------------- actions ---------------- */

typedef int64_t (*action_fn)(dp_parser *p, const int64_t *ev, size_t n);

static const action_fn actions[DP_ACT__COUNT] = {
  [DP_ACT_STMTS] = dp__act_stmts, [DP_ACT_LET_HEAD] = dp__act_let_head,
  [DP_ACT_BLOCK_OPEN] = dp__act_block_open, [DP_ACT_BLOCK_CLOSE] = dp__act_block_close,
  [DP_ACT_FN_OPEN] = dp__act_fn_open, [DP_ACT_FN_CLOSE] = dp__act_fn_close,
  [DP_ACT_DEF_CLOSE] = dp__act_def_close, [DP_ACT_CLAUSE_OPEN] = dp__act_clause_open,
  [DP_ACT_CLAUSE_CLOSE] = dp__act_clause_close, [DP_ACT_TYPE] = dp__act_type,
  [DP_ACT_TYPEDEF_OPEN] = dp__act_typedef_open, [DP_ACT_CTOR] = dp__act_ctor,
  [DP_ACT_TYPEDEF_CLOSE] = dp__act_typedef_close, [DP_ACT_PRIMFN] = dp__act_primfn,
  [DP_ACT_TPARAMS] = dp__act_tparams, [DP_ACT_MAIN_CLOSE] = dp__act_main_close,
};

/* The events are the grammar's: checked all the same, as the binding lets
   any Lua code call an action. */
static int valid(dp_parser *p, dp_parse_action a, const int64_t *ev, size_t n) {
  if (p->failed || !p->kinds) /* (a parse that failed, or ended, is not resumed) */
    return dp__fail(p, DP_ERR_GENERIC, 0, "parser: the parse has ended");
  if (a < 1 || a >= DP_ACT__COUNT) return dp__fail(p, DP_ERR_GENERIC, 0, "parser: bad action %d", (int)a);
  for (size_t i = 0; i < n; i++) {
    if (ev[i] > (int64_t)p->ntok || ev[i] < -(int64_t)p->nobjs) /* (never negates ev[i]) */
      return dp__fail(p, DP_ERR_GENERIC, 0, "parser: bad event %lld", (long long)ev[i]);
    if (ev[i] > 0 && (uint32_t)ev[i] > p->progress) p->progress = (uint32_t)ev[i];
  }
  return 0;
}

static int64_t act(dp_parser *p, dp_parse_action a, const int64_t *ev, size_t n) {
  int64_t r = actions[a](p, ev, n);
  if (r < 0) {
    dp__reader_reset(p);
    p->failed = 1;
  }
  return r;
}

int64_t dp_parser_act(dp_parser *p, dp_parse_action a, const int64_t *ev, size_t n) {
  if (valid(p, a, ev, n) != 0) {
    dp__reader_reset(p);
    p->failed = 1;
    return -1;
  }
  return act(p, a, ev, n);
}

int64_t dp__act_statements(dp_parser *p, const int64_t *ev, size_t n) {
  if (n && (uint32_t)ev[n - 1] > p->progress) p->progress = (uint32_t)ev[n - 1];
  return act(p, DP_ACT_STMTS, ev, n);
}

/* ---------------- results ---------------- */

/* Take the result out of the handles before they are released. */
static void *take(dp_parser *p, int64_t h, dp_objtype type) {
  if (h < 1 || h > p->nobjs || p->objs[h - 1]->type != type) return NULL;
  return dp_retain(p->objs[h - 1]);
}

dp_module *dp_parser_module(dp_parser *p, dp_err **err) {
  if (p->failed && !p->err) dp__fail(p, DP_ERR_GENERIC, 0, "parser: the parse failed");
  /* (the metadata section is read even when nothing refers to it: what
     devplan cannot represent there is an error, not dropped) */
  if (p->err || dp__meta_load(p) != 0 || dp__check_globals(p) != 0 || !dp__module(p, p->ntok + 1)) {
    dp_err_set(err, dp_parser_error(p));
    return NULL;
  }
  drop_parse_state(p);
  dp_module *m = p->mod;
  p->mod = NULL;
  /* (names resolve by scope, so every variable read is inside its
     binder's scope, but for a let's variable read in its own value and
     what meta expressions hold: the scope check runs only then) */
  if (dp__infer_module(m, !p->scopes_unsure, err) != 0) {
    dp_release(m);
    return NULL;
  }
  return m;
}

/* The value of handle h, of type `type` ("expression", "type": what a
   missing one is called), as written. */
static void *result(dp_parser *p, int64_t h, dp_objtype type, const char *what, dp_err **err) {
  if (p->failed && !p->err) dp__fail(p, DP_ERR_GENERIC, 0, "parser: the parse failed");
  void *r = p->err ? NULL : take(p, h, type);
  if (!r) {
    if (!p->err) dp__fail(p, DP_ERR_GENERIC, 0, "parser: no %s", what);
    dp_err_set(err, dp_parser_error(p));
    return NULL;
  }
  drop_parse_state(p);
  return r;
}

dp_expr *dp_parser_expr(dp_parser *p, int64_t h, dp_err **err) {
  return result(p, h, DP_OBJ_EXPR, "expression", err);
}

dp_type *dp_parser_type(dp_parser *p, int64_t h, dp_err **err) {
  return result(p, h, DP_OBJ_TYPE, "type", err);
}

/* ---------------- excerpts ---------------- */

/* Where 0-based line `line` starts (SIZE_MAX: the text has fewer lines):
   from the mark at or before it, a line at a time, as span_at_offset
   finds a line (an error's excerpt is the only caller). */
static size_t line_start(const dp_parser *p, uint32_t line) {
  uint32_t m = line / LMARK < p->nlmarks ? line / LMARK : p->nlmarks;
  size_t start = m ? p->lmarks[m - 1] : 0;
  for (uint32_t at = m * LMARK; at < line; at++) {
    const char *nl = memchr(p->text + start, '\n', p->len - start);
    if (!nl) return SIZE_MAX;
    start = (size_t)(nl - p->text) + 1;
  }
  return start;
}

char *dp_parser_excerpt(const dp_parser *p, dp_span s) {
  size_t start = s.source == p->source && s.line > 0 ? line_start(p, s.line - 1) : SIZE_MAX;
  if (start == SIZE_MAX) return NULL;
  const char *nl = memchr(p->text + start, '\n', p->len - start);
  size_t end = nl ? (size_t)(nl - p->text) : p->len;
  if (end > start && p->text[end - 1] == '\r') end--;
  size_t n = end - start, col = s.col, from = 0, shown = n;
  if (col > n + 1) col = n + 1;
  if (n > 120) { /* a long line: a window of 120 characters around the column */
    from = col > 61 ? col - 61 : 0;
    shown = n - from < 120 ? n - from : 120;
  }
  char *out = dp_malloc(2 * (shown + 8) + 2);
  if (!out) return NULL;
  size_t k = 0;
  if (from) k += (size_t)sprintf(out, "...");
  memcpy(out + k, p->text + start + from, shown);
  k += shown;
  if (from + shown < n) k += (size_t)sprintf(out + k, "...");
  size_t line_end = k, caret = col - 1 - from + (from ? 3 : 0);
  out[k++] = '\n';
  for (size_t i = 0; i < caret && i < line_end; i++) out[k++] = out[i] == '\t' ? '\t' : ' ';
  out[k++] = '^';
  out[k] = '\0';
  return out;
}
