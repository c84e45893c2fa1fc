// Correctly rounded float32 division x / s for many x that share one divisor s, bit-identical
// to IEEE division (__fdiv_rn) but about 3 instructions per quotient instead of ~8 plus a
// range check: with r = RN(1/s) computed once,
//   q0 = RN(x * r);  e = x - q0 * s (exact, one FMA);  q = RN(q0 + e * r)
// is the correctly rounded quotient (Markstein 1990, Theorem 1; it is the last step of CUDA's
// own div.rn sequence) as long as nothing underflows or overflows: s and r normal, |x| well
// above the subnormal range. Outside the ranges below we fall back to __fdiv_rn.
// tests/gpu/test_exact_division_gpu.cu checks it against __fdiv_rn over all 2^32 dividends.
#pragma once

namespace lowbit::cuda {

struct SharedDivisor {
  float divisor;
  float reciprocal;  // RN(1 / divisor)
  bool fast;         // divisor in [2^-60, 2^60]: reciprocal and residuals stay normal
};

__device__ __forceinline__ SharedDivisor make_shared_divisor(float divisor) {
  SharedDivisor d;
  d.divisor = divisor;
  d.reciprocal = __frcp_rn(divisor);
  d.fast = divisor >= 0x1p-60f && divisor <= 0x1p60f;
  return d;
}

// One quotient, with its own range check (the reference path for tests and odd elements).
__device__ __forceinline__ float divide(float x, const SharedDivisor& d) {
  if (d.fast) {
    const float q0 = x * d.reciprocal;
    const float q = fmaf(fmaf(-q0, d.divisor, x), d.reciprocal, q0);
    // |q0| in [2^-40, 2^40] keeps |x| in [2^-100, 2^100]: the residual is exact and normal.
    const float magnitude = fabsf(q0);
    if (magnitude >= 0x1p-40f && magnitude <= 0x1p40f) return q;
    if (x == 0.0f) return q0;  // +-0 * r keeps the sign of zero, as +-0 / s does
  }
  return __fdiv_rn(x, d.divisor);  // tiny or huge quotients, Inf, NaN, extreme divisors
}

// N quotients by one divisor with a single range check for all of them: the common case costs
// three instructions and one integer compare per element and no branch per element.
template <int N>
__device__ __forceinline__ void divide_all(const float (&x)[N], const SharedDivisor& d,
                                           float (&q)[N]) {
  constexpr unsigned kLow = 0x2B800000u;   // bits of 2^-40
  constexpr unsigned kHigh = 0x53800000u;  // bits of 2^40
  bool all_in_range = d.fast;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const float q0 = x[i] * d.reciprocal;
    q[i] = fmaf(fmaf(-q0, d.divisor, x[i]), d.reciprocal, q0);
    const unsigned magnitude = __float_as_uint(q0) & 0x7FFFFFFFu;  // NaN lands above kHigh
    all_in_range &= magnitude - kLow <= kHigh - kLow;
  }
  if (!all_in_range) {
#pragma unroll
    for (int i = 0; i < N; ++i) q[i] = divide(x[i], d);
  }
}

}  // namespace lowbit::cuda
