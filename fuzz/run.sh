#!/bin/bash
# The coverage-guided fuzzer (fuzz/fuzz_text.c) on one core.
#
#   fuzz/run.sh [SECONDS]   fuzz for SECONDS (default 60), starting from
#                           fuzz/corpus/ (committed) and build/fuzz/corpus/
#                           (what earlier runs found); crashes, sanitizer
#                           reports and failed properties go to build/fuzz/artifacts/
#   fuzz/run.sh --merge     minimise fuzz/corpus/ + build/fuzz/corpus/ into fuzz/corpus/
#   fuzz/run.sh --seed      remake fuzz/corpus/ from fuzz/make_seeds.lua's seeds, minimised
#
# Properties in DEVPLAN_FUZZ_SOFT (default: the planner's own properties,
# see fuzz/props.lua) are counted and their first inputs saved to
# build/fuzz/soft/ instead of stopping at them; set it empty to stop on all.
# Runs in fork mode with one worker, so a crash is saved and fuzzing goes on.
set -e -o pipefail
cd "$(dirname "$0")/.."
bin=build/fuzz/devplan-fuzz
if [ ! -x "$bin" ] || [ -n "$(find src include fuzz/fuzz_text.c -newer "$bin" -print -quit)" ]; then
  bash fuzz/build.sh
fi
[ -x bin/devplan ] || bash scripts/build.sh release
mkdir -p build/fuzz/corpus build/fuzz/artifacts build/fuzz/soft fuzz/corpus
export DEVPLAN_FUZZ_SOFT=${DEVPLAN_FUZZ_SOFT-idempotence,order,conflict,strict-default,verify,plan-error}
export DEVPLAN_FUZZ_SOFT_DIR=build/fuzz/soft
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
common=(-max_len=4096 -timeout=20 -rss_limit_mb=2048 -dict=fuzz/relay.dict -artifact_prefix=build/fuzz/artifacts/)

merge_into_corpus() { # $@: folders to take inputs from
  rm -rf build/fuzz/merged && mkdir -p build/fuzz/merged
  # the suite replays the corpus: keep it small (edge coverage only, not hit
  # counts: a few hundred files) and fast (inputs that run under 3 s)
  "$bin" "${common[@]}" -timeout=3 -use_counters=0 -merge=1 build/fuzz/merged "$@" 2>&1 \
    | grep -E "MERGE-OUTER: [0-9]+ new files|ERROR" || true
  rm -f fuzz/corpus/*
  cp build/fuzz/merged/* fuzz/corpus/
  echo "fuzz/corpus: $(ls fuzz/corpus | wc -l) files"
}

case "${1:-60}" in
  --merge)
    merge_into_corpus fuzz/corpus build/fuzz/corpus ;;
  --seed)
    rm -rf build/fuzz/seeds
    bin/devplan fuzz/make_seeds.lua build/fuzz/seeds
    merge_into_corpus build/fuzz/seeds ;;
  *)
    exec "$bin" "${common[@]}" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
      -max_total_time="${1:-60}" \
      build/fuzz/corpus fuzz/corpus ;;
esac
