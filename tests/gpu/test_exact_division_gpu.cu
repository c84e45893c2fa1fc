// src/cuda/common/exact_division.cuh against IEEE division (__fdiv_rn): every float32 dividend
// for a set of divisors (scales of real recipes, all-ones significands, the fast-path edges),
// then 2^32 random (dividend, divisor) pairs over a wide exponent range. Its quantized results
// are compared end to end in test_per_token_group_quant_gpu.cu.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "../../src/cuda/common/exact_division.cuh"
#include "common/device_buffer.cuh"
#include "lowbit/formats.h"

namespace lowbit {
namespace {

struct Mismatch {
  unsigned long long count;
  unsigned x, s, got, want;
};

// divide_group's contract: the IEEE quotient where |x / s| >= 2^-40 (NaN for NaN), and below
// that a value of the same sign smaller than 2^-39 (it quantizes to zero either way).
__device__ bool meets_contract(float got, float want) {
  if (want != want) return got != got;
  if (fabsf(want) >= cuda::kInexactQuotientBelow) return __float_as_uint(got) == __float_as_uint(want);
  return (__float_as_uint(got) >> 31) == (__float_as_uint(want) >> 31) && fabsf(got) < 0x1p-39f;
}

__device__ void compare(Mismatch* m, float x, float s) {
  // x shares its group with ordinary values, so the group takes the fast path whenever x fits.
  const float xs[4] = {x, s, -0.5f * s, 300.0f * s};
  float amax = 0.0f;
  for (float v : xs) amax = fmaxf(amax, fabsf(v));
  float got[4];
  cuda::divide_group(xs, cuda::make_shared_divisor(s, amax), got);
  bool ok = true;
  for (int i = 0; i < 4; ++i) ok &= meets_contract(got[i], __fdiv_rn(xs[i], s));
  if (!ok && atomicAdd(&m->count, 1ull) == 0) {
    m->x = __float_as_uint(x);
    m->s = __float_as_uint(s);
    m->got = __float_as_uint(got[0]);
    m->want = __float_as_uint(__fdiv_rn(x, s));
  }
}

__global__ void every_dividend(const float* divisors, int divisor_count, std::uint64_t base,
                               Mismatch* m) {
  const std::uint64_t index = base + blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  const float x = __uint_as_float(static_cast<unsigned>(index));
  for (int i = 0; i < divisor_count; ++i) compare(m, x, divisors[i]);
}

__device__ unsigned hash(std::uint64_t v) {
  v ^= v >> 33;
  v *= 0xFF51AFD7ED558CCDull;
  v ^= v >> 33;
  v *= 0xC4CEB9FE1A85EC53ull;
  return static_cast<unsigned>(v ^ (v >> 33));
}

__global__ void random_pairs(std::uint64_t base, std::uint64_t seed, Mismatch* m) {
  const std::uint64_t index = base + blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  const unsigned x_bits = hash(index ^ seed);
  // Divisor exponents 2^-70 .. 2^70 (past both fast-path edges), random significand.
  const unsigned s_bits = ((127u - 70u + hash(index * 3 + seed) % 141u) << 23) |
                          (hash(index * 7 + seed) & 0x7FFFFFu);
  compare(m, __uint_as_float(x_bits), __uint_as_float(s_bits));
}

Mismatch run_and_read(testing::DeviceBuffer& buffer) {
  Mismatch host{};
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(&host, buffer.data(), sizeof(host), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

TEST(ExactDivisionGpu, EveryDividendForRecipeDivisors) {
  std::vector<float> divisors = {1.0f, 3.0f, 0.015625f, 7.0f / 448.0f, 1e-10f / 448.0f,
                                 1e-10f / 127.0f, 2.5f / 448.0f, 1000.0f / 127.0f,
                                 bits_float(0x3FFFFFFFu), bits_float(0x3F7FFFFFu),
                                 bits_float(0x3C7FFFFFu), 0x1p-60f, 0x1p60f,
                                 bits_float(0x21800001u) /* just above 2^-60 */};
  for (int i = 1; i <= 50; ++i) divisors.push_back(static_cast<float>(i) * 0.7371f / 448.0f);
  testing::DeviceBuffer d_divisors(divisors.size() * sizeof(float));
  d_divisors.upload(divisors);
  testing::DeviceBuffer buffer(sizeof(Mismatch));
  buffer.fill_byte(0);
  constexpr std::uint64_t kChunk = 1ull << 30;
  for (std::uint64_t base = 0; base < (1ull << 32); base += kChunk) {
    every_dividend<<<kChunk / 256, 256>>>(static_cast<const float*>(d_divisors.data()),
                                          static_cast<int>(divisors.size()), base,
                                          static_cast<Mismatch*>(buffer.data()));
  }
  const Mismatch m = run_and_read(buffer);
  EXPECT_EQ(m.count, 0ull) << std::hex << "x 0x" << m.x << " / s 0x" << m.s << ": got 0x"
                           << m.got << " want 0x" << m.want;
}

TEST(ExactDivisionGpu, RandomPairs) {
  testing::DeviceBuffer buffer(sizeof(Mismatch));
  buffer.fill_byte(0);
  constexpr std::uint64_t kChunk = 1ull << 30;
  for (std::uint64_t base = 0; base < (1ull << 32); base += kChunk) {
    random_pairs<<<kChunk / 256, 256>>>(base, 0x5EED1234ull, static_cast<Mismatch*>(buffer.data()));
  }
  const Mismatch m = run_and_read(buffer);
  EXPECT_EQ(m.count, 0ull) << std::hex << "x 0x" << m.x << " / s 0x" << m.s << ": got 0x"
                           << m.got << " want 0x" << m.want;
}

}  // namespace
}  // namespace lowbit
