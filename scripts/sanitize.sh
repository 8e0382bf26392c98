#!/bin/bash
# Builds the asan configuration (ASan + UBSan) into build/asan/ and runs the
# whole suite inside the instrumented executable (busted included). Must be clean.
set -e
cd "$(dirname "$0")/.."
sh scripts/setup.sh
bash scripts/build.sh asan
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:exitcode=86
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export DEVPLAN_EXE=build/asan/bin/devplan DEVPLAN_LIB=build/asan/lib
export BUSTED="build/asan/bin/devplan /usr/bin/busted"
exec bash scripts/run_suite.sh
