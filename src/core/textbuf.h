/*
 * A growable text buffer for the core's string builders (internal).
 * Out of memory is sticky: once an append fails, dp_tb_take returns NULL,
 * so a builder can append freely and check once at the end.
 */
#ifndef DEVPLAN_TEXTBUF_H
#define DEVPLAN_TEXTBUF_H

#include <stddef.h>

typedef struct dp_tb {
  char *s;
  size_t n, cap;
  int failed;
} dp_tb;

void dp_tb_init(dp_tb *b);
/* Room for `extra` more bytes and the NUL; 0, or -1 (sticky) on out of memory. */
int dp_tb_reserve(dp_tb *b, size_t extra);
void dp_tb_putn(dp_tb *b, const char *s, size_t n);
void dp_tb_puts(dp_tb *b, const char *s);
void dp_tb_putc(dp_tb *b, char c);
void dp_tb_printf(dp_tb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as the text format's string: double-quoted, `"` `\` newline and tab
   escaped (what the lexer reads back to s). */
void dp_tb_put_quoted(dp_tb *b, const char *s);
/* The malloc'd string (NUL-terminated), or NULL when an append failed.
   The buffer is reset either way. */
char *dp_tb_take(dp_tb *b);
void dp_tb_free(dp_tb *b);

#endif
