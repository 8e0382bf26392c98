/*
 * The lexer: the text becomes a string of token kinds, one byte per token
 * (parse.h), and the byte offset where each token starts. White space and
 * comments are skipped (`// ...` to the end of the line; `/ * ... * /`
 * nesting as in TVM's lexer, to any depth).
 *
 * What a token is is decided here, and only here (dp__token_end finds a
 * token's end again with the same scanners):
 *   %name @name   letters, digits and _, with parts after a `.` or `/` that
 *                 start with a letter (%x.0 stays a projection; `%a/%b` a
 *                 division; TVM names values `conv1.weight`, `base/x`)
 *   identifiers   a letter or _, then the same; keywords are their own kinds
 *   heads         a name and the `=` or `(` after it are one token, as the
 *                 grammar always reads them together: `%x =` (BIND), `key =`
 *                 (KEY, any word; not a type's name before a let's `=`),
 *                 `name(` (CALLEE); white space and comments may stand
 *                 between (the token's text is the name)
 *   numbers       as TVM's tokenizer reads them: a run of `-` right before a
 *                 digit belongs to the number (an odd run negates: `--10` is
 *                 10); digits, a fraction, an exponent, a suffix (f, f16, f32,
 *                 f64, i, i8 .. i64, u, u8 .. u64); `inf` and `nan` with an
 *                 optional f suffix are numbers too
 *   indices       the digits after a `.` (%x.0.1 is %x . 0 . 1)
 *   meta[KIND][N] one token (white space allowed inside), as TVM condenses it
 *   #[version = "..."] one token; #[metadata] ends the tokens (its section
 *                 follows)
 *   `(` of a block a `(` right before `let`, `%x =` or `free_var` is
 *                 LPBLOCK: it opens a block (TVM prints a let that is no
 *                 scope's result so), which the grammar tells from a tuple
 *                 by this one token
 * A lexical error (a comment or string never closed, a malformed number or
 * meta reference, brackets nested deeper than DP_PARSE_MAX_NEST) becomes the
 * last token, DP_TOK_ERROR, with its message in p->lex_err: the grammar
 * reports whatever comes first in the text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static const struct {
  const char *word;
  unsigned char len;
  char kind;
} keywords[] = {
  {"fn", 2, DP_TOK_FN}, {"let", 3, DP_TOK_LET}, {"if", 2, DP_TOK_IF}, {"else", 4, DP_TOK_ELSE},
  {"match", 5, DP_TOK_MATCH}, {"def", 3, DP_TOK_DEF}, {"type", 4, DP_TOK_TYPE},
  {"extern", 6, DP_TOK_EXTERN}, {"primfn", 6, DP_TOK_PRIMFN}, {"free_var", 8, DP_TOK_FREE_VAR},
  {"ref", 3, DP_TOK_REF}, {"ref_read", 8, DP_TOK_REF_READ}, {"ref_write", 9, DP_TOK_REF_WRITE},
  {"Constant", 8, DP_TOK_CONSTANT}, {"True", 4, DP_TOK_TRUE}, {"False", 5, DP_TOK_FALSE},
  {"None", 4, DP_TOK_NONE}, {"VirtualDevice", 13, DP_TOK_VDEV}, {"Tensor", 6, DP_TOK_TENSOR},
  {"Storage", 7, DP_TOK_STORAGE},
};

/* Character classes: 1 a letter or _, 2 a digit, 4 white space, 8 the first
   letter of a keyword (of keywords[]: a new keyword's letter gets 8 too;
   tests/c/parse_test.c lexes each keyword). ASCII only. */
enum { C_ALPHA = 1, C_DIGIT = 2, C_SPACE = 4, C_KW = 8 };
static const unsigned char cls[256] = {
  0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0,
  0, 1, 1, 9, 1, 1, 9, 1, 1, 1, 1, 1, 1, 1, 9, 1,
  1, 1, 1, 9, 9, 1, 9, 1, 1, 1, 1, 0, 0, 0, 0, 1,
  0, 1, 1, 1, 9, 9, 9, 1, 1, 9, 1, 1, 9, 9, 1, 1,
  9, 1, 9, 1, 9, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

#define CLS(c) (cls[(unsigned char)(c)])
static int is_digit(char c) { return CLS(c) & C_DIGIT; }
static int is_alpha(char c) { return CLS(c) & C_ALPHA; }
static int is_alnum(char c) { return CLS(c) & (C_ALPHA | C_DIGIT); }
static int is_space(char c) { return CLS(c) & C_SPACE; }
static int starts_keyword(char c) { return CLS(c) & C_KW; }

/* Past white space and comments from i; a block comment never closed
   sets *open to where it starts and gives len. */
static size_t skip_space(const char *t, size_t len, size_t i, size_t *open) {
  for (;;) {
    while (i < len && is_space(t[i])) i++;
    if (i + 1 >= len || t[i] != '/' || (t[i + 1] != '/' && t[i + 1] != '*')) return i;
    if (t[i + 1] == '/') {
      while (i < len && t[i] != '\n') i++;
      continue;
    }
    size_t start = i, depth = 1;
    for (i += 2; i < len && depth; i++) {
      if (t[i] == '/' && i + 1 < len && t[i + 1] == '*') depth++, i++;
      else if (t[i] == '*' && i + 1 < len && t[i + 1] == '/') depth--, i++;
    }
    if (depth) {
      *open = start;
      return len;
    }
  }
}

/* Letters, digits and _, with parts after `.` or `/` that start with a
   letter. */
static inline size_t name_end(const char *t, size_t len, size_t i) {
  while (i < len && is_alnum(t[i])) i++;
  while (i + 1 < len && (t[i] == '.' || t[i] == '/') && is_alpha(t[i + 1])) {
    i += 2;
    while (i < len && is_alnum(t[i])) i++;
  }
  return i;
}

/* name_end() where a byte that ends a name stands at stop or before it
   (the lexer's loop: no test of the text's end per byte before stop). */
static inline size_t name_end_before(const char *t, size_t len, size_t i, size_t stop) {
  if (i < stop) {
    while (is_alnum(t[i])) i++;
  } else {
    while (i < len && is_alnum(t[i])) i++;
  }
  while (i + 1 < len && (t[i] == '.' || t[i] == '/') && is_alpha(t[i + 1])) {
    i += 2;
    while (i < len && is_alnum(t[i])) i++;
  }
  return i;
}

static size_t digits_end(const char *t, size_t len, size_t i) {
  while (i < len && is_digit(t[i])) i++;
  return i;
}

/* `inf` or `nan` at t[i..e), with an optional f suffix. */
static int is_special_real(const char *t, size_t i, size_t e) {
  size_t n = e - i;
  if (n < 3 || (memcmp(t + i, "inf", 3) != 0 && memcmp(t + i, "nan", 3) != 0)) return 0;
  const char *s = t + i + 3;
  n -= 3;
  return n == 0 || (n == 1 && s[0] == 'f') || (n == 3 && s[0] == 'f' &&
         (!memcmp(s + 1, "16", 2) || !memcmp(s + 1, "32", 2) || !memcmp(s + 1, "64", 2)));
}

/* End of the number at i (a run of '-' first), or i when none starts there. */
static size_t number_end(const char *t, size_t len, size_t i) {
  size_t j = i;
  while (j < len && t[j] == '-') j++;
  if (j < len && is_alpha(t[j])) {
    size_t e = name_end(t, len, j);
    return is_special_real(t, j, e) ? e : i;
  }
  if (j >= len || !is_digit(t[j])) return i;
  j = digits_end(t, len, j);
  if (j + 1 < len && t[j] == '.' && is_digit(t[j + 1])) j = digits_end(t, len, j + 1);
  if (j < len && (t[j] == 'e' || t[j] == 'E')) {
    size_t k = j + 1;
    if (k < len && (t[k] == '+' || t[k] == '-')) k++;
    if (k < len && is_digit(t[k])) j = digits_end(t, len, k);
  }
  if (j < len && (t[j] == 'f' || t[j] == 'i' || t[j] == 'u')) j = digits_end(t, len, j + 1);
  return j;
}

/* The suffix of the number t[i..e) is one devplan knows, and an integer
   suffix has no fraction; else a message. */
static const char *number_check(const char *t, size_t i, size_t e) {
  size_t s = e;
  while (s > i && is_digit(t[s - 1])) s--;
  if (s == i || !(t[s - 1] == 'f' || t[s - 1] == 'i' || t[s - 1] == 'u')) return NULL;
  char k = t[s - 1];
  size_t n = e - s;
  int width = n == 0 ? 0 : n == 1 && t[s] == '8' ? 8 : n == 2 ? (t[s] - '0') * 10 + (t[s + 1] - '0') : -1;
  int ok = width == 0 || width == 16 || width == 32 || width == 64 || (width == 8 && k != 'f');
  if (!ok) return "unknown number suffix";
  for (size_t j = i; j < s - 1; j++)
    if (k != 'f' && (t[j] == '.' || t[j] == 'e' || t[j] == 'E')) return "an integer was expected";
  if (k != 'f' && is_alpha(t[i]) ) return "an integer was expected";
  return NULL;
}

static size_t string_end(const char *t, size_t len, size_t i) {
  for (size_t j = i + 1; j < len; j++) {
    if (t[j] == '\\') j++;
    else if (t[j] == '"') return j + 1;
  }
  return 0;
}

/* meta[KIND][INDEX] from i ("meta"), white space between the parts; its
   end, or 0 when malformed. */
static size_t meta_end(const char *t, size_t len, size_t i) {
  size_t open = 0, j = i + 4, e;
  /* (the common form first: meta[KIND][INDEX] with no white space) */
  if (j + 1 < len && t[j] == '[' && is_alpha(t[j + 1])) {
    size_t k = name_end(t, len, j + 1);
    if (k + 1 < len && t[k] == ']' && t[k + 1] == '[') {
      size_t d = digits_end(t, len, k + 2);
      if (d > k + 2 && d < len && t[d] == ']') return d + 1;
    }
  }
  j = skip_space(t, len, i + 4, &open);
  if (j >= len || t[j] != '[') return 0;
  j = skip_space(t, len, j + 1, &open);
  if (j >= len || !is_alpha(t[j])) return 0;
  j = skip_space(t, len, name_end(t, len, j), &open);
  if (j >= len || t[j] != ']') return 0;
  j = skip_space(t, len, j + 1, &open);
  if (j >= len || t[j] != '[') return 0;
  j = skip_space(t, len, j + 1, &open);
  e = digits_end(t, len, j);
  if (e == j) return 0;
  j = skip_space(t, len, e, &open);
  return j < len && t[j] == ']' ? j + 1 : 0;
}

/* `#[ word` from i: the position after the word when it is `word`. */
static size_t directive(const char *t, size_t len, size_t i, const char *word) {
  size_t open = 0, n = strlen(word), j;
  if (i + 1 >= len || t[i + 1] != '[') return 0;
  j = skip_space(t, len, i + 2, &open);
  if (j + n > len || memcmp(t + j, word, n) != 0 || (j + n < len && is_alnum(t[j + n]))) return 0;
  return j + n;
}

/* #[version = "..."]: its end, or 0. */
static size_t header_end(const char *t, size_t len, size_t i) {
  size_t open = 0, j = directive(t, len, i, "version");
  if (!j) return 0;
  j = skip_space(t, len, j, &open);
  if (j >= len || t[j] != '=') return 0;
  j = skip_space(t, len, j + 1, &open);
  if (j >= len || t[j] != '"' || !(j = string_end(t, len, j))) return 0;
  j = skip_space(t, len, j, &open);
  return j < len && t[j] == ']' ? j + 1 : 0;
}

static size_t metadata_end(const char *t, size_t len, size_t i) {
  size_t open = 0, j = directive(t, len, i, "metadata");
  if (!j) return 0;
  j = skip_space(t, len, j, &open);
  return j < len && t[j] == ']' ? j + 1 : 0;
}

/* After a name ending at e: the position past a `=` (not `==`, `=>`) or a
   `(` that follows it ('=' or '(' in *c), else 0. */
static size_t head_end(const char *t, size_t len, size_t e, char *c) {
  size_t open = 0, j = e < len && !is_space(t[e]) && t[e] != '/' ? e : skip_space(t, len, e, &open);
  if (j >= len) return 0;
  *c = t[j];
  if (t[j] == '(') return j + 1;
  if (t[j] == '=' && (j + 1 >= len || (t[j + 1] != '=' && t[j + 1] != '>'))) return j + 1;
  return 0;
}

/* A name and `=` make a key, except where a type ends before a let's `=`
   (`let %x: int8 = ...`, `let %f: fn () -> int8 = ...`). */
static int key_allowed(const dp_parser *p) {
  char prev = p->ntok ? p->kinds[p->ntok - 1] : '\0';
  return prev != DP_TOK_COLON && prev != DP_TOK_ARROW;
}

/* A character the format does not use: the whole UTF-8 sequence. */
static size_t invalid_end(const char *t, size_t len, size_t i) {
  unsigned char c = (unsigned char)t[i];
  size_t n = c < 0xc0 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
  return i + n < len ? i + n : len;
}

/* The keyword a word of n letters starting with c could be: its index in
   keywords[] + 1, or 0 (no two keywords share a first letter and a length;
   tests/c/parse_test.c lexes each keyword, so a keyword missing here fails
   there). A lookup instead of a scan of the list: most words start with a
   letter some keyword starts with (multiply, reshape, meta...). */
static const unsigned char keyword_at[128][14] = {
  ['f'][2] = 1, ['l'][3] = 2, ['i'][2] = 3, ['e'][4] = 4, ['m'][5] = 5, ['d'][3] = 6, ['t'][4] = 7,
  ['e'][6] = 8, ['p'][6] = 9, ['f'][8] = 10, ['r'][3] = 11, ['r'][8] = 12, ['r'][9] = 13, ['C'][8] = 14,
  ['T'][4] = 15, ['F'][5] = 16, ['N'][4] = 17, ['V'][13] = 18, ['T'][6] = 19, ['S'][7] = 20,
};

static inline char keyword(const char *t, size_t n) {
  if (n < 2 || n > 13 || !starts_keyword(t[0])) return 0;
  unsigned k = keyword_at[(unsigned char)t[0] & 127][n];
  if (!k) return 0;
  for (size_t j = 1; j < n; j++) /* (the first letters are equal) */
    if (keywords[k - 1].word[j] != t[j]) return 0;
  return keywords[k - 1].kind;
}

size_t dp__token_end(const char *t, size_t len, size_t i, char kind) {
  switch (kind) {
  case DP_TOK_VAR: case DP_TOK_GLOBAL: case DP_TOK_BIND: return name_end(t, len, i + 1);
  case DP_TOK_CALLEE: case DP_TOK_KEY: return name_end(t, len, i);
  case DP_TOK_NUMBER: return number_end(t, len, i);
  case DP_TOK_INDEX: return digits_end(t, len, i);
  case DP_TOK_STRING: return string_end(t, len, i);
  case DP_TOK_META: return meta_end(t, len, i);
  case DP_TOK_HEADER: return header_end(t, len, i);
  case DP_TOK_METADATA: return metadata_end(t, len, i);
  case DP_TOK_ARROW: case DP_TOK_FATARROW: case DP_TOK_LE: case DP_TOK_GE:
  case DP_TOK_EQEQ: case DP_TOK_NE: return i + 2;
  case DP_TOK_INVALID: return invalid_end(t, len, i);
  default:
    if (is_alpha(t[i])) return name_end(t, len, i);
    return i + 1 <= len ? i + 1 : len;
  }
}

/* ---------------- lexing ---------------- */

/* Room for cap tokens (and their blocks). */
static int size_tokens(dp_parser *p, uint32_t cap) {
  uint32_t nb = cap / TOK_BLOCK + 1;
  void *a;
  if (!(a = dp_realloc(p->kinds, cap))) return -1;
  p->kinds = a;
  if (!(a = dp_realloc(p->tb, cap))) return -1;
  p->tb = a;
  if (!(a = dp_realloc(p->tbase, (size_t)nb * sizeof *p->tbase))) return -1;
  p->tbase = a;
  if (!(a = dp_realloc(p->tbigat, (size_t)nb * sizeof *p->tbigat))) return -1;
  p->tbigat = a;
  p->captok = cap;
  return 0;
}

/* push() for a token that starts a block, has a big gap or needs more
   room. */
static int push_slow(dp_parser *p, char kind, size_t off, size_t end) {
  uint32_t n = p->ntok, b = n >> TOK_BLOCK_BITS, gap = (uint32_t)off - p->tend;
  if (n + 2 > p->captok && size_tokens(p, p->captok * 2) != 0) return -1;
  if (n == 0) {
    gap = 0;
  } else if (gap >= 7) { /* (the whole step, from the token before's start) */
    if (dp_grow((void **)&p->tbig, &p->capbig, p->nbig + 1, sizeof *p->tbig) != 0) return -1;
    p->tbig[p->nbig++] = (uint32_t)off - (p->tend - (p->tb[n - 1] & 31u));
    gap = 7;
  }
  if (!(n & (TOK_BLOCK - 1))) {
    p->tbase[b] = (uint32_t)off;
    p->tbigat[b] = p->nbig;
  }
  uint32_t l = end - off < 31 ? (uint32_t)(end - off) : 31;
  p->kinds[n] = kind;
  p->tb[n] = (unsigned char)(l | gap << 5);
  p->tend = (uint32_t)off + l;
  p->ntok = n + 1;
  uint32_t end_block = (b + 1) << TOK_BLOCK_BITS;
  p->tfast = end_block < p->captok - 1 ? end_block : p->captok - 1;
  return 0;
}

/* The token [off, end) (its length kept up to 31, scanned again past);
   room is kept for one more (the final NUL). */
static inline int push(dp_parser *p, char kind, size_t off, size_t end) {
  uint32_t n = p->ntok, gap = (uint32_t)off - p->tend;
  if (n >= p->tfast || gap >= 7) return push_slow(p, kind, off, end);
  uint32_t l = end - off < 31 ? (uint32_t)(end - off) : 31;
  p->kinds[n] = kind;
  p->tb[n] = (unsigned char)(l | gap << 5);
  p->tend = (uint32_t)off + l;
  p->ntok = n + 1;
  return 0;
}

/* Token i's (0-based) offset when its block is not the one asked for
   last: the other block kept, or its block's offsets worked out (into the
   older of the two), from its first token's. */
uint32_t dp__tok_off_slow(dp_parser *p, uint32_t i) {
  uint32_t b = i >> TOK_BLOCK_BITS, s = b << TOK_BLOCK_BITS;
  struct ptcache *c = p->tlast == &p->tcache[0] ? &p->tcache[1] : &p->tcache[0];
  p->tlast = c;
  if (c->block == b && i < c->end) return c->off[i - s];
  uint32_t n = p->ntok - s < TOK_BLOCK ? p->ntok - s : TOK_BLOCK, off = p->tbase[b], big = p->tbigat[b];
  const unsigned char *tb = p->tb + s;
  unsigned last = tb[0];
  c->off[0] = off;
  for (uint32_t j = 1; j < n; j++) {
    unsigned t = tb[j], g = t >> 5;
    c->off[j] = off += g == 7 ? p->tbig[big++] : (last & 31u) + g;
    last = t;
  }
  c->block = b;
  c->end = s + n;
  return c->off[i - s];
}

/* A `(` just before a token that starts a statement opens a block. */
static inline void mark_block_paren(dp_parser *p) {
  if (p->ntok && p->kinds[p->ntok - 1] == DP_TOK_LPAREN) p->kinds[p->ntok - 1] = DP_TOK_LPBLOCK;
}

/* The error token: the message is kept for when the grammar reaches it.
   0, or -1 on out of memory. */
static int lex_error(dp_parser *p, size_t off, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (push(p, DP_TOK_ERROR, off, off + 1) != 0) return -1;
  p->lex_err = dp_err_at(p->ctx, DP_ERR_SYNTAX, dp__span(p, p->ntok), "%s", msg);
  return 0;
}

static char punctuation(const char *t, size_t len, size_t i, size_t *e) {
  char c = t[i], two = i + 1 < len ? t[i + 1] : '\0';
  *e = i + 1;
  switch (c) {
  case '-': if (two == '>') { *e = i + 2; return DP_TOK_ARROW; } return DP_TOK_MINUS;
  case '=':
    if (two == '=' || two == '>') {
      *e = i + 2;
      return two == '=' ? DP_TOK_EQEQ : DP_TOK_FATARROW;
    }
    return DP_TOK_EQ;
  case '<': if (two == '=') { *e = i + 2; return DP_TOK_LE; } return DP_TOK_LT;
  case '>': if (two == '=') { *e = i + 2; return DP_TOK_GE; } return DP_TOK_GT;
  case '!': if (two == '=') { *e = i + 2; return DP_TOK_NE; } break;
  case '(': case ')': case '[': case ']': case '{': case '}': case ',': case ';': case ':':
  case '.': case '?': case '+': case '*': case '/':
    return c;
  default: break;
  }
  *e = invalid_end(t, len, i);
  return DP_TOK_INVALID;
}

/* The kind of the word t[i..e) when it is an identifier or a keyword;
   0 for `_`, `inf`/`nan` and `meta` (word() reads those). */
static inline char word_kind(const char *t, size_t i, size_t e) {
  size_t n = e - i;
  char c = t[i], k;
  if (n == 1 && c == '_') return 0;
  if ((c == 'i' || c == 'n') && is_special_real(t, i, e)) return 0;
  if (n == 4 && c == 'm' && !memcmp(t + i, "meta", 4)) return 0;
  return (k = keyword(t + i, n)) ? k : DP_TOK_IDENT;
}

/* A word at i: an identifier, a keyword, `_`, `inf`/`nan`, meta[..][..];
   0 for a malformed meta reference. */
static char word(const char *t, size_t len, size_t i, size_t *e) {
  size_t open = 0, j;
  *e = name_end(t, len, i);
  if (*e - i == 1 && t[i] == '_') return DP_TOK_UNDERSCORE;
  if ((t[i] == 'i' || t[i] == 'n') && is_special_real(t, i, *e)) return DP_TOK_NUMBER;
  if (*e - i == 4 && !memcmp(t + i, "meta", 4) && (j = skip_space(t, len, *e, &open)) < len && t[j] == '[') {
    *e = meta_end(t, len, i);
    return *e ? DP_TOK_META : 0;
  }
  char k = keyword(t + i, *e - i);
  return k ? k : DP_TOK_IDENT;
}

/* One token at i (white space skipped already). Returns its end; 0 when
   lexing stops (an error token, the metadata section). *rc: -1 out of memory. */
static size_t lex_one(dp_parser *p, size_t i, size_t *depth, int *rc) {
  const char *t = p->text;
  size_t len = p->len, e;
  char c = t[i], kind;
  int after_dot = p->ntok && p->kinds[p->ntok - 1] == DP_TOK_DOT;
  *rc = 0;
  if (c == '%' || c == '@') { /* (a %name here is one without a head) */
    e = name_end(t, len, i + 1);
    kind = e == i + 1 ? DP_TOK_INVALID : c == '%' ? DP_TOK_VAR : DP_TOK_GLOBAL;
  } else if (after_dot && is_digit(c)) {
    e = digits_end(t, len, i);
    kind = DP_TOK_INDEX;
  } else if (is_digit(c) || (c == '-' && number_end(t, len, i) > i)) {
    e = number_end(t, len, i);
    const char *why = number_check(t, i, e);
    if (why) {
      *rc = lex_error(p, i, "%s, found '%.*s'", why, (int)(e - i), t + i);
      return 0;
    }
    kind = DP_TOK_NUMBER;
  } else if (is_alpha(c)) {
    kind = word(t, len, i, &e);
    if (kind == DP_TOK_LET || kind == DP_TOK_FREE_VAR) mark_block_paren(p);
    if (!kind) {
      *rc = lex_error(p, i, "a meta reference is written meta[KIND][INDEX]");
      return 0;
    }
    char after;
    size_t h = kind != DP_TOK_NUMBER && kind != DP_TOK_META ? head_end(t, len, e, &after) : 0;
    if (h && after == '=' && key_allowed(p)) { /* any word may be an attribute's key */
      *rc = push(p, DP_TOK_KEY, i, e);
      return *rc == 0 ? h : 0;
    }
    if (h && after == '(' && kind == DP_TOK_IDENT) { /* a name's call */
      if (++*depth > DP_PARSE_MAX_NEST) {
        *rc = lex_error(p, i, "nested too deeply (more than %d levels of brackets)", DP_PARSE_MAX_NEST);
        return 0;
      }
      *rc = push(p, DP_TOK_CALLEE, i, e);
      return *rc == 0 ? h : 0;
    }
  } else if (c == '"') {
    if (!(e = string_end(t, len, i))) {
      *rc = lex_error(p, i, "a string that is never closed");
      return 0;
    }
    kind = DP_TOK_STRING;
  } else if (c == '#' && (e = header_end(t, len, i))) {
    kind = DP_TOK_HEADER;
  } else if (c == '#' && (e = metadata_end(t, len, i))) {
    *rc = push(p, DP_TOK_METADATA, i, e);
    return 0;
  } else {
    kind = punctuation(t, len, i, &e);
    if ((kind == '(' || kind == '[' || kind == '{') && ++*depth > DP_PARSE_MAX_NEST) {
      *rc = lex_error(p, i, "nested too deeply (more than %d levels of brackets)", DP_PARSE_MAX_NEST);
      return 0;
    }
    if ((kind == ')' || kind == ']' || kind == '}') && *depth) --*depth;
  }
  *rc = push(p, kind, i, e);
  return *rc == 0 ? e : 0;
}

/* The frequent tokens (white space, %names, identifiers and keywords, the
   punctuation of calls) are read in this loop; lex_one reads the rest. */
int dp__lex(dp_parser *p) {
  const char *t = p->text;
  size_t i = 0, len = p->len, depth = 0, open = (size_t)-1;
  /* Room for the tokens of a text a third as many as its bytes, or more
     (a let chain has one every 3.2 bytes): arrays of 4 MiB and more are
     backed by huge pages from the start (dp_malloc), where doubling up to
     them would first fault in their pages one by one. Room not used is
     never touched. */
  uint32_t cap = len < UINT32_MAX ? (uint32_t)(len / 3) + 16 : 16;
  if (size_tokens(p, cap) != 0) return dp__oom(p, 0);
  p->kinds[0] = '\0';
  if (len >= UINT32_MAX) {
    if (lex_error(p, 0, "the text is too large (4 GiB or more)") != 0) return dp__oom(p, 0);
    i = len;
  }
  size_t stop = len; /* (the last byte that is no letter, digit or _: names before it end by it) */
  while (stop > 0 && is_alnum(t[stop - 1])) stop--;
  stop = stop ? stop - 1 : 0;
  while (i < len) {
    char c = t[i];
    if (is_space(c)) { /* (a run of it: a line's end and the next one's indentation) */
      while (++i < len && is_space(t[i])) {}
      continue;
    }
    if (c == '%' && i + 1 < len && is_alnum(t[i + 1])) {
      char after;
      size_t e = name_end_before(t, len, i + 1, stop), h = head_end(t, len, e, &after);
      int bind = h && after == '=';
      p->nbinds += bind;
      if (bind) mark_block_paren(p);
      if (push(p, bind ? DP_TOK_BIND : DP_TOK_VAR, i, e) != 0) return dp__oom(p, 0);
      i = bind ? h : e;
      continue;
    }
    size_t e;
    char kind;
    if (is_alpha(c) && depth < DP_PARSE_MAX_NEST && /* (at the limit, lex_one says a call is too deep) */
        (kind = word_kind(t, i, e = name_end_before(t, len, i, stop)))) {
      char after; /* (a name or keyword: not inf, nan, meta or `_`; as lex_one reads it) */
      size_t h = head_end(t, len, e, &after);
      if (kind == DP_TOK_LET || kind == DP_TOK_FREE_VAR) mark_block_paren(p);
      if (h && after == '=' && !key_allowed(p)) h = 0; /* (any word may be a key) */
      if (h && after == '(' && kind != DP_TOK_IDENT) h = 0; /* (a name's call; a keyword's `(` is its own) */
      if (h && after == '(') depth++;
      if (push(p, !h ? kind : after == '(' ? DP_TOK_CALLEE : DP_TOK_KEY, i, e) != 0)
        return dp__oom(p, 0);
      i = h ? h : e;
      continue;
    }
    if (c == ',' || c == ';' || c == ')') {
      if (c == ')' && depth) depth--;
      if (push(p, c, i, i + 1) != 0) return dp__oom(p, 0);
      i++;
      continue;
    }
    if (c == '/') { /* a comment, or the operator */
      size_t j = skip_space(t, len, i, &open);
      if (open != (size_t)-1) {
        if (lex_error(p, open, "a comment that is never closed ('/*' with no '*/')") != 0) return dp__oom(p, 0);
        break;
      }
      if (j != i) {
        i = j;
        continue;
      }
    }
    int rc;
    i = lex_one(p, i, &depth, &rc);
    if (rc != 0) return dp__oom(p, 0);
    if (!i) break;
  }
  p->kinds[p->ntok] = '\0';
  return 0;
}

/* ---------------- token values ---------------- */

const char *dp__string_value(dp_parser *p, uint32_t tok) {
  size_t off = dp__tok_off(p, tok), end = string_end(p->text, p->len, off), n = 0;
  char *out = dp__scratch(p, end - off + 1);
  if (!out) return NULL;
  for (size_t j = off + 1; j + 1 < end; j++) {
    char c = p->text[j];
    if (c == '\\' && j + 2 < end) {
      c = p->text[++j];
      c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
    }
    out[n++] = c;
  }
  out[n] = '\0';
  return out;
}

int dp__meta_parts(dp_parser *p, uint32_t tok, const char **kind, int64_t *index) {
  const char *t = p->text;
  size_t open = 0, j = skip_space(t, p->len, dp__tok_off(p, tok) + 4, &open);
  size_t k = skip_space(t, p->len, j + 1, &open), ke = name_end(t, p->len, k);
  j = skip_space(t, p->len, skip_space(t, p->len, ke, &open) + 1, &open);
  j = skip_space(t, p->len, j + 1, &open);
  int64_t v = 0;
  for (; is_digit(t[j]); j++) {
    if (v > (INT64_MAX - 9) / 10) return dp__fail(p, DP_ERR_VALUE, tok, "meta index out of range");
    v = v * 10 + (t[j] - '0');
  }
  *index = v;
  *kind = dp__cname(p, t + k, ke - k);
  return *kind ? 0 : dp__oom(p, tok);
}
