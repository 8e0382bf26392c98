/*
 * "Did you mean": the closest known name to a name that is not known.
 *
 * Every error about an unknown name (target kind, target option, device
 * type, operator, dtype, attribute, variable) can end with a suggestion:
 *
 *     dp_suggest s;
 *     dp_suggest_init(&s, name);
 *     for (each known name k) dp_suggest_add(&s, k);
 *     char hint[DP_SUGGEST_HINT];
 *     dp_suggest_hint(&s, hint, sizeof hint);   -> "; did you mean 'cuda'?" or ""
 *     dp_err_new(DP_ERR_NAME, span, "unknown target kind '%s'%s", name, hint);
 *
 * or, with the candidates in an array, dp_suggest_in(name, names, n).
 *
 * Distance: optimal string alignment (Damerau-Levenshtein without repeated
 * edits of one substring): inserting, deleting or replacing one character,
 * or swapping two adjacent ones, costs 1. Letters are compared without
 * case, so "CUDA" suggests "cuda". A candidate whose last dotted part is
 * the name ("conv2d" and "nn.conv2d") counts as distance 1.
 *
 * Threshold: a candidate is suggested when its distance is at most a third
 * of the name's length, rounded up (at least 1), and less than the name's
 * length (so "x" never suggests "c"). Among candidates at the same
 * distance the first one offered wins, so the suggestion is deterministic
 * when the candidates come in a fixed order. Names longer than
 * DP_SUGGEST_MAXLEN bytes get no suggestion. Nothing here allocates.
 */
#ifndef DEVPLAN_SUGGEST_H
#define DEVPLAN_SUGGEST_H

#include <stddef.h>
#include <stdint.h>

#define DP_SUGGEST_MAXLEN 128
/* Room for "; did you mean '<longest candidate>'?". */
#define DP_SUGGEST_HINT (DP_SUGGEST_MAXLEN + 32)

typedef struct dp_suggest {
  const char *name;  /* the unknown name (borrowed) */
  const char *best;  /* the closest candidate so far (borrowed), or NULL */
  int dist;          /* its distance */
  int limit;         /* the largest distance suggested */
} dp_suggest;

/* Starts a search for the closest candidate to `name` (borrowed until the
   search ends). */
void dp_suggest_init(dp_suggest *s, const char *name);
/* Offers one candidate (borrowed: it must outlive the search). NULL and
   the name itself are ignored. */
void dp_suggest_add(dp_suggest *s, const char *candidate);
/* The closest candidate within the threshold, or NULL. */
const char *dp_suggest_best(const dp_suggest *s);
/* Writes "; did you mean 'best'?" into buf (size n), or "" when there is
   no suggestion; returns buf. */
char *dp_suggest_hint(const dp_suggest *s, char *buf, size_t n);
/* The closest of n candidates (an array, NULL entries skipped) within the
   threshold, or NULL. */
const char *dp_suggest_in(const char *name, const char *const *candidates, size_t n);
/* The closest of the names at(0), at(1), ... up to the first NULL, within
   the threshold, or NULL: for a table behind an accessor. */
const char *dp_suggest_among(const char *name, const char *(*at)(uint32_t i));
/* The distance between a and b as above; any value above `max` is
   reported as max + 1 (the computation stops early). */
int dp_suggest_distance(const char *a, const char *b, int max);

#endif
