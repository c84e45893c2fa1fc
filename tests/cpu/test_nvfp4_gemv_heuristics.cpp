// The NVFP4 GEMV configuration choice on the rows of `lowbit bench nvfp4` it was measured on
// (H200; docs/perf/nvfp4_gemv.md): host code of the CUDA build, checked without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

#include "../../src/cuda/nvfp4/nvfp4_gemv_config.h"

namespace {

using lowbit::cuda::Nvfp4GemvConfig;

// rows x cols per expert, `experts` active slots, `pairs` routed rows, `tokens` rows of x.
Nvfp4GemvConfig choose(std::int64_t rows, std::int64_t cols, std::int64_t experts, std::int64_t pairs,
                       std::int64_t tokens, bool sparse) {
  unsetenv("LOWBIT_NVFP4_GEMV");
  return lowbit::cuda::choose_nvfp4_gemv_config(rows, cols, experts, pairs, tokens, sparse);
}

void expect_config(const Nvfp4GemvConfig& c, int warps, int unroll, bool balanced, bool staged,
                   bool wide = false) {
  EXPECT_EQ(c.warps_per_tile, warps);
  EXPECT_EQ(c.unroll, unroll);
  EXPECT_EQ(c.balanced, balanced);
  EXPECT_EQ(c.stage_x, staged);
  EXPECT_EQ(c.wide, wide);
}

TEST(Nvfp4GemvHeuristics, DownProjectionsOfAFewTokensRunBalanced) {
  for (bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "2:4" : "dense");
    // DeepSeek-V3 down (7168 x 2048) at M = 1 and 4 (top-8 of 256), Qwen3-Next down (2048 x 512)
    // at M = 1 (top-10 of 512); 2:4 stages its activations.
    expect_config(choose(7168, 2048, 8, 8, 1, sparse), 1, 8, true, sparse);
    expect_config(choose(7168, 2048, 30, 32, 4, sparse), 1, 8, true, sparse);
    expect_config(choose(2048, 512, 10, 10, 1, sparse), 1, 8, true, sparse);
    // Qwen3-Next down at M = 4 (40 routed rows): the window of 4, as before.
    expect_config(choose(2048, 512, 37, 40, 4, sparse), 1, 4, false, false);
    // Qwen3-30B-A3B down (2048 x 768): 12 chunks, not whole rounds of 8, so balanced with the
    // window of 4 at M = 1 and 4 (32 routed rows); per item with the window of 4 at M = 16.
    expect_config(choose(2048, 768, 8, 8, 1, sparse), 1, 4, true, false);
    expect_config(choose(2048, 768, 29, 32, 4, sparse), 1, 4, true, false);
    expect_config(choose(2048, 768, 80, 128, 16, sparse), 1, 4, false, false);
    // The whole expert table as slots (idle slots): per item, the window of 8, as before.
    expect_config(choose(2048, 768, 128, 8, 1, sparse), 1, 8, false, false);
  }
  // 2:4 whose token rows do not fit the staging buffer (32 tokens of 4 KB) keeps the old rule.
  expect_config(choose(7168, 2048, 32, 32, 32, true), 1, 4, false, false);
  // A row of x per routed pair (a MoE layer's down input) is staged where the rows fit the 36 KB
  // buffer (a block stages the ones its slots read): Qwen3-Next at M = 1 (10 rows of 1 KB),
  // DeepSeek-V3 at M = 1 (8 rows of 4 KB); not DeepSeek-V3 at M = 2 (16 rows: per item).
  expect_config(choose(2048, 512, 10, 10, 10, true), 1, 8, true, true);
  expect_config(choose(7168, 2048, 8, 8, 8, true), 1, 8, true, true);
  expect_config(choose(7168, 2048, 16, 16, 16, true), 1, 8, false, false);
  // Long rows of x per pair do not fit: no wide gate_up block (8 pairs, 4096 x 7168 experts).
  expect_config(choose(4096, 7168, 8, 8, 8, true), 1, 8, false, false);
}

TEST(Nvfp4GemvHeuristics, GateUpProjections) {
  // DeepSeek-V3 gate_up (4096 x 7168) at M = 1: dense one warp per tile, window of 8, per item;
  // 2:4 the staged balanced kernel as one wide block per SM.
  expect_config(choose(4096, 7168, 8, 8, 1, false), 1, 8, false, false);
  expect_config(choose(4096, 7168, 8, 8, 1, true), 1, 8, true, true, true);
  // At M = 4 (32 routed rows) 2:4 runs per item as before: the wide block was measured at M = 1.
  expect_config(choose(4096, 7168, 30, 32, 4, true), 1, 4, false, false);
  // Qwen3-30B-A3B gate_up (1536 x 2048) at M = 1: too few tiles, K split over 2 warps.
  expect_config(choose(1536, 2048, 8, 8, 1, true), 2, 4, false, false);
  // Qwen3-Next gate_up (1024 x 2048) at M = 1 (640 tiles): one tile per balanced block.
  expect_config(choose(1024, 2048, 10, 10, 1, false), 1, 4, true, false);
  expect_config(choose(1024, 2048, 10, 10, 1, true), 1, 4, true, false);
  // The same with the launch's whole expert table as slots (idle slots): the balanced kernel
  // cannot split by items, so K is split over 2 warps as before.
  expect_config(choose(1024, 2048, 512, 10, 1, false), 2, 4, false, false);
}

TEST(Nvfp4GemvHeuristics, TokensSharingTheirExperts) {
  // At least 4 routed rows a slot. 2:4 stages its rows in one wide block per SM where they fit
  // 160 KB: DeepSeek-V3 gate_up (4096 x 7168) at 8 tokens, down (7168 x 2048) at 4 and 16,
  // Qwen3-30B-A3B gate_up (1536 x 2048) at 16.
  expect_config(choose(4096, 7168, 8, 64, 8, true), 1, 8, true, true, true);
  expect_config(choose(7168, 2048, 8, 32, 4, true), 1, 8, true, true, true);
  expect_config(choose(7168, 2048, 8, 128, 16, true), 1, 8, true, true, true);
  expect_config(choose(1536, 2048, 8, 128, 16, true), 1, 8, true, true, true);
  // Dense at up to 8 tokens runs balanced, beyond per item with the window of 8, as does 2:4
  // whose rows do not fit (DeepSeek-V3 gate_up at 16 tokens: 229 KB).
  expect_config(choose(4096, 7168, 8, 64, 8, false), 1, 8, true, false);
  expect_config(choose(4096, 7168, 8, 128, 16, false), 1, 8, false, false);
  expect_config(choose(4096, 7168, 8, 128, 16, true), 1, 8, false, false);
  expect_config(choose(7168, 2048, 8, 72, 9, false), 1, 8, false, false);
  // Too few tiles for the dense rules (Qwen3-30B-A3B gate_up, 768: K split over 2 warps, as
  // before); no whole rounds of 8 but 7 tiles per SM (Qwen3-30B-A3B down, 1024 tiles, K = 768):
  // the window of 8 per item, dense and 2:4.
  expect_config(choose(1536, 2048, 8, 64, 8, false), 2, 4, false, false);
  expect_config(choose(2048, 768, 8, 128, 16, true), 1, 8, false, false);
  expect_config(choose(2048, 768, 8, 64, 8, false), 1, 8, false, false);
  // At 4 tokens (32 rows) the balanced window of 4; fewer than 7 tiles per SM (7 experts, 896
  // tiles) the window of 4 per item, as before.
  expect_config(choose(2048, 768, 8, 32, 4, false), 1, 4, true, false);
  expect_config(choose(2048, 768, 7, 112, 16, false), 1, 4, false, false);
  // The whole expert table as slots: fewer than 4 rows a slot, the rules below.
  expect_config(choose(7168, 2048, 256, 128, 16, true), 1, 4, false, false);
}

TEST(Nvfp4GemvHeuristics, OverrideForcesStagedBalanced) {
  setenv("LOWBIT_NVFP4_GEMV", "1,8bs", 1);
  expect_config(lowbit::cuda::choose_nvfp4_gemv_config(4096, 7168, 8, 8, 1, false), 1, 8, true, true);
  setenv("LOWBIT_NVFP4_GEMV", "1,8bsw", 1);
  expect_config(lowbit::cuda::choose_nvfp4_gemv_config(4096, 7168, 8, 8, 1, true), 1, 8, true, true,
                true);
  setenv("LOWBIT_NVFP4_GEMV", "1,8bw", 1);  // a wide block needs staging: ignored
  expect_config(lowbit::cuda::choose_nvfp4_gemv_config(4096, 7168, 8, 8, 1, false), 1, 8, false,
                false);
  setenv("LOWBIT_NVFP4_GEMV", "1,4bs", 1);  // staging needs the window of 8: ignored
  expect_config(lowbit::cuda::choose_nvfp4_gemv_config(4096, 7168, 8, 8, 1, false), 1, 8, false, false);
  unsetenv("LOWBIT_NVFP4_GEMV");
}

TEST(Nvfp4GemvHeuristics, BalancedGridsTakeAsFewBlocksAsTheMostItemsNeed) {
  using lowbit::cuda::nvfp4_balanced_grid;
  // DeepSeek-V3 down at M = 1 (8 slots x 448 tiles) on 2 blocks per SM of an H200: 14 items a
  // block at most, so 256 blocks of 14 rather than 264 of 13 or 14.
  EXPECT_EQ(nvfp4_balanced_grid(3584, 2, 132), 256u);
  // DeepSeek-V3 gate_up at M = 1 (8 x 256 tiles), one wide block per SM: 128 blocks of 16.
  EXPECT_EQ(nvfp4_balanced_grid(2048, 1, 132), 128u);
  // An even split keeps every block; fewer items than blocks give one item a block.
  EXPECT_EQ(nvfp4_balanced_grid(264 * 7, 2, 132), 264u);
  EXPECT_EQ(nvfp4_balanced_grid(10, 2, 132), 10u);
  EXPECT_EQ(nvfp4_balanced_grid(1, 1, 132), 1u);
  // Every item is covered: blocks * most >= items, and one block fewer would need more a block.
  for (std::int64_t items : {1, 131, 133, 1000, 3584, 13888, 100000}) {
    for (int per_sm : {1, 2, 4}) {
      const std::int64_t slots = std::int64_t{per_sm} * 132;
      const std::int64_t most = (items + slots - 1) / slots;
      const std::int64_t blocks = nvfp4_balanced_grid(items, per_sm, 132);
      EXPECT_LE(blocks, slots) << items;
      EXPECT_GE(blocks * most, items) << items;
      EXPECT_LT((blocks - 1) * most, items) << items;
    }
  }
}

TEST(Nvfp4GemvHeuristics, StagedPairsOnlyUnderPdlOnLongLaunches) {
  using lowbit::cuda::nvfp4_staged_pairs_pay;
  // DeepSeek-V3 down at M = 1 and 4: 4.5 and 17 rounds a warp at 24 warps per SM of an H200.
  EXPECT_TRUE(nvfp4_staged_pairs_pay(7168, 2048, 8, 8, true, 132));
  EXPECT_TRUE(nvfp4_staged_pairs_pay(7168, 2048, 30, 32, true, 132));
  // On a stream the 5 blocks of 4 warps stay.
  EXPECT_FALSE(nvfp4_staged_pairs_pay(7168, 2048, 8, 8, false, 132));
  // Qwen3-Next down at M = 1 (10 slots x 128 tiles, one round a tile): 0.4 rounds a warp.
  EXPECT_FALSE(nvfp4_staged_pairs_pay(2048, 512, 10, 10, true, 132));
  // Idle slots beyond the routed rows do not count.
  EXPECT_FALSE(nvfp4_staged_pairs_pay(7168, 2048, 256, 2, true, 132));
}

}  // namespace
