/*
 * The C half of the Relay text parser (src/parse/): a lexer and a builder
 * driven by a grammar.
 *
 * The grammar itself is LPeg (lua/devplan/parser.lua); it matches over the
 * string of token kinds this lexer makes, one byte per token, and tells
 * the builder what it found through actions. An action gets the events of
 * the grammar construct it closes: a positive event is the 1-based index of
 * a token the grammar marked (a variable, a call's `(`, a `,`, ...), 0 is
 * the end of a block (after its final expression), a negative event -h is a
 * value an earlier action made (a type, a function, a block). The builder keeps no syntax of its own: what an event means
 * follows from its token's kind and the reader's explicit stacks, so
 * expressions nest as deep as memory allows and nothing recurses on the C
 * stack. Actions come in the order the text is read, each scope opened by
 * an action before anything inside it is read, so that names resolve as
 * they are written.
 *
 * Errors: each function that can fail returns -1 (or NULL); the error is
 * then taken with dp_parser_error. Every error has the token's position.
 * The parser owns everything it made until dp_parser_module (or _expr,
 * _type) hands the result over; dp_parser_free releases the rest, at any
 * point.
 */
#ifndef DEVPLAN_PARSE_H
#define DEVPLAN_PARSE_H

#include "core.h"
#include "expr.h"
#include "module.h"

/* Token kinds: one byte of the token string each. */
enum dp_token {
  DP_TOK_LPAREN = '(', DP_TOK_RPAREN = ')', DP_TOK_LBRACK = '[', DP_TOK_RBRACK = ']',
  DP_TOK_LBRACE = '{', DP_TOK_RBRACE = '}', DP_TOK_COMMA = ',', DP_TOK_SEMI = ';',
  DP_TOK_COLON = ':', DP_TOK_EQ = '=', DP_TOK_DOT = '.', DP_TOK_QUESTION = '?',
  DP_TOK_PLUS = '+', DP_TOK_MINUS = '-', DP_TOK_STAR = '*', DP_TOK_SLASH = '/',
  DP_TOK_LT = '<', DP_TOK_GT = '>', DP_TOK_LE = 'L', DP_TOK_GE = 'G', DP_TOK_EQEQ = 'E',
  DP_TOK_NE = 'N', DP_TOK_ARROW = 'A', DP_TOK_FATARROW = 'F',
  DP_TOK_VAR = 'v',        /* %name */
  DP_TOK_BIND = 'b',       /* %name =   (a binding's head: the name, the `=` consumed) */
  DP_TOK_CALLEE = 'c',     /* name(     (a call of a name: the name, the `(` consumed) */
  DP_TOK_KEY = 'y',        /* name =    (an attribute's key: the name, the `=` consumed) */
  DP_TOK_GLOBAL = 'g',     /* @name */
  DP_TOK_IDENT = 'i',      /* add, nn.conv2d, List, float32 */
  DP_TOK_NUMBER = 'n',     /* 1, -2.5e3f, 3i64, --10, inff, -nanf16 */
  DP_TOK_INDEX = 'k',      /* the digits after a `.` (%x.0.1) */
  DP_TOK_STRING = 's',     /* "NCHW" */
  DP_TOK_META = 'm',       /* meta[relay.Constant][0] */
  DP_TOK_UNDERSCORE = '_',
  DP_TOK_HEADER = 'H',     /* #[version = "0.0.5"] */
  DP_TOK_METADATA = 'Z',   /* #[metadata]: the last token; the section follows it */
  DP_TOK_LPBLOCK = 'B',    /* a `(` that opens a block: before `let`, `%x =` or `free_var` */
  DP_TOK_INVALID = 'X',    /* a character the format does not use */
  DP_TOK_ERROR = '!',      /* a lexical error (the last token; dp_parser has its message) */
  /* keywords */
  DP_TOK_FN = 'f', DP_TOK_LET = 'l', DP_TOK_IF = 'I', DP_TOK_ELSE = 'e', DP_TOK_MATCH = 'M',
  DP_TOK_DEF = 'D', DP_TOK_TYPE = 'Y', DP_TOK_EXTERN = 'x', DP_TOK_PRIMFN = 'P',
  DP_TOK_FREE_VAR = 'w', DP_TOK_REF = 'r', DP_TOK_REF_READ = 'R', DP_TOK_REF_WRITE = 'W',
  DP_TOK_CONSTANT = 'C', DP_TOK_TRUE = 'T', DP_TOK_FALSE = 'K', DP_TOK_NONE = 'O',
  DP_TOK_VDEV = 'V',       /* VirtualDevice */
  DP_TOK_TENSOR = 'Q', DP_TOK_STORAGE = 'S'
};

/* The token kinds by name ("LPAREN", "VAR", "FN", ...), for grammars:
   the i-th pair, or NULL past the last. */
const char *dp_token_kind_name(int i, char *kind);
/* How a diagnostic names a token kind ("')'", "a name", "'fn'"). */
const char *dp_token_kind_text(char kind);

/* The actions of the grammar (see lua/devplan/parser.lua for where each
   is taken and the events it gets). Those marked -> give a value. */
typedef enum dp_parse_action {
  DP_ACT_STMTS = 1,      /* statements of the open block (a final expression included) */
  DP_ACT_LET_HEAD,       /* `let %x: T =` when the value holds blocks */
  DP_ACT_BLOCK_OPEN,     /* `{` of a block, or the start of dp.parse_expr's text */
  DP_ACT_BLOCK_CLOSE,    /* -> the block's expression */
  DP_ACT_FN_OPEN,        /* `fn (params) -> T {` or `def @f(params) -> T {` */
  DP_ACT_FN_CLOSE,       /* -> the function */
  DP_ACT_DEF_CLOSE,      /* the function joins the module */
  DP_ACT_CLAUSE_OPEN,    /* -> a match clause's pattern (its variables come into scope) */
  DP_ACT_CLAUSE_CLOSE,   /* -> the clause's right-hand side (they go out of scope) */
  DP_ACT_TYPE,           /* -> a type */
  DP_ACT_TYPEDEF_OPEN,   /* `type Name[A, B]` */
  DP_ACT_CTOR,           /* a constructor of the open type definition */
  DP_ACT_TYPEDEF_CLOSE,  /* the definition joins the module */
  DP_ACT_PRIMFN,         /* `primfn @f(...) -> T;` */
  DP_ACT_TPARAMS,        /* `[A, B]` of a function: type parameters, in scope until it closes */
  DP_ACT_MAIN_CLOSE,     /* a module's closing expression: its @main */
  DP_ACT__COUNT
} dp_parse_action;

typedef struct dp_parser dp_parser;

/* Brackets nest at most this deep (beyond: a lexical error at the bracket).
   The builder's stacks are explicit; the limit is for the grammar engine,
   whose stack grows with each nesting level (parser.lua sizes LPeg's). */
#define DP_PARSE_MAX_NEST 50000

/* Resolves meta[kind][index] from a metatable: a new reference to a
   virtual device or a constant expression; NULL with *err set (its
   position is added) for an entry that is wrong or out of range; NULL and
   no error when the metatable has no list `kind`: the text's own metadata
   section (meta.h) is asked then. A metatable given wins over the text's
   section for the kinds it has. */
typedef dp_obj *(*dp_meta_resolver)(void *ud, const char *kind, int64_t index, dp_err **err);

/* Lexes text (kept borrowed: it must outlive the parser) named source in
   errors. A lexical error becomes the last token (DP_TOK_ERROR), so that
   a grammar reports what comes first in the text. NULL: out of memory. */
dp_parser *dp_parser_new(dp_ctx *ctx, const char *text, size_t len, const char *source);
void dp_parser_free(dp_parser *p);
/* The token kinds, one byte per token, NUL-terminated; *n gets the count. */
const char *dp_parser_tokens(const dp_parser *p, size_t *n);
/* The parser reads its token kinds from `kinds` from now on (a copy of
   dp_parser_tokens' bytes the caller keeps until the parser is freed, as
   the Lua binding keeps the grammar's subject) and frees its own: a large
   text's kinds are not held twice. */
void dp_parser_share_tokens(dp_parser *p, const char *kinds);
void dp_parser_set_meta(dp_parser *p, dp_meta_resolver fn, void *ud);

/* Runs an action on its events. Returns the handle of the value it gives
   (> 0), 0 for none, -1 on error. */
int64_t dp_parser_act(dp_parser *p, dp_parse_action a, const int64_t *ev, size_t n);
/* Reads the simple statements of the open block from token `first` on
   (`%n = E;`, `let %x = E;`, `E;` over calls, tuples, names, literals and
   operators: src/parse/simple.c), as the grammar would, and builds them
   (DP_ACT_STMTS). Returns the token after the last one read (`first`
   itself: none was simple), or -1 on error. */
int64_t dp_parser_simple_stmts(dp_parser *p, size_t first);
/* The pending error, handed to the caller (NULL if none). */
dp_err *dp_parser_error(dp_parser *p);
/* The error of a grammar that failed at token tok (1-based; count + 1 for
   the end) expecting what `expected` says ("',' or ')'"): "expected ...,
   found ..." there, or the lexer's own message when tok is its error. */
dp_err *dp_parser_syntax_error(dp_parser *p, size_t tok, const char *expected);
/* An error at the first token no action has reached yet (for limits met
   outside the builder, such as a grammar engine's). */
dp_err *dp_parser_error_here(dp_parser *p, const char *fmt, ...);

/* The results. Each frees what only parsing needed first (the tokens and
   names). dp_parser_module checks that every global referenced is defined,
   then type-checks; _expr and _type take the handle a grammar got, and give
   it as written (an expression is not type-checked, as TVM's ParseExpr: it
   may use operators whose types need more context). */
dp_module *dp_parser_module(dp_parser *p, dp_err **err);
dp_expr *dp_parser_expr(dp_parser *p, int64_t h, dp_err **err);
dp_type *dp_parser_type(dp_parser *p, int64_t h, dp_err **err);

/* The source line of span s and a caret under its column ("  %0 = f(\n
   ^"), a long line cut to a window around it; NULL when s is not in
   this parser's text (or out of memory). malloc'd. */
char *dp_parser_excerpt(const dp_parser *p, dp_span s);

#endif
