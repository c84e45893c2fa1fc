#!/usr/bin/env bash
# Installs what lowbit builds with on a Debian machine (skips what is already there):
# CMake, g++, GoogleTest, nlohmann/json, stb (plot drawing and PNG), clang with its libFuzzer
# runtime (the fuzz test), and CUTLASS headers (pip) when nvcc is present. The CUDA toolkit is
# optional: without nvcc the build is CPU-only (LOWBIT_WITH_CUDA=OFF).
set -euo pipefail
packages=(cmake g++ make libgtest-dev googletest nlohmann-json3-dev libstb-dev clang
          libclang-rt-dev)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
# CUTLASS 4.2 headers (PyPI nvidia-cutlass) for the tensor-core GEMMs, when CUDA kernels build.
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  python3 -c "import cutlass_library" 2>/dev/null ||
    python3 -m pip install -q --disable-pip-version-check --no-deps nvidia-cutlass==4.2.0.0
fi
