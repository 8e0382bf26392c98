/*
 * "Did you mean": the closest candidate to an unknown name by optimal
 * string alignment distance, within a threshold (include/devplan/suggest.h
 * states the rules). Three rows of the dynamic-programming table live on
 * the stack, so a search never allocates and cannot fail.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "devplan/suggest.h"

static int lower(char c) { return tolower((unsigned char)c); }

static int min3(int a, int b, int c) {
  int m = a < b ? a : b;
  return m < c ? m : c;
}

/* "conv2d" is the last dotted part of "nn.conv2d". */
static int is_last_part(const char *name, const char *cand) {
  const char *dot = strrchr(cand, '.');
  if (!dot) return 0;
  for (const char *p = dot + 1;; p++, name++) {
    if (lower(*p) != lower(*name)) return 0;
    if (!*p) return 1;
  }
}

/* Optimal string alignment distance, rows of the table kept three at a
   time; stops as soon as a whole row exceeds max. */
static int osa(const char *a, size_t la, const char *b, size_t lb, int max) {
  int rows[3][DP_SUGGEST_MAXLEN + 1];
  int *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
  for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int row_min = cur[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int cost = lower(a[i - 1]) != lower(b[j - 1]);
      int d = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1]) && prev2[j - 2] + 1 < d)
        d = prev2[j - 2] + 1;
      cur[j] = d;
      if (d < row_min) row_min = d;
    }
    if (row_min > max) return max + 1;
    int *t = prev2;
    prev2 = prev;
    prev = cur;
    cur = t;
  }
  return prev[lb] > max ? max + 1 : prev[lb];
}

int dp_suggest_distance(const char *a, const char *b, int max) {
  if (!a || !b || max < 0) return max + 1;
  size_t la = strlen(a), lb = strlen(b);
  if (la > DP_SUGGEST_MAXLEN || lb > DP_SUGGEST_MAXLEN) return max + 1;
  size_t diff = la > lb ? la - lb : lb - la;
  int d = diff > (size_t)max ? max + 1 : osa(a, la, b, lb, max);
  if (d > 1 && max >= 1 && is_last_part(a, b)) d = 1;
  return d;
}

void dp_suggest_init(dp_suggest *s, const char *name) {
  size_t len = name ? strlen(name) : 0;
  s->name = name;
  s->best = NULL;
  s->dist = 0;
  /* a third of the length, rounded up, at least 1, and less than the length */
  int limit = (int)((len + 2) / 3);
  if (limit < 1) limit = 1;
  if ((size_t)limit >= len) limit = (int)len - 1;
  if (len > DP_SUGGEST_MAXLEN) limit = -1;
  s->limit = limit;
}

void dp_suggest_add(dp_suggest *s, const char *candidate) {
  if (!candidate || !s->name || s->limit < 0 || !strcmp(candidate, s->name)) return;
  /* only a strictly closer candidate replaces the best one: first offered wins ties */
  int max = s->best ? s->dist - 1 : s->limit;
  if (max < 0) return;
  int d = dp_suggest_distance(s->name, candidate, max);
  if (d <= max) {
    s->best = candidate;
    s->dist = d;
  }
}

const char *dp_suggest_best(const dp_suggest *s) { return s->best; }

char *dp_suggest_hint(const dp_suggest *s, char *buf, size_t n) {
  if (!buf || n == 0) return buf;
  buf[0] = '\0';
  if (s->best) snprintf(buf, n, "; did you mean '%s'?", s->best);
  return buf;
}

const char *dp_suggest_in(const char *name, const char *const *candidates, size_t n) {
  dp_suggest s;
  dp_suggest_init(&s, name);
  for (size_t i = 0; candidates && i < n; i++) dp_suggest_add(&s, candidates[i]);
  return dp_suggest_best(&s);
}

const char *dp_suggest_among(const char *name, const char *(*at)(uint32_t i)) {
  dp_suggest s;
  const char *cand;
  dp_suggest_init(&s, name);
  for (uint32_t i = 0; at && (cand = at(i)); i++) dp_suggest_add(&s, cand);
  return dp_suggest_best(&s);
}
