/*
 * Reading targets from text: the string form ("cuda -arch=sm_80
 * -host='llvm -mcpu=skylake'") and the JSON object form
 * ('{"kind": "cuda", "max_num_threads": 1024, "host": "llvm"}'), with a
 * small strict JSON reader. Both collect a kind, raw options and a host,
 * then hand them to dp_target_make, which types and interns them.
 * Errors say what is wrong and where (offset, or line and column in JSON).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/device.h"

/* Raw options collected while reading. */
typedef struct rawopts {
  dp_target_opt *v;
  uint32_t n, cap;
  char *kind;
  dp_target *host;
} rawopts;

static void raw_free(rawopts *r) {
  for (uint32_t i = 0; i < r->n; i++) {
    free(r->v[i].key);
    free(r->v[i].str);
  }
  free(r->v);
  free(r->kind);
  dp_release(r->host);
  memset(r, 0, sizeof *r);
}

/* Appends an option; takes ownership of key and str. -1 on out of memory. */
static int raw_add(rawopts *r, char *key, dp_optkind kind, char *str, int64_t num) {
  if (!key || (kind != DP_OPT_INT && kind != DP_OPT_BOOL && !str)) goto oom;
  if (r->n == r->cap) {
    uint32_t cap = r->cap ? r->cap * 2 : 8;
    dp_target_opt *v = realloc(r->v, cap * sizeof *v);
    if (!v) goto oom;
    r->v = v;
    r->cap = cap;
  }
  r->v[r->n++] = (dp_target_opt){key, kind, str, num};
  return 0;
oom:
  free(key);
  free(str);
  return -1;
}

static dp_target *finish(dp_ctx *ctx, rawopts *r, dp_err **err) {
  dp_target *t = dp_target_make(ctx, r->kind, r->v, r->n, r->host, err);
  raw_free(r);
  return t;
}

static dp_target *parse_text(dp_ctx *ctx, const char *text, int allow_host, dp_err **err);
static dp_target *parse_json(dp_ctx *ctx, const char *text, dp_err **err);

/* ---------------- string form ---------------- */

/* Reads one blank-separated word at *pp, undoing quotes: '...' literal,
   "..." with \" and \\ escapes, and \x outside quotes. NULL with *bad set
   on an unterminated quote (or out of memory, *bad = 0). */
static char *read_word(const char **pp, int *bad) {
  const char *p = *pp;
  size_t cap = strlen(p) + 1;
  char *w = malloc(cap), *o = w;
  *bad = 0;
  if (!w) return NULL;
  while (*p && !isspace((unsigned char)*p)) {
    if (*p == '\'') {
      const char *end = strchr(p + 1, '\'');
      if (!end) goto unterminated;
      memcpy(o, p + 1, (size_t)(end - p - 1));
      o += end - p - 1;
      p = end + 1;
    } else if (*p == '"') {
      for (p++; *p != '"'; p++) {
        if (!*p) goto unterminated;
        if (*p == '\\' && (p[1] == '"' || p[1] == '\\')) p++;
        *o++ = *p;
      }
      p++;
    } else {
      if (*p == '\\' && p[1]) p++;
      *o++ = *p++;
    }
  }
  *o = '\0';
  *pp = p;
  return w;
unterminated:
  free(w);
  *bad = 1;
  return NULL;
}

static dp_err *text_error(const char *text, size_t at, const char *what) {
  return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "malformed target '%s' at offset %zu: %s", text, at,
                    what);
}

/* One "-key=value" word into r. */
static dp_err *text_option(dp_ctx *ctx, const char *text, size_t at, char *word, rawopts *r,
                           int allow_host, dp_err **err) {
  const char *k = word + (word[0] == '-');
  if (k[0] == '-') k++; /* "--key=value" is accepted as well */
  const char *eq = strchr(k, '=');
  if (word[0] != '-' || !eq || eq == k) {
    char msg[64 + 256];
    snprintf(msg, sizeof msg, "expected an option -key=value, got '%.200s'", word);
    return text_error(text, at, msg);
  }
  char *key = strndup(k, (size_t)(eq - k));
  if (key && !strcmp(key, "host")) {
    free(key);
    if (!allow_host) return text_error(text, at, "a host target cannot have a host of its own");
    if (r->host) return text_error(text, at, "-host given twice");
    dp_err *sub = NULL;
    r->host = parse_text(ctx, eq + 1, 0, &sub);
    if (!r->host) {
      dp_err *e = dp_err_new(sub ? sub->code : DP_ERR_VALUE, DP_NOSPAN, "in -host of '%s': %s",
                             text, sub && sub->msg ? sub->msg : "bad host");
      dp_err_free(sub);
      return e;
    }
    return NULL;
  }
  if (raw_add(r, key, DP_OPT_STR, dp_strdup(eq + 1), 0) < 0)
    return dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  (void)err;
  return NULL;
}

static dp_target *parse_text(dp_ctx *ctx, const char *text, int allow_host, dp_err **err) {
  const char *p = text;
  while (isspace((unsigned char)*p)) p++;
  if (*p == '{') {
    if (!allow_host) {
      dp_err_set(err, text_error(text, 0, "a JSON host target belongs in a JSON target"));
      return NULL;
    }
    return parse_json(ctx, text, err);
  }
  rawopts r = {0};
  dp_err *e = NULL;
  int bad;
  if (!*p) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "empty target string"));
    return NULL;
  }
  while (*p && !e) {
    size_t at = (size_t)(p - text);
    char *word = read_word(&p, &bad);
    if (!word) {
      e = bad ? text_error(text, at, "unterminated quote")
              : dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
      break;
    }
    if (!r.kind) {
      if (word[0] == '-') e = text_error(text, at, "the target string must start with a kind");
      r.kind = word;
    } else {
      e = text_option(ctx, text, at, word, &r, allow_host, err);
      free(word);
    }
    while (isspace((unsigned char)*p)) p++;
  }
  if (e) {
    raw_free(&r);
    dp_err_set(err, e);
    return NULL;
  }
  return finish(ctx, &r, err);
}

dp_target *dp_target_parse(dp_ctx *ctx, const char *text, dp_err **err) {
  if (!ctx || !text) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "target: no text"));
    return NULL;
  }
  return parse_text(ctx, text, 1, err);
}

/* ---------------- JSON form ---------------- */

typedef struct jrd {
  const char *s;
  size_t i;
  dp_err *e;
} jrd;

static void jfail(jrd *j, const char *what) {
  if (j->e) return;
  unsigned line = 1, col = 1;
  for (size_t k = 0; k < j->i && j->s[k]; k++) {
    if (j->s[k] == '\n') line++, col = 1;
    else col++;
  }
  j->e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "malformed JSON target at line %u, column %u: %s",
                    line, col, what);
}

static void jws(jrd *j) {
  while (j->s[j->i] == ' ' || j->s[j->i] == '\t' || j->s[j->i] == '\n' || j->s[j->i] == '\r')
    j->i++;
}

static int jeat(jrd *j, char c) {
  jws(j);
  if (j->s[j->i] != c) return 0;
  j->i++;
  return 1;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int read_hex4(jrd *j, unsigned *out) {
  unsigned v = 0;
  for (int k = 0; k < 4; k++) {
    int h = hexval(j->s[j->i + k]);
    if (h < 0) return -1;
    v = v * 16 + (unsigned)h;
  }
  j->i += 4;
  *out = v;
  return 0;
}

static char *put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) *o++ = (char)cp;
  else if (cp < 0x800) *o++ = (char)(0xC0 | (cp >> 6)), *o++ = (char)(0x80 | (cp & 0x3F));
  else if (cp < 0x10000)
    *o++ = (char)(0xE0 | (cp >> 12)), *o++ = (char)(0x80 | ((cp >> 6) & 0x3F)),
    *o++ = (char)(0x80 | (cp & 0x3F));
  else
    *o++ = (char)(0xF0 | (cp >> 18)), *o++ = (char)(0x80 | ((cp >> 12) & 0x3F)),
    *o++ = (char)(0x80 | ((cp >> 6) & 0x3F)), *o++ = (char)(0x80 | (cp & 0x3F));
  return o;
}

/* A \u escape (j->i just after the 'u'), surrogate pairs combined. */
static int junicode(jrd *j, char **o) {
  unsigned cp, lo;
  if (read_hex4(j, &cp) < 0) return jfail(j, "bad \\u escape"), -1;
  if (cp >= 0xD800 && cp < 0xDC00) {
    if (j->s[j->i] != '\\' || j->s[j->i + 1] != 'u') return jfail(j, "lone surrogate"), -1;
    j->i += 2;
    if (read_hex4(j, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
      return jfail(j, "bad surrogate pair"), -1;
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  } else if (cp >= 0xDC00 && cp < 0xE000) {
    return jfail(j, "lone surrogate"), -1;
  }
  *o = put_utf8(*o, cp);
  return 0;
}

/* A string (j->i on the opening quote); malloc'd, NULL on error. */
static char *jstring(jrd *j) {
  jws(j);
  if (j->s[j->i] != '"') return jfail(j, "expected a string"), NULL;
  size_t start = ++j->i;
  char *out = malloc(strlen(j->s + start) * 2 + 4), *o = out; /* \u can grow 6 -> 4 bytes */
  if (!out) return jfail(j, "out of memory"), NULL;
  for (;;) {
    unsigned char c = (unsigned char)j->s[j->i];
    if (!c) { jfail(j, "unterminated string"); break; }
    if (c < 0x20) { jfail(j, "control character in string"); break; }
    j->i++;
    if (c == '"') { *o = '\0'; return out; }
    if (c != '\\') { *o++ = (char)c; continue; }
    char esc = j->s[j->i++];
    const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
    const char *hit = esc ? strchr(from, esc) : NULL;
    if (hit) *o++ = to[hit - from];
    else if (esc == 'u') { if (junicode(j, &o) < 0) break; }
    else { j->i--; jfail(j, "bad escape in string"); break; }
  }
  free(out);
  return NULL;
}

/* A number per the JSON grammar; *is_int when it has no fraction or
   exponent and fits an int64. Returns its text (malloc'd) or NULL. */
static char *jnumber(jrd *j, int *is_int, int64_t *val) {
  size_t st = j->i;
  const char *s = j->s;
  if (s[j->i] == '-') j->i++;
  if (s[j->i] == '0') j->i++;
  else if (s[j->i] >= '1' && s[j->i] <= '9') while (isdigit((unsigned char)s[j->i])) j->i++;
  else return jfail(j, "malformed number"), NULL;
  *is_int = 1;
  if (s[j->i] == '.') {
    *is_int = 0;
    if (!isdigit((unsigned char)s[++j->i])) return jfail(j, "malformed number"), NULL;
    while (isdigit((unsigned char)s[j->i])) j->i++;
  }
  if (s[j->i] == 'e' || s[j->i] == 'E') {
    *is_int = 0;
    j->i++;
    if (s[j->i] == '+' || s[j->i] == '-') j->i++;
    if (!isdigit((unsigned char)s[j->i])) return jfail(j, "malformed number"), NULL;
    while (isdigit((unsigned char)s[j->i])) j->i++;
  }
  char *text = strndup(s + st, j->i - st);
  if (!text) return jfail(j, "out of memory"), NULL;
  if (*is_int) {
    errno = 0;
    long long v = strtoll(text, NULL, 10);
    if (errno == ERANGE) *is_int = 0; /* too big: kept as text, so typing reports it */
    *val = v;
  }
  return text;
}

static int jword(jrd *j, const char *w) {
  size_t n = strlen(w);
  if (strncmp(j->s + j->i, w, n)) return 0;
  char next = j->s[j->i + n];
  if (isalnum((unsigned char)next) || next == '_') return 0;
  j->i += n;
  return 1;
}

/* A list of strings, joined by ',' (the raw form of a list option). */
static char *jlist(jrd *j) {
  size_t len = 0;
  char *acc = dp_strdup("");
  if (!acc) return jfail(j, "out of memory"), NULL;
  j->i++; /* '[' */
  if (jeat(j, ']')) return acc;
  do {
    jws(j);
    char *item = j->s[j->i] == '"' ? jstring(j) : NULL;
    if (!item) {
      jfail(j, "a list option holds strings only");
      free(acc);
      return NULL;
    }
    size_t n = strlen(item);
    char *grown = realloc(acc, len + n + 2);
    if (!grown) {
      free(item);
      free(acc);
      return jfail(j, "out of memory"), NULL;
    }
    acc = grown;
    if (len) acc[len++] = ',';
    memcpy(acc + len, item, n + 1);
    len += n;
    free(item);
  } while (jeat(j, ','));
  if (!jeat(j, ']')) {
    free(acc);
    return jfail(j, "expected ',' or ']' in list"), NULL;
  }
  return acc;
}

static void jobject(dp_ctx *ctx, jrd *j, rawopts *r, int depth);

/* The value of member `key` into r (takes ownership of key). */
static void jmember(dp_ctx *ctx, jrd *j, rawopts *r, char *key, int depth) {
  jws(j);
  char c = j->s[j->i];
  int is_int;
  int64_t num = 0;
  if (!strcmp(key, "kind") || !strcmp(key, "host")) {
    int is_kind = key[0] == 'k';
    free(key);
    if (is_kind) {
      if (r->kind) { jfail(j, "\"kind\" given twice"); return; }
      if (c != '"') { jfail(j, "\"kind\" must be a string"); return; }
      r->kind = jstring(j);
      return;
    }
    if (depth > 0) { jfail(j, "a host target cannot have a host of its own"); return; }
    if (r->host) { jfail(j, "\"host\" given twice"); return; }
    if (c == '{') {
      rawopts hr = {0};
      jobject(ctx, j, &hr, depth + 1);
      if (!j->e) r->host = finish(ctx, &hr, &j->e);
      else raw_free(&hr);
    } else if (c == '"') {
      char *s = jstring(j);
      if (s) r->host = parse_text(ctx, s, 0, &j->e);
      free(s);
    } else {
      jfail(j, "\"host\" must be a target string or object");
    }
    return;
  }
  int rc = 0;
  if (c == '"') {
    char *s = jstring(j);
    if (s) rc = raw_add(r, key, DP_OPT_STR, s, 0);
    else free(key);
  } else if (c == '-' || isdigit((unsigned char)c)) {
    char *text = jnumber(j, &is_int, &num);
    if (!text) free(key);
    else if (is_int) free(text), rc = raw_add(r, key, DP_OPT_INT, NULL, num);
    else rc = raw_add(r, key, DP_OPT_STR, text, 0);
  } else if (jword(j, "true")) {
    rc = raw_add(r, key, DP_OPT_BOOL, NULL, 1);
  } else if (jword(j, "false")) {
    rc = raw_add(r, key, DP_OPT_BOOL, NULL, 0);
  } else if (c == '[') {
    char *list = jlist(j);
    if (list) rc = raw_add(r, key, DP_OPT_STRLIST, list, 0);
    else free(key);
  } else {
    free(key);
    jfail(j, jword(j, "null") ? "null is not an option value" : "expected an option value");
  }
  if (rc < 0) jfail(j, "out of memory");
}

/* An object (j->i on or before the '{'), members into r. */
static void jobject(dp_ctx *ctx, jrd *j, rawopts *r, int depth) {
  if (!jeat(j, '{')) { jfail(j, "expected '{'"); return; }
  if (jeat(j, '}')) { jfail(j, "missing \"kind\""); return; }
  do {
    char *key = jstring(j);
    if (!key) { jfail(j, "expected a member name"); return; }
    if (!jeat(j, ':')) {
      free(key);
      { jfail(j, "expected ':' after a member name"); return; }
    }
    jmember(ctx, j, r, key, depth);
    if (j->e) return;
  } while (jeat(j, ','));
  if (!jeat(j, '}')) jfail(j, "expected ',' or '}'");
  if (!j->e && !r->kind) jfail(j, "missing \"kind\"");
}

static dp_target *parse_json(dp_ctx *ctx, const char *text, dp_err **err) {
  jrd j = {text, 0, NULL};
  rawopts r = {0};
  jobject(ctx, &j, &r, 0);
  jws(&j);
  if (!j.e && j.s[j.i]) jfail(&j, "unexpected text after the object");
  if (j.e) {
    raw_free(&r);
    dp_err_set(err, j.e);
    return NULL;
  }
  return finish(ctx, &r, err);
}
