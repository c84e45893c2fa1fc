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

// e^-a for a in [-80, 80] (callers clamp), within 2.7 ulp for |a| < 20 and 4.5 ulp at |a| = 80
// (the one-constant ln2 costs accuracy as |n| grows; tests/cpu/test_activation.cpp measures it
// against double exp), branch-free, nine instructions on the device:
// -a = n ln2 + r with n = round(-a log2e) read off the bits of a magic-number fma and
// |r| <= ln2/2; e^r by a degree-5 polynomial fitted for relative error (c0 = 1 so e^0 = 1);
// then n (in [-116, 116]) is added to the exponent field, exact because every result is normal.
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

// 1 / d for d in [1, 2^126), correctly rounded. The device takes the hardware approximation
// (MUFU.RCP, within 1 ulp) and one Newton step, the fast path of CUDA's own rcp.rn: 3
// instructions instead of a range check and a branch. There 1 / d is normal, and that step
// rounds correctly (tests/gpu/test_silu_math_gpu.cu checks every float in [1, 2^117), the range
// silu_mul uses, against __frcp_rn), so it equals the host's IEEE division bit for bit.
LOWBIT_HOST_DEVICE float reciprocal_at_least_1(float d) {
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
// sigmoid(g) = 1 / (1 + e^-g) with e^-g taken at min(g, 80), so e^-g lies in [e^-80, e^80] and
// 1 + e^-g in [1, 2^116): no step can overflow, and no sign select is needed (for g < 0 this
// is as accurate as e^g / (1 + e^g), measured in tests/cpu/test_activation.cpp). Gates below
// -80 count as -80 (|silu| < 1.5e-33 there); NaN gates stay NaN through the final multiplies.
LOWBIT_HOST_DEVICE float silu_mul(float gate, float up, bool clamp, float limit) {
  if (clamp) {
    gate = gate > limit ? limit : gate;
    up = up > limit ? limit : (up < -limit ? -limit : up);
  }
  const float g = max_keep_nan(gate, -80.0f);
  const float t = exp_neg(fminf(g, 80.0f));
  const float sigmoid = reciprocal_at_least_1(add_rn(1.0f, t));
  return mul_rn(mul_rn(g, sigmoid), up);
}

}  // namespace lowbit::detail
