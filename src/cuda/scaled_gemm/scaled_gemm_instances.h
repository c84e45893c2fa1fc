// Registry of the scaled GEMM instantiations: each translation unit generated from
// sm90_scaled_gemm_instance.cu.in defines the entry of one (tile, input dtype, output dtype), so
// they compile in parallel and the dispatcher includes no CUTLASS header.
#pragma once

#include <cstddef>

#include "scaled_gemm_launch.h"

namespace lowbit::cuda::scaled_gemm {

struct GemmEntry {
  std::size_t (*workspace_bytes)(const ScaledGemmProblem&);
  void (*run)(const ScaledGemmProblem&, void* workspace, cudaStream_t stream);
};

template <ScaledGemmTile kTile, DType kIn, DType kOut>
const GemmEntry& entry();

}  // namespace lowbit::cuda::scaled_gemm
