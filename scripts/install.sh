#!/bin/sh
# Installs devplan under PREFIX (default /usr/local):
#   PREFIX/bin/devplan                    the executable (commands, scripts, the REPL): it
#                                         finds its Lua files from its own path, so it
#                                         needs nothing else whatever the prefix
#   PREFIX/lib/lua/5.4/devplan/core.so    the C half, require "devplan.core"
#   PREFIX/share/lua/5.4/devplan/*.lua    the Lua half, require "devplan", and its
#                                         passes written in Lua (devplan/passes/*.lua:
#                                         require "devplan.passes.annotate_virtual_devices")
#   PREFIX/share/devplan/                 dp.root: examples/ (with every file they read:
#                                         rules/, byoc/, tophub/, *.costs), models/,
#                                         docs/ (images/ included), README.md, LICENSE, NOTICE
#   PREFIX/lib/libdevplan_core.a, PREFIX/include/devplan/*.h   the C library
# Debug information is stripped: nothing installed refers to the build tree.
# Under a prefix where a stock lua5.4 does not look, the last lines say
# exactly what to add to the environment.
#
# A rock (the rockspec, through `make install-rock`) sets LUADIR, LIBDIR and
# BINDIR (the rock's folders, which luarocks then deploys into its tree) and
# DATADIR (where dp.root's files go, in the rock's own folder: it is written
# into LUADIR/devplan/site.lua, since it is not beside the Lua files), and
# CLIBDIR, INCDIR for the C library (kept in the rock's folder).
# Usage: scripts/install.sh [PREFIX]   (or PREFIX=... scripts/install.sh)
set -e
cd "$(dirname "$0")/.."
PREFIX=${1:-${PREFIX:-/usr/local}}
LUADIR=${LUADIR:-$PREFIX/share/lua/5.4}
LIBDIR=${LIBDIR:-$PREFIX/lib/lua/5.4}
BINDIR=${BINDIR:-$PREFIX/bin}
CLIBDIR=${CLIBDIR:-$PREFIX/lib}
INCDIR=${INCDIR:-$PREFIX/include}
DATA=${DATADIR:-$PREFIX/share/devplan}
[ -x bin/devplan ] && [ -f lib/devplan.so ] || bash scripts/build.sh release
install -d "$BINDIR" "$LIBDIR/devplan" "$LUADIR/devplan/passes" "$CLIBDIR" "$INCDIR/devplan" \
  "$DATA/examples" "$DATA/models" "$DATA/docs/images"
install -m 755 bin/devplan "$BINDIR/devplan"
install -m 755 lib/devplan.so "$LIBDIR/devplan/core.so"
install -m 644 lib/libdevplan_core.a "$CLIBDIR/libdevplan_core.a"
strip --strip-debug "$BINDIR/devplan" "$LIBDIR/devplan/core.so" "$CLIBDIR/libdevplan_core.a"
install -m 644 include/devplan/*.h "$INCDIR/devplan/"
install -m 644 lua/devplan/*.lua "$LUADIR/devplan/"
install -m 644 lua/devplan/passes/*.lua "$LUADIR/devplan/passes/"
(cd examples && find . -type f | sort) | while read -r f; do
  install -D -m 644 "examples/$f" "$DATA/examples/$f"
done
install -m 644 models/*.relay models/*.onnx models/README.md "$DATA/models/"
install -m 644 docs/*.md "$DATA/docs/"
install -m 644 docs/images/* "$DATA/docs/images/"
install -m 644 README.md LICENSE NOTICE "$DATA/"
if [ -n "${DATADIR:-}" ]; then
  root=$(cd "$DATA" && pwd)
  printf '%s\nreturn {root = [==[%s]==]}\n' \
    "-- Written by scripts/install.sh: where dp.root is (the examples, models, docs)." "$root" \
    > "$LUADIR/devplan/site.lua"
fi
echo "installed devplan in $PREFIX"

# What a stock lua5.4 (and busted run by it) needs to find the module, and
# the shell to find the command, when they do not already.
command -v lua5.4 >/dev/null 2>&1 || exit 0
path=$(lua5.4 -e 'io.write(package.path)')
cpath=$(lua5.4 -e 'io.write(package.cpath)')
lua_ok=yes
case ";$path;" in *";$LUADIR/?.lua;"*) ;; *) lua_ok=no ;; esac
case ";$cpath;" in *";$LIBDIR/?.so;"*) ;; *) lua_ok=no ;; esac
bin_ok=yes
case ":$PATH:" in *":$BINDIR:"*) ;; *) bin_ok=no ;; esac
[ -n "${DATADIR:-}" ] && exit 0 # (a rock: luarocks path says what its tree needs)
if [ $lua_ok = yes ] && [ $bin_ok = yes ]; then exit 0; fi
echo "$BINDIR/devplan runs as it is (it finds its files from its own path; tests: devplan \$(command -v busted))."
echo "For the rest, add to your shell's start-up file (e.g. ~/.profile):"
[ $bin_ok = yes ] || echo "  export PATH=\"$BINDIR:\$PATH\""
if [ $lua_ok = no ]; then
  echo "  export LUA_PATH_5_4=\"$LUADIR/?.lua;$LUADIR/?/init.lua;;\""
  echo "  export LUA_CPATH_5_4=\"$LIBDIR/?.so;;\""
fi
