#!/bin/sh
# Parse and print benchmark (bench/parse.lua) with the project's executable.
# Usage: bench/parse.sh [N ...] [--shapes chain,let,branchy]
cd "$(dirname "$0")/.." || exit 1
test -x bin/devplan || scripts/build.sh || exit 1
exec bin/devplan bench/parse.lua "$@"
