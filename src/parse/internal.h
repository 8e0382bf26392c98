/*
 * Internals of the parser's C half (src/parse/): the parser object and the
 * functions its files share. Names are dp__ (internal).
 *
 *   lex.c       text -> token kinds and offsets
 *   parser.c    the object: handles, positions, errors, results
 *   scope.c     names in scope (scope.h)
 *   literal.c   numbers, scalar literals and Constant(...) values
 *   attrval.c   attribute values, attribute sets, VirtualDevice(...)
 *   reader.c    expressions: the explicit-stack reader of events
 *   types.c     types
 *   patterns.c  match patterns
 *   blocks.c    statements, blocks, functions, match clauses
 *   items.c     module items: type definitions, constructors, primfn, globals
 *   simple.c    the C reader of simple statements (the grammar's hot path)
 */
#ifndef DEVPLAN_PARSE_INTERNAL_H
#define DEVPLAN_PARSE_INTERNAL_H

#include <stdarg.h>
#include "devplan/devplan.h"
#include "devplan/parse.h"
#include "scope.h"
#include "../core/arena.h"

/* An open block: `{ ... }` of a function, a branch or a clause, or the
   whole text of dp.parse_expr. Graph bindings are the block's own (a name
   defined twice in a block is an error); lets wait (in p->lets) for the
   block's final expression, which they then enclose. */
typedef struct pblock {
  uint8_t kind;          /* B_BLOCK, B_FN, B_CLAUSE */
  uint32_t id;           /* distinct among the open blocks (duplicate definitions):
                            its depth + 1 (1 is a slot's "defined for good") */
  uint32_t mark;         /* names undo mark when opened */
  struct dp_let *lets;   /* p->lets when opened: the pending lets after it are its own */
  uint32_t final;        /* handle of the final expression, 0 until read */
  uint32_t let_var;      /* a let whose value comes in the next action, 0: none */
  dp_span let_span;
  uint32_t tok;          /* the opening token */
  /* functions */
  uint32_t params;       /* its first parameter in p->params */
  uint32_t ret, attrs, vdev, global; /* handles, 0: none */
  uint32_t tps, ntps;    /* its type parameters: p->tps[tps..tps + ntps) */
  uint32_t tmark;        /* type names undo mark when opened */
  /* clauses */
  uint32_t pattern;
} pblock;

enum { B_BLOCK = 1, B_FN, B_CLAUSE };


/* The expression reader's stacks (reader.c), kept in the parser so that
   an error anywhere leaves nothing to free but the parser. */
typedef struct rval {
  dp_obj *obj;           /* owned */
  uint32_t tok;          /* where it starts */
  uint8_t callee;        /* an operator or constructor named by an identifier */
} rval;

typedef struct rframe {
  uint8_t kind;          /* F_ROOT, F_GROUP, F_CALL, F_IF, F_MATCH, F_REF, ... */
  uint8_t comma;         /* the last event was a ',' */
  uint32_t tok;          /* the token that opened it (its span) */
  uint32_t base;         /* p->vals height above which its values are */
  uint32_t opbase;       /* p->ops height */
  uint32_t attrbase;     /* p->attrs height */
  rval callee;           /* F_CALL: the callee (owned) */
  uint32_t ntp, tmark;   /* a function type's type parameters (its first values)
                            and the type names' undo mark before them */
} rframe;

typedef struct rop {
  char kind;             /* the operator's token kind; DP_TOK_MINUS also unary */
  uint8_t prec;
  uint8_t unary;
  uint32_t tok;
} rop;

#define TOK_BLOCK_BITS 8
#define TOK_BLOCK (1u << TOK_BLOCK_BITS)

typedef struct pattr {
  uint32_t key;          /* the key's token */
  dp_aval val;           /* owned */
} pattr;

struct dp_parser {
  dp_ctx *ctx;           /* retained */
  const char *text;      /* borrowed */
  size_t len;
  uint32_t source;
  /* positions: the lines of the last two positions asked for, where each
     starts and where the next one does (SIZE_MAX: none), others found by
     scanning the text from there or from the mark of a line before it
     (the parser asks nearly in order); an excerpt finds its line from the
     marks too */
  struct pline {
    size_t start, next;
    uint32_t line;       /* 0-based */
  } lc[2];               /* (the line asked for last, and the one before it) */
  size_t *lmarks;        /* where lines LMARK, 2 LMARK, ... start (as far as asked) */
  uint32_t nlmarks, caplmarks;
  dp_module *mod;        /* made with the first item */
  dp_meta_resolver meta;
  void *meta_ud;
  int meta_given;        /* the resolver has a metatable to look in */
  struct dp_meta *metadata; /* the text's own section, once read */
  int meta_failed;
  dp_err *err;           /* pending */
  dp_err *lex_err;       /* the message of the DP_TOK_ERROR token */
  uint32_t progress;     /* the last token an action reached */
  int scopes_unsure;     /* a read the parser's scopes do not vouch for (see pending_let) */
  int failed;            /* an action failed: the parse is over */
  /* where calls and lets are made: in bulk, not one malloc each (nodes
     like any other; a chunk goes with its last node). Only for a text of
     16,384 tokens or more (nodes = &arena; else NULL: the heap): a chunk is
     64 KiB, and a small module kept by its user must not hold one */
  dp__arena arena;
  dp__arena *nodes;
  /* variables in chunks of their own: a planned module keeps most of its
     input's variables (a rebuilt call or let refers to the same ones), and
     one kept variable among the calls of a chunk would keep the whole
     chunk, so that the input could not go once planned */
  dp__arena var_arena;
  dp__arena *vars;

  /* The state of the parse itself: from here to the end, freed and zeroed
     when the result is taken (drop_parse_state). */
  /* tokens (lex.c) */
  char *kinds;           /* ntok kinds + NUL (the caller's copy once shared:
                            dp_parser_share_tokens; not freed then) */
  int kinds_shared;
  /* where each token starts and its length, one byte a token (dp__tok_off,
     dp__tok_text): a token's byte holds its length in its low 5 bits (31:
     that or more, found again by scanning) and in its high 3 its gap: it
     starts that many bytes (0-6) after the token before it starts plus
     those 5 bits, or with 7, tbig's next entry after the token before it
     starts. Tokens come in blocks of TOK_BLOCK, each one's first token's
     offset in tbase; the offsets of the blocks asked for last are worked
     out whole into tcache (the parser reads tokens nearly in order). One
     byte a token rather than three (offsets in 16 bits from a block's
     first and a length byte). */
  unsigned char *tb;
  uint32_t *tbase;       /* per block: its first token's offset */
  uint32_t *tbigat;      /* per block: the big gaps of the tokens before its
                            first and of that token (an index in tbig) */
  uint32_t *tbig;        /* the big gaps (a comment, a line's indentation, a
                            long token before) as whole steps, in token order */
  uint32_t nbig, capbig;
  uint32_t tend;         /* the lexer: the last token's offset plus its 5 bits
                            of length (where the next one's gap counts from) */
  uint32_t tfast;        /* the lexer: the token count below which the next
                            token is in the last one's block with room to spare */
  struct ptcache {       /* two blocks' offsets */
    uint32_t block, end; /* the block, and the first token (0-based) past what is in off */
    uint32_t off[TOK_BLOCK];
  } tcache[2], *tlast;   /* (the one asked for last; NULL: neither yet) */
  uint32_t ntok, captok;
  uint32_t nbinds;       /* BIND tokens (how many names to make room for) */
  /* objects: handle h is objs[h - 1] (one reference each) */
  dp_obj **objs;
  uint32_t nobjs, capobjs;
  /* names: values (%x, @f, identifiers, meta entries) and types */
  dp__scope names, types;
  struct pgref { uint32_t slot, tok; } *grefs; /* globals referenced, first use */
  uint32_t ngrefs, capgrefs;
  /* blocks, their lets, function parameters */
  pblock *blocks;
  uint32_t nblocks, capblocks;
  dp_let *lets;          /* the last pending let: lets are made as read (owned), their
                            bodies set when the block closes; until then a let's body
                            is the let before it (not a reference), so that the lets
                            waiting need no array (8 bytes a let on a let chain) */
  uint32_t *params;
  uint32_t nparams, capparams;
  /* type parameters of the open functions (handles); the last tpending
     were read by DP_ACT_TPARAMS for the function whose head comes next,
     the type names' undo mark before them in tp_mark */
  uint32_t *tps;
  uint32_t ntps, captps, tpending, tp_mark;
  /* the open type definition (items.c) */
  uint32_t td_tok, td_mark, td_ntvars;
  uint32_t *td_items;    /* type variables, then constructors (handles) */
  uint32_t td_n, td_cap;
  /* reader stacks */
  rval *vals;
  uint32_t nvals, capvals;
  rframe *frames;
  uint32_t nframes, capframes;
  rop *ops;
  uint32_t nops, capops;
  pattr *attrs;
  uint32_t nattrs, capattrs;
  dp_aval *avs;          /* attribute list items being read (attrval.c) */
  uint32_t navs, capavs;
  uint32_t *marks;       /* where each open list's items start in avs */
  uint32_t nmarks, capmarks;
  unsigned char *bytes;  /* scratch: constant elements */
  size_t capbytes;
  char *namebuf;         /* scratch: a NUL-terminated name */
  size_t capname;
  /* lets whose value is being read (handles of their variables, ascending:
     each is newer than those below it): a read of one of them is in scope
     for the parser but not for the IR unless the value is a function */
  uint32_t *pend;
  uint32_t npend, cappend;
  int64_t *sev;          /* the simple statements' events (simple.c) */
  uint32_t capsev;
  uint8_t *sr;           /* their open brackets */
  uint32_t capsr;
  struct pacache *acache; /* recent attribute sets of operator calls (attrval.c) */
  dp_attrs *no_attrs;    /* the empty set of operator calls without attributes */
};

/* The byte offset where token tok (1-based, at most ntok) starts (p is
   not const: the offsets of the blocks asked for last are cached in it). */
uint32_t dp__tok_off_slow(dp_parser *p, uint32_t i);
static inline uint32_t dp__tok_off(dp_parser *p, uint32_t tok) {
  uint32_t i = tok - 1;
  const struct ptcache *c = p->tlast;
  return c && c->block == i >> TOK_BLOCK_BITS && i < c->end ? c->off[i & (TOK_BLOCK - 1)] : dp__tok_off_slow(p, i);
}

/* ---- parser.c ---- */
/* Sets p->err (unless one is pending) at token tok; returns -1. */
int dp__fail(dp_parser *p, dp_errcode code, uint32_t tok, const char *fmt, ...);
int dp__oom(dp_parser *p, uint32_t tok);
/* An error of the core (NULL: out of memory) at tok unless it has a position. */
int dp__fail_core(dp_parser *p, dp_err *err, uint32_t tok);
dp_span dp__span_slow(dp_parser *p, uint32_t tok);
/* (inline: a token on the line of the previous question or the next, the
   common cases) */
static inline dp_span dp__span(dp_parser *p, uint32_t tok) {
  if (tok >= 1 && tok <= p->ntok) {
    uint32_t off = dp__tok_off(p, tok);
    if (off >= p->lc[0].start && off < p->lc[0].next)
      return (dp_span){p->source, p->lc[0].line + 1, (uint32_t)(off - p->lc[0].start) + 1};
  }
  return dp__span_slow(p, tok);
}
/* Keeps a new reference (obj NULL: err is the failure); its handle, or 0. */
uint32_t dp__keep(dp_parser *p, void *obj, dp_err *err, uint32_t tok);
static inline dp_obj *dp__obj(const dp_parser *p, uint32_t h) { return p->objs[h - 1]; }
/* The token's text and length (its kind decides where it ends). */
const char *dp__tok_text_long(dp_parser *p, uint32_t tok, size_t *len);
static inline const char *dp__tok_text(dp_parser *p, uint32_t tok, size_t *len) {
  *len = p->tb[tok - 1] & 31u;
  return *len == 31 ? dp__tok_text_long(p, tok, len) : p->text + dp__tok_off(p, tok);
}
/* A NUL-terminated copy of text[0..len) in the parser's buffer; NULL: oom. */
const char *dp__cname(dp_parser *p, const char *text, size_t len);
/* That buffer with room for at least n bytes; NULL: oom. */
char *dp__scratch(dp_parser *p, size_t n);
/* Kind of token tok; NUL past the end. */
static inline char dp__kind(const dp_parser *p, uint32_t tok) {
  return tok >= 1 && tok <= p->ntok ? p->kinds[tok - 1] : '\0';
}
/* The slot of token tok's text in the names s (made if new); -1 with an
   error when out of memory. */
int64_t dp__tok_slot(dp_parser *p, dp__scope *s, uint32_t tok);
/* What dp__hint offers as candidates: variables in scope, globals
   defined, constructors (of p->names), types and type variables in scope
   (of p->types). */
enum { HINT_VAR, HINT_GLOBAL, HINT_CTOR, HINT_TYPE };
/* "; did you mean 'NAME'?" or "" for the unknown name (NUL-terminated),
   into hint (DP_SUGGEST_HINT bytes): the closest candidate of `what`,
   and for HINT_TYPE the dtypes too. */
const char *dp__hint(const dp_parser *p, int what, const char *name, char *hint);
/* The same among n given candidates (best: the closest, or NULL: none). */
const char *dp__hint_in(const char *name, const char *best, char *hint);
/* "unknown WHAT 'key' (only KNOWN); did you mean 'KNOWN'?" at key. */
int dp__unknown_attr(dp_parser *p, uint32_t key, const char *what, const char *known);
/* dp_grow, failing as out of memory at tok. */
int dp__grow_slow(dp_parser *p, void **arr, uint32_t *cap, uint32_t need, size_t elem, uint32_t tok);
static inline int dp__grow(dp_parser *p, void **arr, uint32_t *cap, uint32_t need, size_t elem, uint32_t tok) {
  return need <= *cap ? 0 : dp__grow_slow(p, arr, cap, need, elem, tok);
}
dp_module *dp__module(dp_parser *p, uint32_t tok);

/* DP_ACT_STMTS on events the simple statements' reader made (simple.c):
   tokens of the text, ascending, so not checked one by one as
   dp_parser_act checks what any caller gives (the last is the progress). */
int64_t dp__act_statements(dp_parser *p, const int64_t *ev, size_t n);

/* ---- lex.c ---- */
int dp__lex(dp_parser *p);
/* End offset of the token of the given kind that starts at off. */
size_t dp__token_end(const char *text, size_t len, size_t off, char kind);
/* The string token tok decoded (escapes), NUL-terminated in the parser's buffer. */
const char *dp__string_value(dp_parser *p, uint32_t tok);
/* meta[KIND][INDEX]: the kind into the parser's buffer and the index; -1 with
   an error when the index is out of range. */
int dp__meta_parts(dp_parser *p, uint32_t tok, const char **kind, int64_t *index);

/* ---- literal.c ---- */
/* A scalar literal expression (number, True, False). */
dp_obj *dp__scalar(dp_parser *p, uint32_t tok);
/* Number token tok as an attribute value. */
int dp__number_aval(dp_parser *p, uint32_t tok, dp_aval *out);
/* A non-negative integer token (dimension, index) no larger than max. */
int dp__number_index(dp_parser *p, uint32_t tok, int64_t max, const char *what, int64_t *out);
/* A signed integer token within [lo, hi]. */
int dp__number_int(dp_parser *p, uint32_t tok, int64_t lo, int64_t hi, const char *what, int64_t *out);
/* Constant(TYPE, [v, ...]): the type, and the token of `[`. */
dp_obj *dp__const_literal(dp_parser *p, dp_type *t, uint32_t ctok, uint32_t lbrack);

/* ---- attrval.c ---- */
/* Reads one attribute value from ev[*i] (left on its last event). */
int dp__read_aval(dp_parser *p, const int64_t *ev, size_t n, size_t *i, dp_aval *out);
/* Attributes p->attrs[from..] of a call of fn (checked against an operator's
   schema, the culprit named) or of a function; they are consumed. *out NULL
   when there are none and fn is not an operator. */
int dp__attrs_take(dp_parser *p, dp_expr *fn, uint32_t from, uint32_t tok, dp_attrs **out);
/* The value behind meta token tok (*out owned): from the metatable given
   to the parser, else from the text's own metadata section. */
int dp__meta_value(dp_parser *p, uint32_t tok, dp_aval *out);
/* Reads the text's metadata section, if it has one and it is not read yet. */
int dp__meta_load(dp_parser *p);
void dp__attrs_cache_free(dp_parser *p);

/* ---- reader.c ---- */
/* Reads one expression from ev[*i]: up to a terminator event (`;`, a `}`
   or the end of the text where the expression ends), which it consumes and
   returns in *term (0: the events ended). Its handle, or 0 on error. */
uint32_t dp__read_expr(dp_parser *p, const int64_t *ev, size_t n, size_t *i, uint32_t *term);
/* Empties the reader's stacks (after an error). */
void dp__reader_reset(dp_parser *p);
/* The value of a handle event (-h), checked; NULL with an error. */
dp_obj *dp__event_obj(dp_parser *p, int64_t e, uint32_t near_tok);
/* Takes obj (a new reference; NULL: failed already) onto the reader's value
   stack (types.c and patterns.c use it too). */
int dp__push_val(dp_parser *p, dp_obj *obj, uint32_t tok, int callee);

/* ---- types.c, patterns.c, blocks.c, items.c: the actions ---- */
int64_t dp__act_type(dp_parser *p, const int64_t *ev, size_t n);
/* Reads a pattern; its variables are appended to p->params (handles). */
uint32_t dp__read_pattern(dp_parser *p, const int64_t *ev, size_t n);
int64_t dp__act_stmts(dp_parser *p, const int64_t *ev, size_t n);
/* Whether handle h is the variable of a let whose value is being read. */
int dp__pending_let(const dp_parser *p, uint32_t h);
int64_t dp__act_let_head(dp_parser *p, const int64_t *ev, size_t n);
int64_t dp__act_block_open(dp_parser *p, const int64_t *ev, size_t n);
int64_t dp__act_block_close(dp_parser *p, const int64_t *ev, size_t n);
int64_t dp__act_fn_open(dp_parser *p, const int64_t *ev, size_t n);
int64_t dp__act_fn_close(dp_parser *p, const int64_t *ev, size_t n);
int64_t dp__act_def_close(dp_parser *p, const int64_t *ev, size_t n);
int64_t dp__act_clause_open(dp_parser *p, const int64_t *ev, size_t n);
int64_t dp__act_clause_close(dp_parser *p, const int64_t *ev, size_t n);
int64_t dp__act_typedef_open(dp_parser *p, const int64_t *ev, size_t n);
int64_t dp__act_ctor(dp_parser *p, const int64_t *ev, size_t n);
int64_t dp__act_typedef_close(dp_parser *p, const int64_t *ev, size_t n);
int64_t dp__act_primfn(dp_parser *p, const int64_t *ev, size_t n);
int64_t dp__act_tparams(dp_parser *p, const int64_t *ev, size_t n);
int64_t dp__act_main_close(dp_parser *p, const int64_t *ev, size_t n);
/* Every global referenced is defined (module end). */
int dp__check_globals(dp_parser *p);

#endif
