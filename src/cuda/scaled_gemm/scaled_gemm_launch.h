// Launch interface of the sm_90a scaled GEMM kernels (raw pointers; src/ops/scaled_gemm.cpp
// validates). D[m, n] = s_a * (s_b * (A[m, :] . B[n, :] - azp term)) + bias[n], A [M, K] and
// B [N, K] row-major (K-major), fp8 e4m3fn or int8, D [M, N] row-major bf16 | fp16.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lowbit/tensor.h"
#include "scaled_gemm_config.h"

namespace lowbit::cuda {

struct ScaledGemmProblem {
  std::int64_t m = 0, n = 0, k = 0;
  DType ab_dtype = DType::kFP8E4M3;  // or kInt8
  const void* a = nullptr;           // [M, K], row stride lda
  std::int64_t lda = 0;
  const void* b = nullptr;           // [N, K], row stride ldb
  std::int64_t ldb = 0;
  const float* a_scales = nullptr;   // [M] (per-token) or [1]
  bool a_per_token = false;
  const float* b_scales = nullptr;   // [N] (per-channel) or [1]
  bool b_per_channel = false;
  const void* bias = nullptr;        // [N] output dtype, or null
  const std::int32_t* azp_adj = nullptr;  // [N], or null (int8 only)
  const std::int32_t* azp = nullptr;      // [M], or null (int8 only; needs azp_adj)
  void* d = nullptr;                 // [M, N] bf16 | fp16, row stride ldd
  std::int64_t ldd = 0;
  DType d_dtype = DType::kBF16;
  int sm_count = 0;
  // Programmatic dependent launch (common/kernel_launch.cuh) of the GEMVs (but gemv_wgmma) and
  // of every CUTLASS tile (sm90_scaled_gemm.cuh).
  bool dependent_launch = false;
};

std::size_t scaled_gemm_workspace_bytes(const ScaledGemmProblem& problem,
                                        const ScaledGemmConfig& config);

void launch_scaled_gemm(const ScaledGemmProblem& problem, const ScaledGemmConfig& config,
                        void* workspace, std::size_t workspace_bytes, cudaStream_t stream);

// output[n] = zero_point * sum_k b[n, k], int8 [N, K] row stride ldb -> int32 [N].
void launch_scaled_gemm_azp_adjustment(const std::int8_t* b, std::int64_t n, std::int64_t k,
                                       std::int64_t ldb, std::int32_t zero_point,
                                       std::int32_t* output, cudaStream_t stream);

}  // namespace lowbit::cuda
