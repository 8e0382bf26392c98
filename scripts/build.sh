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
# A static library keeps every member ar ever put in it: an object whose source
# was moved or removed would still be linked (and win over its new copy). Start
# the archive again when it holds one the makefile no longer builds.
objs=$(grep -o '$(OBJDIR)/[A-Za-z0-9_.-]*\.o' build/devplan_core.make | sed 's|.*/||' | sort -u)
for a in lib/libdevplan_core.a build/asan/lib/libdevplan_core.a; do
  [ -f "$a" ] || continue
  if [ -n "$(ar t "$a" | sort | comm -23 - <(printf '%s\n' "$objs"))" ]; then rm -f "$a"; fi
done
# Quiet: one line per project built ("build: devplan_core (release)"); the
# compiler's warnings and errors pass through, the per-file lines do not.
make -C build config="$config" -j2 --no-print-directory "$@" 2>&1 \
  | { sed -n -e '/^==== Building /{s/^==== Building \(.*\) ====$/build: \1/p;d;}' \
      -e '/^==== \|^Linking\|^Creating\|^[A-Za-z0-9_.-]*\.c$/d' -e 'p' || true; }
if [ "$config" = asan ]; then out=build/asan; else out=.; fi
test -x "$out/bin/devplan" && test -f "$out/lib/devplan.so"
