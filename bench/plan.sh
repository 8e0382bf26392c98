#!/bin/sh
# PlanDevices benchmark (bench/plan.lua): prints a table. Usage: bench/plan.sh [N ...]
cd "$(dirname "$0")/.." && exec bin/devplan bench/plan.lua "$@"
