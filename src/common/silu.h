// SiLU(gate) * up in float32, identical bit for bit on host (CPU references) and device
// (kernels): every operation is an explicit IEEE-rounded add, multiply, divide or fmaf, so no
// compiler may contract or reorder it, and exp is our own (libm's expf and CUDA's differ in the
// last bits). Recipe: docs/activation.md.
#pragma once

#include <cmath>
#include <cstdint>

#include "lowbit/formats.h"

namespace lowbit::detail {

LOWBIT_HOST_DEVICE float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

LOWBIT_HOST_DEVICE float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

LOWBIT_HOST_DEVICE float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

LOWBIT_HOST_DEVICE float fma_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return __builtin_fmaf(a, b, c);  // correctly rounded fused multiply-add
#endif
}

// Clamps x to >= lo, keeping NaN (fmaxf would replace it by lo): one FMNMX.NAN on the device.
LOWBIT_HOST_DEVICE float max_keep_nan(float x, float lo) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(y) : "f"(x), "f"(lo));
  return y;
#else
  return x < lo ? lo : x;
#endif
}

// e^-a for a in [0, 80] (callers clamp), within 2.5 ulp for a < 20 and 4.5 ulp at a = 80 (the
// one-constant ln2 costs accuracy as n grows; tests/cpu/test_activation.cpp measures
// it against double exp), branch-free, nine instructions on the device:
// -a = n ln2 + r with n = round(-a log2e) read off the bits of a magic-number fma and
// |r| <= ln2/2; e^r by a degree-5 polynomial fitted for relative error (c0 = 1 so e^0 = 1);
// then n (>= -116) is added to the exponent field, exact because every result is normal.
LOWBIT_HOST_DEVICE float exp_neg(float a) {
  const float kMinusLog2e = -1.44269502f;
  const float kLn2 = 0.693147182f;
  const float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float shifted = fma_rn(a, kMinusLog2e, kRoundMagic);
  const float n = add_rn(shifted, -kRoundMagic);
  const float r = fma_rn(n, -kLn2, -a);
  float p = 0x1.0fa7d8p-7f;
  p = fma_rn(p, r, 0x1.573ad0p-5f);
  p = fma_rn(p, r, 0x1.555a6ep-3f);
  p = fma_rn(p, r, 0x1.fffdc4p-2f);
  p = fma_rn(p, r, 0x1.fffff6p-1f);
  p = fma_rn(p, r, 1.0f);
  // The low 9 bits of shifted's pattern hold n mod 512, so (bits << 23) is n << 23 mod 2^32.
  return bits_float(float_bits(p) + (float_bits(shifted) << 23));
}

// 1 / d for d in [1, 2], correctly rounded. The device takes the hardware approximation
// (MUFU.RCP, within 1 ulp) and one Newton step, the fast path of CUDA's own rcp.rn: 3
// instructions instead of a range check and a branch. For normal d that step rounds correctly
// (tests/gpu/test_exact_division_gpu.cu checks every float in [1, 2] against __frcp_rn), so it
// equals the host's IEEE division bit for bit.
LOWBIT_HOST_DEVICE float reciprocal_1_to_2(float d) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  return __fmaf_rn(r, __fmaf_rn(-d, r, 1.0f), r);
#else
  return 1.0f / d;
#endif
}

// silu(g) * u = g * sigmoid(g) * u, with the optional SwiGLU clamp applied first:
// g = min(g, limit), u = clamp(u, -limit, limit) (NaN passes through the clamp unchanged).
// sigmoid(g) from t = e^-|g| in [e^-80, 1], so no step can overflow or divide:
// sigmoid = 1 / (1 + t) for g >= 0 and t / (1 + t) for g < 0. Gates below -80 count as -80
// (|silu| < 1.5e-33 there); NaN gates stay NaN through the final multiplies.
LOWBIT_HOST_DEVICE float silu_mul(float gate, float up, bool clamp, float limit) {
  if (clamp) {
    gate = gate > limit ? limit : gate;
    up = up > limit ? limit : (up < -limit ? -limit : up);
  }
  const float g = max_keep_nan(gate, -80.0f);
  const float t = exp_neg(fminf(fabsf(g), 80.0f));
  const float r = reciprocal_1_to_2(add_rn(1.0f, t));
  const float sigmoid = g >= 0.0f ? r : mul_rn(t, r);
  return mul_rn(mul_rn(g, sigmoid), up);
}

}  // namespace lowbit::detail
