// The block-scaling policy of block_fp8_mm's wgmma GEMVs (common/gemv_wgmma.cuh,
// common/gemv_tma.cuh): each 128-deep step's fp32 tensor-core sum is promoted with
// As[m, kb] * Bs[n / 128, kb]. A step is one scale block along K and a block's 64 weight rows
// lie in one 128-row scale block.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

#include "block_gemm_launch.h"

namespace lowbit::cuda::block_fp8_gemv {

template <typename OutType, int kTiles>
struct BlockScaledPolicy {
  using Acc = float;
  using Out = OutType;
  static constexpr bool kPromote = true;
  // As[m, step] * Bs[row block, step] for the thread's tokens 8 j + 2 t + e, at [2 j + e].
  struct StepScales {
    float token[2 * kTiles];
  };

  const BlockFp8GemmProblem& p;
  const float* b_scales;  // this block's row of Bs
  std::int64_t steps;

  __device__ StepScales load_scales(int step, bool valid, int thread) const {
    StepScales s;
    const float b_scale = valid ? __ldg(b_scales + step) : 0.0f;
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const std::int64_t m = 8 * j + 2 * (thread % 4) + e;
        s.token[2 * j + e] =
            valid && m < p.m
                ? __ldg(p.a_scales + m * p.a_scale_stride_m + step * p.a_scale_stride_k) * b_scale
                : 0.0f;
      }
    return s;
  }
  __device__ float scale(const StepScales& s, int v) const { return s.token[2 * (v / 4) + v % 2]; }

  // The addresses of As[m, step] and Bs[row block, step] (common/gemv_tma.cuh copies them
  // into shared memory with the step's operands).
  static constexpr bool kStepScales = true;
  __device__ const float* token_scale(int step, std::int64_t m) const {
    return p.a_scales + m * p.a_scale_stride_m + step * p.a_scale_stride_k;
  }
  __device__ const float* step_scale(int step) const { return b_scales + step; }
  // The output of a total (the scales were applied per step: no per-row or per-token terms),
  // and the start of token m's output row.
  struct RowTerms {};
  struct TokenTerms {};
  __device__ RowTerms row_terms(std::int64_t) const { return {}; }
  __device__ TokenTerms token_terms(std::int64_t) const { return {}; }
  __device__ Out value(const RowTerms&, const TokenTerms&, float total) const {
    if constexpr (std::is_same_v<Out, float>) {
      return total;
    } else {
      return __float2bfloat16_rn(total);
    }
  }
  __device__ Out* output_row(std::int64_t m) const { return static_cast<Out*>(p.d) + m * p.ldd; }
  __device__ void finish(std::int64_t n, std::int64_t m, float total) const {
    output_row(m)[n] = value(RowTerms{}, TokenTerms{}, total);
  }
};

}  // namespace lowbit::cuda::block_fp8_gemv
