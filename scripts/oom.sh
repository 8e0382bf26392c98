#!/bin/bash
# Allocation failure walks (issue 8) inside the ASan+UBSan build: every n of
# the workloads (one failure, then every allocation from the n-th on), SAMPLES
# values of n spread over each model of models/, and four commands
# of the executable with DEVPLAN_FAIL_ALLOC at every STEP-th n (a fresh
# process: what a long-lived Lua state has cached already fails there too).
# Each failure must be an "out of memory" error, never a crash, an ASan or
# UBSan report or a leak (ASan's exit status 86).
# Usage: scripts/oom.sh [SAMPLES [STEP]]   (defaults 40 and 10)
# Ends with "clean" (status 0) or the problems found (status 1), then one line
# "N passed, N failed, 0 skipped" counting the walks (for .ci/run).
set -u -o pipefail
cd "$(dirname "$0")/.."
samples=${1:-40}
step=${2:-10}
bash scripts/build.sh asan || exit 1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:exitcode=86
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
exe=build/asan/bin/devplan
export DEVPLAN_EXE=$exe
bad=0 walks=0
run() { walks=$((walks + 1)); "$@" || { echo "!! failed (status $?): $*"; bad=$((bad + 1)); }; }

run $exe scripts/oom.lua
run $exe scripts/oom.lua --persistent
shopt -s nullglob
models=(models/*.relay)
[ ${#models[@]} -gt 0 ] && run $exe scripts/oom.lua --samples "$samples" "${models[@]}"

# The executable: a command with the n-th allocation of the process failing
# (DEVPLAN_FAIL_ALLOC=n) must succeed with the clean output or exit 1 with
# "out of memory"; the walk ends once failing from n on (n+) succeeds too.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cli_walk() {
  local clean out status n=1 runs=0
  walks=$((walks + 1))
  clean=$($exe "$@") || { echo "!! $exe $*: fails"; bad=$((bad + 1)); return; }
  while :; do
    out=$(DEVPLAN_FAIL_ALLOC=$n $exe "$@" 2>"$log")
    status=$?
    runs=$((runs + 1))
    if [ $status -eq 0 ]; then
      [ "$out" = "$clean" ] || { echo "!! DEVPLAN_FAIL_ALLOC=$n devplan $*: another output"; bad=$((bad + 1)); }
      DEVPLAN_FAIL_ALLOC=$n+ $exe "$@" >/dev/null 2>&1 && break
    elif [ $status -ne 1 ] || ! grep -q -e 'out of memory' -e 'not enough memory' "$log"; then
      echo "!! DEVPLAN_FAIL_ALLOC=$n devplan $*: status $status"
      sed 's/^/   /' "$log" | head -20
      bad=$((bad + 1))
    fi
    n=$((n + step))
  done
  echo "devplan $*: $runs runs, n every $step"
}
cli_walk plan spec/data/tvm_meta_cuda.relay
cli_walk plan models/mlp.relay --annotate nn.dense=cuda --explain --verify --show-meta-data
cli_walk opt models/dqn.relay -p 'infer_type,annotate(nn.conv2d=cuda),plan_devices(default=cuda),verify,partition'
cli_walk plan models/dqn.relay --annotate nn.conv2d=cuda --report text --target 'cuda -host=llvm, llvm -mcpu=skylake'
if [ $bad -eq 0 ]; then echo clean; else echo "$bad problems"; fi
echo "$((walks - bad)) passed, $bad failed, 0 skipped"
[ $bad -eq 0 ]
