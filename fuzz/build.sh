#!/bin/bash
# Builds the coverage-guided fuzzers (libFuzzer from clang, with ASan and
# UBSan): build/fuzz/devplan-fuzz, the harness fuzz/fuzz_text.c with the
# core, the parser, the patterns, the planner and the Lua binding compiled
# in (the Lua side is read from the tree, as bin/devplan does); and
# build/fuzz/devplan-fuzz-onnx, fuzz/fuzz_onnx.c with the core and the ONNX
# importer (C alone). Needs clang and libclang-rt-dev (scripts/setup.sh fuzz
# installs them).
set -e -o pipefail
cd "$(dirname "$0")/.."
sh scripts/setup.sh fuzz
LUA_INC=${LUA_INC:-/usr/include/lua5.4}
mkdir -p build/fuzz
sh scripts/onnx_proto.sh build/gen
# shellcheck disable=SC2046
clang -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iinclude -I"$LUA_INC" \
  -Ibuild/gen fuzz/fuzz_text.c \
  $(ls src/core/*.c src/planner/*.c src/parse/*.c src/pattern/*.c src/import/*.c src/lua/*.c) build/gen/onnx.pb-c.c \
  -lprotobuf-c -llua5.4 -lm -ldl -Wl,-E -o build/fuzz/devplan-fuzz
echo "built build/fuzz/devplan-fuzz"
# shellcheck disable=SC2046
clang -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iinclude -Ibuild/gen fuzz/fuzz_onnx.c \
  $(ls src/core/*.c src/planner/*.c src/parse/*.c src/pattern/*.c src/import/*.c) build/gen/onnx.pb-c.c \
  -lprotobuf-c -lm -o build/fuzz/devplan-fuzz-onnx
echo "built build/fuzz/devplan-fuzz-onnx"
