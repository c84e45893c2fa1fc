// The epilogue of scaled_mm's decode kernels (docs/scaled_gemm.md) on one total:
// x = float(acc - azp[m] * azp_adj[n]) for int8 (exact int32), float(acc) for fp8; then
// d = fma(s_a[m], s_b[n] * x, bias[n]), rounded once to the output type.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "scaled_gemm_launch.h"

namespace lowbit::cuda::scaled_gemv {

template <typename Out>
__device__ __forceinline__ float to_float(Out value);
template <>
__device__ __forceinline__ float to_float(__nv_bfloat16 value) { return __bfloat162float(value); }
template <>
__device__ __forceinline__ float to_float(__half value) { return __half2float(value); }

template <typename Out>
__device__ __forceinline__ Out from_float(float value);
template <>
__device__ __forceinline__ __nv_bfloat16 from_float(float value) {
  return __float2bfloat16_rn(value);
}
template <>
__device__ __forceinline__ __half from_float(float value) { return __float2half_rn(value); }

// The factors of output channel n and of token m. A kernel that writes many outputs of one
// channel or token loads them once (the per-element loads cost the decode kernels up to 10% at
// 32-64 tokens). int8 only: the zero-point terms.
struct ChannelTerms {
  float b_scale;
  float bias;
  std::int32_t azp_adj;
};
struct TokenTerms {
  float a_scale;
  std::int32_t azp;
};

template <typename Acc, typename Out>
__device__ __forceinline__ ChannelTerms channel_terms(const ScaledGemmProblem& p, std::int64_t n) {
  ChannelTerms c;
  c.b_scale = p.b_scales[p.b_per_channel ? n : 0];
  c.bias = p.bias != nullptr ? to_float(static_cast<const Out*>(p.bias)[n]) : 0.0f;
  c.azp_adj = std::is_integral_v<Acc> && p.azp_adj != nullptr ? p.azp_adj[n] : 0;
  return c;
}

template <typename Acc>
__device__ __forceinline__ TokenTerms token_terms(const ScaledGemmProblem& p, std::int64_t m) {
  TokenTerms t;
  t.a_scale = p.a_scales[p.a_per_token ? m : 0];
  t.azp = std::is_integral_v<Acc> && p.azp != nullptr ? p.azp[m] : 1;
  return t;
}

template <typename Acc, typename Out>
__device__ __forceinline__ Out output_value(const ChannelTerms& c, const TokenTerms& t, Acc acc) {
  float x;
  if constexpr (std::is_integral_v<Acc>) {
    x = static_cast<float>(acc - t.azp * c.azp_adj);
  } else {
    x = acc;
  }
  const float y = c.b_scale * x;
  return from_float<Out>(fmaf(t.a_scale, y, c.bias));
}

template <typename Acc, typename Out>
__device__ __forceinline__ Out output_value(const ScaledGemmProblem& p, std::int64_t n,
                                           std::int64_t m, Acc acc) {
  return output_value<Acc, Out>(channel_terms<Acc, Out>(p, n), token_terms<Acc>(p, m), acc);
}

template <typename Acc, typename Out>
__device__ __forceinline__ void store_output(const ScaledGemmProblem& p, std::int64_t n,
                                             std::int64_t m, Acc acc) {
  static_cast<Out*>(p.d)[m * p.ldd + n] = output_value<Acc, Out>(p, n, m, acc);
}

}  // namespace lowbit::cuda::scaled_gemv
