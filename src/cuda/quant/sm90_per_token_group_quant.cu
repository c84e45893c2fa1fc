// per_token_group_quant for sm_90a: [M, K] bf16/fp16/fp32 -> fp8 e4m3fn or int8 in 1 x G groups
// with one fp32 scale per group (recipe: docs/quant.md; it matches src/reference/quant.cpp bit
// for bit).
//
// Memory-bound: 2 bytes in, 1 byte out per element for bf16. Each thread owns 8 consecutive
// elements (one 16-byte load per 16-bit input), G / 8 adjacent lanes own a group and reduce
// its amax with warp shuffles, so a group never touches shared memory and a warp's loads are
// 512 contiguous bytes. Groups are numbered row-major over the whole tensor, one grid for all.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "lowbit/formats.h"
#include "../common/check.cuh"
#include "../common/dispatch.cuh"
#include "../common/vector_io.cuh"
#include "per_token_group_quant_launch.h"

namespace lowbit::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kElementsPerThread = 8;
constexpr float kQmax[2] = {448.0f, 127.0f};

struct KernelParams {
  const char* input;  // bytes
  char* output;       // bytes
  float* scales;
  std::uint32_t total_groups;
  std::uint32_t groups_per_row;
  std::int64_t input_row_bytes;
  std::int64_t output_row_bytes;
  std::int64_t scale_stride_row;
  std::int64_t scale_stride_group;
  float eps;
  float amax_bound;
  float qmax;
  bool power_of_two_scale;
};

template <typename InTag, typename OutTag, int kGroup>
__global__ void __launch_bounds__(kThreads) per_token_group_quant_kernel(KernelParams p) {
  constexpr int kThreadsPerGroup = kGroup / kElementsPerThread;  // 4, 8 or 16 lanes
  constexpr int kGroupsPerBlock = kThreads / kThreadsPerGroup;
  constexpr int kInputBytes = std::is_same_v<InTag, Fp32Tag> ? 4 : 2;

  const std::uint32_t group_id =
      blockIdx.x * kGroupsPerBlock + threadIdx.x / kThreadsPerGroup;
  const int lane = threadIdx.x % kThreadsPerGroup;
  // Inactive lanes still take part in the shuffles below (a full-warp mask), so nobody returns.
  const bool active = group_id < p.total_groups;
  const std::uint32_t row = active ? group_id / p.groups_per_row : 0;
  const std::uint32_t group_in_row = active ? group_id - row * p.groups_per_row : 0;
  const std::int64_t column = static_cast<std::int64_t>(group_in_row) * kGroup +
                              lane * kElementsPerThread;

  float x[kElementsPerThread];
  if (active) {
    load8_as_float(InTag{}, p.input + row * p.input_row_bytes + column * kInputBytes, x);
  } else {
#pragma unroll
    for (int i = 0; i < kElementsPerThread; ++i) x[i] = 0.0f;
  }

  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < kElementsPerThread; ++i) amax = fmaxf(amax, fabsf(x[i]));  // drops NaN
#pragma unroll
  for (int offset = kThreadsPerGroup / 2; offset > 0; offset /= 2) {
    amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, offset));
  }

  float scale = __fdiv_rn(fmaxf(fminf(amax, p.amax_bound), p.eps), p.qmax);
  if (p.power_of_two_scale) scale = round_scale_up_to_power_of_two(scale);

  if (!active) return;
  float q[kElementsPerThread];
#pragma unroll
  for (int i = 0; i < kElementsPerThread; ++i) q[i] = __fdiv_rn(x[i], scale);
  store8_quantized(OutTag{}, p.output + row * p.output_row_bytes + column, q);
  if (lane == 0) {
    p.scales[row * p.scale_stride_row + group_in_row * p.scale_stride_group] = scale;
  }
}

}  // namespace

void launch_per_token_group_quant(const PerTokenGroupQuantParams& params, cudaStream_t stream) {
  constexpr const char* kOp = "per_token_group_quant";
  const std::int64_t groups_per_row = params.cols / params.group_size;
  const std::int64_t total_groups = params.rows * groups_per_row;
  if (total_groups == 0) return;

  KernelParams p;
  p.input = static_cast<const char*>(params.input);
  p.output = static_cast<char*>(params.output);
  p.scales = params.scales;
  p.total_groups = static_cast<std::uint32_t>(total_groups);
  p.groups_per_row = static_cast<std::uint32_t>(groups_per_row);
  p.input_row_bytes = params.input_row_stride * static_cast<std::int64_t>(dtype_size(params.input_dtype));
  p.output_row_bytes = params.output_row_stride;  // 1-byte outputs
  p.scale_stride_row = params.scale_stride_row;
  p.scale_stride_group = params.scale_stride_group;
  p.eps = params.eps;
  p.amax_bound = params.amax_bound;
  p.qmax = params.output_dtype == DType::kFP8E4M3 ? kQmax[0] : kQmax[1];
  p.power_of_two_scale = params.power_of_two_scale;

  dispatch_float_input(kOp, params.input_dtype, [&](auto in_tag) {
    dispatch_quantized_output(kOp, params.output_dtype, [&](auto out_tag) {
      dispatch_group_size(kOp, params.group_size, [&](auto group) {
        constexpr int kGroup = decltype(group)::value;
        constexpr int kGroupsPerBlock = kThreads / (kGroup / kElementsPerThread);
        const std::int64_t blocks = (total_groups + kGroupsPerBlock - 1) / kGroupsPerBlock;
        per_token_group_quant_kernel<decltype(in_tag), decltype(out_tag), kGroup>
            <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p);
      });
    });
  });
  check_launch(kOp);
}

}  // namespace lowbit::cuda
