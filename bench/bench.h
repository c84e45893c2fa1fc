// Benchmark entry points of `lowbit bench <family>`. Each writes a table to stdout and, when
// json_path is non-empty, a JSON report. No CUDA header here: the CLI compiles without CUDA.
#pragma once

#include <string>

namespace lowbit::bench {

struct BenchOptions {
  std::string json_path;  // empty: no JSON file
  bool quick = false;     // fewer repetitions (smoke runs)
};

// per_token_group_quant over the M x K grid, against the device copy bandwidth.
int run_quant_bench(const BenchOptions& options);

// NVFP4 dense and 2:4 MoE-decode GEMVs against copy bandwidth and cuBLASLt bf16.
int run_nvfp4_bench(const BenchOptions& options);

// block_fp8_mm on DeepSeek-V3 shapes against cuBLASLt block-scaled and per-tensor FP8.
int run_block_gemm_bench(const BenchOptions& options);

}  // namespace lowbit::bench

namespace lowbit::bench {

// Number of CUDA devices usable by this build (0 without CUDA or without a GPU).
int cuda_device_count();

}  // namespace lowbit::bench
