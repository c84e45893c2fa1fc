// Decode kernels of block_fp8_mm for M <= kBlockFp8GemvMaxTokens: split-K tensor-core GEMVs with
// per-step block-scale promotion (block_fp8_gemv.cu on mma.sync, block_fp8_gemv_wgmma.cu on
// wgmma). No workspace; any A-scale layout.
#pragma once

#include <cstdint>

#include "block_gemm_launch.h"

namespace lowbit::cuda {

inline constexpr std::int64_t kBlockFp8GemvMaxTokens = 32;
inline constexpr std::int64_t kBlockFp8GemvTmaMaxTokens = 64;
inline constexpr int kBlockFp8GemvMaxWarps = 16;

void launch_block_fp8_gemv(const BlockFp8GemmProblem& problem, cudaStream_t stream);

// The same GEMV on wgmma (block_fp8_gemv_wgmma.cu): native fp8, K split over warpgroups and
// cluster blocks.
void launch_block_fp8_gemv_wgmma(const BlockFp8GemmProblem& problem, cudaStream_t stream);

// The wgmma GEMV fed by TMA (block_fp8_gemv_tma.cu), M <= kBlockFp8GemvTmaMaxTokens: both
// operands in shared memory, K split over cluster blocks.
void launch_block_fp8_gemv_tma(const BlockFp8GemmProblem& problem, cudaStream_t stream);

}  // namespace lowbit::cuda
