#!/bin/sh
# IR benchmark: builds bin/devplan-bench-ir and runs it on call chains and
# let chains of 10,000 / 100,000 / 1,000,000 nodes (one process per size,
# so each row's memory is its own). Goal at 1,000,000: every step under
# 1 s and under 300 bytes per node.
set -e
cd "$(dirname "$0")/.."
scripts/build.sh release >/dev/null
echo "chain   links  step       seconds  heap peak over start  heap kept   (per link; a let link is 3 IR nodes: let, call, var)"
for kind in call let; do
  for n in 10000 100000 1000000; do
    bin/devplan-bench-ir "$kind" "$n"
  done
done
