// The TMA-fed decode GEMV's launch plan (src/cuda/common/gemv_tma_plan.h) on the decode shapes
// of the benchmarks, every token tile and an H100/H200's 132 SMs (and a smaller part): the
// cluster split is a legal cluster under twice K's steps, every block of the grid fits on the
// GPU at once where a 2-stage ring allows it, the ring fits one block's shared memory, a block
// with two or more steps has two or more stages (its steps overlap), and the split is the
// smallest giving >= 1.5 blocks per SM, halved from 32 tokens on while its blocks have few steps
// and the grid keeps about a block per SM. A change of the constants (stages, ring bytes) that
// breaks one of these breaks the measured reasons for the rule (docs/perf/scaled_gemm.md).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

#include "../../src/cuda/common/gemv_tma_plan.h"

namespace lowbit::cuda::gemv_tma {
namespace {

struct Shape {
  std::int64_t n, k;
};

// scaled_mm's Llama-3 / DeepSeek-V3 shapes, block_fp8_mm's DeepSeek-V3 shapes, and edges.
constexpr Shape kShapes[] = {{4096, 4096},  {14336, 4096}, {4096, 14336}, {18432, 7168},
                             {7168, 18432}, {2112, 7168},  {24576, 1536}, {32768, 512},
                             {4096, 7168},  {7168, 2048},  {576, 7168},   {7168, 16384},
                             {136, 4112},   {200, 336},    {64, 128},     {8, 16}};

TEST(GemvTmaPlan, LegalResidentAndSmallestSplit) {
  unsetenv("LOWBIT_GEMV_TMA_PLAN");
  for (int sm_count : {132, 78}) {
    for (const Shape& s : kShapes) {
      for (int tiles : {1, 2, 4, 8}) {
        const Plan plan = choose_plan(s.n, s.k, tiles, sm_count);
        const std::int64_t row_blocks = (s.n + kRows - 1) / kRows;
        const std::int64_t steps = (s.k + kStepK - 1) / kStepK;
        const std::int64_t mine = (steps + plan.cluster - 1) / plan.cluster;
        const std::int64_t blocks = row_blocks * plan.cluster;
        SCOPED_TRACE(::testing::Message() << "N=" << s.n << " K=" << s.k << " tiles=" << tiles
                                          << " SMs=" << sm_count << " cluster=" << plan.cluster
                                          << " stages=" << plan.stages);
        EXPECT_GE(plan.cluster, 1);
        EXPECT_LE(plan.cluster, kMaxClusterBlocks);
        // Every block of the cluster gets at least one step (K = 336: 3 steps, 3 blocks).
        EXPECT_LT((plan.cluster - 1) * mine, std::max<std::int64_t>(steps, 1)) << "idle block";
        // The split doubled to a power of two and was then trimmed to its busy blocks.
        int doubled = 1;
        while (doubled < plan.cluster) doubled *= 2;
        EXPECT_GE(plan.stages, 1);
        EXPECT_LE(plan.stages, kDefaultStages);
        EXPECT_LE(plan.stages, mine);
        if (mine >= 2) {
          EXPECT_GE(plan.stages, 2) << "step i + 1's wgmma overlaps step i's refill";
        }
        EXPECT_LE(shared_bytes(plan.stages, tiles, 0, plan.receiving_cluster()),
                  std::size_t{227} * 1024);
        // Every block resident at once, unless even a 2-stage ring cannot make it so (then the
        // ring is at its shallowest: two waves).
        const auto fits = [&](int stages) {
          return blocks <= std::int64_t{blocks_per_sm(stages, tiles)} * sm_count;
        };
        if (fits(std::min(plan.stages, 2))) {
          EXPECT_TRUE(fits(plan.stages)) << "not every block resident at once";
        } else {
          EXPECT_EQ(plan.stages, 2);
        }
        const bool capped = doubled == kMaxClusterBlocks || doubled >= steps;
        if (doubled > 1) {
          EXPECT_LT(2 * row_blocks * (doubled / 2), 3 * sm_count) << "a smaller split suffices";
        }
        const auto steps_of = [&](std::int64_t split) { return (steps + split - 1) / split; };
        const bool halved_for_tokens = tiles >= kMinStepsFromTokenTiles &&
                                       doubled < kMaxClusterBlocks && doubled < steps &&
                                       2 * row_blocks * doubled < 3 * sm_count;
        if (!capped && !halved_for_tokens) {
          EXPECT_GE(2 * blocks, 3 * sm_count) << "fewer than 1.5 blocks per SM";
        }
        if (tiles >= kMinStepsFromTokenTiles && doubled > 1) {
          // Not halved: either its blocks have enough steps, or halving would leave SMs idle.
          EXPECT_TRUE(steps_of(doubled) >= kMinStepsBase + tiles ||
                      10 * row_blocks * (doubled / 2) < 9 * sm_count)
              << "a smaller split has enough blocks, and these few steps";
        }
        if (halved_for_tokens) {
          // Halved from the 1.5-per-SM split only because that split's blocks had few steps.
          EXPECT_LT(steps_of(2 * doubled), kMinStepsBase + tiles);
          EXPECT_GE(10 * row_blocks * doubled, 9 * sm_count);
        }
        // The leader's receive area for pushed sums costs no stage and no residency (clusters
        // counted with the slots that GPC placement loses).
        const bool push_fits =
            row_blocks <= resident_clusters(blocks_per_sm(plan.stages, tiles, 0, plan.cluster),
                                            plan.cluster, sm_count);
        EXPECT_EQ(plan.push_sums, plan.cluster > 1 && push_fits);
        // Without room for the area, into the leader's consumed ring where the sums fit it.
        EXPECT_EQ(plan.push_into_ring, plan.cluster > 1 && !push_fits &&
                                           sums_fit_ring(plan.stages, tiles, plan.cluster));
        if (plan.push_sums) {
          EXPECT_LE(blocks, std::int64_t{blocks_per_sm(plan.stages, tiles, 0, plan.cluster)} *
                                sm_count);
        }
      }
    }
  }
}

TEST(GemvTmaPlan, PushedSumsWhereTheReceiveAreaFits) {
  unsetenv("LOWBIT_GEMV_TMA_PLAN");
  unsetenv("LOWBIT_GEMV_TMA_PUSH_SUMS");
  // 4096 x 7168 (64 row blocks): a split of 4 pushed at 1-32 tokens; at 64 the split halves to
  // 2 (few steps), whose 16 KB receive area still fits.
  for (int tiles : {1, 2, 4, 8}) EXPECT_TRUE(choose_plan(4096, 7168, tiles, 132).push_sums);
  // 4096 x 14336 at 64 tokens (a split of 4): the 48 KB area would leave one block per SM for
  // 256 blocks, so into the ring: 3 x 16 KB in a 64 KB ring.
  EXPECT_FALSE(choose_plan(4096, 14336, 8, 132).push_sums);
  EXPECT_TRUE(choose_plan(4096, 14336, 8, 132).push_into_ring);
  // 17 row blocks x 8 at 64 tokens: 7 x 16 KB fit neither the area nor the ring: barriers.
  EXPECT_FALSE(choose_plan(1088, 7168, 8, 132).push_sums);
  EXPECT_FALSE(choose_plan(1088, 7168, 8, 132).push_into_ring);
  EXPECT_TRUE(choose_plan(576, 7168, 8, 132).push_sums);     // 9 row blocks x 8
  // 2112 x 7168: at 16 tokens the area keeps 33 clusters of 8 resident. At 32 tokens, where 2
  // blocks per SM would hold only about 29 of them (measured: two waves), the split of 8 (7 steps
  // a block) halves to 4, and its area fits.
  EXPECT_TRUE(choose_plan(2112, 7168, 2, 132).push_sums);
  EXPECT_EQ(choose_plan(2112, 7168, 4, 132).cluster, 4);
  EXPECT_TRUE(choose_plan(2112, 7168, 4, 132).push_sums);
  EXPECT_EQ(resident_clusters(2, 8, 132), 29);
  EXPECT_EQ(resident_clusters(1, 4, 132), 29);  // 30 queried on an H200: the low end
  EXPECT_FALSE(choose_plan(18432, 7168, 1, 132).push_sums);  // no split
  EXPECT_EQ(shared_bytes(4, 1, 0, 4) - shared_bytes(4, 1), 16 + 3 * partial_sum_bytes(1));
  setenv("LOWBIT_GEMV_TMA_PUSH_SUMS", "0", 1);
  EXPECT_FALSE(choose_plan(4096, 7168, 1, 132).push_sums);
  EXPECT_FALSE(choose_plan(4096, 7168, 8, 132).push_into_ring);
  unsetenv("LOWBIT_GEMV_TMA_PUSH_SUMS");
}

TEST(GemvTmaPlan, TrimsTheSplitToBlocksThatGetSteps) {
  unsetenv("LOWBIT_GEMV_TMA_PLAN");
  EXPECT_EQ(choose_plan(200, 336, 1, 132).cluster, 3);     // 3 steps: 4 blocks trimmed to 3
  EXPECT_EQ(choose_plan(64, 12 * 128, 1, 132).cluster, 6);  // 12 steps: 8 blocks of 2 -> 6
  EXPECT_EQ(choose_plan(64, 16 * 128, 1, 132).cluster, 8);  // 16 steps: 8 blocks of 2
}

// Asked for under programmatic dependent launch (kDeeper), up to 4 token tiles: the deepest ring
// that keeps every block (cluster) resident, where a block has >= 12 steps; at one token tile,
// blocks of 7-11 steps take 6 stages (the short blocks' ring); elsewhere the stream's.
TEST(GemvTmaPlan, DeeperRingUnderDependentLaunch) {
  unsetenv("LOWBIT_GEMV_TMA_PLAN");
  unsetenv("LOWBIT_GEMV_TMA_DEEP_RING");
  for (int sm_count : {132, 78}) {
    for (const Shape& s : kShapes) {
      for (int tiles : {1, 2, 4, 8}) {
        const Plan stream = choose_plan(s.n, s.k, tiles, sm_count);
        const Plan dependent = choose_plan(s.n, s.k, tiles, sm_count, DependentRing::kDeeper);
        SCOPED_TRACE(::testing::Message() << "N=" << s.n << " K=" << s.k << " tiles=" << tiles
                                          << " SMs=" << sm_count);
        EXPECT_EQ(dependent.cluster, stream.cluster);
        const std::int64_t row_blocks = (s.n + kRows - 1) / kRows;
        const std::int64_t steps = (s.k + kStepK - 1) / kStepK;
        const std::int64_t mine = (steps + stream.cluster - 1) / stream.cluster;
        const bool short_ring =
            tiles == 1 && mine >= kShortRingMinSteps && mine < kDeepRingMinSteps;
        if (!short_ring && (tiles > kDeepRingMaxTokenTiles || mine < kDeepRingMinSteps)) {
          EXPECT_EQ(dependent.stages, stream.stages);
          continue;
        }
        EXPECT_GE(dependent.stages, stream.stages);
        EXPECT_LE(dependent.stages, short_ring ? std::max(kShortRingStages, stream.stages)
                                               : kMaxStages);
        if (dependent.stages > stream.stages) {  // resident with the receive area counted
          const int per_sm = blocks_per_sm(dependent.stages, tiles, 0, dependent.cluster);
          if (dependent.cluster == 1) {
            EXPECT_LE(row_blocks, std::int64_t{per_sm} * sm_count);
          } else {
            EXPECT_LE(row_blocks, resident_clusters(per_sm, dependent.cluster, sm_count));
          }
        }
      }
    }
  }
  // H200 (docs/perf/block_gemm.md): o_proj 8 stages up to M = 32; q_b 8, 7, 6 at M = 1, 16,
  // 32; gate_up 7 and 6 at M = 1 and 16 (8 would leave clusters of 4 for a second wave), 4 at
  // M = 32; no change at M = 64. H100, refill-first: down (8 steps per block) and kv_a (7) 6
  // stages at M = 1, the stream's at M = 16.
  EXPECT_EQ(choose_plan(7168, 16384, 1, 132, DependentRing::kDeeper).stages, 8);
  EXPECT_EQ(choose_plan(7168, 16384, 4, 132, DependentRing::kDeeper).stages, 8);
  EXPECT_EQ(choose_plan(24576, 1536, 1, 132, DependentRing::kDeeper).stages, 8);
  EXPECT_EQ(choose_plan(24576, 1536, 2, 132, DependentRing::kDeeper).stages, 7);
  EXPECT_EQ(choose_plan(24576, 1536, 4, 132, DependentRing::kDeeper).stages, 6);
  EXPECT_EQ(choose_plan(24576, 1536, 8, 132, DependentRing::kDeeper).stages, kDefaultStages);
  EXPECT_EQ(choose_plan(4096, 7168, 1, 132, DependentRing::kDeeper).stages, 7);
  EXPECT_EQ(choose_plan(4096, 7168, 2, 132, DependentRing::kDeeper).stages, 6);
  EXPECT_EQ(choose_plan(7168, 2048, 1, 132, DependentRing::kDeeper).stages, kShortRingStages);
  EXPECT_EQ(choose_plan(576, 7168, 1, 132, DependentRing::kDeeper).stages, kShortRingStages);
  EXPECT_EQ(choose_plan(7168, 2048, 2, 132, DependentRing::kDeeper).stages, kDefaultStages);
  EXPECT_EQ(choose_plan(576, 7168, 2, 132, DependentRing::kDeeper).stages, kDefaultStages);
  setenv("LOWBIT_GEMV_TMA_DEEP_RING", "0", 1);
  EXPECT_EQ(choose_plan(7168, 16384, 1, 132, DependentRing::kDeeper).stages, kDefaultStages);
  EXPECT_EQ(choose_plan(7168, 2048, 1, 132, DependentRing::kDeeper).stages, kDefaultStages);
  unsetenv("LOWBIT_GEMV_TMA_DEEP_RING");
}

// scaled_mm under PDL (kShortBlocks): only the short blocks' ring, at one token tile, where every
// block stays resident.
TEST(GemvTmaPlan, ShortBlocksRingUnderDependentLaunch) {
  unsetenv("LOWBIT_GEMV_TMA_PLAN");
  unsetenv("LOWBIT_GEMV_TMA_DEEP_RING");
  const auto stages = [](std::int64_t n, std::int64_t k, int tiles) {
    return choose_plan(n, k, tiles, 132, DependentRing::kShortBlocks).stages;
  };
  EXPECT_EQ(stages(4096, 4096, 1), kShortRingStages);    // 4 x 8 steps
  EXPECT_EQ(stages(7168, 2048, 1), kShortRingStages);    // 2 x 8
  EXPECT_EQ(stages(5120, 5120, 1), kShortRingStages);    // 4 x 10
  EXPECT_EQ(stages(4096, 4096, 2), kDefaultStages);      // 16 tokens: the stream's
  EXPECT_EQ(stages(14336, 4096, 1), kDefaultStages);     // 32 steps: no long blocks' ring
  EXPECT_EQ(stages(18432, 7168, 1), kDefaultStages);
  EXPECT_EQ(stages(32768, 512, 1), kDefaultStages);      // 4 steps
  // 384 blocks of 8 steps in clusters of 4: 6 stages leave every cluster resident on 132 SMs
  // (7 did not: 13.6 us against 9.8 under graph + PDL, H100).
  const Plan wide = choose_plan(6144, 4096, 1, 132, DependentRing::kShortBlocks);
  EXPECT_EQ(wide.cluster, 4);
  EXPECT_LE(wide.stages, kShortRingStages);
  EXPECT_LE(96, resident_clusters(blocks_per_sm(wide.stages, 1, 0, wide.cluster), 4, 132));
}

TEST(GemvTmaPlan, EnvironmentOverridesForTuning) {
  setenv("LOWBIT_GEMV_TMA_PLAN", "8x2", 1);
  Plan plan = choose_plan(18432, 7168, 1, 132);
  EXPECT_EQ(plan.cluster, 8);
  EXPECT_EQ(plan.stages, 2);
  plan = choose_plan(4096, 256, 1, 132);  // 2 steps: the cluster cannot be wider
  EXPECT_EQ(plan.cluster, 2);
  setenv("LOWBIT_GEMV_TMA_PLAN", "1x1", 1);  // one stage cannot overlap two steps: ignored
  plan = choose_plan(18432, 7168, 1, 132);
  EXPECT_EQ(plan.stages, kDefaultStages);
  setenv("LOWBIT_GEMV_TMA_PLAN", "3xq", 1);  // malformed: ignored
  plan = choose_plan(18432, 7168, 1, 132);
  EXPECT_EQ(plan.cluster, 1);
  EXPECT_EQ(plan.stages, kDefaultStages);
  unsetenv("LOWBIT_GEMV_TMA_PLAN");
}

// The weights stream with L2 hints (unwidened, evict-first) unless switched off for a
// measurement; a forced plan keeps them.
TEST(GemvTmaPlan, WeightsReadOnceUnlessSwitchedOff) {
  unsetenv("LOWBIT_GEMV_TMA_PLAN");
  unsetenv("LOWBIT_GEMV_TMA_STREAM_HINTS");
  EXPECT_TRUE(choose_plan(18432, 7168, 1, 132).weights_read_once);
  EXPECT_TRUE(choose_plan(4096, 4096, 8, 132, DependentRing::kDeeper).weights_read_once);
  setenv("LOWBIT_GEMV_TMA_PLAN", "2x4", 1);
  EXPECT_TRUE(choose_plan(4096, 4096, 1, 132).weights_read_once);
  unsetenv("LOWBIT_GEMV_TMA_PLAN");
  setenv("LOWBIT_GEMV_TMA_STREAM_HINTS", "0", 1);
  EXPECT_FALSE(choose_plan(18432, 7168, 1, 132).weights_read_once);
  EXPECT_FALSE(choose_plan(4096, 4096, 8, 132, DependentRing::kDeeper).weights_read_once);
  unsetenv("LOWBIT_GEMV_TMA_STREAM_HINTS");
}

// Block scaling stages a block's step scales before its loop: all of its own steps, within the
// byte budget, never costing the grid its residency; the environment switch turns it off.
TEST(GemvTmaPlan, StagedStepScalesFitAndKeepBlocksResident) {
  unsetenv("LOWBIT_GEMV_TMA_PLAN");
  unsetenv("LOWBIT_GEMV_TMA_STAGED_SCALES");
  for (int sm_count : {132, 78}) {
    for (const Shape& s : kShapes) {
      for (int tiles : {1, 2, 4, 8}) {
        const Plan plain = choose_plan(s.n, s.k, tiles, sm_count);
        const Plan plan = stage_step_scales(plain, s.n, s.k, tiles, sm_count);
        SCOPED_TRACE(::testing::Message() << "N=" << s.n << " K=" << s.k << " tiles=" << tiles
                                          << " SMs=" << sm_count);
        EXPECT_EQ(plan.cluster, plain.cluster);
        EXPECT_EQ(plan.stages, plain.stages);
        const std::int64_t steps = (s.k + kStepK - 1) / kStepK;
        const std::int64_t mine = (steps + plan.cluster - 1) / plan.cluster;
        const std::int64_t blocks = (s.n + kRows - 1) / kRows * plan.cluster;
        if (plan.scale_steps == 0) continue;
        EXPECT_EQ(plan.scale_steps, mine) << "every step of the block";
        EXPECT_LE(static_cast<std::size_t>(mine) * 4 * (8 * tiles + 1), kMaxStagedScaleBytes);
        EXPECT_LE(shared_bytes(plan.stages, tiles, plan.scale_steps, plan.receiving_cluster()),
                  std::size_t{227} * 1024);
        if (blocks <= std::int64_t{blocks_per_sm(plan.stages, tiles)} * sm_count) {
          EXPECT_LE(blocks, std::int64_t{blocks_per_sm(plan.stages, tiles, plan.scale_steps,
                                                       plan.receiving_cluster())} *
                                sm_count)
              << "staging cost the grid its residency";
        }
        // Staging keeps the pushed sums unless both do not fit; then they go into the ring.
        EXPECT_TRUE(!plan.push_sums || plain.push_sums);
        EXPECT_FALSE(plan.push_sums && plan.push_into_ring);
      }
    }
  }
  // DeepSeek-V3 o_proj (K = 16384 in two blocks' halves): 64 steps at every token tile.
  EXPECT_EQ(stage_step_scales(choose_plan(7168, 16384, 1, 132), 7168, 16384, 1, 132).scale_steps,
            64);
  EXPECT_EQ(stage_step_scales(choose_plan(7168, 16384, 8, 132), 7168, 16384, 8, 132).scale_steps,
            64);
  // 1024 steps of 65 scales on one block: over the budget, so copied per stage.
  setenv("LOWBIT_GEMV_TMA_PLAN", "1x4", 1);
  EXPECT_EQ(stage_step_scales(choose_plan(64, 131072, 8, 132), 64, 131072, 8, 132).scale_steps,
            0);
  unsetenv("LOWBIT_GEMV_TMA_PLAN");
  setenv("LOWBIT_GEMV_TMA_STAGED_SCALES", "0", 1);
  EXPECT_EQ(stage_step_scales(choose_plan(7168, 16384, 1, 132), 7168, 16384, 1, 132).scale_steps,
            0);
  unsetenv("LOWBIT_GEMV_TMA_STAGED_SCALES");
}

// Under PDL the next kernel may launch at once up to 16 tokens, and at 17-32 tokens behind a
// deep ring or a weight of at most 27 MiB; after the main loop otherwise. The environment
// switch forces either (for measurements).
TEST(GemvTmaPlan, EarlyReleaseByTokensWeightAndRing) {
  unsetenv("LOWBIT_GEMV_TMA_PLAN");
  unsetenv("LOWBIT_GEMV_TMA_EARLY_RELEASE");
  const DependentRing short_blocks = DependentRing::kShortBlocks;
  for (int tiles : {1, 2}) EXPECT_TRUE(choose_plan(18432, 7168, tiles, 132).early_release);
  EXPECT_TRUE(choose_plan(6144, 4096, 4, 132, short_blocks).early_release);
  EXPECT_TRUE(choose_plan(18432, 1536, 4, 132, short_blocks).early_release);  // 27 MiB
  EXPECT_FALSE(choose_plan(7168, 4096, 4, 132, short_blocks).early_release);  // 28 MiB
  EXPECT_FALSE(choose_plan(14336, 4096, 4, 132, short_blocks).early_release);
  EXPECT_TRUE(choose_plan(7168, 16384, 4, 132, DependentRing::kDeeper).early_release);
  for (DependentRing ring : {short_blocks, DependentRing::kDeeper}) {
    EXPECT_FALSE(choose_plan(4096, 4096, 8, 132, ring).early_release);
    EXPECT_FALSE(choose_plan(4096, 7168, 8, 132, ring).early_release);
  }
  setenv("LOWBIT_GEMV_TMA_EARLY_RELEASE", "1", 1);
  EXPECT_TRUE(choose_plan(18432, 7168, 8, 132).early_release);
  setenv("LOWBIT_GEMV_TMA_EARLY_RELEASE", "0", 1);
  EXPECT_FALSE(choose_plan(4096, 4096, 1, 132).early_release);
  setenv("LOWBIT_GEMV_TMA_EARLY_RELEASE", "yes", 1);  // not a switch: the rule
  EXPECT_TRUE(choose_plan(4096, 4096, 1, 132).early_release);
  unsetenv("LOWBIT_GEMV_TMA_EARLY_RELEASE");
}

}  // namespace
}  // namespace lowbit::cuda::gemv_tma
