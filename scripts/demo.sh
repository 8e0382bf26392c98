#!/bin/sh
# Sets up, builds and runs the quick-start example through bin/devplan.
set -e
cd "$(dirname "$0")/.."
sh scripts/setup.sh
bash scripts/build.sh
exec bin/devplan examples/quickstart.lua
