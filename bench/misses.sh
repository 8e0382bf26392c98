#!/bin/bash
# Instructions and simulated cache misses per call of one step of
# bench/perf.lua (callgrind on the step alone: `--child ROW SHAPE N count`),
# at each size given (default 10000 and 100000), with a last level of
# LL_MIB MiB (default 8, 16-way; 32 KiB 8-way L1s). Give LL_MIB what
# bench/chase.c finds this machine's last level to be: valgrind reads the
# cache sizes the CPU reports, which on a virtual machine need not be its
# share of the host's. A step whose misses per call grow from one size to
# the next pays more than 10x its seconds for 10x the calls
# (docs/benchmarks.md, the memory hierarchy).
# Usage: bench/misses.sh ROW SHAPE [N...]   (ROW: plan, partition, min_bytes, ... as perf.lua --child)
set -e
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: bench/misses.sh ROW SHAPE [N...]" >&2
  exit 2
fi
row=$1 shape=$2
shift 2
ll=${LL_MIB:-8}
if ! [[ "$ll" =~ ^[0-9]+$ ]] || [ "$ll" -lt 1 ] || [ $((ll & (ll - 1))) -ne 0 ]; then
  echo "bench/misses.sh: LL_MIB must be a power of two (MiB), not '$ll'" >&2
  exit 2
fi
command -v valgrind >/dev/null || { echo "bench/misses.sh: needs valgrind" >&2; exit 2; }
# (the module files perf.lua's child reads: bench/out/SHAPE_N.relay, written once by bench/gen.lua)
write_module() { bin/devplan -e "dofile('bench/gen.lua').file('bench/out', '$shape', $1)"; }
case $shape in
  chain|let|branchy) ;;
  *) echo "bench/misses.sh: unknown shape '$shape' (chain, let, branchy)" >&2; exit 2 ;;
esac
sizes=${*:-10000 100000}
for n in $sizes; do
  if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then
    echo "bench/misses.sh: a size is a count of calls, not '$n'" >&2
    exit 2
  fi
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-10s %-8s %9s %9s %9s %9s   (LL %d MiB)\n' row shape calls "Ir/call" "D1m/call" "LLm/call" "$ll"
for n in $sizes; do
  write_module "$n"
  valgrind --tool=callgrind --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=$((ll << 20)),16,64 \
    --instr-atstart=no --callgrind-out-file="$out/cg" \
    bin/devplan bench/perf.lua --child "$row" "$shape" "$n" count >"$out/log" 2>&1 ||
    { cat "$out/log" >&2; exit 1; }
  # (the child names its counted part cg.1: callgrind's dump at the step's end)
  s=$(grep -h '^summary' "$out/cg.1" 2>/dev/null) || { echo "bench/misses.sh: no counts (a build without dp.debug.callgrind?)" >&2; exit 1; }
  echo "$s" | awk -v row="$row" -v shape="$shape" -v n="$n" '
    { printf "%-10s %-8s %9d %9.0f %9.2f %9.2f\n", row, shape, n, $2 / n, ($6 + $7) / n, ($9 + $10) / n }'
  rm -f "$out"/cg*
done
