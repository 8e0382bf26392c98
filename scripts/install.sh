#!/bin/sh
# Installs devplan under PREFIX (default /usr/local):
#   PREFIX/bin/devplan, PREFIX/lib/devplan/devplan.so, PREFIX/lib/libdevplan_core.a,
#   PREFIX/include/devplan/*.h, PREFIX/share/devplan/{lua,passes}.
# The executable finds PREFIX/share/devplan from its own path; a stock lua5.4
# loads the module with LUA_CPATH="PREFIX/lib/devplan/?.so;;".
# Usage: scripts/install.sh [PREFIX]   (or PREFIX=... scripts/install.sh)
set -e
cd "$(dirname "$0")/.."
PREFIX=${1:-${PREFIX:-/usr/local}}
[ -x bin/devplan ] || bash scripts/build.sh release
install -d "$PREFIX/bin" "$PREFIX/lib/devplan" "$PREFIX/include/devplan" "$PREFIX/share/devplan"
install -m 755 bin/devplan "$PREFIX/bin/devplan"
install -m 755 lib/devplan.so "$PREFIX/lib/devplan/devplan.so"
install -m 644 lib/libdevplan_core.a "$PREFIX/lib/libdevplan_core.a"
install -m 644 include/devplan/*.h "$PREFIX/include/devplan/"
for d in lua passes; do
  [ -d "$d" ] && cp -R "$d" "$PREFIX/share/devplan/"
done
echo "installed devplan in $PREFIX"
