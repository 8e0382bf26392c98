# Convenience wrapper around the scripts (the build itself is premake5.lua).
#   make            build (release): lib/, bin/
#   make test       every test; last line "N passed, N failed, N skipped"
#   make asan       the suite in the ASan+UBSan build (build/asan/)
#   make valgrind   the suite under valgrind
#   make install PREFIX=/usr/local   (where lua5.4 finds the module as is; elsewhere it says what to add)
#   make install-rock                 what the rockspec runs (LUADIR, LIBDIR, BINDIR from luarocks;
#                                     dp.root's files and the C library stay in the rock's folder)
#   make dist                         devplan-VERSION.tar.gz, the source the rockspec names
PREFIX ?= /usr/local

VERSION = 0.1.0

.PHONY: all debug test asan valgrind demo install install-rock dist clean
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
	LUADIR="$(LUADIR)" LIBDIR="$(LIBDIR)" BINDIR="$(BINDIR)" DATADIR="$(PREFIX)/share/devplan" \
	  CLIBDIR="$(PREFIX)/c/lib" INCDIR="$(PREFIX)/c/include" scripts/install.sh "$(PREFIX)"
dist:
	git archive --format=tar.gz --prefix=devplan-$(VERSION)/ -o devplan-$(VERSION).tar.gz HEAD
clean:
	rm -rf build lib bin
