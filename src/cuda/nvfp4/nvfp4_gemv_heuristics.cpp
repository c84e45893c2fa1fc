// Configuration choice of the NVFP4 GEMVs: the kernels are bound by instruction issue and by
// the loads each warp keeps in flight, so the choice trades window depth (registers) against
// warps per SM. One warp per 16-row tile keeps the most independent items; when the tiles of a
// launch are too few to give every SM several warps, 2 or 4 warps split each tile's K instead
// (docs/perf/nvfp4_gemv.md).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nvfp4_gemv_config.h"
#include "../../common/config_print.h"

namespace lowbit::cuda {

namespace {

bool parse_override(Nvfp4GemvConfig& config) {
  const char* text = std::getenv("LOWBIT_NVFP4_GEMV");
  if (text == nullptr) return false;
  int warps = 0, unroll = 0;
  char suffix[4] = {};
  const int fields = std::sscanf(text, "%d,%d%3s", &warps, &unroll, suffix);
  const std::string kind = fields == 3 ? suffix : "";
  const bool wide = kind == "bsw";
  const bool staged = kind == "bs" || wide;
  if (fields < 2 || !(kind.empty() || kind == "b" || staged) || (!kind.empty() && warps != 1) ||
      (staged && unroll != 8) || !(warps == 1 || warps == 2 || warps == 4) ||
      !(unroll == 4 || unroll == 8) || (warps > 1 && unroll == 8)) {
    std::fprintf(stderr,
                 "[lowbit] ignoring LOWBIT_NVFP4_GEMV=%s "
                 "(want 1,4 1,8 2,4 4,4 1,4b 1,8b 1,8bs or 1,8bsw)\n",
                 text);
    return false;
  }
  config = {warps, unroll, !kind.empty(), staged, wide};
  return true;
}

}  // namespace

Nvfp4GemvConfig choose_nvfp4_gemv_config(std::int64_t rows, std::int64_t cols, std::int64_t slots,
                                         std::int64_t pairs, std::int64_t tokens, bool sparse) {
  Nvfp4GemvConfig config;
  if (!parse_override(config)) {
    // Slots with no token cost one early exit, so count at most one slot per routed row.
    const std::int64_t tiles = (rows / 16) * std::min(slots, pairs);
    const std::int64_t chunks = cols / 64;
    // Measured on H200 with every configuration over the 18 MoE rows of `lowbit bench nvfp4`
    // (docs/perf/nvfp4_gemv.md): below ~16 warps per SM, split K so that more warps stream;
    // a window of 8 chunks (16 warps per SM) for a few tokens' long rows; otherwise a window
    // of 4 (24 warps per SM), better for short K and for launches over many experts.
    // Several tokens on every slot (a batch whose tokens share experts; a routing that lists
    // idle slots counts them too, and takes the rules after these): each weight feeds several
    // token columns, so the activation reads grow while the weight stream does not. NVIDIA
    // H200, fifty-third session, `lowbit bench nvfp4`'s rows with every token on the same top-k
    // experts (docs/perf/nvfp4_gemv.md, "Where compute starts to bind"), against the rules
    // below, on a stream / under graph + PDL:
    // - 2:4 with the rows staged for ldmatrix in one wide block per SM (up to 160 KB): the
    //   unstaged kernels' eight 4-byte activation loads a chunk, one per token row, bound them.
    //   DeepSeek-V3 gate_up at 8 tokens 80.5 -> 33.3 / 97.4 -> 30.9 us, down at 16 87.1 -> 32.8
    //   / 85.8 -> 30.3; Qwen3-30B-A3B gate_up at 16 21.9 -> 13.3 / 20.0 -> 11.8.
    // - Dense at up to 8 tokens (one activation tile, one pass): balanced. DeepSeek-V3 gate_up
    //   at 8 tokens 43.8 -> 39.0 / 46.9 -> 37.6 us, down 27.8 -> 22.6 / 28.4 -> 20.5.
    // - Beyond (two tiles: the balanced kernels would stream the weights once per 8 tokens), and
    //   2:4 whose rows do not fit: the window of 8 per item. DeepSeek-V3 gate_up dense at 16
    //   tokens 61.4 -> 55.7 / 68.5 -> 53.5 us, 2:4 150.5 -> 149.0 / 166.1 -> 147.7.
    const bool shared_experts = pairs >= 4 * std::max<std::int64_t>(slots, 1);
    if (shared_experts && sparse && chunks % 8 == 0 && staged_x_fits(tokens, cols, true)) {
      config = {1, 8, true, true, true};
    } else if (shared_experts && !sparse && tokens <= 8 && tiles >= 132 * 8 && chunks % 8 == 0) {
      config = {1, 8, true};
    } else if (shared_experts && tiles >= 132 * 8 && chunks >= 8) {
      config = {1, 8};
    } else if (pairs <= 32 && slots <= pairs && tiles > 132 * 4 && tiles <= 132 * 5 &&
        chunks % 16 == 0) {
      // At most one tile per block of the balanced window-of-4 kernel (5 blocks per SM): each
      // tile's K split evenly over its block's 4 warps, 20 warps per SM where (2, 4) runs 8-10
      // warps of twice the rounds. NVIDIA H200, forty-fourth session, Qwen3-Next-80B-A3B gate_up
      // at M = 1 (640 tiles) against (2, 4), on a stream / under graph + PDL: dense -8.8 /
      // -9.3%, 2:4 -4.3 / -7.8%. With 768 tiles (Qwen3-30B-A3B gate_up) some blocks get two
      // tiles, and it was 7% slower than (2, 4).
      config = {1, 4, true};
    } else if (tiles < 132 * 4 && chunks >= 16) {
      config = {4, 4};
    } else if (tiles < 132 * 8 && chunks >= 16) {
      config = {2, 4};
    } else if (pairs <= 32 && cols <= 2048 && chunks % 8 == 0 &&
               (!sparse || staged_x_fits(tokens, cols))) {
      // A few tokens over short rows (MoE down projections): the balanced kernel, the 2:4 one
      // with its activations staged in shared memory. NVIDIA H200, forty-third session, against
      // main on a stream / under graph + PDL: DeepSeek-V3 down M = 1 2:4 -2.5 / -2.2% (dense was
      // balanced already), M = 4 dense -3.2 / -3.4% and 2:4 -8.3 / -10.6%; Qwen3-Next down
      // M = 1 dense -7 / -28%, 2:4 -9 / -20%. A row of x per routed pair (a MoE layer's down
      // input) is staged too: a block stages the rows its slots read (staged_rows). NVIDIA H200,
      // fifty-first session, DeepSeek-V3 down at M = 1 on 8 such rows, 2:4 against unstaged:
      // 18.84 -> 17.84 us on a stream, 17.69 -> 15.58 under graph + PDL.
      config = {1, 8, true, sparse};
    } else if (pairs <= 32 && slots <= pairs && cols <= 2048 && chunks % 8 == 4 && chunks >= 12) {
      // The same with K a multiple of 256 but not of 512 (Qwen3-30B-A3B down, K = 768): not
      // whole rounds of 8, so the balanced kernel with the window of 4 (not with idle slots,
      // where it would fall back to the per-item window of 4, 3% slower than 8 there). NVIDIA
      // H200, forty-fourth session, against the per-item kernels, on a stream / under graph +
      // PDL: M = 1 dense -4.5 / -8.7%, 2:4 -0.4 / -3.8%; M = 4 dense -10.8 / -16%, 2:4 -7.4 /
      // -16%.
      config = {1, 4, true};
    } else if (shared_experts && tiles >= 132 * 7 && chunks >= 12) {
      // More than 32 routed rows on 7-8 tiles per SM, K not whole rounds of 8 (Qwen3-30B-A3B
      // down at 8-16 tokens a slot, 1024 tiles): the window of 8 per item. NVIDIA H200,
      // fifty-third session, every configuration forced, against the window of 4 per item it
      // ran before, on a stream / under graph + PDL: dense 0.95-0.99x / 0.87-0.88x the time,
      // 2:4 0.96-1.01x / 0.80-0.83x (before its 16-byte activation loads). At 4 tokens the
      // balanced window of 4 above stays faster; with 768 tiles (Qwen3-30B-A3B gate_up) the
      // window of 8 was 1.27-1.95x slower than the K split over 2 warps.
      config = {1, 8};
    } else if (sparse && pairs <= 8 && chunks >= 64 && chunks % 8 == 0 && tiles >= 132 * 8 &&
               staged_x_fits(tokens, cols)) {
      // 2:4 over long rows for one token (MoE gate_up projections at decode): the staged
      // balanced kernel as one block of 24 warps per SM, which splits each SM's items evenly
      // over all its warps. NVIDIA H200, forty-sixth session, DeepSeek-V3 gate_up at M = 1
      // against the per-item (1, 8) kernel: -2.7% on a stream, -3% under graph + PDL (2:4 /
      // dense 1.16-1.17 -> 1.20-1.21x). On K = 2048 (DeepSeek down) it was 8% slower than the
      // 4-warp blocks.
      config = {1, 8, true, true, true};
    } else if (pairs <= 16 && chunks >= 12) {
      // Balanced when whole tiles would give some warps two and others one (DeepSeek down at
      // M = 1: 3584 tiles on 2112 warps, 8-10% faster; at most one tile per warp: no gain).
      // From 12 chunks, not 24: per item, the window of 8 beat the window of 4 on Qwen3-30B-A3B
      // down at M = 1 (K = 768; forty-third session, dense -2.2 / -13.4% and 2:4 -4.6 / -16.9% on
      // a stream / under graph + PDL), which the rule above now runs balanced.
      config = {1, 8, tiles > 132 * 16 && tiles < 132 * 16 * 2};
    } else {
      config = {1, 4};
    }
  }
  detail::print_config_once("nvfp4_%sgemv rows=%lld cols=%lld slots=%lld pairs=%lld tokens=%lld: "
                            "warps_per_tile=%d unroll=%d%s%s%s",
                            sparse ? "sparse24_" : "", static_cast<long long>(rows),
                            static_cast<long long>(cols), static_cast<long long>(slots),
                            static_cast<long long>(pairs), static_cast<long long>(tokens),
                            config.warps_per_tile, config.unroll,
                            config.balanced ? " balanced" : "",
                            config.stage_x ? " staged_x" : "", config.wide ? " wide" : "");
  return config;
}

unsigned nvfp4_balanced_grid(std::int64_t items, int per_sm, int sms) {
  const std::int64_t blocks = std::int64_t{per_sm} * sms;
  const std::int64_t most = std::max<std::int64_t>((items + blocks - 1) / blocks, 1);
  return static_cast<unsigned>(std::max<std::int64_t>((items + most - 1) / most, 1));
}

bool nvfp4_staged_pairs_pay(std::int64_t rows, std::int64_t cols, std::int64_t slots,
                            std::int64_t pairs, bool dependent_launch, int sms) {
  const std::int64_t rounds = (rows / 16) * std::min(slots, pairs) * (cols / 64 / 8);
  return dependent_launch &&
         rounds >= std::int64_t{kStagedPairMinRounds} * kPairBlocksPerSm * kStagedPairWarps * sms;
}

}  // namespace lowbit::cuda
