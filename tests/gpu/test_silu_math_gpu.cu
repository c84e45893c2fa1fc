// The device half of src/common/silu.h's bit-exactness contract:
// - reciprocal_at_least_1 (hardware seed + one Newton step) equals __frcp_rn for every float in
//   [1, 2^117) (silu_mul's 1 + e^-g reaches 1 + e^80 < 2^116), which is what makes it equal the
//   host's IEEE 1 / d;
// - silu_mul on the device equals silu_mul on the host for 2^24 gates spread over every
//   exponent (both signs, NaN, Inf, subnormals), with and without the SwiGLU clamp.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "../../src/common/silu.h"
#include "common/device_buffer.cuh"
#include "lowbit/formats.h"

namespace lowbit {
namespace {

// counts[0]: mismatches; counts[1]: floats checked (proves the whole range ran).
__global__ void count_reciprocal_mismatches(unsigned long long* counts) {
  const std::uint32_t first = 0x3F800000u;         // 1.0f
  const std::uint32_t count = 117u * 0x00800000u;  // every float in [1, 2^117): ~981 million
  unsigned long long checked = 0;
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += gridDim.x * blockDim.x) {
    const float d = __uint_as_float(first + i);
    if (__float_as_uint(detail::reciprocal_at_least_1(d)) != __float_as_uint(__frcp_rn(d))) {
      atomicAdd(&counts[0], 1ull);
    }
    ++checked;
  }
  atomicAdd(&counts[1], checked);
}

TEST(SiluMathGpu, ReciprocalEqualsIeeeForEveryFloatIn1To2Pow117) {
  testing::DeviceBuffer counts(2 * sizeof(unsigned long long));
  counts.fill_byte(0);
  count_reciprocal_mismatches<<<1056, 256>>>(static_cast<unsigned long long*>(counts.data()));
  LOWBIT_TEST_CUDA(cudaGetLastError());
  LOWBIT_TEST_CUDA(cudaDeviceSynchronize());
  const auto got = counts.download<unsigned long long>();
  EXPECT_EQ(got[0], 0ull);
  EXPECT_EQ(got[1], 117ull * 0x00800000u);
}

__global__ void silu_mul_on_device(const std::uint32_t* gates, float up, bool clamp, float limit,
                                   std::uint32_t* out, std::uint32_t n) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float_as_uint(detail::silu_mul(__uint_as_float(gates[i]), up, clamp, limit));
}

TEST(SiluMathGpu, SiluMulEqualsTheHostBitForBit) {
  const std::uint32_t n = 1u << 24;
  std::vector<std::uint32_t> gates(n);
  for (std::uint32_t i = 0; i < n; ++i) gates[i] = i * 256u + (i >> 16);  // every exponent
  testing::DeviceBuffer d_gates(n * 4), d_out(n * 4);
  d_gates.upload(gates);
  for (const bool clamp : {false, true}) {
    for (const float up : {1.0f, -2.75f, 1e-30f}) {
      silu_mul_on_device<<<n / 256, 256>>>(static_cast<const std::uint32_t*>(d_gates.data()), up,
                                           clamp, 7.0f, static_cast<std::uint32_t*>(d_out.data()), n);
      LOWBIT_TEST_CUDA(cudaDeviceSynchronize());
      const std::vector<std::uint32_t> got = d_out.download<std::uint32_t>();
      std::uint64_t mismatches = 0;
      std::uint32_t first_gate = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        const float want = detail::silu_mul(bits_float(gates[i]), up, clamp, 7.0f);
        const bool both_nan = want != want && bits_float(got[i]) != bits_float(got[i]);
        if (got[i] != float_bits(want) && !both_nan) {
          if (mismatches++ == 0) first_gate = gates[i];
        }
      }
      EXPECT_EQ(mismatches, 0u) << "clamp " << clamp << " up " << up << ", first gate bits 0x"
                                << std::hex << first_gate;
    }
  }
}

}  // namespace
}  // namespace lowbit
