#!/bin/bash
# Runs the whole suite once and ends with exactly "N passed, N failed".
# Used by test.sh (release), sanitize.sh (ASan+UBSan build) and valgrind.sh.
#
# Environment:
#   DEVPLAN_EXE   the devplan executable under test (default bin/devplan)
#   DEVPLAN_LIB   folder of devplan.so for busted's --cpath (default lib)
#   BUSTED        command that runs busted (default: busted run by stock lua5.4,
#                 loading lib/devplan.so); sanitize/valgrind run busted inside
#                 the executable: "$DEVPLAN_EXE /usr/bin/busted"
#   WRAP          prefix for every executable run (e.g. valgrind ...), default none
# Each spec file runs on its own, so a crash in one does not stop the rest
# (a spec file that dies without its count line counts as one failure).
set -u
cd "$(dirname "$0")/.."
EXE=${DEVPLAN_EXE:-bin/devplan}
LIB=${DEVPLAN_LIB:-lib}
BUSTED=${BUSTED:-lua5.4 $(command -v busted)}  # lua5.4, whatever /usr/bin/lua is
WRAP=${WRAP:-}
export DEVPLAN_EXE="$EXE"

# Other test programs, one per line: a command run from the project root.
# Its last line "N passed, N failed" is summed when present; otherwise its
# exit status counts as one test.
TEST_PROGRAMS=(
  "$(dirname "$EXE")/devplan-ctest"
)

passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

add_counts() { # $1 passed, $2 failed
  passed=$((passed + $1))
  failed=$((failed + $2))
}

for spec in spec/*_spec.lua; do
  [ -e "$spec" ] || continue
  echo "== $spec"
  # shellcheck disable=SC2086
  $WRAP $BUSTED --lpath='lua/?.lua;lua/?/init.lua;passes/?.lua' --cpath="$LIB/?.so" \
    -o scripts/busted_count.lua "$spec" 2>&1 | tee "$log" | grep -v '^devplan-count:'
  status=${PIPESTATUS[0]}
  line=$(grep '^devplan-count:' "$log" | tail -1)
  if [ -n "$line" ]; then
    read -r _ p f <<<"$line"
    add_counts "$p" "$f"
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
      echo "!! $spec: exit status $status with no failing test (leak or memory error?)"
      add_counts 0 1
    fi
  else
    echo "!! $spec: no result (exit status $status)"
    add_counts 0 1
  fi
done

if [ -d ../shared/conformance ]; then
  echo "== conformance (../shared/conformance/run.lua)"
  # shellcheck disable=SC2086
  $WRAP "$EXE" ../shared/conformance/run.lua 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  ok=$(grep -c '^ok ' "$log")
  bad=$(grep -c '^FAIL ' "$log")
  add_counts "$ok" "$bad"
  if ! tail -1 "$log" | grep -q '^[0-9]* passed, [0-9]* failed$'; then
    echo "!! conformance runner did not finish (exit status $status)"
    add_counts 0 1
  elif [ "$status" -ne 0 ] && [ "$bad" -eq 0 ]; then
    echo "!! conformance runner: exit status $status with no failing case"
    add_counts 0 1
  fi
fi

if [ -f ../shared/conformance/patterns/run.lua ]; then
  echo "== pattern conformance (../shared/conformance/patterns/run.lua)"
  # shellcheck disable=SC2086
  $WRAP "$EXE" ../shared/conformance/patterns/run.lua 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  # the runner prints a FAIL line per failing case and ends with "N passed, N failed"
  bad=$(grep -c '^FAIL ' "$log")
  last=$(tail -1 "$log")
  if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    add_counts "${BASH_REMATCH[1]}" "$bad"
    if [ "$status" -ne 0 ] && [ "$bad" -eq 0 ]; then
      echo "!! pattern conformance runner: exit status $status with no failing case"
      add_counts 0 1
    fi
  else
    echo "!! pattern conformance runner did not finish (exit status $status)"
    add_counts 0 1
  fi
fi

for prog in "${TEST_PROGRAMS[@]}"; do
  echo "== $prog"
  # shellcheck disable=SC2086
  $WRAP $prog 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  last=$(tail -1 "$log")
  if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    add_counts "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
    if [ "$status" -ne 0 ] && [ "${BASH_REMATCH[2]}" -eq 0 ]; then add_counts 0 1; fi
  elif [ "$status" -eq 0 ]; then add_counts 1 0
  else add_counts 0 1
  fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
