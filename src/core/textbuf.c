/*
 * Growable text buffer used by the core's string builders (type and
 * attribute text). Failure is sticky so callers check once at the end.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/core.h"
#include "textbuf.h"

void dp__tb_init(dp__tb *b) {
  memset(b, 0, sizeof *b);
}

int dp__tb_flush(dp__tb *b) {
  if (b->failed) return -1;
  if (!b->write || !b->n) return 0;
  if (b->write(b->ud, b->s, b->n) < 0) {
    b->failed = 1;
    return -1;
  }
  b->flushed += b->n;
  b->n = 0;
  b->s[0] = 0;
  return 0;
}

int dp__tb_reserve(dp__tb *b, size_t extra) {
  if (b->failed) return -1;
  if (b->n + extra + 1 <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->n + extra + 1) cap *= 2;
  char *s = dp_realloc(b->s, cap);
  if (!s) {
    b->failed = 1;
    return -1;
  }
  b->s = s;
  b->cap = cap;
  return 0;
}

void dp__tb_putn(dp__tb *b, const char *s, size_t n) {
  if (dp__tb_reserve(b, n) < 0) return;
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = 0;
}

void dp__tb_puts(dp__tb *b, const char *s) { dp__tb_putn(b, s, strlen(s)); }

void dp__tb_putc(dp__tb *b, char c) { dp__tb_putn(b, &c, 1); }

void dp__tb_put_quoted(dp__tb *b, const char *s) {
  dp__tb_putc(b, '"');
  for (; *s; s++) {
    switch (*s) {
    case '"': dp__tb_puts(b, "\\\""); break;
    case '\\': dp__tb_puts(b, "\\\\"); break;
    case '\n': dp__tb_puts(b, "\\n"); break;
    case '\t': dp__tb_puts(b, "\\t"); break;
    default: dp__tb_putc(b, *s);
    }
  }
  dp__tb_putc(b, '"');
}

void dp__tb_printf(dp__tb *b, const char *fmt, ...) {
  char small[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->failed = 1;
    return;
  }
  if ((size_t)n < sizeof small) {
    dp__tb_putn(b, small, (size_t)n);
    return;
  }
  if (dp__tb_reserve(b, (size_t)n) < 0) return;
  va_start(ap, fmt);
  vsnprintf(b->s + b->n, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)n;
}

char *dp__tb_take(dp__tb *b) {
  char *s = NULL;
  if (!b->failed) {
    if (b->s) b->s[b->n] = 0; /* (a writer may append without it: print.c) */
    s = b->s ? b->s : dp_calloc(1, 1);
    /* a large text gives its doubling slack back before its caller copies
       it (into a Lua string): the peak is then twice the text, not up to
       three times (shrinking moves nothing) */
    if (b->s && b->cap - b->n > (1u << 16) && b->cap - b->n > b->n / 8) {
      char *t = dp_realloc(b->s, b->n + 1);
      if (t) s = t;
    }
    b->s = NULL;
  }
  dp__tb_free(b);
  return s;
}

void dp__tb_free(dp__tb *b) {
  free(b->s);
  dp__tb_init(b);
}
