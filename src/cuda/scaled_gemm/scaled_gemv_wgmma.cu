// Decode path of scaled_mm on wgmma (M <= 32 tokens, sm_90a): the split-K GEMV of
// common/gemv_wgmma.cuh, 64 weight rows per block, K split over warpgroups and cluster blocks,
// then the epilogue of docs/scaled_gemm.md on the totals. fp8 reaches the tensor core as fp8
// (mma.sync would convert every code first), each 128-deep step's sum promoted into fp32
// registers; int8 accumulates exactly in int32. No workspace.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../common/check.cuh"
#include "../common/gemv_wgmma.cuh"
#include "scaled_gemv_epilogue.cuh"
#include "scaled_gemv_launch.h"
#include "scaled_gemv_policy.cuh"

namespace lowbit::cuda {

namespace {

// Weight steps in flight per warpgroup: 4 (8 KB per warp) where the registers allow; fp8's
// per-step partial sums leave room for 3 at 16 tokens and 2 at 32 (more spills).
template <typename Acc, int kTiles>
inline constexpr int kStepsInFlight =
    kTiles == 1 || (std::is_integral_v<Acc> && kTiles == 2) ? 4 : kTiles == 2 ? 3 : 2;

template <typename Acc, typename Out, int kTiles>
__global__ void __launch_bounds__(gemv_wgmma::kMaxWarpgroups * 128)
    scaled_gemv_wgmma_kernel(const ScaledGemmProblem p) {
  extern __shared__ __align__(128) unsigned char shared_bytes[];
  const gemv_wgmma::Operands operands{static_cast<const std::uint8_t*>(p.b), p.ldb, p.n,
                                      static_cast<const std::uint8_t*>(p.a), p.lda, p.m, p.k};
  gemv_wgmma::run<scaled_gemv::ScaledPolicy<Acc, Out>, kTiles, kStepsInFlight<Acc, kTiles>>(
      operands, scaled_gemv::ScaledPolicy<Acc, Out>{p}, shared_bytes);
}

template <typename Acc, typename Out, int kTiles>
cudaError_t launch_tiles(const ScaledGemmProblem& p, cudaStream_t stream) {
  const gemv_wgmma::Split split = gemv_wgmma::choose_split(p.n, p.k, kTiles, p.sm_count);
  return gemv_wgmma::launch("scaled_mm", scaled_gemv_wgmma_kernel<Acc, Out, kTiles>, p, p.n, p.k,
                            kTiles, split, stream);
}

template <typename Acc, typename Out>
void launch_tokens(const ScaledGemmProblem& p, cudaStream_t stream) {
  const cudaError_t status = p.m <= 8    ? launch_tiles<Acc, Out, 1>(p, stream)
                             : p.m <= 16 ? launch_tiles<Acc, Out, 2>(p, stream)
                                         : launch_tiles<Acc, Out, 4>(p, stream);
  check_cuda(status, "scaled_mm", "kernel launch");
}

}  // namespace

void launch_scaled_gemv_wgmma(const ScaledGemmProblem& p, cudaStream_t stream) {
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
