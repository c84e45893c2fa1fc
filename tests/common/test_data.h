// Test data helpers: seeded random inputs that are never all zeros, and a parallel loop for
// large references. Header-only, host code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "lowbit/formats.h"
#include "lowbit/tensor.h"

namespace lowbit::testing {

// One seed per process, printed so a failure can be replayed with LOWBIT_TEST_SEED=<n>.
inline std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    const char* fixed = std::getenv("LOWBIT_TEST_SEED");
    const std::uint64_t value = fixed ? std::strtoull(fixed, nullptr, 10) : std::random_device{}();
    std::printf("[lowbit] random seed %llu (set LOWBIT_TEST_SEED to replay)\n",
                static_cast<unsigned long long>(value));
    return value;
  }();
  return seed;
}

// body(begin, end) over [0, count) on up to every hardware thread, each given at least
// `min_per_worker` items (cheap items: 4096; expensive ones, such as reference rows: 1).
inline void parallel_for(std::int64_t count, const std::function<void(std::int64_t, std::int64_t)>& body,
                         std::int64_t min_per_worker = 4096) {
  const std::int64_t workers = std::max<std::int64_t>(1, std::min<std::int64_t>(
      std::thread::hardware_concurrency(), (count + min_per_worker - 1) / min_per_worker));
  std::vector<std::thread> threads;
  for (std::int64_t w = 0; w < workers; ++w) {
    const std::int64_t begin = count * w / workers;
    const std::int64_t end = count * (w + 1) / workers;
    threads.emplace_back([&, begin, end] { body(begin, end); });
  }
  for (auto& thread : threads) thread.join();
}

// Activations with a different magnitude per 32-element stretch (10^-3 .. 10^3), occasional
// outliers and an occasional all-zero stretch: the shapes that stress scale computation.
// Returns the raw element bits for dtype (bf16/fp16 codes, or fp32 bits) in a byte vector.
inline std::vector<std::uint8_t> random_activations(DType dtype, std::int64_t rows,
                                                    std::int64_t row_stride, std::int64_t cols,
                                                    std::uint64_t salt) {
  const std::size_t elem = dtype_size(dtype);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(rows * row_stride) * elem, 0xCD);
  parallel_for(rows, [&](std::int64_t begin, std::int64_t end) {
    std::mt19937_64 rng(test_seed() ^ (salt * 0x9E3779B97F4A7C15ull) ^ static_cast<std::uint64_t>(begin));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> exponent(-3.0f, 3.0f);
    std::uniform_int_distribution<int> pick(0, 999);
    for (std::int64_t r = begin; r < end; ++r) {
      float magnitude = 1.0f;
      bool zero_stretch = false;
      for (std::int64_t c = 0; c < cols; ++c) {
        if (c % 32 == 0) {
          magnitude = std::pow(10.0f, exponent(rng));
          zero_stretch = pick(rng) == 0;
        }
        float value = zero_stretch ? 0.0f : normal(rng) * magnitude;
        if (pick(rng) == 0) value *= 50.0f;  // outlier
        const std::size_t at = static_cast<std::size_t>(r * row_stride + c);
        if (dtype == DType::kBF16) {
          const std::uint16_t code = float_to_bf16(value);
          std::memcpy(&bytes[at * 2], &code, 2);
        } else if (dtype == DType::kFP16) {
          const std::uint16_t code = float_to_fp16(value, Saturation::kFinite);
          std::memcpy(&bytes[at * 2], &code, 2);
        } else {
          std::memcpy(&bytes[at * 4], &value, 4);
        }
      }
    }
  }, /*min_per_worker=*/64);  // a row is thousands of draws: spread rows over every core
  return bytes;
}

// SplitMix64's finalizer: a well-mixed 64-bit hash of x (per-element random data by index).
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The e4m3 code of a roughly normal value: the sum of 4 uniforms from the hash's 16-bit pieces,
// times 120 to spread over e4m3's range (saturating, so never NaN).
inline std::uint8_t normal_fp8_code(std::uint64_t hash) {
  float v = 0.0f;
  for (int i = 0; i < 4; ++i) v += static_cast<float>((hash >> (16 * i)) & 0xFFFF) / 65536.0f;
  return float_to_fp8_e4m3((v - 2.0f) * 120.0f, Saturation::kFinite);
}

}  // namespace lowbit::testing
