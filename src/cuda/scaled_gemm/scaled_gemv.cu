// Decode path of scaled_mm (M <= 32 tokens): a split-K tensor-core GEMV (common/gemv_mma.cuh).
// Each block owns 32 weight rows; its warps take every warps-th 128-deep K step, so the whole
// weight streams once with no 64-token padding, no workspace and no second pass. The warps'
// partial sums meet in shared memory in a fixed order and the epilogue of docs/scaled_gemm.md
// runs on the totals.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "../common/check.cuh"
#include "../common/gemv_mma.cuh"
#include "../common/kernel_launch.cuh"
#include "scaled_gemv_epilogue.cuh"
#include "scaled_gemv_launch.h"

namespace lowbit::cuda {

namespace {

using gemv::kRowTiles;
using gemv::kStepK;

using scaled_gemv::store_output;

// 32 tokens need more than 128 registers, so their blocks stop at 8 warps.
template <int kTokenTiles>
inline constexpr int kMaxWarps = kTokenTiles > 2 ? kScaledGemvMaxWarps / 2 : kScaledGemvMaxWarps;

template <typename Acc, typename Out, int kTokenTiles>
__global__ void __launch_bounds__(kMaxWarps<kTokenTiles> * 32)
    scaled_gemv_kernel(const ScaledGemmProblem p) {
  extern __shared__ unsigned char shared_bytes[];
  // Every load below may read the previous kernel's output: under programmatic dependent launch
  // only the launch and this block's start overlap that kernel (common/kernel_launch.cuh).
  allow_dependent_launch();
  wait_for_prerequisite_grids();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * gemv::kRowsPerWarp;
  const gemv::LaneOperands<kTokenTiles> operands(static_cast<const std::uint8_t*>(p.b), p.ldb,
                                                 p.n, row0, static_cast<const std::uint8_t*>(p.a),
                                                 p.lda, p.m, lane);
  Acc acc[kRowTiles][kTokenTiles][4];
  gemv::zero(acc);
  const std::int64_t steps = (p.k + kStepK - 1) / kStepK;
  // Two steps per iteration keep 8 KB of weight loads in flight per warp (one for 32 tokens,
  // whose operands would not fit twice in registers).
  constexpr int kStepsInFlight = kTokenTiles > 2 ? 1 : 2;
  for (std::int64_t s = warp; s < steps; s += kStepsInFlight * warps) {
    gemv::StepFragments<kTokenTiles> fragments[kStepsInFlight];
#pragma unroll
    for (int f = 0; f < kStepsInFlight; ++f) {
      gemv::load_step(operands, (s + f * warps) * kStepK, p.k, fragments[f]);
    }
    if constexpr (std::is_integral_v<Acc>) {
#pragma unroll
      for (int f = 0; f < kStepsInFlight; ++f) gemv::multiply_step(fragments[f], acc);  // exact
    } else {
      // fp8: the tensor-core sum of these steps is promoted into the fp32 total, as
      // block_fp8_mm does every 128 of K, instead of accumulating the whole K in the MMA.
      Acc partial[kRowTiles][kTokenTiles][4];
      gemv::zero(partial);
#pragma unroll
      for (int f = 0; f < kStepsInFlight; ++f) gemv::multiply_step(fragments[f], partial);
#pragma unroll
      for (int r = 0; r < kRowTiles; ++r)
#pragma unroll
        for (int j = 0; j < kTokenTiles; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[r][j][i] += partial[r][j][i];
    }
  }
  gemv::reduce_over_warps(acc, reinterpret_cast<Acc*>(shared_bytes), [&](int v, Acc sum) {
    const gemv::ValueCoordinates at = gemv::coordinates_of<kTokenTiles>(v);
    const std::int64_t n = row0 + gemv::fragment_row(lane, at.row_tile, at.i);
    const std::int64_t m = gemv::fragment_token(lane, at.token_tile, at.i);
    if (n >= p.n || m >= p.m) return;
    store_output<Acc, Out>(p, n, m, sum);
  });
}

template <typename Acc, typename Out, int kTokenTiles>
void launch_typed(const ScaledGemmProblem& p, int warps, cudaStream_t stream) {
  const auto kernel = scaled_gemv_kernel<Acc, Out, kTokenTiles>;
  const std::size_t shared_per_warp = gemv::kLaneValues<kTokenTiles> * 32 * sizeof(Acc);
  const auto blocks = static_cast<unsigned>((p.n + gemv::kRowsPerWarp - 1) / gemv::kRowsPerWarp);
  static gemv::ResidencyCache<kMaxWarps<kTokenTiles>> residency;  // this kernel's own
  warps = gemv::warps_for_one_wave(residency, kernel, std::min(warps, kMaxWarps<kTokenTiles>),
                                   blocks, p.sm_count, shared_per_warp);
  const std::size_t shared = static_cast<std::size_t>(warps) * shared_per_warp;
  KernelLaunch shape;
  shape.grid = dim3(blocks);
  shape.threads = static_cast<unsigned>(warps) * 32;
  shape.shared_bytes = shared;
  shape.dependent = p.dependent_launch;
  check_cuda(launch_kernel(kernel, p, shape, stream), "scaled_mm", "kernel launch (gemv_split_k)");
}

template <typename Acc, typename Out>
void launch_tokens(const ScaledGemmProblem& p, int warps, cudaStream_t stream) {
  if (p.m <= 8) return launch_typed<Acc, Out, 1>(p, warps, stream);
  if (p.m <= 16) return launch_typed<Acc, Out, 2>(p, warps, stream);
  launch_typed<Acc, Out, 4>(p, warps, stream);
}

}  // namespace

void launch_scaled_gemv(const ScaledGemmProblem& p, cudaStream_t stream) {
  const int warps = gemv::warps_per_block(p.n, p.k, p.sm_count, kScaledGemvMaxWarps);
  const bool int8 = p.ab_dtype == DType::kInt8;
  const bool fp16 = p.d_dtype == DType::kFP16;
  if (int8) {
    fp16 ? launch_tokens<int, __half>(p, warps, stream)
         : launch_tokens<int, __nv_bfloat16>(p, warps, stream);
  } else {
    fp16 ? launch_tokens<float, __half>(p, warps, stream)
         : launch_tokens<float, __nv_bfloat16>(p, warps, stream);
  }
  check_launch("scaled_mm");
}

}  // namespace lowbit::cuda
