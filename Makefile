# Convenience wrapper around the scripts (the build itself is premake5.lua).
#   make            build (release): lib/, bin/
#   make test       every test; last line "N passed, N failed"
#   make asan       the suite in the ASan+UBSan build (build/asan/)
#   make valgrind   the suite under valgrind
#   make install PREFIX=/usr/local   (where lua5.4 and busted find the module without flags)
#   make install-rock                 what the rockspec runs (LUADIR, LIBDIR, BINDIR from luarocks)
PREFIX ?= /usr/local

.PHONY: all debug test asan valgrind demo install install-rock clean
all:
	scripts/build.sh release
debug:
	scripts/build.sh debug
test:
	scripts/test.sh
asan:
	scripts/sanitize.sh
valgrind:
	scripts/valgrind.sh
demo:
	scripts/demo.sh
install: all
	scripts/install.sh "$(PREFIX)"
install-rock: all
	LUADIR="$(LUADIR)" LIBDIR="$(LIBDIR)" BINDIR="$(BINDIR)" scripts/install.sh "$(PREFIX)"
clean:
	rm -rf build lib bin
