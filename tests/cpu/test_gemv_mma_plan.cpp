// The split-K decode GEMV's launch shape (src/cuda/common/gemv_mma_plan.h): warps per block, and
// the step down to a warp count at which every block is resident at once. The occupancy here is
// a model of a register-bound kernel (96 registers per thread, 64 K registers and 64 warps per
// SM), the case measured on an H200 (docs/perf/scaled_gemm.md, thirty-first session).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "../../src/cuda/common/gemv_mma_plan.h"

namespace lowbit::cuda::gemv {
namespace {

constexpr int kSms = 132;
constexpr int kMaxWarps = 16;

int register_bound_blocks_per_sm(int warps) {
  return std::min(65536 / (96 * 32 * warps), 64 / warps);
}

std::int64_t blocks_of(std::int64_t n) { return (n + kRowsPerWarp - 1) / kRowsPerWarp; }

TEST(GemvMmaPlan, WarpsPerBlockAskForSixteenWarpsPerSmAndNoMoreThanTheSteps) {
  EXPECT_EQ(warps_per_block(6144, 4096, kSms, kMaxWarps), 11);  // 192 blocks
  EXPECT_EQ(warps_per_block(7168, 2048, kSms, kMaxWarps), 10);  // 224 blocks
  EXPECT_EQ(warps_per_block(4096, 4096, kSms, kMaxWarps), 16);  // 128 blocks
  EXPECT_EQ(warps_per_block(1024, 4096, kSms, kMaxWarps), 16);  // capped
  EXPECT_EQ(warps_per_block(1024, 512, kSms, kMaxWarps), 4);    // 4 steps of K
  EXPECT_EQ(warps_per_block(65536, 4096, kSms, kMaxWarps), 2);   // 2048 blocks
  EXPECT_EQ(warps_per_block(131072, 4096, kSms, kMaxWarps), 1);  // 4096 blocks
}

TEST(GemvMmaPlan, FewerWarpsWhereThatKeepsEveryBlockResident) {
  const auto model = [](int w) { return register_bound_blocks_per_sm(w); };
  // 6144 x 4096: 192 blocks of 11 warps fit one per SM (two waves); of 10, two.
  ASSERT_EQ(model(11), 1);
  ASSERT_EQ(model(10), 2);
  EXPECT_EQ(warps_for_one_wave(11, blocks_of(6144), kSms, model), 10);
  // 5120 x 4096: 160 blocks of 14 warps; 10 is the largest count with two per SM.
  EXPECT_EQ(warps_for_one_wave(14, blocks_of(5120), kSms, model), 10);
  // Already one wave: unchanged.
  EXPECT_EQ(warps_for_one_wave(10, blocks_of(7168), kSms, model), 10);
  EXPECT_EQ(warps_for_one_wave(16, blocks_of(4096), kSms, model), 16);
}

TEST(GemvMmaPlan, UnchangedWhereNoCountFitsOrTheOccupancyIsUnknown) {
  const auto model = [](int w) { return register_bound_blocks_per_sm(w); };
  // 21 blocks per SM at one warp is still short of 4096 blocks over 132 SMs.
  EXPECT_EQ(warps_for_one_wave(4, std::int64_t{4096}, kSms, model), 4);
  EXPECT_EQ(warps_for_one_wave(11, blocks_of(6144), kSms, [](int) { return 0; }), 11);
  int asked_below = 0;
  EXPECT_EQ(warps_for_one_wave(11, blocks_of(6144), kSms,
                               [&](int w) {
                                 if (w < 11) ++asked_below;
                                 return w == 11 ? 0 : 2;
                               }),
            11);
  EXPECT_EQ(asked_below, 0);  // a failed query stops the search at once
}

}  // namespace
}  // namespace lowbit::cuda::gemv
