// The launch shape of the mma.sync split-K decode GEMV (common/gemv_mma.cuh): warps per block.
// Host code only, so the CPU tests can check the rule (tests/cpu/test_gemv_mma_plan.cpp).
#pragma once

#include <algorithm>
#include <cstdint>

namespace lowbit::cuda::gemv {

inline constexpr int kStepK = 128;          // K per step: two 64-deep chunks
inline constexpr int kRowsPerWarp = 32;     // two m16 tiles

// Warps per 32-row block (K is split over them): enough warps in flight to cover HBM latency,
// about 16 per SM with 4-8 KB of loads each, but no more warps than the block has K steps.
inline int warps_per_block(std::int64_t n, std::int64_t k, int sm_count, int max_warps) {
  const std::int64_t blocks = (n + kRowsPerWarp - 1) / kRowsPerWarp;
  const std::int64_t steps = (k + kStepK - 1) / kStepK;
  const std::int64_t wanted = (std::int64_t{16} * sm_count + blocks - 1) / blocks;
  return static_cast<int>(std::clamp<std::int64_t>(std::min(wanted, steps), 1, max_warps));
}

// Fewer warps than `warps` where that keeps all `blocks` blocks resident at once and `warps`
// does not: registers can hold one block of 11 warps per SM where they hold two of 10, and a
// second wave of blocks doubles a weight stream's time (int8 at 12-16 tokens on 6144 x 4096 ran
// 18.3 us with 11-warp blocks against 12.6 with 10, H200). `blocks_per_sm(w)` is how many blocks
// of w warps an SM holds, 0 if unknown. Unchanged where no count fits or one is unknown.
template <typename BlocksPerSm>
int warps_for_one_wave(int warps, std::int64_t blocks, int sm_count,
                       const BlocksPerSm& blocks_per_sm) {
  for (int w = warps; w >= 1; --w) {
    const int per_sm = blocks_per_sm(w);
    if (per_sm == 0) return warps;
    if (std::int64_t{per_sm} * sm_count >= blocks) return w;
  }
  return warps;
}

}  // namespace lowbit::cuda::gemv
