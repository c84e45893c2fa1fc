// Decode path of block_fp8_mm on wgmma fed by TMA (M <= 64 tokens, sm_90a): the GEMV of
// common/gemv_tma.cuh with DeepSeek-V3 block scaling. A 128-deep step is exactly one scale
// block along K and a block's 64 weight rows lie in one 128-row scale block, so each step's
// fp32 tensor-core sum is promoted into the registers with As[m, kb] * Bs[n / 128, kb]. Scales
// are read through their strides (any A-scale layout); no workspace. TMA's 16-byte aligned rows
// of A and B are checked by the op (block_gemm.cpp).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "../common/check.cuh"
#include "../common/gemv_tma.cuh"
#include "block_fp8_gemv_launch.h"
#include "block_fp8_gemv_policy.cuh"

namespace lowbit::cuda {

namespace {

static_assert(gemv_tma::kStepK == 128 && 128 % gemv_tma::kRows == 0,
              "a step must be one scale block along K and a block's rows one along N");

struct TmaParams {
  gemv_tma::Maps maps;
  BlockFp8GemmProblem p;
  gemv_tma::Plan plan;
};

template <typename Out, int kTiles>
__global__ void __launch_bounds__(128)
    block_fp8_gemv_tma_kernel(const __grid_constant__ TmaParams params) {
  extern __shared__ __align__(1024) unsigned char shared_bytes[];
  const BlockFp8GemmProblem& p = params.p;
  const std::int64_t steps = (p.k + gemv_tma::kStepK - 1) / gemv_tma::kStepK;
  const std::int64_t row_block = static_cast<std::int64_t>(blockIdx.x) * gemv_tma::kRows / 128;
  using Policy = block_fp8_gemv::BlockScaledPolicy<Out, kTiles>;
  const Policy policy{p, p.b_scales + row_block * steps, steps};
  gemv_tma::run<Policy, kTiles>(params.maps, p.n, p.m, p.k, params.plan, policy, shared_bytes);
}

template <typename Out, int kTiles>
cudaError_t launch_tiles(const BlockFp8GemmProblem& p, cudaStream_t stream) {
  TmaParams params{};
  params.p = p;
  const gemv_tma::DependentRing ring =
      p.dependent_launch ? gemv_tma::DependentRing::kDeeper : gemv_tma::DependentRing::kStream;
  params.plan = gemv_tma::stage_step_scales(
      gemv_tma::choose_plan(p.n, p.k, kTiles, p.sm_count, ring), p.n, p.k, kTiles, p.sm_count);
  if (!gemv_tma::encode_maps(params.maps, p.b, p.n, p.ldb, p.a, p.m, p.lda, p.k, kTiles,
                             params.plan)) {
    return cudaErrorInvalidValue;
  }
  return gemv_tma::launch(block_fp8_gemv_tma_kernel<Out, kTiles>, params, p.n, kTiles,
                          params.plan, p.dependent_launch, stream);
}

template <typename Out>
void launch_tokens(const BlockFp8GemmProblem& p, cudaStream_t stream) {
  const cudaError_t status = p.m <= 8    ? launch_tiles<Out, 1>(p, stream)
                             : p.m <= 16 ? launch_tiles<Out, 2>(p, stream)
                             : p.m <= 32 ? launch_tiles<Out, 4>(p, stream)
                                         : launch_tiles<Out, 8>(p, stream);
  check_cuda(status, "block_fp8_mm", "kernel launch (gemv_tma)");
}

}  // namespace

void launch_block_fp8_gemv_tma(const BlockFp8GemmProblem& p, cudaStream_t stream) {
  if (p.d_dtype == DType::kFP32) {
    launch_tokens<float>(p, stream);
  } else {
    launch_tokens<__nv_bfloat16>(p, stream);
  }
  check_launch("block_fp8_mm");
}

}  // namespace lowbit::cuda
