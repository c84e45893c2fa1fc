// The scalar steps of asymmetric int8 quantization (docs/quant.md), shared by the CPU reference
// and the kernel so that every corner (empty ranges, Inf, NaN) agrees bit for bit.
#pragma once

#include <cmath>
#include <cstdint>

#include "lowbit/formats.h"
#include "silu.h"  // mul_rn / add_rn / div_rn: IEEE operations no compiler may contract

namespace lowbit::detail {

// Round half to even to int32, saturating at the int32 range; NaN -> 0 (PTX cvt.rni.s32.f32).
LOWBIT_HOST_DEVICE std::int32_t round_to_int32(float value) {
#if defined(__CUDA_ARCH__)
  return __float2int_rn(value);
#else
  if (!(value == value)) return 0;
  if (value >= 2147483648.0f) return 2147483647;
  if (value <= -2147483648.0f) return -2147483647 - 1;
  return static_cast<std::int32_t>(std::nearbyint(value));  // default mode: half to even
#endif
}

struct AsymmetricParams {
  float scale;
  std::int32_t zero_point;
};

// lo, hi: min and max of the row's elements that are not NaN (lo > hi when there are none).
// The range is widened to include 0, so 0 is exactly representable and the zero point is always
// a valid int8 (vLLM's recipe omits this: a constant row then saturates to garbage).
LOWBIT_HOST_DEVICE AsymmetricParams asymmetric_int8_params(float lo, float hi, float eps) {
  lo = lo < 0.0f ? lo : 0.0f;  // also maps +Inf (no elements) to 0
  hi = hi > 0.0f ? hi : 0.0f;
  const float spread = div_rn(add_rn(hi, -lo), 255.0f);
  const float scale = spread > eps ? spread : eps;  // NaN (Inf - Inf) falls to eps
  const std::int32_t zero_point = round_to_int32(add_rn(-128.0f, -div_rn(lo, scale)));
  return {scale, zero_point};
}

// clamp(round(q) + zp, -128, 127), computed as clamp(round(q), -128 - zp, 127 - zp) + zp: the
// same value for every int32 round(q) (zp is in [-128, 127]), without 64-bit arithmetic.
LOWBIT_HOST_DEVICE std::int8_t asymmetric_int8_code(float quotient, std::int32_t zero_point) {
  const std::int32_t rounded = round_to_int32(quotient);
  const std::int32_t lo = -128 - zero_point;
  const std::int32_t hi = 127 - zero_point;
  return static_cast<std::int8_t>((rounded < lo ? lo : (rounded > hi ? hi : rounded)) +
                                  zero_point);
}

}  // namespace lowbit::detail
