#!/bin/bash
# Runs the whole suite once and ends with exactly one line
# "N passed, N failed, N skipped" (skipped: busted's pending tests, and the
# cases the conformance runners skip, each with its reason in the log).
# Every count line a part prints on its own is shown as "[PART] N passed, ...",
# so that only the last line is a total.
# Used by test.sh (release), sanitize.sh (ASan+UBSan build) and valgrind.sh.
#
# Environment:
#   DEVPLAN_EXE   the devplan executable under test (default bin/devplan)
#   DEVPLAN_LIB   folder of devplan.so for busted's --cpath (default lib)
#   BUSTED        command that runs busted (default: busted run by stock lua5.4,
#                 loading lib/devplan.so); sanitize/valgrind run busted inside
#                 the executable: "$DEVPLAN_EXE /usr/bin/busted"
#   WRAP          prefix for every executable run (e.g. valgrind ...), default none
#   DEVPLAN_SHARED the shared test material (conformance runners), default ../shared
# Each spec file runs on its own, so a crash in one does not stop the rest
# (a spec file that dies without its count line counts as one failure).
set -u
cd "$(dirname "$0")/.."
EXE=${DEVPLAN_EXE:-bin/devplan}
LIB=${DEVPLAN_LIB:-lib}
BUSTED=${BUSTED:-lua5.4 $(command -v busted)}  # lua5.4, whatever /usr/bin/lua is
WRAP=${WRAP:-}
SHARED=${DEVPLAN_SHARED:-../shared}
export DEVPLAN_EXE="$EXE"

# Other test programs, one per line: a command run from the project root.
# Its last line "N passed, N failed" is summed when present; otherwise its
# exit status counts as one test.
TEST_PROGRAMS=(
  "$(dirname "$EXE")/devplan-ctest"
  "$EXE scripts/planner_layers.lua src/planner"   # the planner's layers, printed; fails on a cycle
)

passed=0
failed=0
skipped=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

add_counts() { # $1 passed, $2 failed, $3 skipped (default 0)
  passed=$((passed + $1))
  failed=$((failed + $2))
  skipped=$((skipped + ${3:-0}))
}

# Shows a part's output, its count lines ("N passed, N failed...", a
# runner's "total: N passed, ...") marked with the part's name ($1, without
# what follows " (").
label_counts() {
  sed -u -E "s|^((total: )?[0-9]+ passed, [0-9]+ failed.*)\$|[${1%% (*}] \\1|"
}

for spec in spec/*_spec.lua; do
  [ -e "$spec" ] || continue
  echo "== $spec"
  # shellcheck disable=SC2086
  $WRAP $BUSTED --lpath='lua/?.lua;lua/?/init.lua' --cpath="$LIB/?.so" \
    -o scripts/busted_count.lua "$spec" 2>&1 | tee "$log" | grep -v '^devplan-count:'
  status=${PIPESTATUS[0]}
  line=$(grep '^devplan-count:' "$log" | tail -1)
  if [ -n "$line" ]; then
    read -r _ p f k <<<"$line"
    add_counts "$p" "$f" "$k"
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
      echo "!! $spec: exit status $status with no failing test (leak or memory error?)"
      add_counts 0 1
    fi
  else
    echo "!! $spec: no result (exit status $status)"
    add_counts 0 1
  fi
done

# run_cases NAME PASSED DONE CMD...: a runner of the shared conformance cases.
# Each failing case prints a "FAIL ..." line and each skipped one a
# "SKIP ..." or "skip ..." line with the reason; PASSED says how passing ones
# are counted: "lines" ("ok ..." lines, and "DIFF ..." ones: a documented
# deliberate difference from TVM), "verdicts" ("PASS ..." and "DIFF ..."
# lines), or "last" (the "N passed, N failed" line it ends with). DONE is a pattern its last line matches when it finished.
# A runner that did not finish, or failed with no failing case, counts one
# failure; a runner that is missing counts one failure.
run_cases() {
  local name=$1 how=$2 done_re=$3 status ok bad skip last
  shift 3
  echo "== $name"
  if [ ! -f "$2" ]; then
    echo "!! $name: $2 is missing (the shared test material beside the project)"
    add_counts 0 1
    return
  fi
  # shellcheck disable=SC2086
  $WRAP "$@" 2>&1 | tee "$log" | label_counts "$name"
  status=${PIPESTATUS[0]}
  bad=$(grep -c '^FAIL ' "$log")
  skip=$(grep -c -E '^(SKIP|skip) ' "$log")
  last=$(tail -1 "$log")
  if [ "$how" = lines ]; then ok=$(grep -c -E '^(ok|DIFF) ' "$log")
  elif [ "$how" = verdicts ]; then ok=$(grep -c -E '^(PASS|DIFF) ' "$log")
  elif [[ "$last" =~ ^([0-9]+)\ passed,\ [0-9]+\ failed$ ]]; then ok=${BASH_REMATCH[1]}
  else ok=0
  fi
  add_counts "$ok" "$bad" "$skip"
  if ! [[ "$last" =~ $done_re ]]; then
    echo "!! $name: the runner did not finish (exit status $status)"
    add_counts 0 1
  elif [ "$status" -ne 0 ] && [ "$bad" -eq 0 ]; then
    echo "!! $name: exit status $status with no failing case"
    add_counts 0 1
  fi
}

COUNTS='^[0-9]+ passed, [0-9]+ failed$'
run_cases "conformance ($SHARED/conformance/run.lua)" lines "$COUNTS" \
  "$EXE" "$SHARED/conformance/run.lua"
run_cases "pattern conformance ($SHARED/conformance/patterns/run.lua)" last "$COUNTS" \
  "$EXE" "$SHARED/conformance/patterns/run.lua"
# TVM's own parser, printer and device tests as data (issue 9)
run_cases "TVM's tests ($SHARED/conformance/tvm-peer/run.lua)" lines '^total: ' \
  "$EXE" "$SHARED/conformance/tvm-peer/run.lua" .
# TVM's BYOC partitioning tests through the RFC 0038 flow (issue 19), under
# TVM's placement and under placement by cost
for flow in tvm min_bytes; do
  run_cases "BYOC conformance, --flow $flow ($SHARED/conformance/byoc/run.lua)" verdicts \
    '^[0-9]+ passed, [0-9]+ failed, [0-9]+ diff$' "$EXE" "$SHARED/conformance/byoc/run.lua" . --flow "$flow"
done

for prog in "${TEST_PROGRAMS[@]}"; do
  echo "== $prog"
  # shellcheck disable=SC2086
  $WRAP $prog 2>&1 | tee "$log" | label_counts "C tests ($prog)"
  status=${PIPESTATUS[0]}
  last=$(tail -1 "$log")
  if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    add_counts "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
    if [ "$status" -ne 0 ] && [ "${BASH_REMATCH[2]}" -eq 0 ]; then add_counts 0 1; fi
  elif [ "$status" -eq 0 ]; then add_counts 1 0
  else add_counts 0 1
  fi
done

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
