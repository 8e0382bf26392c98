/*
 * A growable text buffer for the core's string builders (internal).
 * Out of memory is sticky: once an append fails, dp__tb_take returns NULL,
 * so a builder can append freely and check once at the end.
 */
#ifndef DEVPLAN_TEXTBUF_H
#define DEVPLAN_TEXTBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct dp__tb {
  char *s;
  size_t n, cap;
  int failed;
  /* streaming (dp__tb_flush): the bytes so far go to write(ud, s, n) (0, or
     -1: failed) and the buffer starts again; NULL: a plain buffer */
  int (*write)(void *ud, const char *s, size_t n);
  void *ud;
  uint64_t flushed;  /* bytes written so far */
  int inner;         /* a writer may also flush inside a function (print.c) */
  /* the caller's block (dp__tb_block): NULL, s is malloc'd */
  const struct dp_print_block *block;
} dp__tb;

void dp__tb_init(dp__tb *b);
/* Room for `extra` more bytes and the NUL; 0, or -1 (sticky) on out of memory. */
int dp__tb_reserve(dp__tb *b, size_t extra);
void dp__tb_putn(dp__tb *b, const char *s, size_t n);
void dp__tb_puts(dp__tb *b, const char *s);
void dp__tb_putc(dp__tb *b, char c);
void dp__tb_printf(dp__tb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as the text format's string: double-quoted, `"` `\` newline and tab
   escaped (what the lexer reads back to s). */
void dp__tb_put_quoted(dp__tb *b, const char *s);
/* Streaming: the bytes so far written out (none without a writer); a failed
   write is sticky, as out of memory. 0, or -1. */
int dp__tb_flush(dp__tb *b);
/* Flush when at least this many bytes wait (fewer, larger writes). */
#define DP__TB_FLUSH_AT ((size_t)1 << 20)
/* The malloc'd string (NUL-terminated), or NULL when an append failed.
   The buffer is reset either way. */
char *dp__tb_take(dp__tb *b);
void dp__tb_free(dp__tb *b);
/* A buffer whose text lives in one block of blk's allocator, at blk->head
   (blk NULL: malloc, as dp__tb_init). dp__tb_take then returns the text in
   that block, which is blk->head + length + 1 bytes (the NUL last), and the
   caller owns the block. */
void dp__tb_init_block(dp__tb *b, const struct dp_print_block *blk);

#endif
