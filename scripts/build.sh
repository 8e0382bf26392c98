#!/bin/bash
# Regenerates the makefiles (premake globs files at generation time) and builds.
# Usage: scripts/build.sh [release|debug|asan] [make arguments...]
# Outputs: lib/ and bin/ (release, debug); build/asan/{lib,bin} (asan).
# Fails (status 1) when the build fails.
set -e -o pipefail
cd "$(dirname "$0")/.."
config=${1:-release}
[ $# -gt 0 ] && shift
if command -v premake5 >/dev/null 2>&1; then premake5 gmake >/dev/null
else premake4 --file=premake5.lua gmake >/dev/null; fi
make -C build config="$config" -j2 --no-print-directory "$@" 2>&1 \
  | { grep -v '^==== \|^Linking\|^Creating' || true; }
if [ "$config" = asan ]; then out=build/asan; else out=.; fi
test -x "$out/bin/devplan" && test -f "$out/lib/devplan.so"
