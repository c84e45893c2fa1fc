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

template <typename Acc, typename Out>
__device__ __forceinline__ Out output_value(const ScaledGemmProblem& p, std::int64_t n,
                                           std::int64_t m, Acc acc) {
  float x;
  if constexpr (std::is_integral_v<Acc>) {
    const std::int32_t azp = p.azp != nullptr ? p.azp[m] : 1;
    const std::int32_t adj = p.azp_adj != nullptr ? p.azp_adj[n] : 0;
    x = static_cast<float>(acc - azp * adj);
  } else {
    x = acc;
  }
  const float y = p.b_scales[p.b_per_channel ? n : 0] * x;
  const float bias = p.bias != nullptr ? to_float(static_cast<const Out*>(p.bias)[n]) : 0.0f;
  const float d = fmaf(p.a_scales[p.a_per_token ? m : 0], y, bias);
  return from_float<Out>(d);
}

template <typename Acc, typename Out>
__device__ __forceinline__ void store_output(const ScaledGemmProblem& p, std::int64_t n,
                                             std::int64_t m, Acc acc) {
  static_cast<Out*>(p.d)[m * p.ldd + n] = output_value<Acc, Out>(p, n, m, acc);
}

}  // namespace lowbit::cuda::scaled_gemv
