// Decode kernel of scaled_mm for M <= kScaledGemvMaxTokens: split-K tensor-core GEMV
// (scaled_gemv.cu). No workspace.
#pragma once

#include <cstdint>

#include "scaled_gemm_launch.h"

namespace lowbit::cuda {

inline constexpr std::int64_t kScaledGemvMaxTokens = 32;
inline constexpr int kScaledGemvMaxWarps = 16;

void launch_scaled_gemv(const ScaledGemmProblem& problem, cudaStream_t stream);

}  // namespace lowbit::cuda
