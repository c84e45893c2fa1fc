// cuBLASLt baselines shared by the benchmarks and `lowbit ffn`: a bf16 GEMM (optionally strided-
// batched), an FP8 GEMM with per-tensor or block scales, and an int8 x int8 -> int32 GEMM. Both compute the row-major product
// y[M, N] = x[M, K] . w[N, K]^T (weights K-major, as checkpoints store them), fp32 accumulation.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <memory>

#include "harness.cuh"

namespace lowbit::bench {

// Owns the cuBLASLt handle, descriptors, chosen algorithm and workspace of one problem.
class CublasLtPlan {
 public:
  CublasLtPlan(const CublasLtPlan&) = delete;
  CublasLtPlan& operator=(const CublasLtPlan&) = delete;
  ~CublasLtPlan();

 protected:
  // compute / scale types: fp32 for float GEMMs, int32 for the int8 one.
  explicit CublasLtPlan(bool int32_compute = false);
  // Picks the heuristic's first algorithm for the layouts already set; throws if none.
  void choose_algorithm();
  void matmul(const void* a, const void* b, void* d) const;

  static constexpr std::size_t kWorkspaceBytes = 32 << 20;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulPreference_t preference_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_ = {};
  bool int32_compute_ = false;
  std::unique_ptr<DeviceMemory> workspace_;
};

// bf16 x bf16 -> bf16, `batch` independent problems at strides N K (w), M K (x), M N (y).
class CublasLtBf16Gemm : public CublasLtPlan {
 public:
  CublasLtBf16Gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1);
  void run(const void* w, const void* x, void* y) const { matmul(w, x, y); }
};

// fp8 e4m3 x fp8 e4m3 -> bf16 with per-tensor scales (one float each) or DeepSeek block scales
// (weights [ceil(N/128), ceil(K/128)], activations 1 x 128 groups column-major).
class CublasLtFp8Gemm : public CublasLtPlan {
 public:
  // weights_as_a: the weights are cuBLASLt's A (BLK128x128 scales on A); else the activations
  // are A (VEC128 on A, BLK128x128 on B) and D is [N, M] row-major (same work, same bytes).
  // NOTE: block-scaled modes need the scale pointers set before the algorithm query; run()
  // re-points them at each call's scales.
  // fast_accum: CUBLASLT_MATMUL_DESC_FAST_ACCUM (no periodic promotion of the tensor cores'
  // partial sums into fp32; what vLLM's CUTLASS FP8 kernels and lowbit's scaled_mm do).
  CublasLtFp8Gemm(std::int64_t m, std::int64_t n, std::int64_t k, bool block_scaled,
                  bool weights_as_a, const float* w_scales, const float* x_scales,
                  bool fast_accum = false);
  void run(const void* w, const float* w_scales, const void* x, const float* x_scales,
           void* y) const;

 private:
  void set_scales(const float* w_scales, const float* x_scales) const;
  bool weights_as_a_;
};

// int8 x int8 -> int32 y[M, N] = x[M, K] . w[N, K]^T (the INT8 baseline: a dequantization
// kernel must follow to give bf16).
class CublasLtInt8Gemm : public CublasLtPlan {
 public:
  CublasLtInt8Gemm(std::int64_t m, std::int64_t n, std::int64_t k);
  void run(const void* w, const void* x, void* y) const { matmul(w, x, y); }
};

// The FP8 matrix rate ceiling: cuBLASLt FP8 (per-tensor scales, bf16 out) at 8192^3 on random
// finite e4m3 codes, median TFLOP/s.
double measure_cublaslt_fp8_tflops(int samples);

}  // namespace lowbit::bench
