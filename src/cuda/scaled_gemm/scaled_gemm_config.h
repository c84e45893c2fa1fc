// Kernel configurations of the scaled GEMM and the heuristic that picks one per shape
// (scaled_gemm_heuristics.cpp). LOWBIT_SCALED_GEMM=<name> forces one; LOWBIT_PRINT_CONFIG=1
// prints the choice.
#pragma once

#include <cstdint>

#include "lowbit/tensor.h"

namespace lowbit::cuda {

enum class ScaledGemmTile : std::uint8_t {
  kLarge128x128,   // 128 tokens x 128 channels per warpgroup tile, pingpong, cluster 2x1
  kMedium64x128,   // 64 tokens x 128 channels per warpgroup tile, pingpong, cluster 2x1
  kSmall64x64,     // 64 tokens x 64 channels per warpgroup tile, pingpong, cluster 2x1
  kSwap64x16,      // swap A/B: 64 channels x 16 tokens, pingpong, cluster along the tokens
  kSwap64x32,      // swap A/B: 64 channels x 32 tokens, pingpong, cluster along the tokens
  kSwap64x64,      // swap A/B: 64 channels x 64 tokens, pingpong, cluster along the channels
  kSwap128x32,     // swap A/B: 128 channels x 32 tokens, pingpong, cluster along the channels
  kSwap192x64,     // swap A/B: 192 channels x 64 tokens, pingpong, cluster along the channels
  kCoop128x192,    // 128 tokens x 192 channels, cooperative, cluster 1x2 along the channels
  kSwap64x80,      // swap A/B: 64 channels x 80 tokens, pingpong, cluster along the tokens
  kSwap128x192,    // swap A/B: 128 channels x 192 tokens, cooperative, cluster along the channels
  kGemvSplitK,     // M <= 32: mma.sync GEMV, 32 channels per block, K split over its warps
  kGemvWgmma,      // M <= 32: wgmma GEMV, 64 channels per block, K split over warpgroups/cluster
  kGemvTma,        // M <= 64: wgmma GEMV fed by TMA, 64 channels per block, K split over cluster
};
inline constexpr ScaledGemmTile kAllScaledGemmTiles[] = {
    ScaledGemmTile::kLarge128x128, ScaledGemmTile::kMedium64x128, ScaledGemmTile::kSmall64x64,
    ScaledGemmTile::kSwap64x16,    ScaledGemmTile::kSwap64x32,    ScaledGemmTile::kSwap64x64,
    ScaledGemmTile::kSwap128x32,   ScaledGemmTile::kSwap192x64,   ScaledGemmTile::kCoop128x192,
    ScaledGemmTile::kSwap64x80,    ScaledGemmTile::kSwap128x192,  ScaledGemmTile::kGemvSplitK,
    ScaledGemmTile::kGemvWgmma,    ScaledGemmTile::kGemvTma};

// The decode GEMVs: not CUTLASS kernels, no workspace, a few tokens (scaled_gemv_launch.h).
inline constexpr bool is_gemv(ScaledGemmTile tile) {
  return tile == ScaledGemmTile::kGemvSplitK || tile == ScaledGemmTile::kGemvWgmma ||
         tile == ScaledGemmTile::kGemvTma;
}

struct ScaledGemmConfig {
  ScaledGemmTile tile = ScaledGemmTile::kLarge128x128;
};

const char* scaled_gemm_tile_name(ScaledGemmTile tile);

// `programmatic`: the call launches under programmatic dependent launch (enable_pdl), which
// moves a few decode choices.
ScaledGemmConfig choose_scaled_gemm_config(std::int64_t m, std::int64_t n, std::int64_t k,
                                           DType ab_dtype, int sm_count, bool programmatic);

}  // namespace lowbit::cuda
