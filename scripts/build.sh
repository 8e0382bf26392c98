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
# Quiet: one line per project built ("build: devplan_core (release)"); the
# compiler's warnings and errors pass through, the per-file lines do not.
make -C build config="$config" -j2 --no-print-directory "$@" 2>&1 \
  | { sed -n -e '/^==== Building /{s/^==== Building \(.*\) ====$/build: \1/p;d;}' \
      -e '/^==== \|^Linking\|^Creating\|^[A-Za-z0-9_.-]*\.c$/d' -e 'p' || true; }
if [ "$config" = asan ]; then out=build/asan; else out=.; fi
test -x "$out/bin/devplan" && test -f "$out/lib/devplan.so"
