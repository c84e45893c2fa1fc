// Launch configuration of the NVFP4 GEMV kernels, chosen by nvfp4_gemv_heuristics.cpp.
#pragma once

#include <cstdint>

namespace lowbit::cuda {

inline constexpr int kGemvWarpsPerBlock = 4;

struct Nvfp4GemvConfig {
  // Built: (1, 8), (1, 4), (2, 4), (4, 4), and balanced (1, 8) and (1, 4).
  int warps_per_tile = 1;  // warps splitting one 16-row tile's K chunks (block: 4 warps)
  int unroll = 8;          // K chunks one warp keeps in flight (rolling window)
  // One warp per tile only: split the launch's rounds evenly over the resident warps (units of
  // one tile, 8 tokens; units split between a block's warps) instead of whole items per warp.
  bool balanced = false;
  // Balanced, window of 8, 2:4: the token rows staged in shared memory for ldmatrix
  // (sm90_nvfp4_gemv_staged_x.cuh) when they fit; ignored otherwise.
  bool stage_x = false;
  // Balanced, staged: one block of kWideBalancedWarps warps per SM instead of 4-warp blocks
  // (sm90_nvfp4_gemv_balanced.cuh); ignored where the rows are not staged.
  bool wide = false;
};

// Activation rows the balanced 2:4 kernel stages in shared memory per block, at most (5 blocks
// per SM on a stream), padded by 16 bytes a row against bank conflicts: 36 KB holds a DeepSeek-V3
// down projection's 8 rows of a row per pair at M = 1 (of which a block stages the ones its slots
// read: staged_rows).
inline constexpr std::int64_t kStagedXBytes = 36 * 1024;
// The same for the one wide block per SM (Config::wide): the 227 KB an sm_90 block may opt in to,
// less its static shared memory (27 KB) and a margin. 160 KB holds 8 tokens of DeepSeek-V3
// gate_up's K = 7168 (115 KB) and 16 of its down's K = 2048 (66 KB).
inline constexpr std::int64_t kWideStagedXBytes = 160 * 1024;
constexpr std::int64_t staged_x_row_bytes(std::int64_t cols) { return cols * 2 + 16; }
constexpr bool staged_x_fits(std::int64_t tokens, std::int64_t cols, bool wide = false) {
  return tokens > 0 && tokens * staged_x_row_bytes(cols) <= (wide ? kWideStagedXBytes : kStagedXBytes);
}

// Block shapes of the balanced launches beyond 4-warp blocks (forty-ninth session,
// docs/perf/nvfp4_gemv.md, "Fewer, wider blocks on as many as the most items need"): 4-warp
// blocks get whole items, and the block that arrives last on an SM runs its rounds ~15% slower
// than the first (the schedulers favour older warps), so a last-arriving block with one item
// more ends the launch. A wider block splits the SM's items by rounds among warps of one age.
// - The dense window of 8 (121 registers): 2 blocks of 8 warps per SM.
// - The staged 2:4 kernel under PDL on long launches (nvfp4_staged_pairs_pay): 2 blocks of 12
//   warps per SM. Short ones (Qwen3-Next down at M = 1: under one round a warp) stay on 4-warp
//   blocks, 14-22% faster there; on a stream 5 blocks of 4 warps stay faster (DeepSeek-V3 down at
//   M = 1: 17.9 against 18.0-18.2 us).
inline constexpr int kDensePairWarps = 8;
inline constexpr int kStagedPairWarps = 12;
inline constexpr int kPairBlocksPerSm = 2;
inline constexpr int kStagedPairMinRounds = 2;  // per warp

// The grid of a balanced launch of `per_sm` blocks on each of `sms` SMs: as few blocks as give the
// same most items per block as per_sm * sms blocks would, so that every block has that many
// (DeepSeek-V3 down at M = 1: 3584 items on 256 blocks of 14, not 264 blocks of 13 or 14, which
// left 20 SMs an item more than the others while 4 SMs now idle).
unsigned nvfp4_balanced_grid(std::int64_t items, int per_sm, int sms);

// Whether the staged 2:4 launch takes kPairBlocksPerSm blocks of kStagedPairWarps per SM: under
// programmatic dependent launch, with at least kStagedPairMinRounds rounds (8 chunks of a 16-row
// tile) a warp. `slots` and `pairs` as for choose_nvfp4_gemv_config.
bool nvfp4_staged_pairs_pay(std::int64_t rows, std::int64_t cols, std::int64_t slots,
                            std::int64_t pairs, bool dependent_launch, int sms);

// Shape-based choice; LOWBIT_NVFP4_GEMV=<warps_per_tile>,<unroll>[b[s[w]]] (b: balanced, s: staged
// activations, w: one wide block per SM) overrides it and LOWBIT_PRINT_CONFIG=1 prints it.
// `pairs`: routed (token, expert) rows of the output, known on the host, unlike how many slots
// are active; `tokens`: rows of x.
Nvfp4GemvConfig choose_nvfp4_gemv_config(std::int64_t rows, std::int64_t cols, std::int64_t slots,
                                         std::int64_t pairs, std::int64_t tokens, bool sparse);

}  // namespace lowbit::cuda
