// Decode path of block_fp8_mm on wgmma (M <= 32 tokens, sm_90a): the split-K GEMV of
// common/gemv_wgmma.cuh with DeepSeek-V3 block scaling. A 128-deep step is exactly one scale
// block along K and a block's 64 weight rows lie in one 128-row scale block, so each step's
// fp32 tensor-core sum (accumulated by wgmma from zero) is promoted into the registers with
// As[m, kb] * Bs[n / 128, kb], loaded with the step's operands. Scales are read through their
// strides (any A-scale layout); no workspace.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../common/check.cuh"
#include "../common/gemv_wgmma.cuh"
#include "block_fp8_gemv_launch.h"
#include "block_fp8_gemv_policy.cuh"

namespace lowbit::cuda {

namespace {

static_assert(gemv_wgmma::kStepK == 128 && 128 % gemv_wgmma::kRowsPerWarpgroup == 0,
              "a step must be one scale block along K and a block's rows one along N");

// Weight steps in flight per warpgroup: 4 (8 KB per warp) for 8 tokens; the partial sums and
// scales of more tokens leave room for 3 at 16 and 2 at 32 (more spills).
template <int kTiles>
inline constexpr int kStepsInFlight = kTiles == 1 ? 4 : kTiles == 2 ? 3 : 2;

template <typename Out, int kTiles>
__global__ void __launch_bounds__(gemv_wgmma::kMaxWarpgroups * 128)
    block_fp8_gemv_wgmma_kernel(const BlockFp8GemmProblem p) {
  extern __shared__ __align__(128) unsigned char shared_bytes[];
  const gemv_wgmma::Operands operands{static_cast<const std::uint8_t*>(p.b), p.ldb, p.n,
                                      static_cast<const std::uint8_t*>(p.a), p.lda, p.m, p.k};
  const std::int64_t steps = (p.k + gemv_wgmma::kStepK - 1) / gemv_wgmma::kStepK;
  const std::int64_t row_block =
      static_cast<std::int64_t>(blockIdx.x) * gemv_wgmma::kRowsPerWarpgroup / 128;
  using Policy = block_fp8_gemv::BlockScaledPolicy<Out, kTiles>;
  const Policy policy{p, p.b_scales + row_block * steps, steps};
  gemv_wgmma::run<Policy, kTiles, kStepsInFlight<kTiles>>(operands, policy, shared_bytes);
}

template <typename Out, int kTiles>
cudaError_t launch_tiles(const BlockFp8GemmProblem& p, cudaStream_t stream) {
  const gemv_wgmma::Split split = gemv_wgmma::choose_split(p.n, p.k, kTiles, p.sm_count);
  return gemv_wgmma::launch("block_fp8_mm", block_fp8_gemv_wgmma_kernel<Out, kTiles>, p, p.n,
                            p.k, kTiles, split, stream);
}

template <typename Out>
void launch_tokens(const BlockFp8GemmProblem& p, cudaStream_t stream) {
  const cudaError_t status = p.m <= 8    ? launch_tiles<Out, 1>(p, stream)
                             : p.m <= 16 ? launch_tiles<Out, 2>(p, stream)
                                         : launch_tiles<Out, 4>(p, stream);
  check_cuda(status, "block_fp8_mm", "kernel launch");
}

}  // namespace

void launch_block_fp8_gemv_wgmma(const BlockFp8GemmProblem& p, cudaStream_t stream) {
  if (p.d_dtype == DType::kFP32) {
    launch_tokens<float>(p, stream);
  } else {
    launch_tokens<__nv_bfloat16>(p, stream);
  }
  check_launch("block_fp8_mm");
}

}  // namespace lowbit::cuda
