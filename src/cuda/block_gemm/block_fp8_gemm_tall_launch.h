// Launch of block_fp8_mm's own tiles (block_fp8_gemm_tall.cuh, instantiated by
// block_fp8_gemm_256x128.cu, block_fp8_gemm_128x192.cu, block_fp8_gemm_128x144.cu and, split
// over K, block_fp8_gemm_splitk.cu): bf16 output, A and B rows 16-byte aligned (TMA; checked by
// the op), activation scales M-major with a column stride that is a multiple of 4 floats and a
// 16-byte aligned base (the caller realigns others).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "block_gemm_launch.h"

namespace lowbit::cuda {

void launch_block_fp8_gemm_256x128(const BlockFp8GemmProblem& problem, const float* a_scales,
                                   std::int64_t a_scale_stride_k, cudaStream_t stream);
void launch_block_fp8_gemm_128x192(const BlockFp8GemmProblem& problem, const float* a_scales,
                                   std::int64_t a_scale_stride_k, cudaStream_t stream);
void launch_block_fp8_gemm_128x144(const BlockFp8GemmProblem& problem, const float* a_scales,
                                   std::int64_t a_scale_stride_k, cudaStream_t stream);
void launch_block_fp8_gemm_splitk(const BlockFp8GemmProblem& problem, const float* a_scales,
                                  std::int64_t a_scale_stride_k, cudaStream_t stream);

}  // namespace lowbit::cuda
