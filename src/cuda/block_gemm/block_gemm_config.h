// Kernel configurations of the block-scaled FP8 GEMM and the heuristic that picks one per shape
// (block_gemm_heuristics.cpp). LOWBIT_BLOCK_GEMM=<name> forces one; LOWBIT_PRINT_CONFIG=1
// prints the choice.
#pragma once

#include <cstdint>
#include <string>

namespace lowbit::cuda {

enum class BlockGemmTile : std::uint8_t {
  kPrefill128x128,  // A tile 128 tokens x 128 weight rows, cooperative, cluster 1x2
  kDecode32,        // swap A/B: 128 weight rows x 32 tokens, stream-K over K
  kDecode64,        // swap A/B: 128 weight rows x 64 tokens, stream-K over K
  kPrefill64x128Pingpong,  // 64 tokens x 128 weight rows per warpgroup, pingpong, persistent
  kGemvSplitK,      // M <= 32: mma.sync GEMV, 32 weight rows per block, K split over its warps
  kGemvWgmma,       // M <= 32: wgmma GEMV, 64 weight rows per block, K split over warpgroups/cluster
  kGemvTma,         // M <= 64: wgmma GEMV fed by TMA, 64 weight rows per block, K split over cluster
  // lowbit's own TMA/wgmma kernel: 128 x 192 tiles, activation tile multicast over a 2-block
  // cluster, bf16 output (block_fp8_gemm_128x192.cu); chosen for narrow weights at large M
  kPrefill128x192Multicast,
  // lowbit's own TMA/wgmma kernel: 256 x 128 tiles, activation tile multicast over a 2-block
  // cluster, bf16 output (block_fp8_gemm_256x128.cu)
  kPrefill256x128Multicast,
  // lowbit's own TMA/wgmma kernel: 128 x 144 tiles, as the 128 x 192 one
  // (block_fp8_gemm_128x144.cu); chosen where its weight blocks pair up and 192-row ones do not
  kPrefill128x144Multicast,
  // lowbit's own TMA/wgmma kernel for a few tokens: 128 x 128 tiles, K split over a cluster of
  // 1-8 blocks that add their partial sums in shared memory (block_fp8_gemm_splitk.cu)
  kSplitK128x128,
};
inline constexpr BlockGemmTile kAllBlockGemmTiles[] = {
    BlockGemmTile::kPrefill128x128, BlockGemmTile::kDecode32, BlockGemmTile::kDecode64,
    BlockGemmTile::kPrefill64x128Pingpong, BlockGemmTile::kGemvSplitK, BlockGemmTile::kGemvWgmma,
    BlockGemmTile::kGemvTma, BlockGemmTile::kPrefill128x192Multicast,
    BlockGemmTile::kPrefill256x128Multicast, BlockGemmTile::kPrefill128x144Multicast,
    BlockGemmTile::kSplitK128x128};

// lowbit's own tiles (bf16 output; M-major A scales with 16-byte aligned columns).
inline constexpr bool is_own_prefill(BlockGemmTile tile) {
  return tile == BlockGemmTile::kPrefill128x192Multicast ||
         tile == BlockGemmTile::kPrefill256x128Multicast ||
         tile == BlockGemmTile::kPrefill128x144Multicast ||
         tile == BlockGemmTile::kSplitK128x128;
}

// The decode GEMVs: not CUTLASS kernels, no workspace, a few tokens (block_fp8_gemv_launch.h).
inline constexpr bool is_gemv(BlockGemmTile tile) {
  return tile == BlockGemmTile::kGemvSplitK || tile == BlockGemmTile::kGemvWgmma ||
         tile == BlockGemmTile::kGemvTma;
}

struct BlockFp8GemmConfig {
  BlockGemmTile tile = BlockGemmTile::kPrefill128x128;
  // Activation scales stored M-major (column-major layouts) instead of K-major (row-major).
  bool a_scales_m_major = false;
  // A scales get copied to an M-major workspace with 16-byte aligned columns first (TMA needs
  // 16-byte strides; lowbit's own tiles read M-major scales only).
  bool realign_a_scales = false;
};

const char* block_gemm_tile_name(BlockGemmTile tile);
std::string describe(const BlockFp8GemmConfig& config);

// The configuration for an M x N x K problem; a_scales_m_major/realign come from the layout.
BlockFp8GemmConfig choose_block_fp8_gemm_config(std::int64_t m, std::int64_t n, std::int64_t k,
                                                bool a_scales_m_major,
                                                std::int64_t a_scale_stride_k,
                                                bool fp32_output);

// prefill256x128mc's output store for a K: one 128-row box at a time through a one-box buffer
// (true: the ring gets a fourth stage), or the whole tile staged at once.
bool store_256x128_by_box(std::int64_t k);

}  // namespace lowbit::cuda
