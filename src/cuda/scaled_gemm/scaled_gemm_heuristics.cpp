// Configuration choice of the scaled GEMM. Up to M = 64 tokens the weight stream is the floor.
// At 9-32 tokens the TMA-fed GEMV streams it (since its refill-first loop, thirty-seventh
// session), except: the 4096-wide weights, where every 64-channel tile's pair of token tiles
// has SMs of its own, take 64 x 16 tiles whose token tiles share the weights by multicast (fp8
// from 9 tokens on small weights on a stream, else from 17; int8 from 17); and fp8 under PDL
// takes 128 x 32 at 17-32 tokens on the small weights over 27 MiB (up to that size gemv_tma
// lets the next kernel launch at once), and where its waves are >= 60% full and K > 4096 (or,
// at 9-16 tokens, its tiles take two waves). At 33-64 tokens 64 x 64 (192 x 64 where
// 192 channels make one wave and 64 do not, on long K or at 33-47 tokens: 33-48 for fp8 under
// PDL), their channel-tile pairs sharing the token tile; 64 x 32 on the 4096-wide weights.
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
#include "../common/gemv_tma_plan.h"

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
    // 15.6 against 11.4), and from 17 tokens the swapped tile or gemv_tma beat it (below), at
    // 9-16 tokens too where the pairs do not fit and K >= 3072 (gemv_tma, below).
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
    // Thirty-seventh session, H200 (one process; forced configurations on a stream and under
    // graph + PDL, docs/perf/scaled_gemm.md, "gemv_tma at 9-32 tokens after refill-first"):
    // since its refill-first loop gemv_tma streams 9-32 tokens faster than the swapped tiles on
    // most weights. fp8 at 12 / 16 tokens on a 4096-wide weight over 32 MiB, µs: 4096 x 14336
    // 18.46 / 18.45 against swap64x16's 19.58 / 19.55 on a stream, 17.03 / 17.42 against 17.29 /
    // 17.42 under PDL; 4096 x 4096 under PDL 6.31 / 6.28 against 6.77 (on a stream it lost,
    // 9.19 / 9.08 against 8.91 / 8.86, and at 24-32 tokens under PDL, 7.68 against 6.76).
    const bool fp8_gemv_on_pairs = !int8 && m <= 16 && (!small_weight || programmatic);
    if (pairs_fit && m >= first_swap_tokens && m <= 64 && !fp8_gemv_on_pairs) {
      config.tile = m <= 32 ? ScaledGemmTile::kSwap64x16 : ScaledGemmTile::kSwap64x32;
    } else if (int8_split_k && m <= 16 && (m <= 8 || pairs_fit || k <= 2048)) {
      config.tile = ScaledGemmTile::kGemvSplitK;
    } else if (m <= 32) {
      // 9-32 tokens (int8 17-32 where the pairs fit): gemv_tma. Same session, µs at 12 / 16 / 24
      // / 32 tokens against the previous choice (swap128x32 on 14336 x 4096, 10240 x 8192,
      // 28672 x 8192 and the small weights with >= 48 channel tiles, swap64x16 on 7168 x 18432),
      // on a stream:
      // - fp8: 14336 x 4096 17.56 / 17.43 / 17.90 / 17.80 against 18.98 / 19.16 / 18.92 / 19.00;
      //   7168 x 18432 35.21 / 35.35 / 35.71 / 35.69 against 37.41 / 37.27 / 36.95 / 37.08;
      //   10240 x 8192 24.17 / 23.77 / 25.31 / 24.77 against 25.17 / 25.37 / 26.19 / 25.93;
      //   6144 x 4096 11.33 / 11.28 / 11.04 / 11.06 against 11.96 / 11.94 / 11.71 / 11.58;
      //   7168 x 2048 8.09 / 8.07 / 8.47 / 8.51 against 8.62 / 8.54 / 8.50 / 8.53; 28672 x 8192
      //   58.11 / 58.13 / 60.86 / 59.36 against 59.58 / 59.67 / 59.00 / 59.04 (lost at 24-32).
      // - int8 at 24 / 32: 14336 x 4096 18.03 / 17.93 against 19.41 / 19.40, 5120 x 5120 11.76 /
      //   11.76 against 12.46 / 12.43, 6144 x 4096 11.30 / 11.23 against 12.05 / 11.75.
      // Under graph + PDL fp8 gained as much on 14336 x 4096 (15.59 / 15.51 / 16.65 / 16.47
      // against 17.22 / 17.46 / 17.37 / 17.25) and 7168 x 18432 (33.70 / 34.34 / 34.13 / 34.15
      // against 36.40 / 36.49 / 34.65 / 34.74), but lost where the swapped tiles stay:
      // - small weights at 17-32 tokens: 6144 x 4096 9.62 / 9.78 against swap128x32's 9.21 /
      //   9.26, 5120 x 5120 10.37 / 10.39 against 10.04 / 9.93;
      // - K > 4096 where swap128x32's waves are >= 60% full: 10240 x 8192 26.54 / 26.57 / 23.49
      //   / 22.97 against 23.14 / 23.22 / 23.69 / 23.48, 28672 x 8192 60.70 / 61.00 / 58.84 /
      //   59.02 against 60.21 / 60.44 / 57.58 / 57.89;
      // - at 9-16 tokens where the 128 x 32 tiles take two waves (28672 x 4096, H200 and H100:
      //   33.08-33.57 against 32.41-32.54, 45.09-45.17 against 43.31-43.44; it won at 24-32).
      // On an H100 (same A/B) the rule gained as much on the weights over 32 MiB, but on a
      // stream lost 2% on 5120 x 5120 and 1-4% on 6144 x 3072 at 17-32 tokens (fp8).
      // Earlier (thirty-first session, before refill-first) the swapped tiles had won these by
      // 1-4% on a stream.
      const bool wide_pdl_tile =
          fp8_under_pdl && !small_weight && wave_use(tiles(n, 128), sm_count) >= 0.6 &&
          !(tiles(n, 64) <= sm_count && 4 * tiles(n, 64) >= 3 * sm_count) &&
          (k > 4096 || (m <= 16 && tiles(n, 128) > sm_count));
      // Thirty-eighth session: where gemv_tma lets the next kernel launch as soon as it starts
      // (gemv_tma::releases_at_start: weights up to 27 MiB), it beats the 128 x 32 tile under
      // PDL on the small weights too. H200, graph + PDL, us at 20-32 tokens: 6144 x 4096 8.33
      // against 9.03, 6144 x 3072 6.92 against 7.53, 7168 x 2048 6.05 against 6.40, 18432 x 1536
      // 9.13 against 9.80, 5120 x 5120 9.43-9.54 against 9.72 (at 17 tokens 9.86-10.02 against
      // 9.73); 8192 x 2048 6.88 against 6.78. 7168 x 4096 (28 MiB) keeps the tile (10.9-11.0
      // against 9.8).
      const bool tma_releases_at_start = gemv_tma::releases_at_start(
          n, k, 4, gemv_tma::DependentRing::kShortBlocks);
      const bool small_pdl_tile =
          fp8_under_pdl && small_weight && !pairs_fit && m > 16 && !tma_releases_at_start;
      config.tile = wide_pdl_tile || small_pdl_tile ? ScaledGemmTile::kSwap128x32
                                                    : ScaledGemmTile::kGemvTma;
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
      // Forty-second session: at 33-47 tokens the tiles chosen before ran slower than at 32 or
      // 64 on the weights over 32 MiB (14336 x 4096 fp8 on a stream: swap64x64 23.07 us at 33,
      // 21.30 at 40, 19.56 at 64; gemv_tma 17.94 at 32, 24.99 at 33), while the 192-channel
      // tile, which streams three times the weight per token tile, held its time (21.1 at 33,
      // 20.5 at 64). So on K <= 4096 too it takes 33-47 tokens, and 48 for fp8 under PDL.
      // H200, us against swap64x64 (docs/perf/scaled_gemm.md, "33-63 tokens"): 14336 x 4096
      // fp8 at 33 / 36 / 40 21.13 / 21.10 / 20.05 against 23.07 / 22.94 / 21.30 (under PDL at
      // 33-48 18.2-18.6 against 19.0-22.5), 11008 x 4096 18.76 / 18.90 / 18.33 against 19.38 /
      // 19.37 / 18.46; at 40, 22016 x 4096 28.17 against 30.47, 12288 x 4096 18.81 against
      // 20.10, 10240 x 4096 16.81 against 18.16; int8 alike. An A/B on eight weights (three
      // unseen): 33-40 tokens 4-14% faster, under PDL 6-16%, at 44-48 under PDL 2-9% (22016 x
      // 4096 at 48 1.6% slower). At 41-47 tokens on a stream (forced, two processes) it was
      // 1.4-11% faster on six of seven weights, both dtypes; 11008 x 4096 lost 0.8-2.6% (int8
      // 0.5-5.6%), where swap64x32 was fastest.
      const bool one_wide_wave = tiles(n, 64) > sm_count && tiles(n, 192) <= sm_count;
      const bool partial_token_tile =
          !small_weight && (m <= 47 || (fp8_under_pdl && m <= 48));
      config.tile = one_wide_wave && (k > 4096 || partial_token_tile)
                        ? ScaledGemmTile::kSwap192x64
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
