#!/bin/sh
# Generates the ONNX reader's protobuf code from ONNX's own schema:
# OUT/onnx.pb-c.c and OUT/onnx.pb-c.h (protobuf-c), from Debian's libonnx-dev
# (/usr/include/onnx/onnx.proto; ONNX_PROTO=FILE takes another). premake5.lua
# runs it each time it writes the makefiles; fuzz/build.sh runs it too.
# Usage: scripts/onnx_proto.sh [OUT]   (default build/gen)
set -e
out=${1:-build/gen}
proto=${ONNX_PROTO:-/usr/include/onnx/onnx.proto}
if [ ! -f "$proto" ]; then
  echo "onnx_proto: $proto not found: install libonnx-dev (scripts/setup.sh does)" >&2
  exit 1
fi
if ! command -v protoc-c >/dev/null 2>&1; then
  echo "onnx_proto: protoc-c not found: install protobuf-c-compiler (scripts/setup.sh does)" >&2
  exit 1
fi
mkdir -p "$out"
# up to date: nothing to do (the makefiles' timestamps stay)
if [ -f "$out/onnx.pb-c.c" ] && [ -f "$out/onnx.pb-c.h" ] && cmp -s "$proto" "$out/onnx.proto"; then
  exit 0
fi
cp "$proto" "$out/onnx.proto"
(cd "$out" && protoc-c --c_out=. onnx.proto)
