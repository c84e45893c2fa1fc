// Counter-based random draws for `lowbit ffn`: value i of a stream depends only on (seed, i), so
// the draw is the same on any thread count and on every machine.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace lowbit::tools {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Standard normal (Box-Muller on two hashed uniforms).
inline float normal_at(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t a = splitmix64(seed * 0xD1B54A32D192ED03ull + 2 * index);
  const std::uint64_t b = splitmix64(seed * 0xD1B54A32D192ED03ull + 2 * index + 1);
  const double u1 = (static_cast<double>(a >> 11) + 0.5) * 0x1.0p-53;  // (0, 1)
  const double u2 = static_cast<double>(b >> 11) * 0x1.0p-53;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

// Runs body(begin, end) over [0, count) on all hardware threads.
inline void parallel_ranges(std::int64_t count,
                            const std::function<void(std::int64_t, std::int64_t)>& body) {
  const std::int64_t workers = std::max<std::int64_t>(
      1, std::min<std::int64_t>(std::thread::hardware_concurrency(), count / 65536 + 1));
  std::vector<std::thread> threads;
  for (std::int64_t w = 0; w < workers; ++w) {
    threads.emplace_back(body, count * w / workers, count * (w + 1) / workers);
  }
  for (std::thread& thread : threads) thread.join();
}

}  // namespace lowbit::tools
