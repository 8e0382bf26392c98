/*
 * Growable text buffer used by the core's string builders (type and
 * attribute text, the printer's output). Failure is sticky so callers
 * check once at the end. Its storage is malloc's, or one block of a
 * caller's allocator with room before the text (dp__tb_init_block: a text
 * Lua adopts as a string without copying it, src/lua/l_aux.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/core.h"
#include "devplan/print.h"
#include "textbuf.h"

void dp__tb_init(dp__tb *b) {
  memset(b, 0, sizeof *b);
}

void dp__tb_init_block(dp__tb *b, const dp_print_block *blk) {
  memset(b, 0, sizeof *b);
  b->block = blk;
}

/* The storage resized to cap text bytes (0: freed); NULL on failure, the
   old storage kept. */
static char *resize(dp__tb *b, size_t cap) {
  const dp_print_block *k = b->block;
  if (!k) {
    if (cap) return dp_realloc(b->s, cap);
    free(b->s);
    return NULL;
  }
  char *raw = b->s ? b->s - k->head : NULL;
  char *r = k->alloc(k->ud, raw, raw ? k->head + b->cap : 0, cap ? k->head + cap : 0);
  return r ? r + k->head : NULL;
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
  char *s = resize(b, cap);
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

/* A block buffer's text: its block made exactly head + n + 1 bytes. */
static char *take_block(dp__tb *b) {
  char *s = NULL;
  if (!b->failed && dp__tb_reserve(b, 0) == 0) { /* (an empty text has no block yet) */
    b->s[b->n] = 0;
    s = b->cap == b->n + 1 ? b->s : resize(b, b->n + 1);
    if (s) b->s = NULL;
  }
  dp__tb_free(b);
  return s;
}

char *dp__tb_take(dp__tb *b) {
  if (b->block) return take_block(b);
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
  const dp_print_block *k = b->block;
  if (b->s) resize(b, 0);
  dp__tb_init_block(b, k);
}
