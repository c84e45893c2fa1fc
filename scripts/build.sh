#!/usr/bin/env bash
# Configures and builds lowbit into ./build: with the CUDA kernels (sm_90a) when nvcc is
# available, else the CPU references only. Extra arguments name the targets to build.
set -euo pipefail
cd "$(dirname "$0")/.."
with_cuda=OFF
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  with_cuda=ON
  export PATH="$PATH:/usr/local/cuda/bin"
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLOWBIT_WITH_CUDA="$with_cuda" >/dev/null
targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build build -j "$(nproc)" "${targets[@]}"
