#!/bin/bash
# The API fuzzer (fuzz/apifuzz.lua) under ASan+UBSan for a given time.
#
#   fuzz/apifuzz.sh [SECONDS] [SEED] [EXE]
#
# SECONDS (default 60) of batches from SEED (default: from the clock), run
# by EXE (default build/asan/bin/devplan, built first) five batches per
# process, each process limited to 600 s and 4 GB. What the fuzzer finds in
# a batch (a raw error, a Lua state that no longer works) it writes itself;
# what kills a process (a crash, a sanitizer report, a hang, a leak found at
# exit) is kept here: the batch that was running (or, for a leak, each batch
# of the process run again alone until one leaks) goes to fuzz/failures/ as
# apifuzz-SEED.lua, a reproducer (and what the process printed in
# apifuzz-SEED.log). Ends with "N batches, N calls, N found";
# exit status 1 when anything was found.
set -u
cd "$(dirname "$0")/.."
seconds=${1:-60}
seed=${2:-$(( $(date +%s) % 100000000 * 100 ))}
exe=${3:-build/asan/bin/devplan}
if [ "$exe" = build/asan/bin/devplan ]; then bash scripts/build.sh asan >/dev/null || exit 1; fi
out=fuzz/failures
mkdir -p "$out" build/apifuzz
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:exitcode=86}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
current=build/apifuzz/current.lua
log=build/apifuzz/last.log
end=$(( $(date +%s) + seconds ))
batches=0
found=0

# keep FILE WHY: the batch source in FILE as a reproducer, with why in its header
keep() {
  local src=$1 why=$2 n
  n=$(sed -n 's/^-- apifuzz batch \([0-9]*\).*/\1/p' "$src" | head -1)
  n=${n:-$(basename "$src" .lua)}
  { echo "-- apifuzz batch (fuzz/apifuzz.sh): $why"
    echo "-- run from the project root: build/asan/bin/devplan $out/apifuzz-$n.lua (a crash, a sanitizer"
    echo "-- report, a hang or a leak while the defect is there)"
    cat "$src"
    echo 'os.exit(rt.finish() and 0 or 1)'; } > "$out/apifuzz-$n.lua"
  cp "$log" "$out/apifuzz-$n.log" # what the process printed (the sanitizer's report)
  echo "FOUND $why -> $out/apifuzz-$n.lua"
  found=$((found + 1))
}

# A process's memory: 4 GB (ASan reserves its shadow memory up front: its own
# hard_rss_limit_mb counts what is used, ulimit -v would count the reservation)
limit="ulimit -v 4000000;"
case "$exe" in *asan*) limit=""; export ASAN_OPTIONS="$ASAN_OPTIONS:hard_rss_limit_mb=4000" ;; esac

# run SEED N: N batches from SEED in one process; sets rc and last (the last batch started)
run() {
  ( eval "$limit"; timeout 600 "$exe" fuzz/apifuzz.lua --seed "$1" --batches "$2" --out "$out" \
      --current "$current" ) > "$log" 2>&1
  rc=$?
  last=$(sed -n 's/^batch \([0-9]*\)$/\1/p' "$log" | tail -1)
  last=${last:-$1}
}

while [ "$(date +%s)" -lt "$end" ]; do
  run "$seed" 5
  grep -E '^(FAIL|FOUND)' "$log"
  found=$((found + $(grep -c '^FAIL batch' "$log")))
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; then
    batches=$((batches + 5))
    seed=$((seed + 5))
    continue
  fi
  if grep -q '^[0-9]* passed, [0-9]* failed$' "$log"; then
    # every batch ran: the process died at exit (a leak): find the batch alone
    batches=$((batches + 5))
    for s in $(seq "$seed" $((seed + 4))); do
      run "$s" 1
      if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
        sed -e "1i -- apifuzz batch $s" "$current" > build/apifuzz/kept.lua
        keep build/apifuzz/kept.lua "status $rc at exit (a leak?): $(grep -m1 -E 'ERROR|runtime error' "$log")"
      fi
    done
    seed=$((seed + 5))
  else
    batches=$((batches + last - seed + 1))
    sed -e "1i -- apifuzz batch $last" "$current" > build/apifuzz/kept.lua
    keep build/apifuzz/kept.lua "status $rc: $(grep -m1 -E 'ERROR|runtime error|Segmentation|Killed|leak' "$log" || echo 'killed or timed out')"
    seed=$((last + 1))
  fi
done
echo "$batches batches, $((batches * 40)) calls, $found found"
[ "$found" -eq 0 ]
