// The GEMM heuristics' choices on the weights they were measured on (H200, 132 SMs;
// docs/perf/scaled_gemm.md and docs/perf/block_gemm.md): host code of the CUDA build, checked
// without a GPU so that a rule edit that moves a measured choice fails here first.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdlib>

#include "../../src/cuda/block_gemm/block_gemm_config.h"
#include "../../src/cuda/scaled_gemm/scaled_gemm_config.h"

namespace {

using lowbit::DType;
using lowbit::cuda::BlockGemmTile;
using lowbit::cuda::ScaledGemmTile;

constexpr int kH200Sms = 132;

ScaledGemmTile scaled_tile(std::int64_t m, std::int64_t n, std::int64_t k,
                           DType dtype = DType::kFP8E4M3, bool programmatic = false) {
  unsetenv("LOWBIT_SCALED_GEMM");
  return lowbit::cuda::choose_scaled_gemm_config(m, n, k, dtype, kH200Sms, programmatic).tile;
}

BlockGemmTile block_tile(std::int64_t m, std::int64_t n, std::int64_t k, bool fp32 = false) {
  unsetenv("LOWBIT_BLOCK_GEMM");
  return lowbit::cuda::choose_block_fp8_gemm_config(m, n, k, true, 4, fp32).tile;
}

TEST(ScaledGemmHeuristics, NineToThirtyTwoTokensOnTheTmaGemv) {
  // Weights over 32 MiB, both dtypes, on a stream: the TMA GEMV (thirty-seventh session).
  const std::int64_t weights[][2] = {{7168, 18432}, {5120, 25600}, {5120, 8192},
                                     {14336, 4096}, {10240, 8192}, {28672, 8192},
                                     {25600, 5120}, {18432, 7168}};
  for (const auto& w : weights) {
    for (std::int64_t m : {9, 16, 24, 32}) {
      EXPECT_EQ(scaled_tile(m, w[0], w[1]), ScaledGemmTile::kGemvTma) << w[0] << "x" << w[1];
      EXPECT_EQ(scaled_tile(m, w[0], w[1], DType::kInt8), ScaledGemmTile::kGemvTma)
          << w[0] << "x" << w[1];
    }
  }
  // fp8 under PDL: 128 x 32 where K > 4096 and its tiles fill >= 60% of their waves (80, 224,
  // 200 tiles); not on 7168 x 18432 (one wave of 64 x 16), 14336 x 4096 (K = 4096) or 18432 x
  // 7168 (144 tiles, 1.09 waves).
  for (std::int64_t m : {9, 16, 24, 32}) {
    EXPECT_EQ(scaled_tile(m, 10240, 8192, DType::kFP8E4M3, true), ScaledGemmTile::kSwap128x32);
    EXPECT_EQ(scaled_tile(m, 28672, 8192, DType::kFP8E4M3, true), ScaledGemmTile::kSwap128x32);
    EXPECT_EQ(scaled_tile(m, 25600, 5120, DType::kFP8E4M3, true), ScaledGemmTile::kSwap128x32);
    EXPECT_EQ(scaled_tile(m, 7168, 18432, DType::kFP8E4M3, true), ScaledGemmTile::kGemvTma);
    EXPECT_EQ(scaled_tile(m, 14336, 4096, DType::kFP8E4M3, true), ScaledGemmTile::kGemvTma);
    EXPECT_EQ(scaled_tile(m, 18432, 7168, DType::kFP8E4M3, true), ScaledGemmTile::kGemvTma);
    // K = 4096 with 128 x 32 tiles in two waves: that tile up to 16 tokens.
    EXPECT_EQ(scaled_tile(m, 28672, 4096, DType::kFP8E4M3, true),
              m <= 16 ? ScaledGemmTile::kSwap128x32 : ScaledGemmTile::kGemvTma);
    EXPECT_EQ(scaled_tile(m, 28672, 4096), ScaledGemmTile::kGemvTma);
  }
  // 4096-wide weights over 32 MiB: fp8 on the TMA GEMV to 16 tokens, then 64 x 16; int8 from 17.
  EXPECT_EQ(scaled_tile(16, 4096, 14336), ScaledGemmTile::kGemvTma);
  EXPECT_EQ(scaled_tile(16, 4096, 14336, DType::kFP8E4M3, true), ScaledGemmTile::kGemvTma);
  EXPECT_EQ(scaled_tile(24, 4096, 14336), ScaledGemmTile::kSwap64x16);
  EXPECT_EQ(scaled_tile(16, 4096, 14336, DType::kInt8), ScaledGemmTile::kGemvTma);
  EXPECT_EQ(scaled_tile(17, 4096, 14336, DType::kInt8), ScaledGemmTile::kSwap64x16);
  EXPECT_EQ(scaled_tile(8, 14336, 4096), ScaledGemmTile::kGemvTma);
}

TEST(ScaledGemmHeuristics, SmallWeightsDecodeOnTheTmaGemvForFp8) {
  // The nine weights of 4-26 MiB measured at 1-8 tokens (docs/perf/scaled_gemm.md).
  const std::int64_t weights[][2] = {{4096, 4096}, {6144, 4096}, {1024, 4096},
                                     {2048, 4096}, {4096, 2048}, {7168, 2048},
                                     {2048, 7168}, {5120, 5120}, {3072, 3072}};
  for (const auto& w : weights) {
    for (std::int64_t m : {1, 2, 4, 8}) {
      EXPECT_EQ(scaled_tile(m, w[0], w[1]), ScaledGemmTile::kGemvTma) << w[0] << "x" << w[1];
      const ScaledGemmTile int8 = w[1] <= 4096 ? ScaledGemmTile::kGemvSplitK
                                               : ScaledGemmTile::kGemvTma;
      EXPECT_EQ(scaled_tile(m, w[0], w[1], DType::kInt8), int8) << w[0] << "x" << w[1];
    }
  }
  // 9-16 tokens on the 4096-wide weights: the swapped tile (fp8 on a stream), int8's split-K
  // GEMV; fp8 under PDL the TMA GEMV.
  EXPECT_EQ(scaled_tile(16, 4096, 4096), ScaledGemmTile::kSwap64x16);
  EXPECT_EQ(scaled_tile(16, 4096, 4096, DType::kInt8), ScaledGemmTile::kGemvSplitK);
  EXPECT_EQ(scaled_tile(12, 4096, 4096, DType::kFP8E4M3, true), ScaledGemmTile::kGemvTma);
  // 9-32 tokens on wider small weights: the TMA GEMV, except int8's split-K GEMV at K = 2048
  // up to 16 tokens, and fp8 under PDL from 17 tokens on weights over 27 MiB (128 x 32), where
  // the TMA GEMV would not let the next kernel launch at once.
  for (std::int64_t m : {9, 12, 16, 24, 32}) {
    for (DType dtype : {DType::kFP8E4M3, DType::kInt8}) {
      EXPECT_EQ(scaled_tile(m, 6144, 4096, dtype), ScaledGemmTile::kGemvTma) << m;
      EXPECT_EQ(scaled_tile(m, 6144, 3072, dtype), ScaledGemmTile::kGemvTma) << m;
      EXPECT_EQ(scaled_tile(m, 5120, 4096, dtype), ScaledGemmTile::kGemvTma) << m;
      EXPECT_EQ(scaled_tile(m, 5120, 5120, dtype), ScaledGemmTile::kGemvTma) << m;
      for (const auto& w : {std::array<std::int64_t, 2>{6144, 4096}, {5120, 5120}}) {
        EXPECT_EQ(scaled_tile(m, w[0], w[1], dtype, true), ScaledGemmTile::kGemvTma)
            << m << " " << w[0] << "x" << w[1];
      }
      EXPECT_EQ(scaled_tile(m, 7168, 4096, dtype, true),
                m > 16 && dtype == DType::kFP8E4M3 ? ScaledGemmTile::kSwap128x32
                                                   : ScaledGemmTile::kGemvTma)
          << m;
    }
    EXPECT_EQ(scaled_tile(m, 7168, 2048), ScaledGemmTile::kGemvTma) << m;
    EXPECT_EQ(scaled_tile(m, 8192, 2048), ScaledGemmTile::kGemvTma) << m;
    EXPECT_EQ(scaled_tile(m, 18432, 1536, DType::kFP8E4M3, true), ScaledGemmTile::kGemvTma)
        << m;
    const ScaledGemmTile int8_k2048 = m <= 16 ? ScaledGemmTile::kGemvSplitK : ScaledGemmTile::kGemvTma;
    EXPECT_EQ(scaled_tile(m, 7168, 2048, DType::kInt8), int8_k2048) << m;
    EXPECT_EQ(scaled_tile(m, 8192, 2048, DType::kInt8), int8_k2048) << m;
  }
  // 17-32 tokens where the pairs fit: 64 x 16, both dtypes, with or without PDL.
  for (DType dtype : {DType::kFP8E4M3, DType::kInt8}) {
    for (bool programmatic : {false, true}) {
      EXPECT_EQ(scaled_tile(24, 4096, 4096, dtype, programmatic), ScaledGemmTile::kSwap64x16);
    }
  }
}

TEST(ScaledGemmHeuristics, ThirtyThreeToSixtyFourTokensAlwaysSwapped) {
  EXPECT_EQ(scaled_tile(64, 18432, 7168), ScaledGemmTile::kSwap192x64);
  EXPECT_EQ(scaled_tile(64, 7168, 18432), ScaledGemmTile::kSwap64x64);
  EXPECT_EQ(scaled_tile(64, 28672, 8192), ScaledGemmTile::kSwap64x64);
  EXPECT_EQ(scaled_tile(48, 25600, 5120, DType::kInt8), ScaledGemmTile::kSwap64x64);
  // 33-47 tokens (fp8 under PDL 33-48) on weights over 32 MiB whose 192-channel tiles make one
  // wave, at any K: the 192-channel tile (forty-second session).
  for (const auto& w : {std::array<std::int64_t, 2>{14336, 4096}, {11008, 4096}, {22016, 4096},
                        {13824, 5120}, {10240, 4096}}) {
    // Above those token counts K decides, as before (the 192-channel tile for K > 4096).
    const ScaledGemmTile by_k = w[1] > 4096 ? ScaledGemmTile::kSwap192x64 : ScaledGemmTile::kSwap64x64;
    for (DType dtype : {DType::kFP8E4M3, DType::kInt8}) {
      for (std::int64_t m : {33, 40, 47}) {
        EXPECT_EQ(scaled_tile(m, w[0], w[1], dtype), ScaledGemmTile::kSwap192x64) << w[0] << " M=" << m;
      }
      EXPECT_EQ(scaled_tile(48, w[0], w[1], dtype), by_k) << w[0];
      EXPECT_EQ(scaled_tile(64, w[0], w[1], dtype, true), by_k) << w[0];
    }
    EXPECT_EQ(scaled_tile(48, w[0], w[1], DType::kFP8E4M3, true), ScaledGemmTile::kSwap192x64);
    EXPECT_EQ(scaled_tile(48, w[0], w[1], DType::kInt8, true), by_k);
  }
  // Not where 192-channel tiles overflow a wave (27648 x 5120 lost: 45.25 against 44.57 us).
  EXPECT_EQ(scaled_tile(40, 27648, 5120), ScaledGemmTile::kSwap64x64);
  EXPECT_EQ(scaled_tile(64, 4096, 14336), ScaledGemmTile::kSwap64x32);
  // Small weights too, both dtypes, with or without PDL.
  for (DType dtype : {DType::kFP8E4M3, DType::kInt8}) {
    for (bool programmatic : {false, true}) {
      for (std::int64_t m : {33, 48, 64}) {
        EXPECT_EQ(scaled_tile(m, 6144, 4096, dtype, programmatic), ScaledGemmTile::kSwap64x64);
        EXPECT_EQ(scaled_tile(m, 5120, 5120, dtype, programmatic), ScaledGemmTile::kSwap64x64);
        EXPECT_EQ(scaled_tile(m, 8192, 2048, dtype, programmatic), ScaledGemmTile::kSwap64x64);
        EXPECT_EQ(scaled_tile(m, 18432, 1536, dtype, programmatic), ScaledGemmTile::kSwap64x64);
      }
    }
  }
  for (std::int64_t n : {4096, 5120, 7168, 8192, 10240, 14336, 18432, 25600, 28672, 57344}) {
    for (std::int64_t k : {4096, 5120, 7168, 8192, 14336, 18432, 25600, 28672}) {
      if (n * k <= (std::int64_t{32} << 20)) continue;
      for (std::int64_t m = 33; m <= 64; ++m) {
        EXPECT_FALSE(lowbit::cuda::is_gemv(scaled_tile(m, n, k))) << n << "x" << k << " M=" << m;
      }
    }
  }
}

TEST(ScaledGemmHeuristics, SixtyFiveToOneTwentyEightTokens) {
  // The cooperative 128 x 192 tile where its tiles make one wave and 128-channel ones do not.
  for (std::int64_t n : {18432, 20480, 22016, 24576}) {
    EXPECT_EQ(scaled_tile(80, n, 7168), ScaledGemmTile::kCoop128x192) << n;
    EXPECT_EQ(scaled_tile(128, n, 7168, DType::kInt8), ScaledGemmTile::kCoop128x192) << n;
  }
  EXPECT_EQ(scaled_tile(128, 28672, 8192), ScaledGemmTile::kMedium64x128);
  EXPECT_EQ(scaled_tile(128, 14336, 4096), ScaledGemmTile::kMedium64x128);
  EXPECT_EQ(scaled_tile(128, 4096, 4096), ScaledGemmTile::kSmall64x64);
}

TEST(ScaledGemmHeuristics, OneTwentyNineToOneNinetyTwoTokensSwapped) {
  for (std::int64_t m : {129, 160, 192}) {
    for (DType ab : {DType::kFP8E4M3, DType::kInt8}) {
      EXPECT_EQ(scaled_tile(m, 2112, 7168, ab), ScaledGemmTile::kSwap64x64) << m;
      for (std::int64_t n : {10240, 14336, 18432, 28672}) {
        EXPECT_EQ(scaled_tile(m, n, 8192, ab), ScaledGemmTile::kSwap128x192) << n << " M=" << m;
      }
    }
  }
  for (std::int64_t m : {129, 160}) {
    EXPECT_EQ(scaled_tile(m, 4096, 4096), ScaledGemmTile::kSwap64x80) << m;
    EXPECT_EQ(scaled_tile(m, 4096, 14336), ScaledGemmTile::kSwap64x80) << m;
    EXPECT_EQ(scaled_tile(m, 7168, 18432), ScaledGemmTile::kSwap128x192) << m;
    EXPECT_EQ(scaled_tile(m, 8192, 8192), ScaledGemmTile::kSwap128x192) << m;
  }
  // Fewer 128-channel tiles than half a wave at 161-192 tokens: the wave-cost rule's choice.
  EXPECT_EQ(scaled_tile(192, 7168, 18432), ScaledGemmTile::kLarge128x128);
  EXPECT_EQ(scaled_tile(192, 4096, 4096), ScaledGemmTile::kMedium64x128);
  EXPECT_EQ(scaled_tile(193, 14336, 4096), ScaledGemmTile::kLarge128x128);
}

TEST(ScaledGemmHeuristics, MediumTokenCountsByEstimatedWaves) {
  EXPECT_EQ(scaled_tile(256, 10240, 8192), ScaledGemmTile::kCoop128x192);
  EXPECT_EQ(scaled_tile(256, 4096, 14336), ScaledGemmTile::kMedium64x128);
  EXPECT_EQ(scaled_tile(224, 4096, 4096, DType::kInt8), ScaledGemmTile::kMedium64x128);
  // Where no tile is estimated >= 10% faster, the 128 x 128 tile.
  for (std::int64_t m : {256, 512, 1024}) {
    EXPECT_EQ(scaled_tile(m, 14336, 4096), ScaledGemmTile::kLarge128x128) << m;
    EXPECT_EQ(scaled_tile(m, 7168, 18432), ScaledGemmTile::kLarge128x128) << m;
    EXPECT_EQ(scaled_tile(m, 28672, 8192), ScaledGemmTile::kLarge128x128) << m;
  }
  EXPECT_EQ(scaled_tile(1024, 10240, 8192), ScaledGemmTile::kLarge128x128);
  EXPECT_EQ(scaled_tile(4096, 4096, 4096), ScaledGemmTile::kLarge128x128);
}

TEST(BlockGemmHeuristics, PingpongBandsAtSeventeenToSixtyFourTokens) {
  EXPECT_EQ(block_tile(64, 10240, 5120), BlockGemmTile::kPrefill64x128Pingpong);
  EXPECT_EQ(block_tile(48, 24576, 1536), BlockGemmTile::kPrefill64x128Pingpong);
  EXPECT_EQ(block_tile(64, 25600, 5120), BlockGemmTile::kPrefill64x128Pingpong);
  // K <= 2048 from 4096 rows (down) at 33-64 tokens, K <= 512 (kv_b) from 17; not below.
  EXPECT_EQ(block_tile(48, 7168, 2048), BlockGemmTile::kPrefill64x128Pingpong);
  EXPECT_EQ(block_tile(32, 7168, 2048), BlockGemmTile::kGemvTma);
  EXPECT_EQ(block_tile(24, 32768, 512), BlockGemmTile::kPrefill64x128Pingpong);
  EXPECT_EQ(block_tile(16, 32768, 512), BlockGemmTile::kGemvTma);
  // Narrower or deeper weights keep the GEMV / the swapped stream-K tile.
  EXPECT_EQ(block_tile(64, 4096, 7168), BlockGemmTile::kGemvTma);
  EXPECT_EQ(block_tile(64, 4096, 4096), BlockGemmTile::kGemvTma);
  EXPECT_EQ(block_tile(64, 5120, 8192), BlockGemmTile::kGemvTma);
  EXPECT_EQ(block_tile(64, 7168, 16384), BlockGemmTile::kDecode64);
  // The pingpong tile has no fp32 output; the GEMV serves it.
  EXPECT_EQ(block_tile(64, 10240, 5120, true), BlockGemmTile::kGemvTma);
}

TEST(BlockGemmHeuristics, SixtyFiveToOneTwentyEightTokens) {
  EXPECT_EQ(block_tile(128, 10240, 5120), BlockGemmTile::kPrefill128x128);
  EXPECT_EQ(block_tile(96, 28672, 8192), BlockGemmTile::kPrefill128x128);
  EXPECT_EQ(block_tile(128, 7168, 16384), BlockGemmTile::kSplitK128x128);
  EXPECT_EQ(block_tile(128, 24576, 1536), BlockGemmTile::kPrefill128x192Multicast);
  // One wave of 128 x 192 cluster tiles where 128 x 128 tiles take a second (144 tiles).
  for (std::int64_t m : {65, 80, 96, 128}) {
    EXPECT_EQ(block_tile(m, 18432, 7168), BlockGemmTile::kPrefill128x192Multicast) << m;
  }
  EXPECT_EQ(block_tile(64, 18432, 7168), BlockGemmTile::kDecode64);
  EXPECT_EQ(block_tile(257, 18432, 7168), BlockGemmTile::kPrefill128x128);
  // Two waves of 192-row clusters (67 and 75) keep the 128 x 128 tile.
  EXPECT_EQ(block_tile(128, 25600, 5120), BlockGemmTile::kPrefill128x128);
  EXPECT_EQ(block_tile(80, 28672, 8192), BlockGemmTile::kPrefill128x128);
  EXPECT_EQ(block_tile(128, 7168, 2048), BlockGemmTile::kPrefill64x128Pingpong);
  EXPECT_EQ(block_tile(128, 32768, 512), BlockGemmTile::kPrefill64x128Pingpong);
}

TEST(BlockGemmHeuristics, OneTwentyNineToOneNinetyTwoTokens) {
  for (std::int64_t m : {129, 160, 192}) {
    // The pingpong tile where three 64-token tiles per 128 rows make one wave.
    EXPECT_EQ(block_tile(m, 4096, 7168), BlockGemmTile::kPrefill64x128Pingpong) << m;
    EXPECT_EQ(block_tile(m, 4096, 14336), BlockGemmTile::kPrefill64x128Pingpong) << m;
    EXPECT_EQ(block_tile(m, 5120, 25600), BlockGemmTile::kPrefill64x128Pingpong) << m;
    // The 256 x 128 tile where its clusters fill >= 3/4 of at most two waves, at K > 2048.
    EXPECT_EQ(block_tile(m, 25600, 5120), BlockGemmTile::kPrefill256x128Multicast) << m;
    EXPECT_EQ(block_tile(m, 28672, 8192), BlockGemmTile::kPrefill256x128Multicast) << m;
    EXPECT_EQ(block_tile(m, 28672, 4096), BlockGemmTile::kPrefill256x128Multicast) << m;
    // In four waves (51200 rows) the 128 x 192 tile.
    EXPECT_EQ(block_tile(m, 51200, 5120), BlockGemmTile::kPrefill128x192Multicast) << m;
    // The 128 x 192 tile from 70% of its waves (18432 rows: 73%; q_b's 96 clusters of the
    // 256 x 128 tile would fill 73% too, at K = 1536).
    EXPECT_EQ(block_tile(m, 18432, 7168), BlockGemmTile::kPrefill128x192Multicast) << m;
    EXPECT_EQ(block_tile(m, 24576, 1536), BlockGemmTile::kPrefill128x192Multicast) << m;
    // Split-K up to 40 tiles of 128 x 128 (q_a+kv_a: 34).
    EXPECT_EQ(block_tile(m, 2112, 7168), BlockGemmTile::kSplitK128x128) << m;
    EXPECT_EQ(block_tile(m, 7168, 16384), BlockGemmTile::kPrefill128x128) << m;
    EXPECT_EQ(block_tile(m, 7168, 2048), BlockGemmTile::kPrefill128x128) << m;
  }
  EXPECT_EQ(block_tile(256, 2112, 7168), BlockGemmTile::kSplitK128x128);
  EXPECT_EQ(block_tile(384, 2112, 7168), BlockGemmTile::kPrefill128x128);
}

TEST(BlockGemmHeuristics, MediumTokenCountsByWaveFill) {
  // The 256 x 128 tile in one wave of 48-66 cluster tiles only.
  EXPECT_EQ(block_tile(640, 5120, 25600), BlockGemmTile::kPrefill256x128Multicast);
  EXPECT_EQ(block_tile(512, 7168, 2048), BlockGemmTile::kPrefill256x128Multicast);
  EXPECT_EQ(block_tile(896, 5120, 25600), BlockGemmTile::kPrefill128x128);
  EXPECT_EQ(block_tile(640, 7168, 16384), BlockGemmTile::kPrefill128x128);
  // The 128 x 192 tile where >= 48 cluster tiles fill >= 80% of their waves.
  EXPECT_EQ(block_tile(320, 24576, 1536), BlockGemmTile::kPrefill128x192Multicast);
  EXPECT_EQ(block_tile(384, 7168, 2048), BlockGemmTile::kPrefill128x192Multicast);
  EXPECT_EQ(block_tile(512, 18432, 7168), BlockGemmTile::kPrefill128x192Multicast);
  EXPECT_EQ(block_tile(256, 18432, 7168), BlockGemmTile::kPrefill128x128);
  EXPECT_EQ(block_tile(320, 10240, 5120), BlockGemmTile::kPrefill128x128);
  // K <= 512 and narrow weights keep their rules; from 1024 tokens the 256 x 128 tile.
  EXPECT_EQ(block_tile(512, 32768, 512), BlockGemmTile::kPrefill256x128Multicast);
  EXPECT_EQ(block_tile(160, 32768, 512), BlockGemmTile::kPrefill64x128Pingpong);
  EXPECT_EQ(block_tile(320, 576, 7168), BlockGemmTile::kSplitK128x128);
  EXPECT_EQ(block_tile(1024, 7168, 16384), BlockGemmTile::kPrefill256x128Multicast);
  EXPECT_EQ(block_tile(4096, 24576, 1536), BlockGemmTile::kPrefill256x128Multicast);
}

}  // namespace
