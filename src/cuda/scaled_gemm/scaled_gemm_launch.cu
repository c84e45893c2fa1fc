// Dispatch of the scaled GEMM to its CUTLASS instantiations (scaled_gemm_instances.h), and the
// azp adjustment kernel: output[n] = zero_point * sum_k B^[n, k] in int32 (one warp per row).
#include <cuda_runtime.h>

#include "../common/check.cuh"
#include "scaled_gemm_instances.h"
#include "scaled_gemm_launch.h"
#include "scaled_gemv_launch.h"

namespace lowbit::cuda {

namespace {

template <DType kIn, DType kOut>
const scaled_gemm::GemmEntry& entry_for_types(ScaledGemmTile tile) {
  using scaled_gemm::entry;
  switch (tile) {
    case ScaledGemmTile::kMedium64x128: return entry<ScaledGemmTile::kMedium64x128, kIn, kOut>();
    case ScaledGemmTile::kSmall64x64: return entry<ScaledGemmTile::kSmall64x64, kIn, kOut>();
    case ScaledGemmTile::kSwap64x16: return entry<ScaledGemmTile::kSwap64x16, kIn, kOut>();
    case ScaledGemmTile::kSwap64x32: return entry<ScaledGemmTile::kSwap64x32, kIn, kOut>();
    case ScaledGemmTile::kSwap64x64: return entry<ScaledGemmTile::kSwap64x64, kIn, kOut>();
    case ScaledGemmTile::kSwap128x32: return entry<ScaledGemmTile::kSwap128x32, kIn, kOut>();
    case ScaledGemmTile::kSwap192x64: return entry<ScaledGemmTile::kSwap192x64, kIn, kOut>();
    case ScaledGemmTile::kCoop128x192: return entry<ScaledGemmTile::kCoop128x192, kIn, kOut>();
    case ScaledGemmTile::kSwap64x80: return entry<ScaledGemmTile::kSwap64x80, kIn, kOut>();
    case ScaledGemmTile::kSwap128x192: return entry<ScaledGemmTile::kSwap128x192, kIn, kOut>();
    case ScaledGemmTile::kLarge128x128:
    case ScaledGemmTile::kGemvSplitK:
    case ScaledGemmTile::kGemvWgmma:
    case ScaledGemmTile::kGemvTma: break;  // not CUTLASS kernels
  }
  return entry<ScaledGemmTile::kLarge128x128, kIn, kOut>();
}

const scaled_gemm::GemmEntry& entry_for(const ScaledGemmProblem& p, const ScaledGemmConfig& c) {
  const bool int8 = p.ab_dtype == DType::kInt8;
  const bool fp16 = p.d_dtype == DType::kFP16;
  if (int8) {
    return fp16 ? entry_for_types<DType::kInt8, DType::kFP16>(c.tile)
                : entry_for_types<DType::kInt8, DType::kBF16>(c.tile);
  }
  return fp16 ? entry_for_types<DType::kFP8E4M3, DType::kFP16>(c.tile)
              : entry_for_types<DType::kFP8E4M3, DType::kBF16>(c.tile);
}

// One warp per weight row; int8 values summed in int32 (|sum| <= 128 K, K <= 65536).
__global__ void azp_adjustment_kernel(const std::int8_t* __restrict__ b, std::int64_t n,
                                      std::int64_t k, std::int64_t ldb, std::int32_t zero_point,
                                      std::int32_t* __restrict__ output) {
  const std::int64_t row = blockIdx.x * static_cast<std::int64_t>(blockDim.x / 32) + threadIdx.x / 32;
  if (row >= n) return;
  const int lane = threadIdx.x % 32;
  const std::int8_t* values = b + row * ldb;
  std::int32_t sum = 0;
  for (std::int64_t i = lane; i < k; i += 32) sum += values[i];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) output[row] = zero_point * sum;
}

}  // namespace

std::size_t scaled_gemm_workspace_bytes(const ScaledGemmProblem& problem,
                                        const ScaledGemmConfig& config) {
  if (is_gemv(config.tile)) return 0;
  return entry_for(problem, config).workspace_bytes(problem);
}

void launch_scaled_gemm(const ScaledGemmProblem& problem, const ScaledGemmConfig& config,
                        void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  (void)workspace_bytes;
  if (config.tile == ScaledGemmTile::kGemvSplitK) return launch_scaled_gemv(problem, stream);
  if (config.tile == ScaledGemmTile::kGemvWgmma) return launch_scaled_gemv_wgmma(problem, stream);
  if (config.tile == ScaledGemmTile::kGemvTma) return launch_scaled_gemv_tma(problem, stream);
  entry_for(problem, config).run(problem, workspace, stream);
  check_launch("scaled_mm");
}

void launch_scaled_gemm_azp_adjustment(const std::int8_t* b, std::int64_t n, std::int64_t k,
                                       std::int64_t ldb, std::int32_t zero_point,
                                       std::int32_t* output, cudaStream_t stream) {
  constexpr int kThreads = 256;
  constexpr int kRowsPerBlock = kThreads / 32;
  const auto blocks = static_cast<unsigned>((n + kRowsPerBlock - 1) / kRowsPerBlock);
  azp_adjustment_kernel<<<blocks, kThreads, 0, stream>>>(b, n, k, ldb, zero_point, output);
  check_launch("scaled_mm_azp_adjustment");
}

}  // namespace lowbit::cuda
