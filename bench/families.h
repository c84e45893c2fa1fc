// The benchmark families behind run_benchmarks (CUDA builds only). Each prints its table as it
// runs and returns its report: {"benchmark", "device", "copy_gbps", ..., "results": [...]}.
#pragma once

#include <nlohmann/json.hpp>

#include "bench.h"

namespace lowbit::bench {

// Activation quantization kernels against the copy bandwidth.
nlohmann::json run_quant_bench(const BenchOptions& options);
// NVFP4 dense / 2:4 MoE-decode GEMVs against copy bandwidth and cuBLASLt bf16.
nlohmann::json run_nvfp4_bench(const BenchOptions& options);
// block_fp8_mm on DeepSeek-V3 shapes against cuBLASLt block-scaled and per-tensor FP8; its
// report also carries the cuBLASLt FP8 matrix rate measured in the run ("fp8_tflops").
nlohmann::json run_block_gemm_bench(const BenchOptions& options);
// scaled_mm (FP8/INT8 W8A8) against cuBLASLt FP8 and cuBLASLt int8 + dequantization.
nlohmann::json run_gemm_bench(const BenchOptions& options);

}  // namespace lowbit::bench
