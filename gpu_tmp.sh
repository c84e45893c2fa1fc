#!/usr/bin/env bash
set -u
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOWBIT_WITH_CUDA=ON \
  -DLOWBIT_BUILD_TESTS=OFF -DLOWBIT_JSON_INCLUDE_DIR=$PWD/.deps/include \
  -DLOWBIT_CUTLASS_INCLUDE_DIR=$PWD/.deps/cutlass/include > $OUT/cmake.log 2>&1
cmake --build build-gpu --target lowbit_cli -j 16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for m in 1 16 32 64 128; do
  build-gpu/tools/lowbit bench gemm --filter " M=$m " --json $OUT/gemm_m$m.json > $OUT/gemm_m$m.log 2>&1
  grep -E "^(llama|dsv3)|graph" $OUT/gemm_m$m.log | sed 's/ | int8:.*//'
done
for m in 32 64; do
  build-gpu/tools/lowbit bench block-gemm --filter " M=$m " --json $OUT/block_m$m.json > $OUT/block_m$m.log 2>&1
  grep -E "^[a-z_+]+ [0-9]+x|graph" $OUT/block_m$m.log
done
ab() {  # bench filter oldplan, old first
  local bench=$1 filter=$2 old=$3
  for pass in 1 2; do
    o=$(LOWBIT_GEMV_TMA_PLAN=$old build-gpu/tools/lowbit bench $bench --filter "$filter" 2>&1 | grep -oE "gemv_tma=[0-9.]+" | head -1)
    n=$(build-gpu/tools/lowbit bench $bench --filter "$filter" 2>&1 | grep -oE "gemv_tma=[0-9.]+" | head -1)
    echo "$bench [$filter] old($old) $o | new $n"
  done
}
ab block-gemm "q_a+kv_a 2112x7168 M=64 " 8x4
ab block-gemm "gate_up 4096x7168 M=64 " 4x4
