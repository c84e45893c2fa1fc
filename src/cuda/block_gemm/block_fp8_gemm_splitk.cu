// `splitk128x128`: block_fp8_mm's own tile for a few tokens (block_fp8_gemm_tall.cuh, split-K
// form): 128 x 128 tiles whose K is split over a cluster of 1, 2, 3, 4 or 8 blocks, so that
// weights with few tiles still keep most SMs streaming.
#include <array>
#include <cstdio>
#include <cstdlib>

#include "block_fp8_gemm_tall.cuh"
#include "block_fp8_gemm_tall_launch.h"
#include "../../common/config_print.h"

namespace lowbit::cuda {

namespace {

using SplitKernel = tall::Kernel<128, 128, true>;
constexpr int kMinKBlocksPerSplit = 4;  // each block's ring fill is worth at least this much K

KernelLaunch split_launch(int tiles, int splits) {
  KernelLaunch config;
  config.threads = tall::kThreads;
  config.shared_bytes = SplitKernel::kSharedBytes;
  config.cluster_along_y = true;
  config.grid = dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(splits), 1);
  return config;
}

constexpr int kSplitChoices[] = {2, 3, 4, 8};

// Clusters of `splits` (one of kSplitChoices) blocks the device holds at once, queried once.
int resident_split_clusters(int splits) {
  static const std::array<int, tall::kMaxSplits + 1> resident = [] {
    std::array<int, tall::kMaxSplits + 1> counts{};
    for (int candidate : kSplitChoices) {
      counts[candidate] =
          resident_clusters(tall::kernel<128, 128, true>, split_launch(1, candidate));
    }
    return counts;
  }();
  return resident[splits];
}

// LOWBIT_BLOCK_GEMM_SPLITS (1, 2, 3, 4 or 8) when set; else the largest cluster whose `tiles`
// clusters all fit at once, with at least kMinKBlocksPerSplit K blocks per block.
int choose_splits(int tiles, int k_blocks) {
  if (const char* text = std::getenv("LOWBIT_BLOCK_GEMM_SPLITS")) {
    const int forced = std::atoi(text);
    if (forced == 1 || forced == 2 || forced == 3 || forced == 4 || forced == 8) return forced;
  }
  int splits = 1;
  for (int candidate : kSplitChoices) {
    if (k_blocks < kMinKBlocksPerSplit * candidate) break;
    if (tiles <= resident_split_clusters(candidate)) splits = candidate;
  }
  detail::print_config_once("splitk128x128: %d tiles, %d K blocks: cluster of %d (resident "
                            "clusters of 2/3/4/8: %d/%d/%d/%d)", tiles, k_blocks, splits,
                            resident_split_clusters(2), resident_split_clusters(3),
                            resident_split_clusters(4), resident_split_clusters(8));
  return splits;
}

}  // namespace

void launch_block_fp8_gemm_splitk(const BlockFp8GemmProblem& p, const float* a_scales,
                                  std::int64_t a_scale_stride_k, cudaStream_t stream) {
  constexpr const char* kName = "splitk128x128";
  // A in two 64-row boxes per stage, B in one of 128 rows, 128-token tiles.
  tall::Params params = tall::operand_params(p, a_scales, a_scale_stride_k, 64, 128, 128, kName);
  params.d = p.d;
  params.ldd = p.ldd;
  params.cluster_tiles = params.m_blocks * static_cast<int>((p.n + 127) / 128);
  if (params.cluster_tiles == 0) return;
  params.k_splits = choose_splits(params.cluster_tiles, params.k_blocks);
  params.k_blocks_per_split = (params.k_blocks + params.k_splits - 1) / params.k_splits;
  // (A grid without clusters has no cluster occupancy to ask for.)
  if (params.k_splits > 1 && resident_split_clusters(params.k_splits) == 0) {
    tall::check_tile(cudaErrorInvalidConfiguration, "cluster occupancy", kName);
  }
  // One tile per cluster: a block's received partial sums are never overwritten.
  tall::check_tile(launch_kernel(tall::kernel<128, 128, true>, params,
                                 split_launch(params.cluster_tiles, params.k_splits), stream),
                   "kernel launch", kName);
}

}  // namespace lowbit::cuda
