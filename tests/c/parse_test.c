/*
 * C checks of the parser's C half used from C alone (no grammar, no Lua):
 * the lexer's tokens, actions driven by hand-written events, positioned
 * errors, and the element conversions of scalar.h the parser shares with
 * dp.const.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "devplan/devplan.h"
#include "../../src/parse/scope.h"

#define CHECK(cond) do { if (cond) (*passed)++; else { (*failed)++; \
  printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

void dp_test_parse(int *passed, int *failed);

static const char *kinds_of(dp_parser *p) {
  size_t n;
  return dp_parser_tokens(p, &n);
}

static void test_lexer(dp_ctx *ctx, int *passed, int *failed) {
  const char *text = "%0 = add(%a, -3i64) /* ty=T /* nested */ */; // c\n"
                     "let %x: int8 = meta [ relay.Constant ] [ 0 ];\n%x.0.1 --10 inff ==";
  dp_parser *p = dp_parser_new(ctx, text, strlen(text), "t");
  CHECK(p != NULL);
  if (!p) return;
  /* %0 = | add( | %a | , | -3i64 | ) | ; | let | %x | : | int8 | = | meta | ; |
     %x | . | 0 | . | 1 | --10 | inff | == */
  CHECK(strcmp(kinds_of(p), "bcv,n);lv:i=m;v.k.knnE") == 0);
  dp_parser_free(p);

  /* every keyword is its own kind (the lexer filters names by first letter) */
  const char *words = "fn let if else match def type extern primfn free_var ref ref_read ref_write "
                      "Constant True False None VirtualDevice Tensor Storage fnx Let";
  p = dp_parser_new(ctx, words, strlen(words), "kw");
  CHECK(p && strcmp(kinds_of(p), "flIeMDYxPwrRWCTKOVQSii") == 0);
  dp_parser_free(p);

  /* a lexical error is the last token; the grammar reports what comes first */
  const char *bad = "def @main() { 1.5i64 }";
  p = dp_parser_new(ctx, bad, strlen(bad), "bad");
  CHECK(p && strcmp(kinds_of(p), "Dg(){!") == 0);
  if (p) {
    dp_err *e = dp_parser_syntax_error(p, 6, "an expression");
    CHECK(e && e->span.line == 1 && e->span.col == 15 && strstr(e->msg, "an integer was expected"));
    dp_err_free(e);
    e = dp_parser_syntax_error(p, 3, "a name");
    CHECK(e && strcmp(e->msg, "expected a name, found '('") == 0);
    dp_err_free(e);
    dp_parser_free(p);
  }
}

/* Where each token starts and what it says, asked in any order: tokens
   are kept one byte each, their offsets worked out a block of 256 at a
   time (lex.c), with gaps of 7 bytes or more (comments, white space) and
   names of 31 bytes or more kept apart, and lines found from the line
   asked for last (parser.c). Each token's line, column and text
   (dp_parser_syntax_error's "found '...'") against where it was written:
   forwards, backwards and in a scattered order, across blocks. */
static void test_token_offsets(dp_ctx *ctx, int *passed, int *failed) {
  enum { N = 700 };
  static char text[N * 80];
  static size_t off[N], len[N], line[N], col[N];
  size_t n = 0, ln = 1, ls = 0;
  for (int j = 0; j < N; j++) {
    int gap = (j * 7) % 13;
    for (int g = 0; g < gap; g++) text[n++] = j % 9 == 4 && g % 3 == 0 ? '\n' : ' ';
    if (j % 11 == 5) n += (size_t)sprintf(text + n, "/* %*s */ ", j % 50, "");
    off[j] = n;
    text[n++] = '%';
    for (int c = 0; c < 1 + (j * 5) % 45; c++) text[n++] = (char)('a' + (j + c) % 26);
    len[j] = n - off[j];
  }
  for (size_t k = 0, j = 0; j < N; k++) {
    if (k == off[j]) line[j] = ln, col[j++] = k - ls + 1;
    if (text[k] == '\n') ln++, ls = k + 1;
  }
  text[n] = '\0';
  dp_parser *p = dp_parser_new(ctx, text, n, "offsets");
  CHECK(p != NULL);
  if (!p) return;
  size_t nk;
  dp_parser_tokens(p, &nk);
  CHECK(nk == N);
  int bad = 0;
  for (int pass = 0; pass < 3 && nk == N; pass++) {
    for (int q = 0; q < N; q++) {
      int j = pass == 0 ? q : pass == 1 ? N - 1 - q : (int)((q * 389u) % N);
      dp_err *e = dp_parser_syntax_error(p, (size_t)j + 1, "x");
      char want[80];
      snprintf(want, sizeof want, "expected x, found '%.*s'", (int)(len[j] > 40 ? 40 : len[j]), text + off[j]);
      if (!e || e->span.line != line[j] || e->span.col != col[j] || strcmp(e->msg, want) != 0) bad++;
      dp_err_free(e);
    }
  }
  CHECK(bad == 0 && line[N - 1] > 100);
  dp_parser_free(p);
}

/* Events: token indices, as the grammar would mark them. */
static void test_actions(dp_ctx *ctx, int *passed, int *failed) {
  const char *text = "Tensor[(2, ?), float32]";
  dp_parser *p = dp_parser_new(ctx, text, strlen(text), "t");
  CHECK(p && strcmp(kinds_of(p), "Q[(n,?),i]") == 0);
  if (!p) return;
  int64_t ev[] = {1, 4, 6, 9}; /* Tensor, 2, ?, float32 */
  int64_t h = dp_parser_act(p, DP_ACT_TYPE, ev, 4);
  CHECK(h > 0);
  dp_err *err = NULL;
  dp_type *t = dp_parser_type(p, h, &err);
  char *s = t ? dp_type_str(t) : NULL;
  CHECK(s && strcmp(s, "Tensor[(2, ?), float32]") == 0);
  free(s);
  dp_release(t);
  dp_parser_free(p);

  /* a number out of its dtype's range, at its token */
  text = "Tensor[(99999999999999999999), int8]";
  p = dp_parser_new(ctx, text, strlen(text), "t");
  if (!p) return;
  int64_t ev2[] = {1, 4, 6};
  CHECK(dp_parser_act(p, DP_ACT_TYPE, ev2, 3) == -1);
  err = dp_parser_error(p);
  CHECK(err && err->code == DP_ERR_VALUE && err->span.col == 9 && strstr(err->msg, "out of range"));
  dp_err_free(err);
  /* a failed parse is not resumed */
  CHECK(dp_parser_act(p, DP_ACT_TYPE, ev2, 3) == -1);
  dp_err_free(dp_parser_error(p));
  dp_parser_free(p);
}

static void test_scalars(int *passed, int *failed) {
  /* one rounding, to nearest even, from the double */
  CHECK(dp_f16_from_double(1.000732421875) == 0x3c01);
  CHECK(dp_f16_from_double(1.0 + 0x1p-11) == 0x3c00);            /* a tie: to even */
  CHECK(dp_f16_from_double(1.0 + 0x1p-11 + 0x1p-30) == 0x3c01);  /* above the tie */
  CHECK(dp_f16_from_double(65504.0) == 0x7bff);
  CHECK(dp_f16_from_double(65520.0) == 0x7c00);                  /* rounds past the largest */
  CHECK(dp_f16_from_double(0x1p-24) == 0x0001);                  /* smallest subnormal */
  CHECK(dp_f16_from_double(0x1p-25) == 0x0000);                  /* a tie: to even */
  CHECK(dp_f16_from_double(-0.0) == 0x8000);
  CHECK((dp_f16_from_double(NAN) & 0x7e00) == 0x7e00);
  CHECK(dp_f16_to_double(0x3c01) == 1.0009765625);
  CHECK(dp_bf16_from_double(1.0 + 0x1p-8) == 0x3f80);            /* a tie: to even */
  CHECK(dp_bf16_from_double(1.0 + 0x1p-8 + 0x1p-20) == 0x3f81);
  CHECK(dp_bf16_to_double(0x3f81) == 1.0078125);
  CHECK(dp_dtype_fits_int(DP_DTYPE(DP_DT_INT, 8, 1), 1, 128));
  CHECK(!dp_dtype_fits_int(DP_DTYPE(DP_DT_INT, 8, 1), 0, 128));
  CHECK(dp_dtype_fits_int(DP_DTYPE(DP_DT_UINT, 64, 1), 0, UINT64_MAX));
  CHECK(!dp_dtype_fits_real(DP_DTYPE(DP_DT_FLOAT, 16, 1), 65505.0));
  CHECK(dp_dtype_fits_real(DP_DTYPE(DP_DT_FLOAT, 16, 1), INFINITY));
  unsigned char buf[8];
  double f;
  int64_t v;
  CHECK(dp_elem_set_int(DP_DTYPE(DP_DT_INT, 8, 1), buf, 0, -5) == 0 &&
        dp_elem_get(DP_DTYPE(DP_DT_INT, 8, 1), buf, 0, &f, &v) == 0 && v == -5);
  CHECK(dp_elem_set_real(DP_DTYPE(DP_DT_FLOAT, 16, 1), buf, 0, 1.000732421875) == 0 &&
        dp_elem_get(DP_DTYPE(DP_DT_FLOAT, 16, 1), buf, 0, &f, &v) == 1 && f == 1.0009765625);
  CHECK(dp_elem_bytes(DP_DTYPE(DP_DT_INT, 4, 1)) == 0);
}

/* The names' undo log: fresh bindings of consecutive slots are one run of
   two words, never grown across a mark; undoing to a mark puts back
   exactly the bindings before it (shadowed ones too). */
static void test_scope_undo(int *passed, int *failed) {
  dp__scope s = {0};
  char name[16];
  int ok = 1;
  for (int i = 0; i < 300 && ok; i++) ok = dp__scope_intern(&s, name, (size_t)snprintf(name, sizeof name, "%%x%d", i)) == i;
  CHECK(ok);
  for (uint32_t k = 0; k < 100; k++) ok &= dp__scope_bind(&s, k, 1000 + k, 0) == 0;
  CHECK(ok && s.nundo == 2); /* slots 0..99: one run */
  uint32_t outer = dp__scope_mark(&s);
  for (uint32_t k = 100; k < 200; k++) ok &= dp__scope_bind(&s, k, 2000 + k, 7) == 0;
  CHECK(ok && s.nundo == outer + 2); /* 100..199: a run of its own above the mark */
  ok &= dp__scope_bind(&s, 5, 3005, 7) == 0; /* shadows: three words */
  uint32_t inner = dp__scope_mark(&s);
  ok &= dp__scope_bind(&s, 200, 4200, 8) == 0 && dp__scope_bind(&s, 201, 4201, 8) == 0;
  ok &= dp__scope_bind(&s, 250, 4250, 8) == 0; /* not consecutive: a word of its own */
  CHECK(ok && s.nundo == inner + 3);
  dp__scope_unbind(&s, inner);
  CHECK(s.slots[200].handle == 0 && s.slots[201].handle == 0 && s.slots[250].handle == 0 &&
        s.slots[5].handle == 3005 && s.slots[150].handle == 2150 && s.slots[150].block == 7);
  ok &= dp__scope_bind(&s, 201, 5201, 9) == 0; /* (201 follows 199's run, but below-mark words stay) */
  dp__scope_unbind(&s, outer);
  CHECK(ok && s.slots[5].handle == 1005 && s.slots[5].block == 0 && s.slots[99].handle == 1099 &&
        s.slots[100].handle == 0 && s.slots[199].handle == 0 && s.slots[199].block == 0 &&
        s.slots[201].handle == 0 && s.nundo == 2);
  dp__scope_unbind(&s, 0);
  int clear = 1;
  for (uint32_t k = 0; k < 300; k++) clear &= s.slots[k].handle == 0 && s.slots[k].block == 0;
  CHECK(clear && s.nundo == 0);
  dp__scope_free(&s);
}

/* Slots keep a name's length in 8 bits: one of 255 bytes or more is
   copied into the scope's arena behind its length, from the text too. */
static void test_scope_long_names(int *passed, int *failed) {
  static char text[1200];
  dp__scope s = {0};
  memset(text, 'n', sizeof text - 1);
  text[0] = '%';
  s.text = text;
  size_t lens[] = {1, 254, 255, 256, 1000};
  int64_t k[5];
  for (int i = 0; i < 5; i++) k[i] = dp__scope_intern_text(&s, 0, lens[i]);
  int64_t copied = dp__scope_intern(&s, text + 100, 700); /* 'nnn...': not text[0..700) */
  CHECK(k[0] == 0 && k[1] == 1 && k[2] == 2 && k[3] == 3 && k[4] == 4 && copied == 5);
  int ok = 1;
  for (int i = 0; i < 5; i++)
    ok &= dp__scope_len(&s, (uint32_t)i) == lens[i] && dp__scope_find(&s, text, lens[i]) == i &&
          memcmp(dp__scope_name(&s, (uint32_t)i), text, lens[i]) == 0;
  CHECK(ok && dp__scope_len(&s, 5) == 700 && dp__scope_find(&s, text + 100, 700) == 5 &&
        dp__scope_name(&s, 3) != text && dp__scope_name(&s, 1) == text);
  CHECK(dp__scope_intern_text(&s, 0, 1000) == 4 && dp__scope_find(&s, text, 999) < 0 && s.nslots == 6);
  ok = dp__scope_bind(&s, 3, 7, SCOPE_BLOCKS + 1) == 0; /* (the deepest block's id fits) */
  CHECK(ok && s.slots[3].block == SCOPE_BLOCKS + 1 && s.slots[3].handle == 7 && dp__scope_len(&s, 3) == 256);
  dp__scope_free(&s);
}

void dp_test_parse(int *passed, int *failed) {
  dp_ctx *ctx = dp_ctx_new();
  CHECK(ctx != NULL && dp_register_builtin_ops(ctx, NULL) == 0);
  if (!ctx) return;
  test_lexer(ctx, passed, failed);
  test_token_offsets(ctx, passed, failed);
  test_actions(ctx, passed, failed);
  test_scalars(passed, failed);
  test_scope_undo(passed, failed);
  test_scope_long_names(passed, failed);
  dp_release(ctx);
}
