#!/bin/bash
# Runs the whole suite under valgrind (memcheck) inside bin/devplan, with the
# large tests made smaller (DEVPLAN_QUICK=1). Any error or definite/indirect
# leak fails the run (exit status 99 of the program under test).
set -e
cd "$(dirname "$0")/.."
sh scripts/setup.sh
bash scripts/build.sh release
export DEVPLAN_QUICK=1
export WRAP="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect"
export BUSTED="bin/devplan /usr/bin/busted"
exec bash scripts/run_suite.sh
