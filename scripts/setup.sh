#!/bin/sh
# Installs the Debian packages devplan needs, only those missing.
# Does nothing when all are present; as root it needs no sudo.
# `scripts/setup.sh fuzz` also installs clang and libFuzzer (fuzz/build.sh);
# `scripts/setup.sh bench` igraph's C library (bench/maxflow.sh compares with it);
# `scripts/setup.sh models` torch and torchvision (spec/data/onnx/make_models.py).
set -e
# libedit-dev: the REPL's line editing; lua-dkjson: JSON reports; graphviz: --svg;
# tmux: the REPL's spec drives it in a terminal; luarocks: the rock is tested (spec/cli_install_spec.lua);
# libprotobuf-c-dev, protobuf-c-compiler and libonnx-dev (onnx.proto): the ONNX importer;
# python3-onnx: its spec compares types with onnx.shape_inference
PACKAGES="lua5.4 liblua5.4-dev lua-lpeg lua-busted premake4 make gcc libc6-dev valgrind
  libedit-dev lua-dkjson graphviz tmux luarocks libprotobuf-c-dev protobuf-c-compiler libonnx-dev python3-onnx"
[ "${1:-}" = fuzz ] && PACKAGES="$PACKAGES clang libclang-rt-dev"
[ "${1:-}" = bench ] && PACKAGES="$PACKAGES libigraph-dev pkg-config"
[ "${1:-}" = models ] && PACKAGES="$PACKAGES python3-torch python3-torchvision"
missing=""
for p in $PACKAGES; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0
echo "setup: installing$missing"
if [ "$(id -u)" -eq 0 ]; then SUDO=""
elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"
else echo "setup: need root or sudo to install:$missing" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
