/*
 * JSON reading and writing for the metadata section (json.h), and the
 * base64 of TVM's arrays. The reader is one pass over the text with an
 * explicit stack of open containers; it copies nothing (a megabyte string
 * of weights stays where it is until it is decoded, once).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/core.h"
#include "json.h"

/* ---------------- reading ---------------- */

static int push_val(dp__jdoc *d, uint8_t kind, size_t off, size_t len) {
  if (d->n == d->cap) {
    uint32_t cap = d->cap ? d->cap * 2 : 256;
    dp__jval *v = cap > d->cap ? dp_realloc(d->v, (size_t)cap * sizeof *v) : NULL;
    if (!v) return -1;
    d->v = v;
    d->cap = cap;
  }
  d->v[d->n] = (dp__jval){kind, 0, 0, d->n + 1, off, len};
  d->n++;
  return 0;
}

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int is_dig(char c) { return c >= '0' && c <= '9'; }

static int hex4(const char *t, size_t i, size_t end) {
  if (i + 4 > end) return 0;
  for (size_t k = i; k < i + 4; k++) {
    char c = t[k];
    if (!is_dig(c) && !((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return 0;
  }
  return 1;
}

/* A string from the quote at *i: its end (past the closing quote), or 0. */
static size_t scan_string(const char *t, size_t i, size_t end, int *escaped, const char **why) {
  for (i++; i < end; i++) {
    unsigned char c = (unsigned char)t[i];
    if (c == '"') return i + 1;
    if (c < 0x20) {
      *why = "a control character in a string";
      return 0;
    }
    if (c != '\\') continue;
    *escaped = 1;
    if (++i >= end) break;
    if (t[i] == 'u') {
      if (!hex4(t, i + 1, end)) {
        *why = "a bad \\u escape";
        return 0;
      }
      i += 4;
    } else if (!strchr("\"\\/bfnrt", t[i]) || !t[i]) {
      *why = "a bad escape in a string";
      return 0;
    }
  }
  *why = "a string that is never closed";
  return 0;
}

static size_t scan_number(const char *t, size_t i, size_t end) {
  size_t s = i;
  if (i < end && t[i] == '-') i++;
  if (i < end && t[i] == '0') i++;
  else if (i < end && is_dig(t[i])) while (i < end && is_dig(t[i])) i++;
  else return s;
  if (i + 1 < end && t[i] == '.' && is_dig(t[i + 1])) for (i++; i < end && is_dig(t[i]);) i++;
  if (i < end && (t[i] == 'e' || t[i] == 'E')) {
    size_t k = i + 1;
    if (k < end && (t[k] == '+' || t[k] == '-')) k++;
    if (k < end && is_dig(t[k])) for (i = k; i < end && is_dig(t[i]);) i++;
  }
  return i;
}

enum { S_VALUE, S_AFTER, S_KEY, S_FIRST_KEY, S_FIRST_ITEM, S_END };

/* The value just made is complete: its container counts it. */
static int completed(dp__jdoc *d, const uint32_t *st, uint32_t nst) {
  if (!nst) return S_END;
  d->v[st[nst - 1]].n++;
  return S_AFTER;
}

int dp__json_read(dp__jdoc *d, const char *t, size_t start, size_t len, size_t *at, const char **why) {
  uint32_t *st = NULL, nst = 0, capst = 0;
  size_t i = start, end = start + len;
  int state = S_VALUE;
  memset(d, 0, sizeof *d);
  d->text = t;
  *why = NULL;
  while (!*why) {
    while (i < end && is_ws(t[i])) i++;
    if (state == S_END) {
      if (i < end) *why = "something after the JSON value";
      break;
    }
    if (i >= end) {
      *why = "the JSON text ends too early";
      break;
    }
    char c = t[i];
    if (state == S_AFTER) {
      uint32_t top = st[nst - 1];
      char close = d->v[top].kind == DP__J_OBJ ? '}' : ']';
      if (c == ',') {
        state = d->v[top].kind == DP__J_OBJ ? S_KEY : S_VALUE;
        i++;
      } else if (c == close) {
        d->v[top].next = d->n;
        nst--;
        i++;
        state = completed(d, st, nst);
      } else {
        *why = close == '}' ? "expected ',' or '}'" : "expected ',' or ']'";
      }
      continue;
    }
    if (state == S_KEY || state == S_FIRST_KEY) {
      if (state == S_FIRST_KEY && c == '}') {
        d->v[st[--nst]].next = d->n;
        i++;
        state = completed(d, st, nst);
        continue;
      }
      int esc = 0;
      size_t e = c == '"' ? scan_string(t, i, end, &esc, why) : 0;
      if (!e) {
        if (!*why) *why = "expected a member name (a string)";
        break;
      }
      if (push_val(d, DP__J_STR, i + 1, e - i - 2) != 0) goto oom;
      d->v[d->n - 1].escaped = (uint8_t)esc;
      for (i = e; i < end && is_ws(t[i]);) i++;
      if (i >= end || t[i] != ':') {
        *why = "expected ':'";
        break;
      }
      i++;
      state = S_VALUE;
      continue;
    }
    if (state == S_FIRST_ITEM && c == ']') {
      d->v[st[--nst]].next = d->n;
      i++;
      state = completed(d, st, nst);
      continue;
    }
    /* a value */
    if (c == '{' || c == '[') {
      if (push_val(d, c == '{' ? DP__J_OBJ : DP__J_ARR, i, 1) != 0) goto oom;
      if (nst == capst && dp_grow((void **)&st, &capst, nst + 1, sizeof *st) != 0) goto oom;
      st[nst++] = d->n - 1;
      state = c == '{' ? S_FIRST_KEY : S_FIRST_ITEM;
      i++;
      continue;
    }
    size_t e = 0;
    int esc = 0;
    uint8_t kind = 0;
    if (c == '"') {
      e = scan_string(t, i, end, &esc, why);
      kind = DP__J_STR;
    } else if (c == '-' || is_dig(c)) {
      e = scan_number(t, i, end);
      kind = DP__J_NUM;
      if (e == i) e = 0;
    } else {
      static const struct { const char *w; uint8_t kind; } words[] = {
        {"true", DP__J_BOOL}, {"false", DP__J_BOOL}, {"null", DP__J_NULL}};
      for (size_t k = 0; k < 3 && !e; k++) {
        size_t n = strlen(words[k].w);
        if (i + n <= end && !memcmp(t + i, words[k].w, n)) e = i + n, kind = words[k].kind;
      }
    }
    if (!e) {
      if (!*why) *why = "expected a JSON value";
      break;
    }
    if (kind == DP__J_STR ? push_val(d, kind, i + 1, e - i - 2) : push_val(d, kind, i, e - i)) goto oom;
    d->v[d->n - 1].escaped = (uint8_t)esc;
    i = e;
    state = completed(d, st, nst);
  }
  free(st);
  if (!*why) return 0;
  *at = i;
  dp__json_free(d);
  return -1;
oom:
  free(st);
  *at = i;
  *why = "out of memory";
  dp__json_free(d);
  return -1;
}

void dp__json_free(dp__jdoc *d) {
  free(d->v);
  d->v = NULL;
  d->n = d->cap = 0;
}

int dp__json_is(const dp__jdoc *d, uint32_t i, const char *s) {
  if (i >= d->n || d->v[i].kind != DP__J_STR) return 0;
  size_t n;
  char *tmp = NULL;
  const char *b = dp__json_string(d, i, &n, &tmp);
  int eq = b && n == strlen(s) && !memcmp(b, s, n);
  free(tmp);
  return eq;
}

uint32_t dp__json_member(const dp__jdoc *d, uint32_t o, const char *key) {
  if (o >= d->n || d->v[o].kind != DP__J_OBJ) return DP__J_NONE;
  uint32_t k = o + 1;
  for (uint32_t m = 0; m < d->v[o].n; m++) {
    uint32_t val = k + 1; /* a key is a string: its subtree is itself */
    if (dp__json_is(d, k, key)) return val;
    k = d->v[val].next;
  }
  return DP__J_NONE;
}

uint32_t dp__json_item(const dp__jdoc *d, uint32_t a, uint32_t i) {
  if (a >= d->n || d->v[a].kind != DP__J_ARR || i >= d->v[a].n) return DP__J_NONE;
  uint32_t k = a + 1;
  while (i--) k = d->v[k].next;
  return k;
}

static int hexv(char c) {
  return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

static char *utf8(char *o, unsigned cp) {
  if (cp < 0x80) {
    *o++ = (char)cp;
  } else if (cp < 0x800) {
    *o++ = (char)(0xC0 | (cp >> 6));
    *o++ = (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *o++ = (char)(0xE0 | (cp >> 12));
    *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
    *o++ = (char)(0x80 | (cp & 0x3F));
  } else {
    *o++ = (char)(0xF0 | (cp >> 18));
    *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
    *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
    *o++ = (char)(0x80 | (cp & 0x3F));
  }
  return o;
}

const char *dp__json_string(const dp__jdoc *d, uint32_t i, size_t *n, char **tmp) {
  *tmp = NULL;
  if (i >= d->n || d->v[i].kind != DP__J_STR) return NULL;
  const char *s = d->text + d->v[i].off;
  size_t len = d->v[i].len;
  if (!d->v[i].escaped) {
    *n = len;
    return s;
  }
  char *out = dp_malloc(len + 1), *o = out; /* (an escape never decodes longer) */
  if (!out) return NULL;
  for (size_t k = 0; k < len; k++) {
    if (s[k] != '\\') {
      *o++ = s[k];
      continue;
    }
    char e = s[++k];
    if (e != 'u') {
      const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
      *o++ = to[strchr(from, e) - from];
      continue;
    }
    unsigned cp = 0;
    for (int h = 1; h <= 4; h++) cp = cp * 16 + (unsigned)hexv(s[k + h]);
    k += 4;
    if (cp >= 0xD800 && cp < 0xDC00 && k + 6 < len && s[k + 1] == '\\' && s[k + 2] == 'u') {
      unsigned lo = 0;
      for (int h = 3; h <= 6; h++) lo = lo * 16 + (unsigned)hexv(s[k + h]);
      if (lo >= 0xDC00 && lo < 0xE000) {
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        k += 6;
      }
    }
    o = utf8(o, cp);
  }
  *o = '\0';
  *n = (size_t)(o - out);
  *tmp = out;
  return out;
}

/* The number's text (or a string's) NUL-terminated in buf; NULL if none. */
static const char *number_text(const dp__jdoc *d, uint32_t i, char *buf, size_t cap) {
  if (i >= d->n || (d->v[i].kind != DP__J_NUM && d->v[i].kind != DP__J_STR) || d->v[i].len >= cap ||
      d->v[i].escaped)
    return NULL;
  memcpy(buf, d->text + d->v[i].off, d->v[i].len);
  buf[d->v[i].len] = '\0';
  return buf;
}

int dp__json_int(const dp__jdoc *d, uint32_t i, int64_t *out) {
  char buf[64], *e;
  const char *s = number_text(d, i, buf, sizeof buf);
  if (!s || !*s) return -1;
  errno = 0;
  long long v = strtoll(s, &e, 10);
  if (*e || errno) return -1;
  *out = v;
  return 0;
}

int dp__json_real(const dp__jdoc *d, uint32_t i, double *out) {
  char buf[64], *e;
  const char *s = number_text(d, i, buf, sizeof buf);
  if (!s || !*s) return -1;
  double v = strtod(s, &e);
  if (*e) return -1;
  *out = v;
  return 0;
}

/* ---------------- writing (dmlc's JSONWriter layout) ---------------- */

static void separator(dp__jw *w) {
  if (w->depth && !w->multi[w->depth - 1]) return;
  dp__tb_putc(w->b, '\n');
  for (uint32_t k = 0; k < w->depth; k++) dp__tb_puts(w->b, "  ");
}

void dp__jw_begin(dp__jw *w, char open, int multi_line) {
  dp__tb_putc(w->b, open);
  if (w->depth < sizeof w->multi) {
    w->multi[w->depth] = (uint8_t)multi_line;
    w->count[w->depth] = 0;
  }
  w->depth++;
}

void dp__jw_end(dp__jw *w, char close) {
  w->depth--;
  int newline = w->depth < sizeof w->multi && w->multi[w->depth] && w->count[w->depth];
  if (newline) separator(w);
  dp__tb_putc(w->b, close);
}

static void next_item(dp__jw *w) {
  if (w->count[w->depth - 1]++) dp__tb_puts(w->b, ", ");
  separator(w);
}

void dp__jw_key(dp__jw *w, const char *key) {
  next_item(w);
  dp__jw_string(w, key, strlen(key));
  dp__tb_puts(w->b, ": ");
}

void dp__jw_item(dp__jw *w) { next_item(w); }

void dp__jw_string(dp__jw *w, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  dp__tb_putc(w->b, '"');
  for (size_t k = 0; k < n; k++) {
    unsigned char c = (unsigned char)s[k];
    switch (c) {
    case '"': dp__tb_puts(w->b, "\\\""); break;
    case '\\': dp__tb_puts(w->b, "\\\\"); break;
    case '\t': dp__tb_puts(w->b, "\\t"); break;
    case '\n': dp__tb_puts(w->b, "\\n"); break;
    case '\r': dp__tb_puts(w->b, "\\r"); break;
    default:
      if (c < 0x20) {
        char u[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
        dp__tb_puts(w->b, u);
      } else {
        dp__tb_putc(w->b, (char)c);
      }
    }
  }
  dp__tb_putc(w->b, '"');
}

/* ---------------- base64 ---------------- */

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* 0..63, 64 for '=', 255 otherwise */
static unsigned char b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return (unsigned char)(c - 'A');
  if (c >= 'a' && c <= 'z') return (unsigned char)(c - 'a' + 26);
  if (c >= '0' && c <= '9') return (unsigned char)(c - '0' + 52);
  if (c == '+') return 62;
  if (c == '/') return 63;
  return c == '=' ? 64 : 255;
}

unsigned char *dp__b64_decode(const char *s, size_t len, size_t *n, int *bad) {
  *bad = 0;
  while (len && s[len - 1] == '=') len--; /* (padding is optional) */
  if (len % 4 == 1) {
    *bad = 1;
    return NULL;
  }
  unsigned char table[256];
  for (int c = 0; c < 256; c++) table[c] = b64_value((unsigned char)c);
  unsigned char *out = dp_malloc(len / 4 * 3 + 3), *o = out;
  if (!out) return NULL;
  size_t k = 0;
  for (; k + 4 <= len; k += 4) {
    unsigned a = table[(unsigned char)s[k]], b = table[(unsigned char)s[k + 1]];
    unsigned c = table[(unsigned char)s[k + 2]], e = table[(unsigned char)s[k + 3]];
    if ((a | b | c | e) > 63) goto bad;
    unsigned v = a << 18 | b << 12 | c << 6 | e;
    *o++ = (unsigned char)(v >> 16);
    *o++ = (unsigned char)(v >> 8);
    *o++ = (unsigned char)v;
  }
  if (k < len) { /* 2 or 3 characters: 1 or 2 bytes */
    unsigned a = table[(unsigned char)s[k]], b = table[(unsigned char)s[k + 1]];
    unsigned c = k + 2 < len ? table[(unsigned char)s[k + 2]] : 0;
    if ((a | b | c) > 63) goto bad;
    unsigned v = a << 18 | b << 12 | c << 6;
    *o++ = (unsigned char)(v >> 16);
    if (k + 2 < len) *o++ = (unsigned char)(v >> 8);
  }
  *n = (size_t)(o - out);
  return out;
bad:
  free(out);
  *bad = 1;
  return NULL;
}

void dp__b64_encode(dp__tb *b, const unsigned char *d, size_t n) {
  if (dp__tb_reserve(b, (n + 2) / 3 * 4) < 0) return;
  char *o = b->s + b->n;
  size_t k = 0;
  for (; k + 3 <= n; k += 3) {
    unsigned v = (unsigned)d[k] << 16 | (unsigned)d[k + 1] << 8 | d[k + 2];
    *o++ = B64[v >> 18];
    *o++ = B64[(v >> 12) & 63];
    *o++ = B64[(v >> 6) & 63];
    *o++ = B64[v & 63];
  }
  if (k < n) {
    unsigned v = (unsigned)d[k] << 16 | (k + 1 < n ? (unsigned)d[k + 1] << 8 : 0);
    *o++ = B64[v >> 18];
    *o++ = B64[(v >> 12) & 63];
    *o++ = k + 1 < n ? B64[(v >> 6) & 63] : '=';
    *o++ = '=';
  }
  b->n = (size_t)(o - b->s);
  b->s[b->n] = '\0';
}
