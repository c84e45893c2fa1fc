#!/usr/bin/env bash
# The test command (README, CI): installs dependencies, builds, runs the CPU test suite.
# GPU suites run on a Hopper machine through scripts/gpu-check.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh lowbit_cpu_tests lowbit_cli
ctest --test-dir build -L cpu --output-on-failure -j "$(nproc)"
