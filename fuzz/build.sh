#!/bin/bash
# Builds the coverage-guided fuzzer (libFuzzer from clang, with ASan and
# UBSan): build/fuzz/devplan-fuzz, the harness fuzz/fuzz_text.c with the
# core, the parser, the patterns, the planner and the Lua binding compiled
# in (the Lua side is read from the tree, as bin/devplan does). Needs clang and
# libclang-rt-dev (scripts/setup.sh fuzz installs them).
set -e -o pipefail
cd "$(dirname "$0")/.."
sh scripts/setup.sh fuzz
LUA_INC=${LUA_INC:-/usr/include/lua5.4}
mkdir -p build/fuzz
# shellcheck disable=SC2046
clang -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iinclude -I"$LUA_INC" \
  fuzz/fuzz_text.c $(ls src/core/*.c src/planner/*.c src/parse/*.c src/pattern/*.c src/lua/*.c) \
  -llua5.4 -lm -ldl -Wl,-E -o build/fuzz/devplan-fuzz
echo "built build/fuzz/devplan-fuzz"
