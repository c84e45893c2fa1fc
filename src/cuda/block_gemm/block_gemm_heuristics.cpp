// Configuration choice of the block-scaled FP8 GEMM. Up to M = 64 tokens the weight stream is
// the floor, so the swapped (decode) tiles put the tokens in wgmma's N (32 or 64) instead of
// padding M to a 128-row tile, and stream-K spreads the few weight-row tiles over every SM;
// a persistent pingpong 64 x 128 tile serves short K and M up to 128; above that, the 128 x 128
// cooperative stream-K tile, or lowbit's own tiles where their clusters fill their waves: 256 x
// 128 for wide weights, 128 x 192 or 128 x 144 for the others (at 65-1023 tokens by the waves
// of each, below; at 129-192 tokens the pingpong tile first where it makes one wave); where
// long K meets at most 40-64 tiles of 128 x 128 (33-128 tokens, or narrow weights above),
// lowbit's split-K 128 x 128 tile (docs/block_gemm.md, docs/perf/block_gemm.md).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "block_fp8_gemv_launch.h"
#include "block_gemm_config.h"
#include "../../common/config_print.h"

namespace lowbit::cuda {

const char* block_gemm_tile_name(BlockGemmTile tile) {
  switch (tile) {
    case BlockGemmTile::kPrefill128x128: return "prefill128x128";
    case BlockGemmTile::kDecode32: return "decode32";
    case BlockGemmTile::kDecode64: return "decode64";
    case BlockGemmTile::kPrefill64x128Pingpong: return "prefill64x128pp";
    case BlockGemmTile::kGemvSplitK: return "gemv_split_k";
    case BlockGemmTile::kGemvWgmma: return "gemv_wgmma";
    case BlockGemmTile::kGemvTma: return "gemv_tma";
    case BlockGemmTile::kPrefill128x192Multicast: return "prefill128x192mc";
    case BlockGemmTile::kPrefill256x128Multicast: return "prefill256x128mc";
    case BlockGemmTile::kPrefill128x144Multicast: return "prefill128x144mc";
    case BlockGemmTile::kSplitK128x128: return "splitk128x128";
  }
  return "?";
}

std::string describe(const BlockFp8GemmConfig& config) {
  std::string text = block_gemm_tile_name(config.tile);
  text += config.a_scales_m_major ? " a_scales=m_major" : " a_scales=k_major";
  if (config.realign_a_scales) text += " (realigned copy)";
  return text;
}

namespace {

bool parse_override(BlockGemmTile& tile) {
  const char* text = std::getenv("LOWBIT_BLOCK_GEMM");
  if (text == nullptr) return false;
  for (BlockGemmTile candidate : kAllBlockGemmTiles) {
    if (std::strcmp(text, block_gemm_tile_name(candidate)) == 0) {
      tile = candidate;
      return true;
    }
  }
  std::fprintf(stderr,
               "[lowbit] ignoring LOWBIT_BLOCK_GEMM=%s (want prefill128x128, decode32, "
               "decode64, prefill64x128pp, gemv_split_k, gemv_wgmma, gemv_tma, "
               "prefill128x192mc, prefill256x128mc, prefill128x144mc or splitk128x128)\n",
               text);
  return false;
}

// Cluster tiles of lowbit's own 128 x `width` tile: 128-token blocks x pairs of weight blocks.
std::int64_t tall_cluster_tiles(std::int64_t m, std::int64_t n, std::int64_t width) {
  return (m + 127) / 128 * (((n + width - 1) / width + 1) / 2);
}

// Cluster tiles of lowbit's own 256 x 128 tile: 256-token blocks x pairs of weight blocks.
std::int64_t wide_cluster_tiles(std::int64_t m, std::int64_t n) {
  return (m + 255) / 256 * ((n + 255) / 256);
}

// SMs of an H200, and the clusters of 2 of lowbit's own tiles that it holds at once.
constexpr std::int64_t kSms = 132;
constexpr std::int64_t kResidentClusters = kSms / 2;

// Waves that `cluster_tiles` make over the resident clusters.
std::int64_t cluster_waves(std::int64_t cluster_tiles) {
  return (cluster_tiles + kResidentClusters - 1) / kResidentClusters;
}

// Waves of the 128 x `width` tile over the resident clusters.
std::int64_t tall_waves(std::int64_t m, std::int64_t n, std::int64_t width) {
  return cluster_waves(tall_cluster_tiles(m, n, width));
}

// Few 128 x 128 tiles (few tokens, or a narrow weight) and long K: lowbit's split-K tile keeps
// most SMs streaming where every other tile leaves them idle. Measured on an H200
// (docs/perf/block_gemm.md, fifteenth session), us against the previous choice:
// - 65-128 tokens, <= 64 tiles and K >= 4096: M = 128 q_a+kv_a (17 tiles) 16.9-17.0 against
//   22-25, gate_up (32) 17.9-18.5 against 22.6-23.6, kv_a (5) 13.4-15.2 against 22-23, o_proj
//   (56) 42.0-44.0 against 47-52 (the 128 x 128 tile). Short K lost (down, K = 2048: 13.1-13.5
//   against 12-14 for the pingpong tile), as did weights of 192 and more tiles (q_b, kv_b).
// - 33-64 tokens, only where the TMA GEMV's K split is thin: q_a+kv_a (17 tiles) 16.3-16.5
//   against 18.1-18.2 for gemv_tma at M = 64; gate_up (32 tiles) tied, kv_a (5) and o_proj (56)
//   lost, so the band is 9-24 tiles. (Held timing, thirtieth session: gate_up at M = 40-64
//   18.2-18.8 against 18.9-19.1 us, but 32 tiles lost on three other weights, 4096 x 4096 by
//   4-11%, 4096 x 14336 by up to 7%, 3584 x 7168 by 1-3%, so the band stays.)
// - Above 128 tokens, up to 40 tiles: kv_a (N = 576) M = 512 (20 tiles) 15.4 against 22.2 for
//   the pingpong tile, M = 1024 (40 tiles) 21.4 against 25.2; q_a+kv_a (N = 2112, 34 tiles) at
//   M = 136 / 160 / 192 / 256 20.4 / 20.0 / 18.2 / 17.1 against 26.4 / 25.8 / 24.9 / 24.5 for
//   the 128 x 128 tile (twenty-seventh session). Weights lost there once their tiles outnumber
//   a wave (q_a+kv_a M = 512, 68 tiles: 31.6 against 28.5 for the 128 x 128 tile).
bool split_k_shape(std::int64_t m, std::int64_t n, std::int64_t k) {
  const std::int64_t tiles = (m + 127) / 128 * ((n + 127) / 128);
  if (k < 4096 || m <= 32) return false;
  if (m > 128) return tiles <= 40;
  return m > 64 ? tiles <= 64 : tiles >= 9 && tiles <= 24;
}

// 33-64 tokens on a wide weight of short K (two or more 4096-row widths, K <= 6144): the
// pingpong 64 x 128 tile beats the TMA GEMV and the swapped stream-K tile. Measured on an H200
// (docs/perf/block_gemm.md, twenty-fifth session) at M = 64: Qwen3-32B's 10240 x 5120 19.2 us
// against 23.0 (gemv_tma), 25600 x 5120 41.4 against 43.7 (decode64); DeepSeek-V3's q_b
// (24576 x 1536) 16.3-17.1 against 16.7-17.7 over six runs. It lost on narrower or deeper
// weights: 4096 x 7168 (22-23 against 18.6-20), 5120 x 8192 (23.8 against 21.7), 7168 x 16384
// (44.3 against 41.6).
bool wide_short_k(std::int64_t n, std::int64_t k) { return n >= 8192 && k <= 6144; }

// Where the pingpong tile beats the TMA GEMV at 17-64 tokens: the wide short-K weights above at
// 33-64 tokens, and, measured with held timing on an H200 (docs/perf/block_gemm.md, thirtieth
// session, two runs), DeepSeek-V3's down (7168 x 2048) at 40-64 tokens (9.9 against 11.6 us for
// gemv_tma; at 16-32 tokens the GEMV stays ahead, 9.9 against 10.0) and kv_b (32768 x 512) at
// 24 and 32 tokens (9.6 against 10.7; 9.57 against 9.79 at 16). Only those two weights were
// measured in the new bands: K <= 2048 from 4096 rows, K <= 512 from 8192 rows.
bool pingpong_over_gemv(std::int64_t m, std::int64_t n, std::int64_t k) {
  if (m <= 16 || m > 64) return false;
  if (k <= 512 && n >= 8192) return true;
  return m > 32 && (wide_short_k(n, k) || (k <= 2048 && n >= 4096));
}

// 65-128 tokens (one 128-token tile) where the 128 x 128 tile's weight tiles overflow one wave
// (more than 132) and the 128 x 192 tile's clusters make one (16897-25344 rows): each SM streams
// one 192-row slice of the weight instead of a second, mostly empty wave. Measured on an H200
// (docs/perf/block_gemm.md, twenty-sixth session), us at M = 80 / 128 against the previous
// choice: 18432 x 7168 42.6 / 42.9 against 51.0 / 49.6 (128 x 128), 20480 x 5120 35.9 / 35.6
// against 42.4 / 41.2, 22016 x 8192 52.8 / 53.5 against 64.9 / 62.1, 24576 x 7168 51.3 / 51.8
// against 64.2 / 61.4, 18432 x 16384 85.5 / 86.7 against 100.7 / 97.3, 18432 x 2048 17.5 / 17.5
// against 23.7 / 22.0 (pingpong); DeepSeek-V3's q_b (24576 x 1536) 16.9-17.0 against 19.3-20.3
// (pingpong) at M = 128. Where the 192-row clusters take a second wave it loses: 25600 x 5120
// (67 clusters) 60.6-63.2 against 48.6-49.8, 28672 x 8192 (75) 94.6-100.3 against 74.6-78.9.
// K <= 1024 stays out, unmeasured in the band (kv_b, K = 512, lost on it).
bool one_wave_of_192_over_128(std::int64_t m, std::int64_t n) {
  return (n + 127) / 128 > kSms && tall_waves(m, n, 192) == 1;
}

// 129-1023 tokens on weights of >= 4096 rows and K > 512: a few waves of tiles whose last is
// often mostly empty. lowbit's own tiles (persistent, 66 clusters of 2 on an H200) win where
// their cluster tiles fill their waves; otherwise the 128 x 128 tile, whose stream-K scheduler
// has no partial wave. Measured on an H200 over 9 weights x 7 token counts (160-896; docs/perf/
// block_gemm.md, twenty-sixth session): the 256 x 128 tile won only in one wave (48-66 cluster
// tiles; 5120 x 25600 at M = 640 160 against 193 us) and lost in two or more (5120 x 25600 at
// M = 896: 331 against 203); the 128 x 192 tile won where >= 48 cluster tiles fill >= 80% of
// their waves (DeepSeek-V3's q_b at M = 320 30.5 against 39.9; down at M = 384 15.1 against
// 22.2; 18432 x 7168 at M = 512 119 against 135). On the 30 cells where it changed the choice
// of the previous rule (256 x 128 from 48 cluster tiles at M >= 512) 1.21x faster in total, none
// more than 1% slower; on 26 changed cells at token counts it was not fitted on, 1.12x, one cell
// 0.80x (down, 7168 x 2048, at M = 960). From 1024 tokens the previous rule stands (measured
// at 1024, 4096 and 8192).
bool medium_wide_shape(std::int64_t m, std::int64_t n, std::int64_t k) {
  return m > 128 && m < 1024 && n >= 4096 && k > 512;
}

// 129-192 tokens: three 64-token tiles or two 128-token ones. Measured on an H200 over 13
// weights at M = 136, 160, 176, 192 (docs/perf/block_gemm.md, twenty-seventh session), us
// against the rule above:
// - the pingpong 64 x 128 tile where its tiles make one wave (up to 5632 rows): gate_up (4096 x
//   7168) 22.0 against 27.9 at M = 160, 5120 x 25600 72.6 against 83.2, 5120 x 8192 27.8
//   against 31.0;
// - else the 256 x 128 tile where its cluster tiles fill >= 3/4 of at most two waves and K >
//   2048: 28672 x 8192 119.6 against 140.0, 25600 x 5120 74.5 against 92.6 (q_b, K = 1536,
//   73%, lost: 27-30 against 23-25 for the 128 x 192 tile; in four waves, Qwen3-32B's 51200 x
//   5120 gate_up, it lost too: 151.6 / 144.7 against 136.5 / 139.7 at M = 144 / 176);
// - else the 128 x 192 tile from 70% of its waves: 18432 x 7168 76.2 against 86.4.
BlockGemmTile few_token_wide_tile(std::int64_t m, std::int64_t n, std::int64_t k) {
  if ((m + 63) / 64 * ((n + 127) / 128) <= kSms) return BlockGemmTile::kPrefill64x128Pingpong;
  const std::int64_t tiles_256 = wide_cluster_tiles(m, n);
  const std::int64_t slots_256 = cluster_waves(tiles_256) * kResidentClusters;
  if (k > 2048 && 4 * tiles_256 >= 3 * slots_256 && slots_256 <= 2 * kResidentClusters) {
    return BlockGemmTile::kPrefill256x128Multicast;
  }
  const std::int64_t tiles_192 = tall_cluster_tiles(m, n, 192);
  if (tiles_192 >= 48 && 10 * tiles_192 >= 7 * tall_waves(m, n, 192) * kResidentClusters) {
    return BlockGemmTile::kPrefill128x192Multicast;
  }
  return BlockGemmTile::kPrefill128x128;
}

BlockGemmTile medium_wide_tile(std::int64_t m, std::int64_t n, std::int64_t k) {
  if (m <= 192) return few_token_wide_tile(m, n, k);
  const std::int64_t tiles_256 = wide_cluster_tiles(m, n);
  if (m >= 512 && tiles_256 >= 48 && tiles_256 <= kResidentClusters) {
    return BlockGemmTile::kPrefill256x128Multicast;
  }
  const std::int64_t tiles_192 = tall_cluster_tiles(m, n, 192);
  const std::int64_t slots = tall_waves(m, n, 192) * kResidentClusters;
  if (tiles_192 >= 48 && 5 * tiles_192 >= 4 * slots) {
    return BlockGemmTile::kPrefill128x192Multicast;
  }
  return BlockGemmTile::kPrefill128x128;
}

}  // namespace

BlockFp8GemmConfig choose_block_fp8_gemm_config(std::int64_t m, std::int64_t n, std::int64_t k,
                                                bool a_scales_m_major,
                                                std::int64_t a_scale_stride_k,
                                                bool fp32_output) {
  BlockFp8GemmConfig config;
  config.a_scales_m_major = a_scales_m_major;
  // NOTE: M-major scales are loaded by TMA, whose global strides must be 16-byte multiples.
  config.realign_a_scales = a_scales_m_major && a_scale_stride_k % 4 != 0;
  // The GEMVs hold at most 32 tokens (gemv_tma 64); a forced GEMV falls back to the heuristic.
  const bool overridden = parse_override(config.tile);
  const bool gemv_tile = is_gemv(config.tile);
  const std::int64_t gemv_tokens =
      config.tile == BlockGemmTile::kGemvTma ? kBlockFp8GemvTmaMaxTokens : kBlockFp8GemvMaxTokens;
  const bool forced = overridden && (!gemv_tile || m <= gemv_tokens);
  if (forced && gemv_tile) {
    // kept: the GEMVs serve both output dtypes
  } else if (!forced && !fp32_output && split_k_shape(m, n, k)) {
    config.tile = BlockGemmTile::kSplitK128x128;
  } else if (!forced && !fp32_output && pingpong_over_gemv(m, n, k)) {
    config.tile = BlockGemmTile::kPrefill64x128Pingpong;
  } else if (!forced && (m <= 32 || (m <= 64 && n * k <= (std::int64_t{64} << 20)))) {
    // The TMA-fed wgmma GEMV streams the weight once with no token padding and no workspace,
    // in either output dtype and any scale layout. Measured on an H200 (docs/perf/block_gemm.md)
    // it is the fastest configuration at M <= 64 on the six DeepSeek-V3 shapes up to 38 MB
    // (1.1-1.9x; at 33-64 tokens q_b, kv_b and down now take the pingpong tile above,
    // pingpong_over_gemv),
    // and on the 117 MB o_proj at M <= 32 since its step scales are staged before
    // its loop (M = 16: 36.3-36.5 against 39.3-40.0 us for decode32); at M = 64 there the
    // swapped stream-K tile is as fast.
    config.tile = BlockGemmTile::kGemvTma;
  } else if (fp32_output) {
    // fp32 output is built for the prefill tile only (it is for checks, not for speed).
    config.tile = BlockGemmTile::kPrefill128x128;
  } else if (!forced) {
    // Measured on an H200 over DeepSeek-V3's shapes (docs/perf/block_gemm.md): stream-K's
    // fixed costs outweigh its balance when K is short, where the persistent pingpong tile
    // wins; at long K the swapped stream-K tiles win for M <= 64; the 128 x 128 cooperative
    // tile wins at large M except for the shortest K.
    // Narrow weights (DeepSeek-V3's kv_a, N = 576) give the 128 x 128 tile few columns of
    // tiles. Measured on an H200 (docs/perf/block_gemm.md, sweep of 2026-11-22): at M = 512 and
    // 1024 the pingpong tile's 64-row tiles were 13-15% faster (22.2 / 23.4 against 25.8 /
    // 26.8 us).
    // Weights below 4096 rows run fastest on the 128 x 192 tile once it has 48 cluster tiles
    // (two 192-row weight blocks each). Measured there with K = 7168 (docs/perf/block_gemm.md,
    // eleventh session): q_a+kv_a (N = 2112) M = 1024 36.2 against 40.0 us (128 x 128), 4096
    // 109.4 against 133.4, 8192 211.9 against 238.6; kv_a M = 4096 38.4 against 60.4, 8192 74.0
    // against 105.1. With fewer tiles it loses (q_a M = 512, 24 tiles: 35.3 against 29.5; kv_a
    // M = 1024, 16 tiles: 34.3 against 24.0 for the pingpong tile). Short K is unmeasured, so
    // it keeps the other tiles.
    // Wide weights (DeepSeek-V3's q_b, kv_b, gate_up, down, o_proj) run fastest on the 256 x 128
    // tile once it has most of a wave of cluster tiles (66 clusters on an H200). Measured there
    // (docs/perf/block_gemm.md): M = 1024 q_b 71 against 87 us, gate_up 50 against 56, o_proj
    // 203 against 211; M = 4096 kv_b 157 against 243 (128 x 128), down 108 against 132; M = 8192
    // down 228 against 293. Below 48 cluster tiles it loses (gate_up at M = 512, 32 tiles: 55
    // against 32 us, measured before its loop change).
    const bool narrow = n <= 1024;
    const bool wide = n >= 4096 && m >= 512 && wide_cluster_tiles(m, n) >= 48;
    const bool tall = n < 4096 && k >= 2048 && tall_cluster_tiles(m, n, 192) >= 48;
    if (medium_wide_shape(m, n, k)) {
      config.tile = medium_wide_tile(m, n, k);
    } else if (wide) {
      config.tile = BlockGemmTile::kPrefill256x128Multicast;
    } else if (tall) {
      // The 128 x 144 tile where its weight blocks pair up exactly while 192-row blocks leave a
      // dead one (a pair's second block wholly past N), in no more waves of clusters.
      // Measured on an H200 (docs/perf/block_gemm.md, twelfth session): kv_a (N = 576: four
      // 144-row blocks against three 192-row ones) M = 4096 33.2-34.0 against 38.5-40.9 us,
      // M = 8192 61.6-63.5 against 74.6-76.8. Where both leave a dead block the 192-row tile
      // won at every M (q_a+kv_a: 35.4-36.5 against 34.7-36.0 us at M = 1024, 127.5-131.2
      // against 104.9-108.6 at 4096).
      const bool pairs_144 = (n + 143) / 144 % 2 == 0, pairs_192 = (n + 191) / 192 % 2 == 0;
      config.tile = pairs_144 && !pairs_192 && tall_waves(m, n, 144) <= tall_waves(m, n, 192)
                        ? BlockGemmTile::kPrefill128x144Multicast
                        : BlockGemmTile::kPrefill128x192Multicast;
    } else if (m > 64 && m <= 128 && k > 1024 && one_wave_of_192_over_128(m, n)) {
      config.tile = BlockGemmTile::kPrefill128x192Multicast;
    } else if (m <= 128 && k <= 2048) {
      config.tile = BlockGemmTile::kPrefill64x128Pingpong;
    } else if (m <= 64) {  // (M <= 32 went to the GEMV above; decode32 is forced only)
      config.tile = BlockGemmTile::kDecode64;
    } else if (k <= 512 || (narrow && m <= 1024)) {
      // (65-128 tokens with K > 2048 and more tiles than split-K takes run the 128 x 128 tile:
      // Qwen3-32B's 10240 x 5120 at M = 128 23.3 us against 31.5 for the pingpong tile,
      // 25600 x 5120 48.6 against 61.1; H200, docs/perf/block_gemm.md.)
      config.tile = BlockGemmTile::kPrefill64x128Pingpong;
    } else {
      config.tile = BlockGemmTile::kPrefill128x128;
    }
  }
  // The GEMV reads scales through their strides; only the TMA tiles need the aligned copy, and
  // lowbit's own prefill tiles need M-major scales.
  if (is_gemv(config.tile)) config.realign_a_scales = false;
  if (is_own_prefill(config.tile)) {
    config.realign_a_scales = !a_scales_m_major || a_scale_stride_k % 4 != 0;
  }
  if (detail::print_config_enabled()) {  // describe() builds a string: only when printing
    detail::print_config_once("block_fp8_mm m=%lld n=%lld k=%lld: %s", static_cast<long long>(m),
                              static_cast<long long>(n), static_cast<long long>(k),
                              describe(config).c_str());
  }
  return config;
}

bool store_256x128_by_box(std::int64_t k) {
  // From K = 4096 the 256 x 128 tile leaves one 128-row box at a time, so that its ring holds
  // four stages instead of three. H200, M = 4096, over cuBLASLt block-scaled / per-tensor in
  // the same process (seven processes with it, six without): gate_up (K = 7168) 1.06-1.07x /
  // 0.97-0.98x against 1.05-1.06x / 0.96-0.97x, o_proj (K = 16384) 1.06-1.08x / 0.93-0.94x
  // against 1.04-1.05x / 0.91-0.93x; o_proj at 1024 / 8192 tokens 199.6 / 1643 µs against
  // 205.2 / 1682. At K <= 2048 the box-by-box store cost more than the stage gave: down 1.05x
  // against 1.08x, kv_b 0.97x against 1.17-1.19x (docs/perf/block_gemm.md, twenty-ninth
  // session).
  return k >= 4096;
}

}  // namespace lowbit::cuda
