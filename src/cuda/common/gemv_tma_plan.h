// The launch plan of the TMA-fed decode GEMV (common/gemv_tma.cuh): the bytes of its shared
// memory ring and how K is split over cluster blocks. Host code only, so the CPU tests can check
// the rule's invariants (tests/cpu/test_gemv_tma_plan.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace lowbit::cuda::gemv_tma {

inline constexpr int kStepK = 128;                          // one 128-byte swizzle row per step
inline constexpr int kRows = 64;                            // weight rows per block: wgmma's M
inline constexpr int kDefaultStages = 4;
inline constexpr int kMaxStages = 8;
inline constexpr int kMaxClusterBlocks = 8;                 // portable cluster size
inline constexpr int kWeightStageBytes = kRows * kStepK;    // 8 KB
inline constexpr int kTokenStageBytes = 8 * kStepK;         // 1 KB per 8 tokens

inline constexpr int stage_bytes(int token_tiles) {
  return kWeightStageBytes + kTokenStageBytes * token_tiles;  // a multiple of 1 KB
}

// Stages, 1 KB of slack to align them for the swizzle, their barriers and the staged scales'
// one, and the step scales (8 T token scales and one weight scale per step): one slot per
// stage, or one per step of the block when `scale_steps` are staged before the loop. The
// partial sums (4 T values x 128 threads x 4 bytes = 2 T KB) reuse the stages after the loop.
inline std::size_t shared_bytes(int stages, int token_tiles, int scale_steps = 0) {
  const std::size_t scale_slots = static_cast<std::size_t>(std::max(stages, scale_steps));
  return static_cast<std::size_t>(stages) * stage_bytes(token_tiles) +
         scale_slots * 4 * (8 * token_tiles + 1) + 1024 + 8 * (kMaxStages + 1);
}

struct Plan {
  int cluster = 1;  // blocks splitting K (contiguous ranges of steps), in one cluster
  int stages = 1;   // ring depth per block; >= 2 whenever a block has two or more steps
  // Per-step scales (block scaling): 0 copies each step's with its operands into its stage;
  // otherwise every block stages this many steps' scales (all of its own) before its loop.
  int scale_steps = 0;
};

// Blocks per SM that shared memory allows (228 KB per SM, 1 KB reserved per block), at most 16
// warpgroups.
inline int blocks_per_sm(int stages, int token_tiles, int scale_steps = 0) {
  return std::min<int>(
      16, static_cast<int>((228 * 1024) / (shared_bytes(stages, token_tiles, scale_steps) + 1024)));
}

// Measured on an H200 (docs/perf/scaled_gemm.md): what matters is that every block is resident
// at once with the same work, and that there are enough blocks to keep HBM busy; the weight
// stream is shared, so blocks per SM need not be even, and more, smaller blocks lose to their
// fixed costs (start, ring fill, cluster sum). So: the smallest K split (1, 2, 4 or 8 blocks,
// doubling while below K's steps) giving >= 1.5 blocks per SM, less any block its ranges would
// leave idle; a ring of up to 4 stages, shallower when that keeps every block resident.
inline Plan choose_plan(std::int64_t n, std::int64_t k, int token_tiles, int sm_count) {
  const std::int64_t row_blocks = (n + kRows - 1) / kRows;
  const std::int64_t steps = (k + kStepK - 1) / kStepK;
  // LOWBIT_GEMV_TMA_PLAN=<cluster>x<stages> overrides the choice (for tuning measurements).
  // At least two stages: the kernel runs a step's wgmma while the previous stage is refilled.
  int forced_cluster = 0, forced_stages = 0;
  if (const char* text = std::getenv("LOWBIT_GEMV_TMA_PLAN")) {
    if (std::sscanf(text, "%dx%d", &forced_cluster, &forced_stages) != 2 ||
        forced_cluster < 1 || forced_cluster > kMaxClusterBlocks || forced_stages < 2 ||
        forced_stages > kMaxStages) {
      forced_cluster = forced_stages = 0;
    }
  }
  Plan plan;
  if (forced_cluster > 0) {
    plan.cluster = forced_cluster;
  } else {
    while (plan.cluster < kMaxClusterBlocks && plan.cluster < steps &&
           2 * row_blocks * plan.cluster < 3 * std::int64_t{sm_count}) {
      plan.cluster *= 2;
    }
  }
  // Contiguous ranges of ceil(steps / cluster) steps: only ceil(steps / that) blocks get any
  // (K = 336: 3 steps over 4 blocks would leave one idle), so the cluster is that many.
  const std::int64_t mine = std::max<std::int64_t>(1, (steps + plan.cluster - 1) / plan.cluster);
  plan.cluster = static_cast<int>(std::max<std::int64_t>(1, (steps + mine - 1) / mine));
  if (forced_stages > 0) {
    plan.stages = forced_stages;
    return plan;
  }
  plan.stages = static_cast<int>(std::clamp<std::int64_t>(mine, 1, kDefaultStages));
  const std::int64_t blocks = row_blocks * plan.cluster;
  while (plan.stages > 2 &&
         blocks > std::int64_t{blocks_per_sm(plan.stages, token_tiles)} * sm_count) {
    --plan.stages;
  }
  return plan;
}

// For block scaling: stage every block's step scales in shared memory before its loop, where
// they take at most kMaxStagedScaleBytes and keep every block of the grid resident. Copied with
// each stage (9 to 65 four-byte copies arriving on its barrier), they cost the 117 MB o_proj
// 9-14% at M = 1-32 on an H200 (docs/perf/block_gemm.md). LOWBIT_GEMV_TMA_STAGED_SCALES=0
// keeps the per-stage copies (for measurements and tests).
inline constexpr std::size_t kMaxStagedScaleBytes = 40 * 1024;
inline Plan stage_step_scales(Plan plan, std::int64_t n, std::int64_t k, int token_tiles,
                              int sm_count) {
  plan.scale_steps = 0;
  if (const char* text = std::getenv("LOWBIT_GEMV_TMA_STAGED_SCALES")) {
    if (text[0] == '0' && text[1] == 0) return plan;
  }
  const std::int64_t steps = (k + kStepK - 1) / kStepK;
  const std::int64_t mine = (steps + plan.cluster - 1) / plan.cluster;
  const std::int64_t bytes = mine * 4 * (8 * token_tiles + 1);
  if (mine < 1 || bytes > static_cast<std::int64_t>(kMaxStagedScaleBytes)) return plan;
  const std::int64_t blocks = (n + kRows - 1) / kRows * plan.cluster;
  const auto resident = [&](int scale_steps) {
    return blocks <= std::int64_t{blocks_per_sm(plan.stages, token_tiles, scale_steps)} * sm_count;
  };
  if (resident(static_cast<int>(mine)) || !resident(0)) plan.scale_steps = static_cast<int>(mine);
  return plan;
}

}  // namespace lowbit::cuda::gemv_tma
