// The epilogue policy of scaled_mm's wgmma GEMVs (common/gemv_wgmma.cuh, common/gemv_tma.cuh):
// no per-step scale (fp8 steps are promoted as they are), int8 accumulates in int32, and each
// total goes through the epilogue of docs/scaled_gemm.md.
#pragma once

#include <cstdint>
#include <type_traits>

#include "scaled_gemm_launch.h"
#include "scaled_gemv_epilogue.cuh"

namespace lowbit::cuda::scaled_gemv {

template <typename AccType, typename OutType>
struct ScaledPolicy {
  using Acc = AccType;
  using Out = OutType;
  static constexpr bool kPromote = std::is_floating_point_v<Acc>;
  struct StepScales {};
  static constexpr bool kStepScales = false;

  const ScaledGemmProblem& p;

  __device__ StepScales load_scales(int, bool, int) const { return {}; }
  __device__ float scale(const StepScales&, int) const { return 1.0f; }
  __device__ void finish(std::int64_t n, std::int64_t m, Acc total) const {
    scaled_gemv::store_output<Acc, Out>(p, n, m, total);
  }
  // The factors of output row (channel) n and of token m, loaded once per thread and row or
  // token; the output from them; the start of token m's output row.
  using RowTerms = ChannelTerms;
  using TokenTerms = scaled_gemv::TokenTerms;
  __device__ RowTerms row_terms(std::int64_t n) const { return channel_terms<Acc, Out>(p, n); }
  __device__ TokenTerms token_terms(std::int64_t m) const {
    return scaled_gemv::token_terms<Acc>(p, m);
  }
  __device__ Out value(const RowTerms& row, const TokenTerms& token, Acc total) const {
    return output_value<Acc, Out>(row, token, total);
  }
  __device__ Out* output_row(std::int64_t m) const { return static_cast<Out*>(p.d) + m * p.ldd; }
};

}  // namespace lowbit::cuda::scaled_gemv
