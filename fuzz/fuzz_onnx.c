/*
 * libFuzzer harness: ONNX bytes through the importer (src/import), in C
 * alone (the importer is part of the C core): each input is imported with
 * its weights as constants and with weights "none", each successful module
 * is printed and type-checked again, and everything is freed, in a fresh
 * context per input (so a leak or a use after free shows on the input
 * that made it). A crash, a sanitizer report, a leak or an import that
 * succeeds with weights as constants but fails without reading them aborts,
 * so libFuzzer saves the input.
 *
 * Built by fuzz/build.sh (build/fuzz/devplan-fuzz-onnx) and run by
 * fuzz/run_onnx.sh; fuzz/corpus_onnx/ is its committed corpus, replayed by
 * spec/onnx_import_spec.lua.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "devplan/devplan.h"

static void check(dp_ctx *ctx, dp_module *m) {
  size_t len;
  char *text = dp_print_module(m, DP_PRINT_TYPES, &len);
  free(text);
  dp_err *err = NULL;
  if (dp_infer_module(m, &err) < 0) {
    char *s = dp_err_format(err);
    fprintf(stderr, "devplan-fuzz-onnx: an imported module does not type-check again: %s\n", s ? s : "?");
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dp_ctx *ctx = dp_ctx_new();
  dp_err *err = NULL;
  if (!ctx || dp_register_builtin_ops(ctx, &err) < 0) {
    fprintf(stderr, "devplan-fuzz-onnx: no context\n");
    abort();
  }
  int ok[2];
  for (int w = 0; w < 2; w++) {
    dp_onnx_opts o = {.source = "fuzz.onnx", .weights = w ? DP_ONNX_WEIGHTS_NONE : DP_ONNX_WEIGHTS_CONST};
    dp_onnx_info info;
    dp_module *m = dp_onnx_import(ctx, data, size, &o, &info, &err);
    ok[w] = m != NULL;
    if (m) {
      check(ctx, m);
      dp_onnx_info_free(&info);
      dp_release(m);
    } else {
      if (!err || !err->msg) {
        fprintf(stderr, "devplan-fuzz-onnx: an import failed without an error\n");
        abort();
      }
      dp_err_free(err);
      err = NULL;
    }
  }
  if (ok[0] && !ok[1]) {
    fprintf(stderr, "devplan-fuzz-onnx: the import with weights fails without reading them\n");
    abort();
  }
  dp_ctx_close(ctx);
  return 0;
}
