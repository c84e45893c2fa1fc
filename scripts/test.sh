#!/usr/bin/env bash
# The test command (README, CI): installs dependencies, builds, runs the CPU test suites (C++
# GoogleTest through ctest, then the Python package against numpy/ml_dtypes references).
# GPU suites run on a Hopper machine through scripts/gpu-check.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh lowbit_cpu_tests lowbit_fuzz_targets lowbit_cli
ctest --test-dir build -L cpu --output-on-failure -j "$(nproc)"

python3 -m pip install -q --disable-pip-version-check scikit-build-core nanobind numpy "ml_dtypes>=0.5" pytest
# The Python package is built CPU-only here: this suite runs on CPU machines, and compiling the
# CUTLASS kernels a second time would double the build (the GPU machine builds them with CUDA in
# scripts/gpu-check.sh; `pip install .` elsewhere picks CUDA automatically when nvcc is present).
python3 -m pip install -q --disable-pip-version-check --no-build-isolation \
  -C cmake.define.LOWBIT_WITH_CUDA=OFF .
(cd tests/python && python3 -m pytest -q .)
