// n / d for 32-bit unsigned n by a divisor fixed at launch, as one 64-bit multiply-high by
// m = ceil(2^64 / d) instead of the ~20-instruction integer division sequence.
// Exact for every n < 2^32 and 1 < d < 2^32: with m d = 2^64 + e, 0 <= e < d,
//   n m / 2^64 = n / d + n e / (d 2^64),
// and the second term is below 2^32 d / (d 2^64) = 2^-32 < 1 / d, too small to carry n / d past
// the next integer. d = 1 (m would be 2^64) is stored as m = 0 and divides by returning n.
#pragma once

#include <cstdint>

namespace lowbit::cuda {

struct UintDivisor {
  std::uint32_t divisor = 1;
  std::uint64_t multiplier = 0;  // ceil(2^64 / divisor); 0 for divisor 1

  UintDivisor() = default;
  explicit UintDivisor(std::uint32_t d)
      : divisor(d), multiplier(d > 1 ? ~std::uint64_t{0} / d + 1 : 0) {}

  __device__ __forceinline__ std::uint32_t divide(std::uint32_t n) const {
    return multiplier != 0 ? static_cast<std::uint32_t>(__umul64hi(n, multiplier)) : n;
  }
};

}  // namespace lowbit::cuda
