#!/bin/sh
# Max-flow benchmark: the placement optimiser's minimum cut
# (src/planner/maxflow.c) against igraph's C library (Debian's
# libigraph-dev, installed by scripts/setup.sh bench) on the same graphs of
# N nodes, and the optimiser (dp_place_solve) on placement problems of N
# variables. bench/maxflow.c says what the graphs are.
# Usage: bench/maxflow.sh [N]   (default 1000000)
set -e
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
scripts/setup.sh bench >/dev/null
scripts/build.sh release >/dev/null
mkdir -p build/bench
IGRAPH=""
if pkg-config --exists igraph 2>/dev/null; then
  IGRAPH="-DDP_BENCH_IGRAPH $(pkg-config --cflags igraph)"
  LIBS="$(pkg-config --libs igraph)"
fi
# shellcheck disable=SC2086
gcc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Iinclude $IGRAPH bench/maxflow.c lib/libdevplan_core.a \
  $LIBS -lm -o build/bench/devplan-bench-flow
build/bench/devplan-bench-flow "${1:-1000000}"
