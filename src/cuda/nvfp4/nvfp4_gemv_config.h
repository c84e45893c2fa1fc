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
};

// Shape-based choice; LOWBIT_NVFP4_GEMV=<warps_per_tile>,<unroll>[b] (b: balanced) overrides it and
// LOWBIT_PRINT_CONFIG=1 prints it.
// `pairs`: routed (token, expert) rows of the output, known on the host, unlike how many slots
// are active.
Nvfp4GemvConfig choose_nvfp4_gemv_config(std::int64_t rows, std::int64_t cols,
                                         std::int64_t slots, std::int64_t pairs, bool sparse);

}  // namespace lowbit::cuda
