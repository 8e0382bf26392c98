#!/bin/sh
# Installs devplan under PREFIX (default /usr/local), where a stock lua5.4
# and busted find it without flags (Lua 5.4's default paths under PREFIX):
#   PREFIX/bin/devplan                    the executable (commands, scripts, the REPL)
#   PREFIX/lib/lua/5.4/devplan/core.so    the C half, require "devplan.core"
#   PREFIX/share/lua/5.4/devplan/*.lua    the Lua half, require "devplan"
#   PREFIX/share/lua/5.4/<pass>.lua       passes/*.lua, under the module names they
#                                         have in the tree (require "annotate_virtual_devices")
#   PREFIX/share/devplan/                 examples/, README.md, API.md (dp.root when installed)
#   PREFIX/lib/libdevplan_core.a, PREFIX/include/devplan/*.h   the C library
# Debug information is stripped: nothing installed refers to the build tree.
# LUADIR, LIBDIR and BINDIR override the first three (the rockspec sets them).
# Usage: scripts/install.sh [PREFIX]   (or PREFIX=... scripts/install.sh)
set -e
cd "$(dirname "$0")/.."
PREFIX=${1:-${PREFIX:-/usr/local}}
LUADIR=${LUADIR:-$PREFIX/share/lua/5.4}
LIBDIR=${LIBDIR:-$PREFIX/lib/lua/5.4}
BINDIR=${BINDIR:-$PREFIX/bin}
[ -x bin/devplan ] && [ -f lib/devplan.so ] || bash scripts/build.sh release
install -d "$BINDIR" "$LIBDIR/devplan" "$LUADIR/devplan" "$PREFIX/lib" "$PREFIX/include/devplan" \
  "$PREFIX/share/devplan/examples"
install -m 755 bin/devplan "$BINDIR/devplan"
install -m 755 lib/devplan.so "$LIBDIR/devplan/core.so"
install -m 644 lib/libdevplan_core.a "$PREFIX/lib/libdevplan_core.a"
strip --strip-debug "$BINDIR/devplan" "$LIBDIR/devplan/core.so" "$PREFIX/lib/libdevplan_core.a"
install -m 644 include/devplan/*.h "$PREFIX/include/devplan/"
install -m 644 lua/devplan/*.lua "$LUADIR/devplan/"
install -m 644 passes/*.lua "$LUADIR/"
install -m 644 examples/*.lua "$PREFIX/share/devplan/examples/"
install -m 644 README.md lua/devplan/API.md "$PREFIX/share/devplan/"
echo "installed devplan in $PREFIX"
