// Launch interface of the sm_90a block-scaled FP8 GEMM kernels (raw pointers; the host layer in
// src/ops/block_gemm.cpp validates). C[m, n] = sum_kb As[m, kb] * Bs[n / 128, kb] * (A_kb . B_kb)
// with A fp8 [M, K] row-major, B fp8 [N, K] row-major (K-major weights), scales fp32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "block_gemm_config.h"
#include "lowbit/tensor.h"

namespace lowbit::cuda {

struct BlockFp8GemmProblem {
  std::int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;  // [M, K] fp8 e4m3fn, row stride lda
  std::int64_t lda = 0;
  const float* a_scales = nullptr;  // As(m, kb) at m * a_scale_stride_m + kb * a_scale_stride_k
  std::int64_t a_scale_stride_m = 0, a_scale_stride_k = 0;
  const void* b = nullptr;  // [N, K] fp8 e4m3fn, row stride ldb
  std::int64_t ldb = 0;
  const float* b_scales = nullptr;  // [ceil(N / 128), ceil(K / 128)] contiguous
  void* d = nullptr;                // [M, N] bf16 | fp32, row stride ldd
  std::int64_t ldd = 0;
  DType d_dtype = DType::kBF16;
  int sm_count = 0;
  // Programmatic dependent launch of the decode GEMVs (common/kernel_launch.cuh); the CUTLASS
  // kernels launch normally.
  bool dependent_launch = false;
};

// Bytes of device workspace the kernel of `config` needs for `problem` (stream-K partials and,
// for column-major scales whose M is not a multiple of 4, the re-aligned copy of As).
std::size_t block_fp8_gemm_workspace_bytes(const BlockFp8GemmProblem& problem,
                                           const BlockFp8GemmConfig& config);

void launch_block_fp8_gemm(const BlockFp8GemmProblem& problem, const BlockFp8GemmConfig& config,
                           void* workspace, std::size_t workspace_bytes, cudaStream_t stream);

}  // namespace lowbit::cuda
