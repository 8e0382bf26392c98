/*
 * JSON for the metadata section (internal): a reader that makes a flat
 * array of values over the text (no copies: strings and numbers stay
 * spans of the text until asked for), and a writer that lays JSON out as
 * TVM's (dmlc's) JSONWriter does, so that a section devplan writes reads
 * like one TVM wrote.
 *
 * Reader: values are in pre-order; the children of value i start at
 * i + 1, and each value knows where its subtree ends (`next`), so that a
 * member is found by walking siblings. An object's children alternate
 * key (a string) and value. Nesting is read with an explicit stack, so
 * any depth is fine.
 */
#ifndef DEVPLAN_JSON_H
#define DEVPLAN_JSON_H

#include <stddef.h>
#include <stdint.h>
#include "textbuf.h"

enum { DP__J_NULL = 1, DP__J_BOOL, DP__J_NUM, DP__J_STR, DP__J_ARR, DP__J_OBJ };

#define DP__J_NONE UINT32_MAX /* no such value */

typedef struct dp__jval {
  uint8_t kind;
  uint8_t escaped;   /* a string with a backslash in it */
  uint32_t n;        /* array: items; object: members */
  uint32_t next;     /* the index just past this value's subtree */
  size_t off, len;   /* its text; a string's without the quotes */
} dp__jval;

typedef struct dp__jdoc {
  const char *text;  /* borrowed */
  dp__jval *v;
  uint32_t n, cap;
} dp__jdoc;

/* Reads the JSON value in text[start..start + len) (white space around it
   allowed, nothing else). 0, or -1 with *at (an offset into text) and
   *why set (*why "out of memory" when that is it). */
int dp__json_read(dp__jdoc *d, const char *text, size_t start, size_t len, size_t *at, const char **why);
void dp__json_free(dp__jdoc *d);
/* The value of member `key` of object o, or DP__J_NONE. */
uint32_t dp__json_member(const dp__jdoc *d, uint32_t o, const char *key);
/* The i-th item of array a (i < its n), found by walking siblings. */
uint32_t dp__json_item(const dp__jdoc *d, uint32_t a, uint32_t i);
/* A string's bytes: a pointer into the text (*tmp NULL), or, with
   escapes, a malloc'd decoding in *tmp (free it). *n gets the length.
   NULL when value i is no string or out of memory. */
const char *dp__json_string(const dp__jdoc *d, uint32_t i, size_t *n, char **tmp);
/* Whether value i is a string equal to s. */
int dp__json_is(const dp__jdoc *d, uint32_t i, const char *s);
/* A number (or a string holding one, as TVM writes attributes): 0 and
   *out, or -1. Integers must be integers. */
int dp__json_int(const dp__jdoc *d, uint32_t i, int64_t *out);
int dp__json_real(const dp__jdoc *d, uint32_t i, double *out);

/* Writer: dmlc's JSONWriter layout (an object or an array is multi-line
   as TVM chooses; ", " between items, two spaces per level). */
typedef struct dp__jw {
  dp__tb *b;
  uint32_t depth;
  uint8_t multi[64];    /* per open scope: multi-line */
  uint32_t count[64];   /* per open scope: items written */
} dp__jw;

void dp__jw_begin(dp__jw *w, char open, int multi_line);
void dp__jw_end(dp__jw *w, char close);
/* Before an object member's value: its key. */
void dp__jw_key(dp__jw *w, const char *key);
/* Before an array item. */
void dp__jw_item(dp__jw *w);
void dp__jw_string(dp__jw *w, const char *s, size_t n);

/* Base64 (RFC 4648, padded) as TVM stores arrays. decode: *n bytes into a
   malloc'd buffer, NULL when malformed or out of memory (*bad tells). */
unsigned char *dp__b64_decode(const char *s, size_t len, size_t *n, int *bad);
void dp__b64_encode(dp__tb *b, const unsigned char *data, size_t n);

#endif
