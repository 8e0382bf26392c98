/*
 * Reading targets from text: the string form as TVM's Target reads it
 * ("cuda -arch=sm_80 -max_num_threads 1024 --host='llvm -mcpu=skylake'"),
 * TVM's JSON object form ('{"kind": "cuda", "max_num_threads": 1024,
 * "host": "llvm"}') with a small strict JSON reader, and tvmc's
 * comma-separated lists of targets ("cuda, llvm -mcpu=x"). Each collects a
 * kind, raw options and a host, then hands them to dp_target_make, which
 * checks, types, completes and interns them. Errors say what is wrong and
 * where (offset, or line and column in JSON).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/device.h"
#include "target_internal.h"

/* Raw options collected while reading. */
typedef struct rawopts {
  dp_target_opt *v;
  uint32_t n, cap;
  char *kind;
  dp_target *host;
} rawopts;

static void raw_free(rawopts *r) {
  dp__opts_free(r->v, r->n);
  free(r->kind);
  dp_release(r->host);
  memset(r, 0, sizeof *r);
}

/* Appends an option; takes ownership of o's strings (freed on failure).
   -1 on out of memory. */
static int raw_add(rawopts *r, dp_target_opt o) {
  if (!o.key || ((o.kind == DP_OPT_STR) && !o.str)) goto oom;
  if (r->n == r->cap) {
    uint32_t cap = r->cap ? r->cap * 2 : 8;
    dp_target_opt *v = dp_realloc(r->v, cap * sizeof *v);
    if (!v) goto oom;
    r->v = v;
    r->cap = cap;
  }
  r->v[r->n++] = o;
  return 0;
oom:
  dp__opt_clear(&o);
  return -1;
}

static dp_target *finish(dp_ctx *ctx, rawopts *r, dp_err **err) {
  dp_target *t = dp_target_make(ctx, r->kind, r->v, r->n, r->host, err);
  raw_free(r);
  return t;
}

static dp_target *parse_text(dp_ctx *ctx, const char *text, int depth, dp_err **err);
static dp_target *parse_json(dp_ctx *ctx, const char *text, int depth, dp_err **err);

/* ---------------- string form ---------------- */

/* Reads one blank-separated word at *pp, undoing quotes: '...' literal,
   "..." with \" and \\ escapes, and \x outside quotes. NULL with *bad set
   on an unterminated quote (or out of memory, *bad = 0). */
static char *read_word(const char **pp, int *bad) {
  const char *p = *pp;
  size_t cap = strlen(p) + 1;
  char *w = dp_malloc(cap), *o = w;
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

/* The words of a target string with their offsets. */
typedef struct words {
  char **w;
  size_t *at;
  uint32_t n;
} words;

static void words_free(words *ws) {
  for (uint32_t i = 0; i < ws->n; i++) free(ws->w[i]);
  free(ws->w);
  free(ws->at);
}

static dp_err *split_words(const char *text, words *ws) {
  size_t cap = strlen(text) / 2 + 1; /* a word and a blank at least */
  memset(ws, 0, sizeof *ws);
  ws->w = dp_malloc(cap * sizeof *ws->w);
  ws->at = dp_malloc(cap * sizeof *ws->at);
  if (!ws->w || !ws->at) return dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  const char *p = text;
  for (;;) {
    while (isspace((unsigned char)*p)) p++;
    if (!*p) return NULL;
    size_t at = (size_t)(p - text);
    int bad;
    char *w = read_word(&p, &bad);
    if (!w) return bad ? text_error(text, at, "unterminated quote")
                       : dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    ws->at[ws->n] = at;
    ws->w[ws->n++] = w;
  }
}

/* The host of a target string: text or JSON, without a host of its own. */
static dp_err *text_host(dp_ctx *ctx, const char *text, const char *value, rawopts *r, int depth) {
  if (depth > 0) return dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                                   "in '%s': a host target cannot have a host of its own", text);
  if (r->host) return dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "in '%s': -host given twice", text);
  dp_err *sub = NULL;
  r->host = parse_text(ctx, value, depth + 1, &sub);
  if (r->host) return NULL;
  dp_err *e = dp_err_new(sub ? sub->code : DP_ERR_VALUE, DP_NOSPAN, "in -host of '%s': %s", text,
                         sub && sub->msg ? sub->msg : "bad host");
  dp_err_free(sub);
  return e;
}

/* The option at word i (TVM's forms: -key=value, -key value, a bare -key
   for a true boolean; one or two dashes). Sets *used to the words taken. */
static dp_err *text_option(dp_ctx *ctx, const char *text, const words *ws, uint32_t i,
                           rawopts *r, int depth, uint32_t *used) {
  const char *word = ws->w[i];
  const char *k = word + (word[0] == '-');
  *used = 1;
  if (k[0] == '-') k++;
  const char *eq = strchr(k, '=');
  if (word[0] != '-' || !*k || k[0] == '-' || eq == k) {
    char msg[300];
    snprintf(msg, sizeof msg, "expected an option -key=value, got '%.200s'", word);
    return text_error(text, ws->at[i], msg);
  }
  const char *value = NULL;
  if (eq) {
    value = eq + 1;
    if (!*value) {
      char msg[300];
      snprintf(msg, sizeof msg, "option -%.*s has no value", (int)(eq - k), k);
      return text_error(text, ws->at[i], msg);
    }
  } else if (i + 1 < ws->n && ws->w[i + 1][0] != '-') {
    value = ws->w[i + 1];
    *used = 2;
  }
  char *key = eq ? dp_strndup(k, (size_t)(eq - k)) : dp_strdup(k);
  if (key && !strcmp(key, "host")) {
    free(key);
    if (!value) return text_error(text, ws->at[i], "-host needs a target");
    return text_host(ctx, text, value, r, depth);
  }
  /* a bare -key has no value: true for a boolean, an error for the rest */
  dp_target_opt o = {key, DP_OPT_TEXT, value ? dp_strdup(value) : NULL, 0, 0, NULL};
  if (value && !o.str) {
    free(key);
    return dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  }
  if (raw_add(r, o) < 0) return dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory"); /* freed key */
  return NULL;
}

static int is_json(const char *text) {
  while (isspace((unsigned char)*text)) text++;
  return *text == '{';
}

/* Where a list of targets splits: the offsets of the separating commas
   (at most max of them; returns how many there are). */
static uint32_t list_cuts(const char *s, size_t *cuts, uint32_t max);

/* The configuration of the tag `text` names (blanks around it allowed), or NULL. */
static const char *tag_of(const char *text) {
  while (isspace((unsigned char)*text)) text++;
  size_t n = strlen(text);
  while (n && isspace((unsigned char)text[n - 1])) n--;
  char name[64];
  if (n == 0 || n >= sizeof name) return NULL;
  memcpy(name, text, n);
  name[n] = '\0';
  return dp_target_tag_config(name);
}

static dp_target *parse_text(dp_ctx *ctx, const char *text, int depth, dp_err **err) {
  if (is_json(text)) return parse_json(ctx, text, depth, err);
  const char *tag = tag_of(text);
  if (tag && depth > 0 && strstr(tag, "\"host\"")) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                               "the target tag '%s' has a host, and a host target cannot have a "
                               "host of its own", text));
    return NULL;
  }
  if (tag) return parse_json(ctx, tag, depth, err);
  size_t cut;
  uint32_t ncuts = list_cuts(text, &cut, 1);
  if (ncuts) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN,
                               "'%s' is a list of targets (a ',' at offset %zu separates them); one "
                               "target is expected here (CompilationConfig's targets and the "
                               "command line's --target take a list)",
                               text, cut));
    return NULL;
  }
  words ws;
  rawopts r = {0};
  dp_err *e = split_words(text, &ws);
  if (!e && ws.n == 0) e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "empty target string");
  if (!e && ws.w[0][0] == '-') e = text_error(text, ws.at[0], "the target string must start with a kind");
  if (!e) {
    r.kind = ws.w[0];
    ws.w[0] = NULL;
  }
  for (uint32_t i = 1, used; !e && i < ws.n; i += used)
    e = text_option(ctx, text, &ws, i, &r, depth, &used);
  words_free(&ws);
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
  return parse_text(ctx, text, 0, err);
}

/* ---------------- lists of targets (tvmc) ---------------- */

/* A comma separates targets when it is outside quotes and either inside a
   kind name ("cuda,llvm"), or between words (" , "), or ends a word
   ("-mcpu=x, cuda"), or follows a quoted value ("-host='llvm -mcpu=x',c");
   inside an option value it belongs to the value (-mattr=+avx2,+fma). A
   JSON target is never split. */
static uint32_t list_cuts(const char *s, size_t *cuts, uint32_t max) {
  uint32_t n = 0;
  int in_word = 0, kind_word = 1, quoted = 0;
  if (is_json(s)) return 0;
  for (size_t i = 0; s[i];) {
    char c = s[i];
    int after_quote = quoted;
    quoted = 0;
    if (isspace((unsigned char)c)) {
      if (in_word) in_word = kind_word = 0;
      i++;
    } else if (c == ',') {
      char next = s[i + 1];
      if (!in_word || kind_word || after_quote || !next || isspace((unsigned char)next) ||
          next == ',') {
        if (n < max) cuts[n] = i;
        n++;
        in_word = 0;
        kind_word = 1;
      }
      i++;
    } else {
      in_word = 1;
      if (c == '\'') {
        const char *end = strchr(s + i + 1, '\'');
        i = end ? (size_t)(end - s) + 1 : strlen(s);
        quoted = 1;
      } else if (c == '"') {
        for (i++; s[i] && s[i] != '"'; i++)
          if (s[i] == '\\' && s[i + 1]) i++;
        if (s[i]) i++;
        quoted = 1;
      } else {
        i += (c == '\\' && s[i + 1]) ? 2 : 1;
      }
    }
  }
  return n;
}

void dp_targets_free(dp_target **targets, uint32_t n) {
  for (uint32_t i = 0; targets && i < n; i++) dp_release(targets[i]);
  free(targets);
}

static int blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isspace((unsigned char)s[i])) return 0;
  return 1;
}

dp_target **dp_targets_parse(dp_ctx *ctx, const char *text, uint32_t *n, dp_err **err) {
  *n = 0;
  if (!ctx || !text) {
    dp_err_set(err, dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "targets: no text"));
    return NULL;
  }
  uint32_t ncuts = list_cuts(text, NULL, 0);
  size_t *cuts = dp_malloc(((size_t)ncuts + 1) * sizeof *cuts);
  dp_target **out = dp_calloc((size_t)ncuts + 1, sizeof *out);
  dp_err *e = NULL;
  if (!cuts || !out) e = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
  else list_cuts(text, cuts, ncuts);
  size_t from = 0;
  for (uint32_t i = 0; !e && i <= ncuts; i++) {
    size_t to = i < ncuts ? cuts[i] : strlen(text);
    char *piece = blank(text + from, to - from) ? NULL : dp_strndup(text + from, to - from);
    if (blank(text + from, to - from))
      e = dp_err_new(DP_ERR_VALUE, DP_NOSPAN, "malformed list of targets '%s': no target at offset %zu",
                     text, from);
    else if (!piece)
      e = dp_err_new(DP_ERR_MEMORY, DP_NOSPAN, "out of memory");
    else if ((out[i] = parse_text(ctx, piece, 0, &e)))
      *n = i + 1;
    free(piece);
    from = to + 1;
  }
  free(cuts);
  if (e) {
    dp_targets_free(out, *n);
    *n = 0;
    dp_err_set(err, e);
    return NULL;
  }
  return out;
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
  char *out = dp_malloc(strlen(j->s + start) * 2 + 4), *o = out; /* \u can grow 6 -> 4 bytes */
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
  char *text = dp_strndup(s + st, j->i - st);
  if (!text) return jfail(j, "out of memory"), NULL;
  if (*is_int) {
    errno = 0;
    long long v = strtoll(text, NULL, 10);
    if (errno == ERANGE) *is_int = 0; /* too big for an option */
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

/* A list of strings: the items of a list option. */
static int jlist(jrd *j, dp_target_opt *o) {
  j->i++; /* '[' */
  if (jeat(j, ']')) return 0;
  do {
    jws(j);
    char *item = j->s[j->i] == '"' ? jstring(j) : NULL;
    if (!item) return jfail(j, "a list option holds strings only"), -1;
    char **items = dp_realloc(o->items, (o->nitems + 1) * sizeof *items);
    if (!items) {
      free(item);
      return jfail(j, "out of memory"), -1;
    }
    o->items = items;
    o->items[o->nitems++] = item;
  } while (jeat(j, ','));
  if (!jeat(j, ']')) return jfail(j, "expected ',' or ']' in list"), -1;
  return 0;
}

static void jobject(dp_ctx *ctx, jrd *j, rawopts *r, int depth);

/* The host member of a JSON target: a target string or object. */
static void jhost(dp_ctx *ctx, jrd *j, rawopts *r, int depth) {
  char c = j->s[j->i];
  if (depth > 0) { jfail(j, "a host target cannot have a host of its own"); return; }
  if (r->host) { jfail(j, "\"host\" given twice"); return; }
  if (c == '{') {
    rawopts hr = {0};
    jobject(ctx, j, &hr, depth + 1);
    if (!j->e) r->host = finish(ctx, &hr, &j->e);
    else raw_free(&hr);
  } else if (c == '"') {
    char *s = jstring(j);
    if (s) r->host = parse_text(ctx, s, depth + 1, &j->e);
    free(s);
  } else {
    jfail(j, "\"host\" must be a target string or object");
  }
}

/* An option value into o (typed as JSON writes it); 0, or -1 after jfail. */
static int jvalue(jrd *j, dp_target_opt *o) {
  char c = j->s[j->i];
  int is_int;
  if (c == '"') {
    o->kind = DP_OPT_STR;
    return (o->str = jstring(j)) ? 0 : -1;
  }
  if (c == '-' || isdigit((unsigned char)c)) {
    char *text = jnumber(j, &is_int, &o->num);
    if (text && !is_int) jfail(j, "a number option value must be an integer (in the int64 range)");
    free(text);
    o->kind = DP_OPT_INT;
    return text && is_int ? 0 : -1;
  }
  if (jword(j, "true") || jword(j, "false")) {
    o->kind = DP_OPT_BOOL;
    o->num = j->s[j->i - 4] == 't'; /* the word just read ends at j->i */
    return 0;
  }
  if (c == '[') {
    o->kind = DP_OPT_STRLIST;
    return jlist(j, o);
  }
  jfail(j, c == '{'          ? "an object is not an option value (only \"host\" takes a target)"
          : jword(j, "null") ? "null is not an option value"
                             : "expected an option value");
  return -1;
}

/* The value of member `key` into r (takes ownership of key). */
static void jmember(dp_ctx *ctx, jrd *j, rawopts *r, char *key, int depth) {
  jws(j);
  if (!strcmp(key, "kind")) {
    free(key);
    if (r->kind) jfail(j, "\"kind\" given twice");
    else if (j->s[j->i] != '"') jfail(j, "\"kind\" must be a string");
    else r->kind = jstring(j);
    return;
  }
  if (!strcmp(key, "host")) {
    free(key);
    jhost(ctx, j, r, depth);
    return;
  }
  dp_target_opt o = {key, DP_OPT_STR, NULL, 0, 0, NULL};
  if (jvalue(j, &o) < 0) dp__opt_clear(&o);
  else if (raw_add(r, o) < 0) jfail(j, "out of memory");
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
      jfail(j, "expected ':' after a member name");
      return;
    }
    jmember(ctx, j, r, key, depth);
    if (j->e) return;
  } while (jeat(j, ','));
  if (!jeat(j, '}')) jfail(j, "expected ',' or '}'");
  if (!j->e && !r->kind) jfail(j, "missing \"kind\"");
}

static dp_target *parse_json(dp_ctx *ctx, const char *text, int depth, dp_err **err) {
  jrd j = {text, 0, NULL};
  rawopts r = {0};
  jobject(ctx, &j, &r, depth);
  jws(&j);
  if (!j.e && j.s[j.i]) jfail(&j, "unexpected text after the object");
  if (j.e) {
    raw_free(&r);
    dp_err_set(err, j.e);
    return NULL;
  }
  return finish(ctx, &r, err);
}
