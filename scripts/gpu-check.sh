#!/usr/bin/env bash
# One call on the GPU machine (Hopper, no network): build with all cores, run the CPU and GPU
# test suites, the demo and the benchmarks; logs and JSON go to $1, else $OUT, else ./out.
# What the machine lacks travels in the ignored folder .deps/ (googletest sources,
# nlohmann/json headers, CUTLASS 4.2 headers in .deps/cutlass/include): name it in `carry`.
# The Python step needs nanobind: the image's, or a wheel in the ignored folder .whl/ (carry it).
#   usage: scripts/gpu-check.sh [OUTDIR] [--quick] [--only-bench] [--only-python]
#                               [--tests=GTEST_FILTER] [--benches=all|quant,nvfp4,block-gemm,gemm]
#                               [--skip-python] [--shard=I/N] [--extras]
# --tests runs only the matching GPU tests (no forced-kernel reruns, no demo).
# The whole check takes longer than one 10-minute device call (the GPU suite took ~15 minutes
# on an H200 on 2026-11-22). In calls issued back to back (the machine stays warm, so the build
# is reused):
#   --shard=0/4 ... --shard=3/4   the GPU suite in gtest shards (shard 0 also runs the CPU suite)
#   --extras                      the forced-kernel reruns, lowbit ffn on every preset, the demo
#   --only-bench, --only-python   the benchmarks, the Python suites
# --shard and --extras run no benchmarks unless --benches is given, and no Python suites.
set -uo pipefail
cd "$(dirname "$0")/.."

out="${OUT:-out}"
quick=""
only_bench=0
only_python=0
tests_filter=""
benches="all"
skip_python=0
shard=""
extras=0
benches_given=0
for arg in "$@"; do
  case "$arg" in
    --shard=*) shard="${arg#--shard=}" ;;
    --extras) extras=1 ;;
    --tests=*) tests_filter="${arg#--tests=}" ;;
    --benches=*) benches="${arg#--benches=}"; benches_given=1 ;;
    --quick) quick="--quick" ;;
    --only-bench) only_bench=1 ;;
    --only-python) only_python=1 ;;
    --skip-python) skip_python=1 ;;
    *) out="$arg" ;;
  esac
done
if [ -n "$shard" ] || [ "$extras" -eq 1 ]; then
  [ "$benches_given" -eq 1 ] || benches=""
  skip_python=1
fi
if [ -n "$shard" ] && ! [[ "$shard" =~ ^[0-9]+/[1-9][0-9]*$ && ${shard%/*} -lt ${shard#*/} ]]; then
  echo "--shard=$shard: want I/N with 0 <= I < N" >&2
  exit 2
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"  # the Python step changes directory
status=0
step() {  # step NAME COMMAND...: run, log to $out/NAME.log, remember failure
  local name=$1
  shift
  echo "=== $name: $*"
  "$@" 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "=== $name: exit $rc"
  [ "$rc" -eq 0 ] || status=1
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv \
  | tee "$out/device.txt"

python_suites() {
  # The extension built with CMake directly (no network for pip's build isolation), then the
  # CPU suite (numpy/ml_dtypes) and the PyTorch GPU suite against it.
  # nanobind: the image's own if it has one (the H200 image does), else the carried wheel.
  if ! python3 -c 'import nanobind' 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/lowbit-site .whl/nanobind-*.whl
    export PYTHONPATH="/tmp/lowbit-site:${PYTHONPATH:-}"
  fi
  step py_configure cmake -S . -B build-py -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLOWBIT_WITH_CUDA=ON -DLOWBIT_BUILD_PYTHON=ON -DLOWBIT_BUILD_TESTS=OFF \
    -DLOWBIT_BUILD_TOOLS=OFF -DPython_EXECUTABLE="$(command -v python3)" \
    -DLOWBIT_CUTLASS_INCLUDE_DIR="$PWD/.deps/cutlass/include" -DLOWBIT_JSON_INCLUDE_DIR="$PWD/.deps/include"
  step py_build cmake --build build-py -j "$(nproc)"
  cp build-py/python/_lowbit*.so python/lowbit/
  (cd tests/python && PYTHONPATH="$PWD/../../python:$PYTHONPATH" step py_tests python3 -m pytest -q . ../python_gpu)
}

if [ "$only_python" -eq 1 ]; then
  python_suites
  grep -h -E "passed|failed" "$out"/py_tests.log | tail -2
  exit "$status"
fi

build=build-gpu
step configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DLOWBIT_WITH_CUDA=ON -DLOWBIT_GTEST_SOURCE_DIR="$PWD/.deps/googletest" \
  -DLOWBIT_JSON_INCLUDE_DIR="$PWD/.deps/include" \
  -DLOWBIT_CUTLASS_INCLUDE_DIR="$PWD/.deps/cutlass/include"
step build cmake --build "$build" -j "$(nproc)"
if [ "$status" -ne 0 ]; then
  echo "build failed"
  exit 1
fi

# The forced-kernel reruns, the main job on every model preset and the demo.
run_extras() {
  # The heuristics pick a kernel by size; run the quant cases on each kernel explicitly too.
  for kernel in direct pipelined; do
    LOWBIT_QUANT_KERNEL=$kernel step "gpu_tests_$kernel" "$build/tests/lowbit_gpu_tests" \
      --gtest_filter='PerTokenGroupQuantGpu.*-*MoreThan2To31*'
  done
  # The NVFP4 GEMV heuristic gives the balanced kernels few shapes; run the GEMV cases on them.
  for config in 1,4b 1,8b 1,8bsw; do
    LOWBIT_NVFP4_GEMV=$config step "gpu_tests_nvfp4_${config/,/_}" "$build/tests/lowbit_gpu_tests" \
      --gtest_filter='Nvfp4GemvGpu.*'
  done
  # The block-scaled GEMM heuristic gives each of lowbit's own tiles a few shapes; run the model
  # shapes at every token count on each.
  local block_gemm_cases='BlockFp8MmGpu.DeepSeekShapes*:BlockFp8MmGpu.Fp32Output*'
  block_gemm_cases+=':BlockFp8MmGpu.CudaGraph*'
  for config in prefill128x192mc prefill128x144mc prefill256x128mc splitk128x128; do
    LOWBIT_BLOCK_GEMM=$config step "gpu_tests_$config" "$build/tests/lowbit_gpu_tests" \
      --gtest_filter="$block_gemm_cases"
  done
  # The main job on every model preset (DeepSeek-V3 also at decode size), then the demo.
  step ffn_deepseek-v3 "$build/tools/lowbit" ffn --json "$out/ffn_deepseek-v3.json"
  step ffn_deepseek-v3_t16 "$build/tools/lowbit" ffn --tokens 16 --json "$out/ffn_deepseek-v3_t16.json"
  for model in llama3-8b qwen3-32b; do
    step "ffn_$model" "$build/tools/lowbit" ffn --model "$model" --json "$out/ffn_$model.json"
  done
  step demo "$build/tools/lowbit" demo
}

if [ "$only_bench" -eq 0 ] && [ -n "$shard" ]; then
  index=${shard%/*}
  [ "$index" -ne 0 ] || step cpu_tests "$build/tests/lowbit_cpu_tests" --gtest_brief=1
  GTEST_SHARD_INDEX=$index GTEST_TOTAL_SHARDS=${shard#*/} step "gpu_tests_shard$index" \
    "$build/tests/lowbit_gpu_tests" --gtest_output="json:$out/gpu_tests_shard$index.json"
  [ "$extras" -eq 0 ] || run_extras
elif [ "$only_bench" -eq 0 ] && [ "$extras" -eq 1 ]; then
  run_extras
elif [ "$only_bench" -eq 0 ] && [ -n "$tests_filter" ]; then
  step cpu_tests "$build/tests/lowbit_cpu_tests" --gtest_brief=1
  step gpu_tests "$build/tests/lowbit_gpu_tests" --gtest_filter="$tests_filter" \
    --gtest_output="json:$out/gpu_tests.json"
elif [ "$only_bench" -eq 0 ]; then
  step cpu_tests "$build/tests/lowbit_cpu_tests" --gtest_brief=1
  step gpu_tests "$build/tests/lowbit_gpu_tests" --gtest_output="json:$out/gpu_tests.json"
  run_extras
fi
for family in ${benches//,/ }; do
  step "bench_$family" "$build/tools/lowbit" bench "$family" $quick --json "$out/bench_$family.json" \
    --png "$out/bench_$family.png"
done
has_nanobind() { [ -d .whl ] || python3 -c 'import nanobind' 2>/dev/null; }
[ "$only_bench" -eq 1 ] || [ "$skip_python" -eq 1 ] || ! has_nanobind || python_suites

echo "=== summary"
for log in cpu_tests gpu_tests gpu_tests_shard{0..15} gpu_tests_direct gpu_tests_pipelined \
  gpu_tests_nvfp4_1_4b gpu_tests_nvfp4_1_8b gpu_tests_nvfp4_1_8bsw gpu_tests_prefill{128x192,128x144,256x128}mc \
  py_tests; do
  [ -f "$out/$log.log" ] && echo "$log: $(grep -h -E "^\[  (PASSED|FAILED) |passed|failed" "$out/$log.log" | tail -2 | tr '\n' ' ')"
done
cat "$out/device.txt"
exit "$status"
