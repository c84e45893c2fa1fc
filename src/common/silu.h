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

// e^x for float32 within 1 ulp over the normal range (tests/cpu/test_activation.cpp measures it
// against double exp), branch-free: x is clamped to [-151, 129] * ln2 so that overflow and
// underflow come out of the final multiplies (Inf, subnormals, 0); x = n ln2 + r with
// |r| <= ln2/2, n read off the bits of a magic-number addition; e^r by a degree-7 Taylor
// polynomial in Horner form; then two exact power-of-two multiplies by 2^(n/2) and 2^(n-n/2),
// so a subnormal result is rounded once. NaN input gives an unspecified number (silu_mul
// propagates NaN through its other operands).
LOWBIT_HOST_DEVICE float exp_f32(float x) {
  const float kLog2e = 1.44269502f;
  const float kLn2High = 0.693145752f;    // 0x3F317200: exact in 16 bits
  const float kLn2Low = 1.42860677e-06f;  // ln2 - kLn2High
  const float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  x = fmaxf(x, -104.664f);  // -151 ln2: e^x rounds to 0 below here
  x = fminf(x, 89.4159f);   // 129 ln2: e^x overflows to Inf above here
  const float shifted = add_rn(mul_rn(x, kLog2e), kRoundMagic);
  const int n = static_cast<int>(float_bits(shifted) - float_bits(kRoundMagic));
  const float n_float = add_rn(shifted, -kRoundMagic);
  const float r = fma_rn(-n_float, kLn2Low, fma_rn(-n_float, kLn2High, x));
  float p = 1.0f / 5040.0f;
  p = fma_rn(p, r, 1.0f / 720.0f);
  p = fma_rn(p, r, 1.0f / 120.0f);
  p = fma_rn(p, r, 1.0f / 24.0f);
  p = fma_rn(p, r, 1.0f / 6.0f);
  p = fma_rn(p, r, 0.5f);
  p = fma_rn(p, r, 1.0f);
  p = fma_rn(p, r, 1.0f);
  const int first = n >> 1;  // floor(n / 2): both halves stay within [-75, 65]
  const int second = n - first;
  p = mul_rn(p, bits_float(static_cast<std::uint32_t>(first + 127) << 23));
  return mul_rn(p, bits_float(static_cast<std::uint32_t>(second + 127) << 23));
}

// silu(g) * u = g / (1 + e^-g) * u, with the optional SwiGLU clamp applied first:
// g = min(g, limit), u = clamp(u, -limit, limit) (NaN passes through the clamp unchanged).
LOWBIT_HOST_DEVICE float silu_mul(float gate, float up, bool clamp, float limit) {
  if (clamp) {
    gate = gate > limit ? limit : gate;
    up = up > limit ? limit : (up < -limit ? -limit : up);
  }
  const float silu = div_rn(gate, add_rn(1.0f, exp_f32(-gate)));
  return mul_rn(silu, up);
}

}  // namespace lowbit::detail
