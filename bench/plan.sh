#!/bin/sh
# PlanDevices benchmark (bench/plan.lua) on parsed generated modules: prints a
# table. Preloads the heap byte counter bench/heapcount.c (built here into
# bin/) so the memory column counts heap bytes rather than RSS.
# Usage: bench/plan.sh [N ...]   (DEVPLAN_BENCH_REPEAT=3: best of 3 runs)
cd "$(dirname "$0")/.." || exit 1
test -x bin/devplan || scripts/build.sh || exit 1
if [ ! -f bin/heapcount.so ] || [ bench/heapcount.c -nt bin/heapcount.so ]; then
  cc -O2 -shared -fPIC -o bin/heapcount.so bench/heapcount.c || exit 1
fi
LD_PRELOAD="$PWD/bin/heapcount.so${LD_PRELOAD:+:$LD_PRELOAD}" exec bin/devplan bench/plan.lua "$@"
