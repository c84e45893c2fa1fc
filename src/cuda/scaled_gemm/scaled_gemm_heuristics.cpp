// Configuration choice of the scaled GEMM. Up to M = 64 tokens the weight stream is the floor.
// Where every 64-channel tile's pair of token tiles has SMs of its own, fp8 at 9-64 tokens takes
// swapped 64 x 16 / 64 x 32 tiles whose token tiles share the weights by multicast. Otherwise
// the GEMVs read the weight once with no tile padding (the mma.sync split-K one on small weights
// up to 16 tokens, int8 32; the TMA-fed wgmma one up to 32 and on long K); at 33-64 tokens a
// 64 x 32 tile whose cluster shares the token tile where the weight has at most one 32-channel
// tile per SM, else the swapped stream-K tile. Up to M = 128 the 64-row pingpong tile keeps
// twice as many CTAs busy as the 128-row one (64 x 64 where 64 x 128 would leave half the SMs
// idle); above that the 128 x 128 pingpong tile (vLLM's default shape on Hopper).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "scaled_gemm_config.h"
#include "scaled_gemv_launch.h"

namespace lowbit::cuda {

const char* scaled_gemm_tile_name(ScaledGemmTile tile) {
  switch (tile) {
    case ScaledGemmTile::kLarge128x128: return "large128x128";
    case ScaledGemmTile::kMedium64x128: return "medium64x128";
    case ScaledGemmTile::kSmall64x64: return "small64x64";
    case ScaledGemmTile::kNarrow64x32: return "narrow64x32";
    case ScaledGemmTile::kSwap64x16: return "swap64x16";
    case ScaledGemmTile::kSwap64x32: return "swap64x32";
    case ScaledGemmTile::kDecodeSwapAB: return "decode_swap_ab";
    case ScaledGemmTile::kGemvSplitK: return "gemv_split_k";
    case ScaledGemmTile::kGemvWgmma: return "gemv_wgmma";
    case ScaledGemmTile::kGemvTma: return "gemv_tma";
  }
  return "?";
}

namespace {

bool parse_override(ScaledGemmTile& tile) {
  const char* text = std::getenv("LOWBIT_SCALED_GEMM");
  if (text == nullptr) return false;
  for (ScaledGemmTile candidate : kAllScaledGemmTiles) {
    if (std::strcmp(text, scaled_gemm_tile_name(candidate)) == 0) {
      tile = candidate;
      return true;
    }
  }
  std::fprintf(stderr,
               "[lowbit] ignoring LOWBIT_SCALED_GEMM=%s (want large128x128, medium64x128, "
               "small64x64, narrow64x32, swap64x16, swap64x32, decode_swap_ab, gemv_split_k, "
               "gemv_wgmma or gemv_tma)\n",
               text);
  return false;
}

}  // namespace

ScaledGemmConfig choose_scaled_gemm_config(std::int64_t m, std::int64_t n, std::int64_t k,
                                           DType ab_dtype, int sm_count) {
  ScaledGemmConfig config;
  // The GEMVs hold at most 32 tokens (gemv_tma 64); a forced GEMV falls back to the heuristic.
  const bool overridden = parse_override(config.tile);
  const bool gemv_tile = is_gemv(config.tile);
  const std::int64_t gemv_tokens =
      config.tile == ScaledGemmTile::kGemvTma ? kScaledGemvTmaMaxTokens : kScaledGemvMaxTokens;
  const bool forced = overridden && (!gemv_tile || m <= gemv_tokens);
  if (!forced) {
    // Measured on an H200 (docs/perf/scaled_gemm.md): the swapped stream-K tile wins for
    // M <= 64 once the weight is larger than 32 MB; below that its fixed costs lose to the
    // persistent 64-row pingpong tile, which also wins up to M = 128. Above that the 128 x 128
    // pingpong tile wins; a 128 x 256 cooperative tile measured 3-23% slower on every Llama-3 /
    // DeepSeek-V3 shape at M >= 4096 and was dropped.
    // The GEMVs (docs/perf/scaled_gemm.md, H200): the TMA-fed wgmma GEMV streams the 59-132 MB
    // weights fastest at M <= 32 in both dtypes (70-85% of copy at M = 1), and at M = 64 for
    // K > 4096 (2-6% ahead of the swapped tile; 3% behind it at K = 4096). On a 16 MB weight its
    // fixed costs lose to the mma.sync split-K GEMV up to M = 16 (int8: 32, where medium64x128
    // measured 13.1-13.3 us against 11.5-11.8 at 4096 x 4096); it still wins fp8 at M = 32.
    const bool small_weight = n * k <= (std::int64_t{32} << 20);
    const bool int8 = ab_dtype == DType::kInt8;
    // fp8 at 9-64 tokens (one or two token tiles of 16, then of 32) where every 64-channel
    // tile's cluster pair has SMs of its own: the swapped tiles stream each channel tile's
    // whole K, and its two token tiles share it by multicast (cuBLASLt's shape there). H200, µs
    // against the previous choice: 4096 x 4096 9.26 / 9.34 / 9.17 against 10.09 / 10.5 / 9.54
    // at M = 16 / 32 / 64, 4096 x 14336 20.34 / 20.41 / 20.50 against 21.10 / 22.70 / 21.80; no
    // gain at M = 1 (9.33 against 9.40), and 14336 x 4096 (448 tiles at M = 32) lost. Wider
    // weights and int8 are not measured with them.
    const bool pairs_fit = 2 * ((n + 63) / 64) <= sm_count;
    if (!int8 && pairs_fit && m >= 9 && m <= 64) {
      config.tile = m <= 32 ? ScaledGemmTile::kSwap64x16 : ScaledGemmTile::kSwap64x32;
    } else if (small_weight && (m <= 16 || (int8 && m <= kScaledGemvMaxTokens))) {
      config.tile = ScaledGemmTile::kGemvSplitK;
    } else if (m <= 32) {
      config.tile = ScaledGemmTile::kGemvTma;
    } else if (m <= 64 && (n + 31) / 32 <= sm_count) {
      // int8 (fp8 takes swap64x32 there): one token tile and at most one 32-channel tile per
      // SM: each CTA streams its channels' whole K, and the two CTAs of a cluster share the
      // token tile by multicast. fp8 at M = 64: 4096 x 4096 ran 9.7 us against 11.6-11.8 for
      // gemv_tma and small64x64, 4096 x 14336 22.4 against 26.2 for gemv_tma (H200); int8
      // 4096 x 4096 10.1 against 12.5 for small64x64.
      config.tile = ScaledGemmTile::kNarrow64x32;
    } else if (m <= 64 && !small_weight && k > 4096) {
      config.tile = ScaledGemmTile::kGemvTma;
    } else if (m <= 64 && n * k > (std::int64_t{32} << 20)) {
      config.tile = ScaledGemmTile::kDecodeSwapAB;
    } else if (m <= 128) {
      // Where the 64 x 128 tile would leave more than half the SMs idle (4096 channels: 64
      // tiles at 65-128 tokens), the 64 x 64 tile's twice as many CTAs stream the weight
      // faster: at M = 128, 4096 x 4096 ran 9.8 us against 11.6 and 4096 x 14336 21.9 against
      // 27.9 (H200).
      const std::int64_t medium_tiles = ((n + 127) / 128) * ((m + 63) / 64);
      config.tile = 2 * medium_tiles < sm_count ? ScaledGemmTile::kSmall64x64
                                                : ScaledGemmTile::kMedium64x128;
    } else {
      config.tile = ScaledGemmTile::kLarge128x128;
    }
  }
  static const bool print = std::getenv("LOWBIT_PRINT_CONFIG") != nullptr;
  if (print) {
    std::fprintf(stderr, "[lowbit] scaled_mm %s m=%lld n=%lld k=%lld: %s\n", dtype_name(ab_dtype),
                 static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
                 scaled_gemm_tile_name(config.tile));
  }
  return config;
}

}  // namespace lowbit::cuda
