// Decode path of block_fp8_mm (M <= 32 tokens): the split-K tensor-core GEMV of
// common/gemv_mma.cuh with DeepSeek-V3 block scaling. A 128-deep K step is exactly one scale
// block, and a block's 32 weight rows lie in one 128-row scale block, so each step's fp32
// tensor-core sum is promoted into the total with
// As[m, kb] * Bs[n / 128, kb]. The warps of a
// block split K; their totals meet in shared memory in a fixed order. No workspace: scales are
// read through their strides, whatever the layout.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "../common/check.cuh"
#include "../common/gemv_mma.cuh"
#include "../common/kernel_launch.cuh"
#include "block_fp8_gemv_launch.h"

namespace lowbit::cuda {

namespace {

using gemv::kRowTiles;
using gemv::kStepK;

static_assert(kStepK == 128 && 128 % gemv::kRowsPerWarp == 0,
              "a step must be one scale block along K and a block's rows one along N");

// Register budget per thread: 8 tokens fit in 128 (16 warps), 16 tokens need about 170 (12
// warps), 32 tokens about 190 (8 warps).
template <int kTokenTiles>
inline constexpr int kMaxWarps = kTokenTiles == 1 ? kBlockFp8GemvMaxWarps
                                 : kTokenTiles == 2 ? kBlockFp8GemvMaxWarps * 3 / 4
                                                    : kBlockFp8GemvMaxWarps / 2;

// The lane's activation scales of one step: tokens 2t and 2t + 1 of each token tile, times the
// weight block's scale; zero for a step past the end or a token past M (their sums are zero).
template <int kTokenTiles>
__device__ __forceinline__ void load_step_scales(const BlockFp8GemmProblem& p, const float* b_scales,
                                                 std::int64_t step, std::int64_t steps, int lane,
                                                 float (&scale)[kTokenTiles][2]) {
  const bool in_k = step < steps;
  const float b_scale = in_k ? __ldg(b_scales + step) : 0.0f;
#pragma unroll
  for (int j = 0; j < kTokenTiles; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const std::int64_t m = gemv::fragment_token(lane, j, e);
      scale[j][e] = in_k && m < p.m
                        ? __ldg(p.a_scales + m * p.a_scale_stride_m + step * p.a_scale_stride_k) * b_scale
                        : 0.0f;
    }
}

template <typename Out, int kTokenTiles>
__global__ void __launch_bounds__(kMaxWarps<kTokenTiles> * 32)
    block_fp8_gemv_kernel(const BlockFp8GemmProblem p) {
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
  const std::int64_t steps = (p.k + kStepK - 1) / kStepK;
  const float* b_scales = p.b_scales + (row0 / 128) * steps;
  float acc[kRowTiles][kTokenTiles][4];
  gemv::zero(acc);
  constexpr int kStepsInFlight = kTokenTiles > 2 ? 1 : 2;
  for (std::int64_t s = warp; s < steps; s += kStepsInFlight * warps) {
    gemv::StepFragments<kTokenTiles> fragments[kStepsInFlight];
    float scale[kStepsInFlight][kTokenTiles][2];
#pragma unroll
    for (int f = 0; f < kStepsInFlight; ++f) {
      gemv::load_step(operands, (s + f * warps) * kStepK, p.k, fragments[f]);
      load_step_scales(p, b_scales, s + f * warps, steps, lane, scale[f]);
    }
#pragma unroll
    for (int f = 0; f < kStepsInFlight; ++f) {
      float partial[kRowTiles][kTokenTiles][4];
      gemv::zero(partial);
      gemv::multiply_step(fragments[f], partial);
#pragma unroll
      for (int r = 0; r < kRowTiles; ++r)
#pragma unroll
        for (int j = 0; j < kTokenTiles; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[r][j][i] = fmaf(partial[r][j][i], scale[f][j][i % 2], acc[r][j][i]);
    }
  }
  gemv::reduce_over_warps(acc, reinterpret_cast<float*>(shared_bytes), [&](int v, float sum) {
    const gemv::ValueCoordinates at = gemv::coordinates_of<kTokenTiles>(v);
    const std::int64_t n = row0 + gemv::fragment_row(lane, at.row_tile, at.i);
    const std::int64_t m = gemv::fragment_token(lane, at.token_tile, at.i);
    if (n >= p.n || m >= p.m) return;
    Out* out = static_cast<Out*>(p.d) + m * p.ldd + n;
    if constexpr (std::is_same_v<Out, float>) {
      *out = sum;
    } else {
      *out = __float2bfloat16_rn(sum);
    }
  });
}

template <typename Out, int kTokenTiles>
void launch_typed(const BlockFp8GemmProblem& p, int warps, cudaStream_t stream) {
  const auto kernel = block_fp8_gemv_kernel<Out, kTokenTiles>;
  const std::size_t shared_per_warp = gemv::kLaneValues<kTokenTiles> * 32 * sizeof(float);
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
  check_cuda(launch_kernel(kernel, p, shape, stream),
             "block_fp8_mm", "kernel launch (gemv_split_k)");
}

template <typename Out>
void launch_tokens(const BlockFp8GemmProblem& p, int warps, cudaStream_t stream) {
  if (p.m <= 8) return launch_typed<Out, 1>(p, warps, stream);
  if (p.m <= 16) return launch_typed<Out, 2>(p, warps, stream);
  launch_typed<Out, 4>(p, warps, stream);
}

}  // namespace

void launch_block_fp8_gemv(const BlockFp8GemmProblem& p, cudaStream_t stream) {
  const int warps = gemv::warps_per_block(p.n, p.k, p.sm_count, kBlockFp8GemvMaxWarps);
  if (p.d_dtype == DType::kFP32) {
    launch_tokens<float>(p, warps, stream);
  } else {
    launch_tokens<__nv_bfloat16>(p, warps, stream);
  }
  check_launch("block_fp8_mm");
}

}  // namespace lowbit::cuda
