/*
 * Errors as values: a code, a message, a span and notes.
 * Nothing here aborts; on out of memory a static error stands in. Errors
 * know nothing of contexts (dp_err_at, which names a context's source, is
 * in context.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static dp_err oom_error = {DP_ERR_MEMORY, "out of memory", {0, 0, 0}, NULL, 0, NULL};

dp_err *dp__err_v(dp_errcode code, dp_span span, const char *source, const char *fmt, va_list ap) {
  dp_err *e = dp_calloc(1, sizeof *e);
  if (!e) return &oom_error;
  e->code = code;
  e->span = span;
  e->msg = dp_vformat(fmt, ap);
  e->source = source ? dp_strdup(source) : NULL;
  if (!e->msg || (source && !e->source)) {
    dp_err_free(e);
    return &oom_error;
  }
  return e;
}

dp_err *dp_err_new(dp_errcode code, dp_span span, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dp_err *e = dp__err_v(code, span, NULL, fmt, ap);
  va_end(ap);
  return e;
}

int dp_err_note(dp_err *err, dp_span span, const char *fmt, ...) {
  if (!err || err == &oom_error) return -1;
  dp_note *notes = dp_realloc(err->notes, (err->nnotes + 1) * sizeof *notes);
  if (!notes) return -1;
  err->notes = notes;
  va_list ap;
  va_start(ap, fmt);
  char *msg = dp_vformat(fmt, ap);
  va_end(ap);
  if (!msg) return -1;
  notes[err->nnotes].msg = msg;
  notes[err->nnotes].span = span;
  err->nnotes++;
  return 0;
}

void dp_err_set(dp_err **out, dp_err *e) {
  if (out && !*out) *out = e;
  else dp_err_free(e);
}

static int append(char **buf, size_t *len, size_t *cap, const char *s) {
  size_t n = strlen(s);
  if (*len + n + 1 > *cap) {
    size_t c = (*cap ? *cap : 64);
    while (*len + n + 1 > c) c *= 2;
    char *b = dp_realloc(*buf, c);
    if (!b) return -1;
    *buf = b;
    *cap = c;
  }
  memcpy(*buf + *len, s, n + 1);
  *len += n;
  return 0;
}

char *dp_err_format(const dp_err *err) {
  char *buf = NULL;
  size_t len = 0, cap = 0;
  char pos[64];
  if (!err) return dp_strdup("(no error)");
  if (err->span.line) {
    if (append(&buf, &len, &cap, err->source ? err->source : "<unknown>") < 0) goto oom;
    snprintf(pos, sizeof pos, ":%u:%u: ", err->span.line, err->span.col);
    if (append(&buf, &len, &cap, pos) < 0) goto oom;
  }
  if (append(&buf, &len, &cap, err->msg ? err->msg : "error") < 0) goto oom;
  for (uint32_t i = 0; i < err->nnotes; i++) {
    if (append(&buf, &len, &cap, "\n  ") < 0) goto oom;
    if (err->notes[i].span.line) {
      snprintf(pos, sizeof pos, "%u:%u: ", err->notes[i].span.line, err->notes[i].span.col);
      if (append(&buf, &len, &cap, pos) < 0) goto oom;
    }
    if (append(&buf, &len, &cap, err->notes[i].msg) < 0) goto oom;
  }
  return buf;
oom:
  free(buf);
  return NULL;
}

void dp_err_free(dp_err *err) {
  if (!err || err == &oom_error) return;
  for (uint32_t i = 0; i < err->nnotes; i++) free(err->notes[i].msg);
  free(err->notes);
  free(err->msg);
  free(err->source);
  free(err);
}
