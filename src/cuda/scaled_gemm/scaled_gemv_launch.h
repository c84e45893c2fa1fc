// Decode kernels of scaled_mm for M <= kScaledGemvMaxTokens: split-K tensor-core GEMVs
// (scaled_gemv.cu on mma.sync, scaled_gemv_wgmma.cu and scaled_gemv_tma.cu on wgmma). No
// workspace.
#pragma once

#include <cstdint>

#include "scaled_gemm_launch.h"

namespace lowbit::cuda {

inline constexpr std::int64_t kScaledGemvMaxTokens = 32;
inline constexpr std::int64_t kScaledGemvTmaMaxTokens = 64;
inline constexpr int kScaledGemvMaxWarps = 16;

void launch_scaled_gemv(const ScaledGemmProblem& problem, cudaStream_t stream);

// The same GEMV on wgmma (scaled_gemv_wgmma.cu): native fp8, K split over warpgroups and
// cluster blocks.
void launch_scaled_gemv_wgmma(const ScaledGemmProblem& problem, cudaStream_t stream);

// The wgmma GEMV fed by TMA (scaled_gemv_tma.cu), M <= kScaledGemvTmaMaxTokens: both operands
// in shared memory, K split over cluster blocks.
void launch_scaled_gemv_tma(const ScaledGemmProblem& problem, cudaStream_t stream);

}  // namespace lowbit::cuda
