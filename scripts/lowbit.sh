#!/usr/bin/env bash
# The main job (README): installs dependencies, builds, runs `lowbit` with its arguments
# (default: the demo, on the GPU if there is one, else on the CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh lowbit_cli >/dev/null
exec build/tools/lowbit "$@"
