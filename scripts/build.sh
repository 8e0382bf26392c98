#!/bin/sh
# Regenerate the makefiles (premake globs files at generation time) and build.
# Usage: scripts/build.sh [release|debug|asan]
set -e
cd "$(dirname "$0")/.."
config=${1:-release}
if command -v premake5 >/dev/null 2>&1; then premake5 gmake >/dev/null
else premake4 --file=premake5.lua gmake >/dev/null; fi
make -C build config="$config" -j2 --no-print-directory "$@" 2>&1 | grep -v '^==== \|^Linking\|^Creating' || true
test -x bin/devplan && test -f lib/devplan.so
