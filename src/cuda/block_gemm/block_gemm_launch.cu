// Dispatch of the block-scaled FP8 GEMM to its kernels, plus the one helper kernel: a copy of
// the activation scales into an M-major workspace layout with 16-byte aligned columns when the
// caller's are not (TMA reads M-major scales and needs 16-byte global strides; lowbit's own tiles
// read M-major scales only).
#include <cuda_runtime.h>

#include "../common/check.cuh"
#include "block_fp8_gemm_tall_launch.h"
#include "block_fp8_gemv_launch.h"
#include "block_gemm_launch.h"
#include "sm90_block_fp8_gemm_instances.h"

namespace lowbit::cuda {

namespace {

constexpr std::size_t kWorkspaceAlign = 256;

std::size_t align_up(std::size_t bytes) {
  return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
}

std::int64_t aligned_scale_stride(std::int64_t m) { return (m + 3) / 4 * 4; }

std::size_t realigned_scale_bytes(const BlockFp8GemmProblem& p, const BlockFp8GemmConfig& c) {
  if (!c.realign_a_scales) return 0;
  const std::int64_t k_blocks = (p.k + 127) / 128;
  return align_up(static_cast<std::size_t>(k_blocks * aligned_scale_stride(p.m)) * sizeof(float));
}

// As(m, kb) at m * stride_m + kb * stride_k -> [k_blocks, round_up(M, 4)]; the padding is
// unread.
__global__ void realign_scales_kernel(const float* __restrict__ scales, std::int64_t stride_m,
                                      std::int64_t stride_k, std::int64_t m,
                                      std::int64_t k_blocks, float* __restrict__ aligned,
                                      std::int64_t aligned_stride) {
  const std::int64_t total = m * k_blocks;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < total; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t kb = i / m, row = i % m;
    aligned[kb * aligned_stride + row] = scales[row * stride_m + kb * stride_k];
  }
}

template <bool kMMajor>
const block_gemm::GemmEntry& entry_for_major(BlockGemmTile tile, DType out) {
  using block_gemm::entry;
  if (out == DType::kFP32) return entry<BlockGemmTile::kPrefill128x128, DType::kFP32, kMMajor>();
  switch (tile) {
    case BlockGemmTile::kDecode32: return entry<BlockGemmTile::kDecode32, DType::kBF16, kMMajor>();
    case BlockGemmTile::kDecode64: return entry<BlockGemmTile::kDecode64, DType::kBF16, kMMajor>();
    case BlockGemmTile::kPrefill64x128Pingpong:
      return entry<BlockGemmTile::kPrefill64x128Pingpong, DType::kBF16, kMMajor>();
    case BlockGemmTile::kPrefill128x128:
    case BlockGemmTile::kGemvSplitK:
    case BlockGemmTile::kGemvWgmma:
    case BlockGemmTile::kGemvTma:
    case BlockGemmTile::kPrefill128x192Multicast:
    case BlockGemmTile::kPrefill128x144Multicast:
    case BlockGemmTile::kPrefill256x128Multicast:
    case BlockGemmTile::kSplitK128x128: break;  // not CUTLASS kernels
  }
  return entry<BlockGemmTile::kPrefill128x128, DType::kBF16, kMMajor>();
}

const block_gemm::GemmEntry& entry_for(const BlockFp8GemmProblem& p, const BlockFp8GemmConfig& c) {
  return c.a_scales_m_major ? entry_for_major<true>(c.tile, p.d_dtype)
                            : entry_for_major<false>(c.tile, p.d_dtype);
}

bool is_own_prefill(const BlockFp8GemmProblem& p, const BlockFp8GemmConfig& c) {
  return is_own_prefill(c.tile) && p.d_dtype == DType::kBF16;
}

}  // namespace

std::size_t block_fp8_gemm_workspace_bytes(const BlockFp8GemmProblem& problem,
                                           const BlockFp8GemmConfig& config) {
  if (is_gemv(config.tile)) return 0;
  if (is_own_prefill(problem, config)) return realigned_scale_bytes(problem, config);
  const std::size_t gemm_bytes = entry_for(problem, config).workspace_bytes(problem);
  const std::size_t scale_bytes = realigned_scale_bytes(problem, config);
  if (gemm_bytes == 0 && scale_bytes == 0) return 0;
  return scale_bytes + align_up(gemm_bytes);
}

void launch_block_fp8_gemm(const BlockFp8GemmProblem& problem, const BlockFp8GemmConfig& config,
                           void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  if (config.tile == BlockGemmTile::kGemvSplitK) return launch_block_fp8_gemv(problem, stream);
  if (config.tile == BlockGemmTile::kGemvWgmma) return launch_block_fp8_gemv_wgmma(problem, stream);
  if (config.tile == BlockGemmTile::kGemvTma) return launch_block_fp8_gemv_tma(problem, stream);
  const float* a_scales = problem.a_scales;
  std::int64_t stride_k = problem.a_scale_stride_k;
  const std::size_t scale_bytes = realigned_scale_bytes(problem, config);
  if (config.realign_a_scales) {
    auto* aligned = static_cast<float*>(workspace);
    const std::int64_t k_blocks = (problem.k + 127) / 128;
    const std::int64_t total = problem.m * k_blocks;
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<std::int64_t>((total + threads - 1) / threads, 4096));
    realign_scales_kernel<<<blocks, threads, 0, stream>>>(
        problem.a_scales, problem.a_scale_stride_m, stride_k, problem.m, k_blocks, aligned,
        aligned_scale_stride(problem.m));
    check_launch("block_fp8_mm");
    a_scales = aligned;
    stride_k = aligned_scale_stride(problem.m);
  }
  if (is_own_prefill(problem, config)) {
    if (config.tile == BlockGemmTile::kPrefill256x128Multicast) {
      return launch_block_fp8_gemm_256x128(problem, a_scales, stride_k, stream);
    }
    if (config.tile == BlockGemmTile::kPrefill128x144Multicast) {
      return launch_block_fp8_gemm_128x144(problem, a_scales, stride_k, stream);
    }
    if (config.tile == BlockGemmTile::kSplitK128x128) {
      return launch_block_fp8_gemm_splitk(problem, a_scales, stride_k, stream);
    }
    return launch_block_fp8_gemm_128x192(problem, a_scales, stride_k, stream);
  }
  void* gemm_workspace =
      scale_bytes == 0 ? workspace : static_cast<char*>(workspace) + scale_bytes;
  (void)workspace_bytes;
  entry_for(problem, config).run(problem, a_scales, problem.a_scale_stride_m, stride_k,
                                 gemm_workspace, stream);
  check_launch("block_fp8_mm");
}

}  // namespace lowbit::cuda
