// Registry of the block-scaled GEMM instantiations: each translation unit defines the entry of
// one (tile, output dtype, activation-scale major) so they compile in parallel.
#pragma once

#include <cstddef>
#include <cstdint>

#include "block_gemm_launch.h"

namespace lowbit::cuda::block_gemm {

struct GemmEntry {
  std::size_t (*workspace_bytes)(const BlockFp8GemmProblem&);
  void (*run)(const BlockFp8GemmProblem&, const float* a_scales, std::int64_t stride_m,
              std::int64_t stride_k, void* workspace, cudaStream_t stream);
};

template <BlockGemmTile kTile, DType kOut, bool kActScalesMMajor>
const GemmEntry& entry();

}  // namespace lowbit::cuda::block_gemm

// Defines entry<TILE, OUT, M_MAJOR>() from a BlockFp8Gemm instantiation (one per .cu file).
#define LOWBIT_BLOCK_GEMM_ENTRY(TILE, OUT, M_MAJOR, INSTANCE)                           \
  template <>                                                                          \
  const GemmEntry& entry<TILE, OUT, M_MAJOR>() {                                       \
    using Instance = LOWBIT_BLOCK_GEMM_UNPAREN INSTANCE;                               \
    static const GemmEntry e{&Instance::workspace_bytes, &Instance::run};              \
    return e;                                                                          \
  }
#define LOWBIT_BLOCK_GEMM_UNPAREN(...) __VA_ARGS__
