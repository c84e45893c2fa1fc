// Decode path of scaled_mm on wgmma fed by TMA (M <= 64 tokens, sm_90a): the GEMV of
// common/gemv_tma.cuh, 64 weight rows per block, K split over cluster blocks, then the epilogue
// of docs/scaled_gemm.md on the totals. fp8 reaches the tensor core as fp8, each 128-deep step's
// sum promoted into fp32 registers; int8 accumulates exactly in int32. No workspace.
// TMA's 16-byte aligned rows of A and B are checked by the op (scaled_gemm.cpp).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "../common/check.cuh"
#include "../common/gemv_tma.cuh"
#include "scaled_gemv_launch.h"
#include "scaled_gemv_policy.cuh"

namespace lowbit::cuda {

namespace {

struct TmaParams {
  gemv_tma::Maps maps;
  ScaledGemmProblem p;
  gemv_tma::Plan plan;
};

template <typename Acc, typename Out, int kTiles>
__global__ void __launch_bounds__(128)
    scaled_gemv_tma_kernel(const __grid_constant__ TmaParams params) {
  extern __shared__ __align__(1024) unsigned char shared_bytes[];
  const ScaledGemmProblem& p = params.p;
  gemv_tma::run<scaled_gemv::ScaledPolicy<Acc, Out>, kTiles>(
      params.maps, p.n, p.m, p.k, params.plan, scaled_gemv::ScaledPolicy<Acc, Out>{p},
      shared_bytes);
}

template <typename Acc, typename Out, int kTiles>
cudaError_t launch_tiles(const ScaledGemmProblem& p, cudaStream_t stream) {
  TmaParams params{};
  params.p = p;
  params.plan = gemv_tma::choose_plan(p.n, p.k, kTiles, p.sm_count,
                                      p.dependent_launch ? gemv_tma::DependentRing::kShortBlocks
                                                         : gemv_tma::DependentRing::kStream);
  if (!gemv_tma::encode_maps(params.maps, p.b, p.n, p.ldb, p.a, p.m, p.lda, p.k, kTiles,
                             params.plan)) {
    return cudaErrorInvalidValue;
  }
  return gemv_tma::launch(scaled_gemv_tma_kernel<Acc, Out, kTiles>, params, p.n, kTiles,
                          params.plan, p.dependent_launch, stream);
}

template <typename Acc, typename Out>
void launch_tokens(const ScaledGemmProblem& p, cudaStream_t stream) {
  const cudaError_t status = p.m <= 8    ? launch_tiles<Acc, Out, 1>(p, stream)
                             : p.m <= 16 ? launch_tiles<Acc, Out, 2>(p, stream)
                             : p.m <= 32 ? launch_tiles<Acc, Out, 4>(p, stream)
                                         : launch_tiles<Acc, Out, 8>(p, stream);
  check_cuda(status, "scaled_mm", "kernel launch (gemv_tma)");
}

}  // namespace

void launch_scaled_gemv_tma(const ScaledGemmProblem& p, cudaStream_t stream) {
  const bool fp16 = p.d_dtype == DType::kFP16;
  if (p.ab_dtype == DType::kInt8) {
    fp16 ? launch_tokens<int, __half>(p, stream)
         : launch_tokens<int, __nv_bfloat16>(p, stream);
  } else {
    fp16 ? launch_tokens<float, __half>(p, stream)
         : launch_tokens<float, __nv_bfloat16>(p, stream);
  }
  check_launch("scaled_mm");
}

}  // namespace lowbit::cuda
