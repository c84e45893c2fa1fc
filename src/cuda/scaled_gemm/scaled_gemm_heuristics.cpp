// Configuration choice of the scaled GEMM. Up to M = 64 tokens the weight stream is the floor,
// and the swapped tiles (weights as CUTLASS's A) stream it where their channel width makes
// about one tile per SM: where every 64-channel tile's pair of token tiles has SMs of its own,
// 9-64 tokens (int8 17-64) take 64 x 16 / 64 x 32 tiles whose token tiles share the weights by
// multicast; at 9-32 tokens (int8 17-32) weights over 32 MiB take 64 x 16 (one wave of >= 3/4
// of the SMs) or 128 x 32 (waves >= 60% full), smaller ones 128 x 32 (at 9-16 tokens where it
// has >= 48 channel tiles, not for fp8 under PDL); at 33-64 tokens 64 x 64 (192 x 64 where
// long K needs 192 channels for one wave), their channel-tile pairs sharing the token tile.
// Otherwise the GEMVs read the weight once with no tile padding (the mma.sync split-K one for
// int8 on small weights with K <= 4096 up to 8 tokens, 16 where the pairs fit or K <= 2048;
// else the TMA-fed wgmma one). Up to M = 128 the 64-row pingpong tile keeps twice as many CTAs
// busy as the 128-row one (64 x 64 where 64 x 128 would leave half the SMs idle), or the
// cooperative 128 x 192 tile where it alone makes one wave; at 129-192 tokens the swapped
// tiles that hold the tokens in wgmma's N (one 192-token tile, or two of 80 / three of 64 on
// narrow weights) where their tiles fill the SMs; else, up to 1024 tokens, the tile of fewest
// estimated waves x tile area; above that the 128 x 128 pingpong tile (vLLM's default shape on
// Hopper).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "scaled_gemm_config.h"
#include "scaled_gemv_launch.h"
#include "../../common/config_print.h"

namespace lowbit::cuda {

const char* scaled_gemm_tile_name(ScaledGemmTile tile) {
  switch (tile) {
    case ScaledGemmTile::kLarge128x128: return "large128x128";
    case ScaledGemmTile::kMedium64x128: return "medium64x128";
    case ScaledGemmTile::kSmall64x64: return "small64x64";
    case ScaledGemmTile::kSwap64x16: return "swap64x16";
    case ScaledGemmTile::kSwap64x32: return "swap64x32";
    case ScaledGemmTile::kSwap64x64: return "swap64x64";
    case ScaledGemmTile::kSwap128x32: return "swap128x32";
    case ScaledGemmTile::kSwap192x64: return "swap192x64";
    case ScaledGemmTile::kCoop128x192: return "coop128x192";
    case ScaledGemmTile::kSwap64x80: return "swap64x80";
    case ScaledGemmTile::kSwap128x192: return "swap128x192";
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
               "small64x64, swap64x16, swap64x32, swap64x64, swap128x32, swap192x64, "
               "coop128x192, swap64x80, swap128x192, gemv_split_k, gemv_wgmma or gemv_tma)\n",
               text);
  return false;
}

std::int64_t tiles(std::int64_t extent, std::int64_t tile) { return (extent + tile - 1) / tile; }

// The share of the SM slots that `count` tiles, one per CTA, fill over their waves.
double wave_use(std::int64_t count, int sm_count) {
  return static_cast<double>(count) / static_cast<double>(tiles(count, sm_count) * sm_count);
}

// 129-1024 tokens make a few waves of tiles, the last often mostly empty. Each token-tile
// configuration is costed as its waves x its tile's area over its measured efficiency (the time
// per unit of tile area where every wave is full: H200, fp8, 18432 x 7168 at M = 1024, 214 /
// 225 / 255 us for the three tiles below), a 2-CTA cluster padding its tiles to pairs; the
// 128 x 128 tile gives way where another is estimated >= 10% faster. Measured (H200, fp8, us,
// against the 128 x 128 tile): 10240 x 8192 at M = 192 / 256 coop128x192 43.8 / 41.3-41.9
// against 57.4 / 51.8-53.4; 4096 x 14336 medium64x128 39.3 / 29.6 against 43.2 / 42.9; 4096 x
// 4096 15.0 / 12.0 against 16.9 / 16.3. On the other 41 of the 48 (weight, M) rows it was
// fitted on it kept the 128 x 128 tile, within 11% of the best there; on 40 rows it was not
// fitted on, 1.17x faster in total and no row below 0.99x (docs/perf/scaled_gemm.md,
// twenty-sixth session).
struct TokenTile {
  ScaledGemmTile tile;
  std::int64_t rows, channels;  // tokens x channels
  bool cluster_along_channels;
  double efficiency;
};

double estimated_cost(const TokenTile& t, std::int64_t m, std::int64_t n, int sm_count) {
  std::int64_t token_tiles = tiles(m, t.rows), channel_tiles = tiles(n, t.channels);
  if (t.cluster_along_channels) {
    channel_tiles = tiles(channel_tiles, 2) * 2;
  } else {
    token_tiles = tiles(token_tiles, 2) * 2;
  }
  const std::int64_t waves = tiles(token_tiles * channel_tiles, sm_count);
  return static_cast<double>(waves * t.rows * t.channels) / t.efficiency;
}

ScaledGemmTile medium_m_tile(std::int64_t m, std::int64_t n, int sm_count) {
  constexpr TokenTile kLarge{ScaledGemmTile::kLarge128x128, 128, 128, false, 1.0};
  constexpr TokenTile kOthers[] = {{ScaledGemmTile::kCoop128x192, 128, 192, true, 0.95},
                                   {ScaledGemmTile::kMedium64x128, 64, 128, false, 0.84}};
  const TokenTile* best = &kLarge;
  double best_cost = estimated_cost(kLarge, m, n, sm_count) / 1.1;
  for (const TokenTile& t : kOthers) {
    const double cost = estimated_cost(t, m, n, sm_count);
    if (cost < best_cost) {
      best = &t;
      best_cost = cost;
    }
  }
  return best->tile;
}

// 129-192 tokens: the 128-token tiles pad M to 256, and where they make fewer tiles than the
// pingpong kernel's 2 per SM, a CTA's second warpgroup idles. The swapped tiles hold the tokens
// in wgmma's N instead (cuBLASLt's kernels there do the same). H200, fp8, µs at M = 136 / 160 /
// 192 against the previous choice:
// - where three 64-token tiles per 64-channel tile fit one wave (2112 channels), swap64x64:
//   2112 x 7168 17.4 / 16.9 / 15.3 against 19.5 / 18.9 / 17.3;
// - where two 80-token tiles do (4096 channels, up to 160 tokens), swap64x80: 4096 x 4096 13.9
//   / 13.9 against 18.1 / 16.6, 4096 x 14336 34.1 / 34.2 against 43.6 / 40.4;
// - one 192-token tile per 128 channels where the weight has >= 48 such tiles, up to 160
//   tokens, or more than half a wave of them, swap128x192: 28672 x 8192 88.3 / 85.7 / 87.2
//   against 155.3 / 137.9 / 125.0, 14336 x 4096 27.7 / 25.8 / 24.8 against 41.1 / 36.0 / 31.6,
//   7168 x 18432 73.0 / 73.7 against 85.1 / 76.9 (at 192 tokens it lost, 76.8 against 65.8:
//   56 tiles are under half a wave).
// Returns false where the wave-cost rule (medium_m_tile) keeps the choice.
bool wide_swap_tile(std::int64_t m, std::int64_t n, int sm_count, ScaledGemmTile& tile) {
  if (m > 192) return false;
  const std::int64_t channel_pairs = tiles(tiles(n, 64), 2) * 2;  // 2-CTA clusters
  const std::int64_t wide_tiles = tiles(n, 128);
  if (3 * channel_pairs <= sm_count) {
    tile = ScaledGemmTile::kSwap64x64;
  } else if (m <= 160 && 2 * tiles(n, 64) <= sm_count) {
    tile = ScaledGemmTile::kSwap64x80;
  } else if (wide_tiles >= 48 && (m <= 160 || 2 * wide_tiles > sm_count)) {
    tile = ScaledGemmTile::kSwap128x192;
  } else {
    return false;
  }
  return true;
}

}  // namespace

ScaledGemmConfig choose_scaled_gemm_config(std::int64_t m, std::int64_t n, std::int64_t k,
                                           DType ab_dtype, int sm_count, bool programmatic) {
  ScaledGemmConfig config;
  // The GEMVs hold at most 32 tokens (gemv_tma 64); a forced GEMV falls back to the heuristic.
  const bool overridden = parse_override(config.tile);
  const bool gemv_tile = is_gemv(config.tile);
  const std::int64_t gemv_tokens =
      config.tile == ScaledGemmTile::kGemvTma ? kScaledGemvTmaMaxTokens : kScaledGemvMaxTokens;
  const bool forced = overridden && (!gemv_tile || m <= gemv_tokens);
  if (!forced) {
    // Measured on an H200 (docs/perf/scaled_gemm.md, thirtieth session, "Small weights").
    // The GEMVs: for fp8 the TMA-fed wgmma GEMV beat the mma.sync split-K GEMV at M = 1-8 on
    // all nine weights of 4-26 MiB measured, by 1.02-1.76x (6144 x 4096: 11.0 against 19.3 us);
    // an earlier rule gave the split-K GEMV M <= 16 on weights up to 32 MiB from 4096 x 4096
    // alone. int8's split-K GEMV is the faster one up to 16 tokens on weights up to 32 MiB where
    // K <= 4096 (4096 x 4096: 8.0 against 9.1 us); at K = 5120 and 7168 it lost (5120 x 5120:
    // 15.6 against 11.4), and from 17 tokens the swapped tiles beat it (below), at 9-16 tokens
    // too where the pairs do not fit and K >= 3072 (below).
    const bool small_weight = n * k <= (std::int64_t{32} << 20);
    const bool int8 = ab_dtype == DType::kInt8;
    const bool fp8_under_pdl = programmatic && !int8;
    const bool int8_split_k = int8 && small_weight && k <= 4096;
    // Swapped tiles where every 64-channel tile's pair of token tiles has SMs of its own (the
    // 4096-wide weights): each CTA streams its channel tile's whole K and the two token tiles
    // share it by multicast (cuBLASLt's shape there). H200, µs against the previous choice:
    // 4096 x 4096 9.26 / 9.34 / 9.17 against 10.09 / 10.5 / 9.54 at M = 16 / 32 / 64, 4096 x
    // 14336 20.34 / 20.41 / 20.50 against 21.10 / 22.70 / 21.80. int8 keeps its split-K GEMV up
    // to 16 tokens (9.2 against 9.9 at 4096 x 4096) and gains from 32 (4096 x 14336: 21.3
    // against 22.4; 4096 x 4096: 10.6 against 11.8).
    const bool pairs_fit = 2 * tiles(n, 64) <= sm_count;
    const std::int64_t first_swap_tokens = int8 ? 17 : 9;
    if (pairs_fit && m >= first_swap_tokens && m <= 64) {
      config.tile = m <= 32 ? ScaledGemmTile::kSwap64x16 : ScaledGemmTile::kSwap64x32;
    } else if (int8_split_k && m <= 16 && (m <= 8 || pairs_fit || k <= 2048)) {
      config.tile = ScaledGemmTile::kGemvSplitK;
    } else if (m <= 32 && m >= 9 && small_weight && !pairs_fit &&
               (m > 16 || (tiles(n, 128) >= 48 && !fp8_under_pdl))) {
      // 17-32 tokens on a small weight too wide for swap64x16's pairs: the 128 x 32 swapped
      // tile. H200, both dtypes, us at 24 / 32 tokens against the previous choice (gemv_tma for
      // fp8, split-K for int8 at K <= 4096): 6144 x 4096 fp8 11.78 / 11.68 against 12.41 /
      // 12.36, int8 12.20 / 11.92 against 13.66 / 14.13; 7168 x 2048 fp8 8.74 / 8.66 against
      // 9.57 / 9.50; 5120 x 5120 fp8 12.33 / 12.23 against 13.27 / 13.25.
      // 9-16 tokens where it has >= 48 channel tiles (thirty-first session, two H200s, the
      // slower one's µs at 12 / 16 tokens; this tile ran 7% faster on the other): fp8 6144 x
      // 4096 11.96 / 11.96 against gemv_tma's 12.22 / 12.13, 6144 x 3072 10.07 / 10.06 against
      // 10.65 / 10.56, 7168 x 2048 8.56 / 8.49 against 8.85 / 8.80, 8192 x 2048 9.15 / 9.01
      // against 9.31 / 9.26; int8 6144 x 4096 11.99 / 11.94 against the split-K GEMV's 12.66 /
      // 12.67, 6144 x 3072 10.17 / 10.32 against 11.54 / 11.62. The split-K GEMV keeps int8 at
      // K = 2048 (7168 x 2048 8.46 / 8.50 against 8.86 / 9.12). The 5120-wide weights (40
      // tiles) keep gemv_tma, 3-4% ahead on one machine and 4% behind on the other.
      // Not for fp8 under programmatic dependent launch, where gemv_tma requests its first
      // weight stages before the wait (thirty-second session, graph replay with PDL: 6144 x
      // 4096 at 16 tokens 7.96 us against this tile's 10.11).
      config.tile = ScaledGemmTile::kSwap128x32;
    } else if (m <= 32) {
      // 17-32 tokens on a weight over 32 MiB: swapped tiles of one channel tile per CTA, where
      // their waves keep the SMs busy (wave_use). 64 x 16 in one wave of >= 3/4 of the SMs:
      // 7168 x 18432 ran 38.8 / 39.6 / 39.2 µs against gemv_tma's 39.8 / 40.7 / 40.4 (three
      // runs); 5120-wide weights (80 tiles) lost, 5120 x 25600 50.4 against 40.6. Else 128 x 32
      // in waves >= 60% full (cuBLASLt's kernel on 14336 x 4096): 14336 x 4096 20.0 against 21.0,
      // 10240 x 8192 26.8 against 27.4, 28672 x 8192 (1.7 waves) 62.5 against 65.7; 18432 x
      // 7168 (144 tiles, 1.09 waves) lost, 42.4-44.2 against 39.0-40.3, and 40 tiles (5120 x
      // 25600) lost, 43.5 against 40.6. Else gemv_tma.
      // From 9 tokens for fp8 (thirty-first session, µs at 12 / 16 tokens): 7168 x 18432 on
      // swap64x16 37.84 / 37.63 against gemv_tma's 38.86 / 38.94, 14336 x 4096 on swap128x32
      // 19.29 / 19.54 against 19.54 / 19.44. int8 from 17 (14336 x 4096 lost 2% at 9-16).
      const bool wide = !small_weight && m >= first_swap_tokens;
      if (wide && tiles(n, 64) <= sm_count && 4 * tiles(n, 64) >= 3 * sm_count) {
        config.tile = ScaledGemmTile::kSwap64x16;
      } else if (wide && wave_use(tiles(n, 128), sm_count) >= 0.6) {
        config.tile = ScaledGemmTile::kSwap128x32;
      } else {
        config.tile = ScaledGemmTile::kGemvTma;
      }
    } else if (m <= 64) {
      // One token tile: 64-channel tiles in 2x1 clusters that share it. Weights over 32 MiB, H200,
      // µs, two runs: 7168 x 18432 38.2 / 39.8 against gemv_tma's 41.3 / 43.2, 14336 x 4096
      // 20.6 / 21.1 against the stream-K tile's 22.7 / 23.2 (int8 alike); over several waves too:
      // 28672 x 8192 67.0 against gemv_tma's 87.3, 25600 x 5120 41.4 against 53.3. Where the
      // 64-channel tiles would need more than one wave over long K but 192-channel ones make
      // one, those (18432 x 7168: 39.0 µs against 41.2-42.2 for the 64-channel tile and for
      // gemv_tma).
      // Small weights too (before, the 64 x 64 token tile, whose cluster along the tokens pads
      // one token tile to two CTAs). Thirty-second session, H200, fp8, µs at 40 / 64 tokens
      // against that tile: 6144 x 4096 12.61 / 11.76 against 15.95 / 16.19 (cuBLASLt 11.10 /
      // 11.22), 5120 x 5120 12.92 / 11.91 against 17.63 / 17.67, 7168 x 2048 9.00 / 8.61
      // against 11.00 / 11.16, 6144 x 3072 10.49 / 10.11 against 13.36 / 13.34, 8192 x 2048
      // 9.58 / 8.94 against 12.58 / 11.51; int8 alike. 18432 x 1536 (forced; it then kept the
      // 64 x 128 tile): 13.49 / 12.89 against 15.56 / 14.63.
      const bool one_wide_wave = tiles(n, 64) > sm_count && tiles(n, 192) <= sm_count;
      config.tile = one_wide_wave && k > 4096 ? ScaledGemmTile::kSwap192x64
                                              : ScaledGemmTile::kSwap64x64;
    } else if (m <= 128) {
      // Where the 64 x 128 tile would leave more than half the SMs idle (4096 channels: 64
      // tiles at 65-128 tokens), the 64 x 64 tile's twice as many CTAs stream the weight
      // faster: at M = 128, 4096 x 4096 ran 9.8 us against 11.6 and 4096 x 14336 21.9 against
      // 27.9 (H200).
      // Where 128-channel tiles overflow one wave and 192-channel ones make one (18432-24576
      // channels), the cooperative 128 x 192 tile: each SM streams one slice of the weight.
      // H200, fp8, us at M = 80 / 128 against the 64 x 128 tile: 18432 x 7168 43.98 / 41.96
      // against 50.02 / 45.94, 20480 x 5120 37.80 / 36.28 against 39.73 / 37.00, 22016 x 8192
      // 59.05 / 54.40 against 61.29 / 55.24, 24576 x 7168 53.99 / 53.35 against 60.58 / 52.45.
      // Outside the band it lost (28672 x 8192: 95.4 against 83.1 at M = 80).
      const std::int64_t medium_tiles = tiles(n, 128) * tiles(m, 64);
      if (m > 64 && tiles(n, 128) > sm_count && tiles(n, 192) <= sm_count) {
        config.tile = ScaledGemmTile::kCoop128x192;
      } else {
        config.tile = 2 * medium_tiles < sm_count ? ScaledGemmTile::kSmall64x64
                                                  : ScaledGemmTile::kMedium64x128;
      }
    } else if (m <= 1024) {
      if (!wide_swap_tile(m, n, sm_count, config.tile)) {
        config.tile = medium_m_tile(m, n, sm_count);
      }
    } else {
      config.tile = ScaledGemmTile::kLarge128x128;
    }
  }
  // The choice under PDL may differ, so it says which it is.
  detail::print_config_once("scaled_mm %s m=%lld n=%lld k=%lld%s: %s", dtype_name(ab_dtype),
                            static_cast<long long>(m), static_cast<long long>(n),
                            static_cast<long long>(k), programmatic ? " pdl" : "",
                            scaled_gemm_tile_name(config.tile));
  return config;
}

}  // namespace lowbit::cuda
