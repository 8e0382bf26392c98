#!/bin/bash
# The coverage-guided fuzzer on ONNX bytes (fuzz/fuzz_onnx.c) on one core.
#
#   fuzz/run_onnx.sh [SECONDS]   fuzz for SECONDS (default 60), starting from
#                                fuzz/corpus_onnx/ (committed), the test models of
#                                spec/data/onnx/ and build/fuzz/corpus_onnx/ (what
#                                earlier runs found);
#                                crashes, leaks and sanitizer reports go to
#                                build/fuzz/artifacts_onnx/
#   fuzz/run_onnx.sh --merge     minimise both into fuzz/corpus_onnx/ (inputs cut at 8 KiB,
#                                so the committed corpus stays small; the suite replays it)
# Runs in fork mode with one worker, so a crash is saved and fuzzing goes on.
set -e -o pipefail
cd "$(dirname "$0")/.."
bin=build/fuzz/devplan-fuzz-onnx
if [ ! -x "$bin" ] || [ -n "$(find src include fuzz/fuzz_onnx.c -newer "$bin" -print -quit)" ]; then
  bash fuzz/build.sh
fi
mkdir -p build/fuzz/corpus_onnx build/fuzz/artifacts_onnx fuzz/corpus_onnx
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
common=(-max_len=65536 -timeout=10 -rss_limit_mb=2048 -dict=fuzz/onnx.dict
        -artifact_prefix=build/fuzz/artifacts_onnx/)
case "${1:-60}" in
  --merge)
    rm -rf build/fuzz/merged_onnx && mkdir -p build/fuzz/merged_onnx
    "$bin" "${common[@]}" -max_len=8192 -merge=1 build/fuzz/merged_onnx fuzz/corpus_onnx build/fuzz/corpus_onnx 2>&1 \
      | grep -E "MERGE-OUTER: [0-9]+ new files|ERROR" || true
    rm -f fuzz/corpus_onnx/*
    cp build/fuzz/merged_onnx/* fuzz/corpus_onnx/
    echo "fuzz/corpus_onnx: $(ls fuzz/corpus_onnx | wc -l) files" ;;
  *)
    exec "$bin" "${common[@]}" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
      -max_total_time="${1:-60}" build/fuzz/corpus_onnx fuzz/corpus_onnx spec/data/onnx ;;
esac
