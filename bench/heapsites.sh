#!/bin/bash
# Heap bytes by allocation site at a step's peak (bench/heapsites.c).
# Usage: bench/heapsites.sh ROW SHAPE N [DEPTH]: runs the step of
# `bench/perf.lua --child ROW SHAPE N once` twice under the preload (the
# first run finds the peak, the second copies every site's live bytes
# there) and prints the sites, largest first, each frame as function:line.
set -e
cd "$(dirname "$0")/.."
row=$1 shape=$2 n=$3 depth=${4:-4}
if [ ! -f bin/heapsites.so ] || [ bench/heapsites.c -nt bin/heapsites.so ]; then
  cc -O2 -shared -fPIC -o bin/heapsites.so bench/heapsites.c -ldl
fi
out=$(mktemp)
peak=$(HEAPSITE_OUT=$out LD_PRELOAD=$PWD/bin/heapsites.so bin/devplan bench/perf.lua --child "$row" "$shape" "$n" once | awk '{print $3}')
HEAPSITE_AT=$((peak - 200000)) HEAPSITE_OUT=$out LD_PRELOAD=$PWD/bin/heapsites.so bin/devplan bench/perf.lua --child "$row" "$shape" "$n" once >/dev/null
head -1 "$out"
# resolve every object+offset once per object
tail -n +2 "$out" | tr ' ' '\n' | grep + | sort -u > "$out.frames"
: > "$out.names"
for obj in $(cut -d+ -f1 "$out.frames" | sort -u); do
  grep "^$obj+" "$out.frames" | cut -d+ -f2 > "$out.offs"
  addr2line -f -s -e "$obj" $(cat "$out.offs") 2>/dev/null | paste - - | sed 's/ (discriminator [0-9]*)//' |
    paste -d' ' <(sed "s|^|$obj+|" "$out.offs") - >> "$out.names"
done
tail -n +2 "$out" | sort -rn | awk -v depth="$depth" -v names="$out.names" '
  BEGIN { while ((getline l < names) > 0) { split(l, a, " "); split(a[2], fn, "\t"); nm[a[1]] = a[2] ":" a[3]; gsub(/\t/, " ", nm[a[1]]) } }
  { s = sprintf("%8.1f MB", $1 / 1e6); k = 0
    for (i = 2; i <= NF && k < depth; i++) { f = nm[$i]; if (f == "") f = $i
      if (f ~ /^(malloc|calloc|realloc|memalign|mmap|dp_malloc|dp_calloc|dp_realloc|dp_grow|dp_grow8|dp_advise_huge|dp_huge_size|grown|dp__map_huge):/) continue
      s = s "  " f; k++ }
    print s }'
rm -f "$out" "$out.frames" "$out.names" "$out.offs"
