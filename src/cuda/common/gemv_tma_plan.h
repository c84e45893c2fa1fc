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

// The partial sums one block of a K split sends its cluster's leader: 4 T values x 128
// threads x 4 bytes.
inline constexpr std::size_t partial_sum_bytes(int token_tiles) {
  return std::size_t{2048} * static_cast<std::size_t>(token_tiles);
}

// Stages, 1 KB of slack to align them for the swizzle, their barriers, the staged scales' one,
// the partial sums' one and the consumed ring's one, the step scales (8 T token scales and one
// weight scale per step): one slot per stage, or one per step of the block when `scale_steps`
// are staged before the loop, and, in a cluster of `cluster` blocks, 16 bytes of alignment and
// the leader's receive area for the other blocks' partial sums (every block has it: one kernel,
// one size).
inline std::size_t shared_bytes(int stages, int token_tiles, int scale_steps = 0,
                                int cluster = 1) {
  const std::size_t scale_slots = static_cast<std::size_t>(std::max(stages, scale_steps));
  const std::size_t received =
      cluster > 1 ? 16 + static_cast<std::size_t>(cluster - 1) * partial_sum_bytes(token_tiles)
                  : 0;
  return static_cast<std::size_t>(stages) * stage_bytes(token_tiles) +
         scale_slots * 4 * (8 * token_tiles + 1) + 1024 + 8 * (kMaxStages + 3) + received;
}

struct Plan {
  int cluster = 1;  // blocks splitting K (contiguous ranges of steps), in one cluster
  int stages = 1;   // ring depth per block; >= 2 whenever a block has two or more steps
  // Per-step scales (block scaling): 0 copies each step's with its operands into its stage;
  // otherwise every block stages this many steps' scales (all of its own) before its loop.
  int scale_steps = 0;
  // K split: the other blocks push their sums into the leader's receive area; or, without one,
  // into the leader's ring once it has consumed it (push_into_ring); else (both false) they keep
  // them in their own ring and the leader reads them between two cluster barriers.
  bool push_sums = false;
  bool push_into_ring = false;
  // The weights are read once: their copies ask L2 for exactly the box (no widening of the
  // DRAM fetch) and to evict those lines first (weights_stream_hinted). The tokens, re-read by
  // every row block, keep the default hints.
  bool weights_read_once = true;
  // Under programmatic dependent launch, the next kernel may launch as soon as this one starts
  // (else after each block's main loop): see releases_at_start().
  bool early_release = false;
  // The cluster size that shared_bytes() sizes the leader's receive area for.
  int receiving_cluster() const { return push_sums ? cluster : 1; }
};

// Blocks per SM that shared memory allows (228 KB per SM, 1 KB reserved per block), at most 16
// warpgroups.
inline int blocks_per_sm(int stages, int token_tiles, int scale_steps = 0, int cluster = 1) {
  return std::min<int>(16, static_cast<int>((228 * 1024) /
                                            (shared_bytes(stages, token_tiles, scale_steps,
                                                          cluster) +
                                             1024)));
}

// Clusters of `cluster` blocks resident at once, at the low end: a cluster's blocks share one
// GPC, so partly filled GPCs leave block slots a per-SM count does not see. On an H200 30
// clusters of 4 and 15 of 8 fit at one block per SM (queried; 33 and 16.5 by the count), and at
// two per SM 64 clusters of 4 and 33 of 8 ran in two waves: about 10% of the slots are lost.
inline std::int64_t resident_clusters(int blocks_per_sm, int cluster, int sm_count) {
  return (std::int64_t{9} * blocks_per_sm * sm_count) / (std::int64_t{10} * cluster);
}

// Whether the leader's receive area for pushed sums keeps every cluster of the grid resident.
inline bool pushed_sums_fit(int stages, int token_tiles, int scale_steps, int cluster,
                            std::int64_t row_blocks, int sm_count) {
  return row_blocks <= resident_clusters(
                           blocks_per_sm(stages, token_tiles, scale_steps, cluster), cluster,
                           sm_count);
}

// Whether the other blocks' sums fit the leader's ring (the stages it has consumed).
inline bool sums_fit_ring(int stages, int token_tiles, int cluster) {
  return static_cast<std::size_t>(cluster - 1) * partial_sum_bytes(token_tiles) <=
         static_cast<std::size_t>(stages) * stage_bytes(token_tiles);
}

// Whether the tuning switch `name` is set to "0" (the measured default turned off).
inline bool switched_off(const char* name) {
  const char* text = std::getenv(name);
  return text != nullptr && text[0] == '0' && text[1] == 0;
}

// Measured on an H200 (docs/perf/scaled_gemm.md, "A weight stream that L2 does not keep"): with
// the weights' copies unwidened (the tensor map's default widens each to 256 bytes) and
// evict-first, scaled_mm's 59-132 MB weights ran up to 5% faster on a stream and 8% under graph
// + PDL at M = 1-32 (7168 x 18432 at M = 1 unchanged), block_fp8_mm's seven weights 1-8% on a
// stream; the DRAM bytes are the same, L2 handles 24% fewer sectors (ncu).
// LOWBIT_GEMV_TMA_STREAM_HINTS=0 keeps the defaults (for measurements).
inline bool weights_stream_hinted() { return !switched_off("LOWBIT_GEMV_TMA_STREAM_HINTS"); }

// Measured on an H200 (docs/perf/scaled_gemm.md): what matters is that every block is resident
// at once with the same work, and that there are enough blocks to keep HBM busy; the weight
// stream is shared, so blocks per SM need not be even, and more, smaller blocks lose to their
// fixed costs (start, ring fill, cluster sum). So: the smallest K split (1, 2, 4 or 8 blocks,
// doubling while below K's steps) giving >= 1.5 blocks per SM (from 32 tokens on, halved again
// while its blocks have few steps: kMinStepsBase), less any block its ranges would leave idle;
// a ring of up to 4 stages, shallower when that keeps every block resident.
//
// Under programmatic dependent launch a block requests its ring's weights before it waits for
// the previous kernel, so a deeper ring starts more of the stream early. What a launch under PDL
// asks for (DependentRing):
// - kDeeper (block_fp8_mm): at up to 4 token tiles (M <= 32), where a block has at least
//   kDeepRingMinSteps steps, up to kMaxStages stages that keep every block (every cluster)
//   resident; and the short blocks' ring below. scaled_mm does not take the long blocks' ring:
//   with the ring's earlier order it measured 0.4-1.5 us slower on two of four weights at M = 1
//   (docs/perf/block_gemm.md, "Deeper rings under PDL"), and with refill-first 18432 x 7168 ran
//   slower with 5-6 stages than with 4 (H100).
// - kShortBlocks (scaled_mm): at one token tile (M <= 8), where a block has
//   kShortRingMinSteps..kDeepRingMinSteps - 1 steps, kShortRingStages stages where every block
//   stays resident (else the deepest that does). Measured on an H100 with refill-first
//   (docs/perf/scaled_gemm.md, "Refill first"), 6 stages against 4 under graph + PDL at M = 1:
//   4096 x 4096 -2%, 7168 x 2048 -5%, 6144 x 4096 -5%, 5120 x 5120 -14%, block_fp8_mm's down
//   -8%, q_a+kv_a -16%, kv_a -9%; at M = 16 q_a+kv_a and down ran 1-4% slower, and all of a
//   block's steps in the ring (8 of 8) lost to 6 and 7. On a stream deeper rings gained nothing.
enum class DependentRing { kStream, kShortBlocks, kDeeper };
inline constexpr int kShortRingMinSteps = 7;
inline constexpr int kShortRingStages = 6;
inline constexpr int kDeepRingMinSteps = 12;

// Under PDL, whether the next kernel may launch as soon as this one starts (else after each
// block's main loop): up to 16 tokens; at 17-32 tokens where the ring is deep (kDeeper) or the
// weight is at most kEarlyReleaseMaxWeightBytes. The next kernel's blocks then start on the SMs
// this grid leaves free and request their ring's first weights while it runs; behind a longer
// stream those early blocks crowd the SMs that free up first. Measured on an H200 in graph
// replay with PDL (docs/perf/scaled_gemm.md, "Where the next kernel launches, at 17-32
// tokens"), us at 17-32 tokens, after the loop -> at start: scaled_mm 6144 x 4096 9.5-9.8 ->
// 8.3, 7168 x 2048 6.9-7.0 -> 6.0-6.1, 18432 x 1536 (27 MiB) 9.5-9.9 -> 9.1-9.5, 4096 x 4096
// 7.6 -> 7.1; but 7168 x 4096 (28 MiB) 10.5-10.7 -> 10.9-11.0, 14336 x 4096 16.6 -> 17.3,
// 18432 x 7168 34.8-34.9 -> 38.9-39.4; block_fp8_mm (its deep ring) 3-14% faster at 24-32
// tokens on five of DeepSeek-V3's seven weights (o_proj, 117 MB, 2.5-3.4%), the other two
// unchanged. At 33-64 tokens block_fp8_mm's gate_up lost 21% (earlier, at M = 64: 18432 x 7168
// 41.1 at start against 38.3 after the loop).
inline constexpr std::int64_t kEarlyReleaseMaxWeightBytes = std::int64_t{27} << 20;
inline bool releases_at_start(std::int64_t n, std::int64_t k, int token_tiles,
                              DependentRing ring) {
  if (token_tiles <= 2) return true;
  return token_tiles <= 4 &&
         (ring == DependentRing::kDeeper || n * k <= kEarlyReleaseMaxWeightBytes);
}

// Measured on an H200 (docs/perf/scaled_gemm.md, "Host cost and a 64 x 64 tile"): at 32 tokens
// 4096 x 4096 ran 10.6-10.9 us with 2 blocks of 16 steps against 11.4 with 4 of 8; at 64 tokens
// block_fp8_mm's gate_up 19.2 with 2 of 28 against 21.9 with 4 of 14 (at 32 tokens 4 of 14 won,
// 15.8 against 19.1), and q_a+kv_a 17.4 with 4 of 14 against 19.2 with 8 of 7.
inline constexpr int kMinStepsFromTokenTiles = 4;
inline constexpr int kMinStepsBase = 8;
inline constexpr int kDeepRingMaxTokenTiles = 4;

inline Plan choose_plan(std::int64_t n, std::int64_t k, int token_tiles, int sm_count,
                        DependentRing dependent_ring = DependentRing::kStream) {
  const std::int64_t row_blocks = (n + kRows - 1) / kRows;
  const std::int64_t steps = (k + kStepK - 1) / kStepK;
  // LOWBIT_GEMV_TMA_PLAN=<cluster>x<stages> overrides the choice (for tuning measurements).
  // At least two stages: one is in flight while the other is read.
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
    // From 32 tokens on, a block's fixed costs (ring fill, a 4-8 KB token box per step, its
    // share of the cluster sum) grow with the tokens, so the split halves while its blocks
    // would stream fewer than kMinStepsBase + T steps and the grid keeps about a block per SM.
    while (token_tiles >= kMinStepsFromTokenTiles && plan.cluster > 1 &&
           (steps + plan.cluster - 1) / plan.cluster < kMinStepsBase + token_tiles &&
           10 * row_blocks * (plan.cluster / 2) >= 9 * std::int64_t{sm_count}) {
      plan.cluster /= 2;
    }
  }
  // Contiguous ranges of ceil(steps / cluster) steps: only ceil(steps / that) blocks get any
  // (K = 336: 3 steps over 4 blocks would leave one idle), so the cluster is that many.
  const std::int64_t mine = std::max<std::int64_t>(1, (steps + plan.cluster - 1) / plan.cluster);
  plan.cluster = static_cast<int>(std::max<std::int64_t>(1, (steps + mine - 1) / mine));
  const std::int64_t blocks = row_blocks * plan.cluster;
  if (forced_stages > 0) {
    plan.stages = forced_stages;
  } else {
    plan.stages = static_cast<int>(std::clamp<std::int64_t>(mine, 1, kDefaultStages));
    while (plan.stages > 2 &&
           blocks > std::int64_t{blocks_per_sm(plan.stages, token_tiles)} * sm_count) {
      --plan.stages;
    }
    // Measured on an H200, block_fp8_mm under graph + PDL (docs/perf/block_gemm.md, "Deeper
    // rings under PDL"): on the weights whose blocks have 12-64 steps, 0.2-1.6 us gained at
    // M = 1, 1.1-2.1 us at M = 16, 0-0.3 us at M = 32; 8 stages lost where they would hold all
    // of a block's 7-8 steps, and on a stream deeper rings gained nothing.
    // LOWBIT_GEMV_TMA_DEEP_RING=0 keeps the stream's ring.
    const auto resident = [&](int stages) {  // clusters: with the receive area counted
      return plan.cluster == 1
                 ? blocks <= std::int64_t{blocks_per_sm(stages, token_tiles)} * sm_count
                 : pushed_sums_fit(stages, token_tiles, 0, plan.cluster, row_blocks, sm_count);
    };
    const auto deepest_resident = [&](int stages) {
      while (stages > plan.stages && !resident(stages)) --stages;
      return std::max(stages, plan.stages);
    };
    const bool deeper = !switched_off("LOWBIT_GEMV_TMA_DEEP_RING");
    if (deeper && dependent_ring == DependentRing::kDeeper &&
        token_tiles <= kDeepRingMaxTokenTiles && mine >= kDeepRingMinSteps) {
      plan.stages = deepest_resident(kMaxStages);
    } else if (deeper && dependent_ring != DependentRing::kStream && token_tiles == 1 &&
               mine >= kShortRingMinSteps && mine < kDeepRingMinSteps) {
      plan.stages = deepest_resident(kShortRingStages);
    }
  }
  // Pushed sums end a K split ~1.5 us sooner than two cluster barriers (H200), but the receive
  // area must cost no stage and no residency. Where it cost a stage (4096 x 7168 at M = 64, 4 -> 3
  // stages) the kernel ran 5-7 us slower, and where it left 2 blocks per SM for 33 clusters of 8
  // (2112 x 7168 at M = 32) 2 us slower. LOWBIT_GEMV_TMA_PUSH_SUMS=0 keeps the barriers.
  // Without room for that area the sums go into the leader's ring after it signals it consumed:
  // one more hop, no memory.
  const bool may_push = plan.cluster > 1 && !switched_off("LOWBIT_GEMV_TMA_PUSH_SUMS");
  plan.push_sums = may_push && pushed_sums_fit(plan.stages, token_tiles, 0, plan.cluster,
                                               row_blocks, sm_count);
  plan.push_into_ring =
      may_push && !plan.push_sums && sums_fit_ring(plan.stages, token_tiles, plan.cluster);
  plan.weights_read_once = weights_stream_hinted();
  // LOWBIT_GEMV_TMA_EARLY_RELEASE=0 or 1 forces the release's place (for measurements).
  const char* release = std::getenv("LOWBIT_GEMV_TMA_EARLY_RELEASE");
  const bool forced_release =
      release != nullptr && (release[0] == '0' || release[0] == '1') && release[1] == 0;
  plan.early_release = forced_release ? release[0] == '1'
                                      : releases_at_start(n, k, token_tiles, dependent_ring);
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
  if (switched_off("LOWBIT_GEMV_TMA_STAGED_SCALES")) return plan;
  const std::int64_t steps = (k + kStepK - 1) / kStepK;
  const std::int64_t mine = (steps + plan.cluster - 1) / plan.cluster;
  const std::int64_t bytes = mine * 4 * (8 * token_tiles + 1);
  if (mine < 1 || bytes > static_cast<std::int64_t>(kMaxStagedScaleBytes)) return plan;
  const std::int64_t row_blocks = (n + kRows - 1) / kRows;
  const std::int64_t blocks = row_blocks * plan.cluster;
  const auto resident = [&](int scale_steps, bool push_sums) {
    return push_sums ? pushed_sums_fit(plan.stages, token_tiles, scale_steps, plan.cluster,
                                       row_blocks, sm_count)
                     : blocks <= std::int64_t{blocks_per_sm(plan.stages, token_tiles,
                                                            scale_steps)} *
                                     sm_count;
  };
  const int all = static_cast<int>(mine);
  if (resident(all, plan.push_sums) || !resident(0, plan.push_sums)) {
    plan.scale_steps = all;
  } else if (plan.push_sums && resident(all, false)) {
    // Both do not fit: staged scales are worth more (9-14% on o_proj; pushed sums ~0.5 us).
    plan.scale_steps = all;
    plan.push_sums = false;
    plan.push_into_ring = sums_fit_ring(plan.stages, token_tiles, plan.cluster);
  }
  return plan;
}

}  // namespace lowbit::cuda::gemv_tma
