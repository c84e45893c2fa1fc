// The NVFP4 weight recipe (NVIDIA ModelOpt) in float32, identical on host (CPU reference) and
// device (kernels): explicit IEEE-rounded operations only. Spec: docs/nvfp4.md.
#pragma once

#include <cstdint>

#include "lowbit/formats.h"
#include "silu.h"  // mul_rn, div_rn

namespace lowbit::detail {

inline constexpr float kNvfp4GlobalDivisor = 6.0f * 448.0f;  // e2m1 max * e4m3 max
inline constexpr std::uint8_t kE4M3One = 0x38;               // 1.0
inline constexpr std::uint8_t kE4M3Smallest = 0x01;          // 2^-9, the smallest subnormal

// global = amax / 2688; an all-zero tensor gets 1 so that nothing divides by zero.
LOWBIT_HOST_DEVICE float nvfp4_global_scale(float amax) {
  return amax > 0.0f ? div_rn(amax, kNvfp4GlobalDivisor) : 1.0f;
}

// e4m3(block_amax / (6 * global)); 1.0 for an all-zero block (ModelOpt), and the smallest
// subnormal where a non-zero block's scale would round to 0 (ModelOpt would then divide by 0).
LOWBIT_HOST_DEVICE std::uint8_t nvfp4_block_scale_code(float block_amax, float global) {
  if (!(block_amax > 0.0f)) return kE4M3One;
  const std::uint8_t code = float_to_fp8_e4m3(div_rn(block_amax, mul_rn(6.0f, global)));
  return (code & 0x7F) == 0 ? kE4M3Smallest : code;
}

// One element: e2m1(w / (s_b * global)), round half to even, saturating at 6.
LOWBIT_HOST_DEVICE std::uint8_t nvfp4_quantize_value(float w, float block_scale, float global) {
  return float_to_e2m1(div_rn(w, mul_rn(block_scale, global)));
}

// (e2m1 * s_b) is exact in float32 (at most 6 significant bits); one rounding for * global.
LOWBIT_HOST_DEVICE float nvfp4_dequantize_value(std::uint8_t code, float block_scale,
                                                float global) {
  return mul_rn(mul_rn(e2m1_to_float(code), block_scale), global);
}

}  // namespace lowbit::detail
