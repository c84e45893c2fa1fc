// Float32 division x / s for many x that share one divisor s, bit-identical to IEEE division
// (__fdiv_rn) wherever the quotient can change a quantized result, at three instructions per
// quotient instead of ~8 plus a range check. With r = RN(1/s) computed once,
//   q0 = RN(x * r);  e = x - q0 * s (exact, one FMA);  q = RN(q0 + e * r)
// is the correctly rounded quotient (Markstein 1990, Theorem 1; the last step of CUDA's own
// div.rn sequence) while nothing underflows or overflows: s in [2^-60, 2^60] keeps r normal,
// and |q0| in [2^-40, 2^40] keeps |x| >= 2^-100 so the residual is exact.
//
// divide_group() checks the upper bound once per group (amax * r <= 2^40) and does not check
// the lower one: a quotient below 2^-40 may be off in its last bits but keeps its sign and stays
// below 2^-39, and every such value quantizes to +-0 in fp8 (threshold 2^-10) and 0 in int8
// (threshold 0.5), so the quantized bytes are exactly those of IEEE division. The last step is
// written q = RN(q0 - (q0 * s - x) * r) so that signed zeros come out right without a fix-up
// (-0 / s gives -0). tests/gpu/test_exact_division_gpu.cu checks all of this against __fdiv_rn
// over all 2^32 dividends.
#pragma once

namespace lowbit::cuda {

// Quotients below this may differ from IEEE division in their low bits (never in sign).
inline constexpr float kInexactQuotientBelow = 0x1p-40f;

struct SharedDivisor {
  float divisor;
  float reciprocal;  // RN(1 / divisor)
  bool fast;         // the fast sequence is valid for every dividend of the group
};

// amax: the largest |x| that will be divided (NaN dividends excluded: they give NaN anyway).
__device__ __forceinline__ SharedDivisor make_shared_divisor(float divisor, float amax) {
  SharedDivisor d;
  d.divisor = divisor;
  d.reciprocal = __frcp_rn(divisor);
  d.fast = divisor >= 0x1p-60f && divisor <= 0x1p60f && amax * d.reciprocal <= 0x1p40f;
  return d;
}

template <int N>
__device__ __forceinline__ void divide_group(const float (&x)[N], const SharedDivisor& d,
                                             float (&q)[N]) {
  if (d.fast) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      // residual = q0 * d - x (exact), q = q0 - residual / d. Written this way round, x = -0
      // gives q0 = -0, residual = +0 and q = -0 + -0 = -0 with no sign fix-up instruction.
      const float q0 = __fmul_rn(x[i], d.reciprocal);
      const float residual = __fmaf_rn(q0, d.divisor, -x[i]);
      q[i] = __fmaf_rn(-residual, d.reciprocal, q0);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) q[i] = __fdiv_rn(x[i], d.divisor);  // Inf, huge, odd scales
  }
}

}  // namespace lowbit::cuda
