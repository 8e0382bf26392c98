#!/bin/bash
# Sets up, builds and runs every test (busted specs, the shared conformance
# cases, other test programs). The last line is "N passed, N failed, N skipped";
# the exit status is 1 when anything failed.
set -e
cd "$(dirname "$0")/.."
sh scripts/setup.sh
bash scripts/build.sh release
exec bash scripts/run_suite.sh
