// per_token_group_quant for sm_90a: [M, K] bf16/fp16/fp32 -> fp8 e4m3fn or int8 in 1 x G groups
// with one fp32 scale per group (recipe: docs/quant.md; bit-identical to
// src/reference/quant.cpp).
//
// Memory-bound, and on Hopper close to issue-bound: at 4.8 TB/s an SM sub-partition has ~20
// instructions per element to spend. Per-group work (amax reduction, scale, reciprocal) is
// repeated by every lane of a group, so few lanes share a group: kLanes = G / (8 * kVectors)
// lanes each hold kVectors 16-byte pieces (8 elements each) of one group. Piece j of a lane is
// piece j * kLanes + lane of its group, so each load instruction reads kLanes consecutive
// pieces per group (>= 32 contiguous bytes: whole sectors). The amax is reduced over the lanes
// with shuffles; nothing touches shared memory. Groups are numbered row-major over the tensor.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../common/check.cuh"
#include "../common/device_properties.cuh"
#include "../common/dispatch.cuh"
#include "../common/exact_division.cuh"
#include "../common/vector_io.cuh"
#include "lowbit/formats.h"
#include "per_token_group_quant_launch.h"
#include "quant_heuristics.h"

namespace lowbit::cuda {

namespace {

constexpr int kMaxThreads = 256;
constexpr int kElementsPerVector = 8;

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

template <int kGroup>
struct GroupShape {
  static constexpr int kVectors = kGroup >= 64 ? 4 : 2;  // 16-byte pieces per lane
  static constexpr int kLanes = kGroup / (kElementsPerVector * kVectors);  // 4, 2 or 2
};

template <typename InTag, typename OutTag, int kGroup>
__global__ void __launch_bounds__(kMaxThreads) per_token_group_quant_kernel(KernelParams p) {
  constexpr int kVectors = GroupShape<kGroup>::kVectors;
  constexpr int kLanes = GroupShape<kGroup>::kLanes;
  constexpr int kInputBytes = std::is_same_v<InTag, Fp32Tag> ? 4 : 2;

  const int lane = threadIdx.x % kLanes;
  const std::uint32_t group_id = blockIdx.x * (blockDim.x / kLanes) + threadIdx.x / kLanes;
  // Out-of-range lanes still join the shuffles (full-warp masks), so nobody returns early.
  const bool active = group_id < p.total_groups;
  const std::uint32_t row = active ? group_id / p.groups_per_row : 0;
  const std::uint32_t group_in_row = active ? group_id - row * p.groups_per_row : 0;
  const std::int64_t group_column = static_cast<std::int64_t>(group_in_row) * kGroup;

  float x[kVectors][kElementsPerVector];
  const char* input_row = p.input + row * p.input_row_bytes;
#pragma unroll
  for (int j = 0; j < kVectors; ++j) {
    const std::int64_t column = group_column + (j * kLanes + lane) * kElementsPerVector;
    if (active) {
      load8_as_float(InTag{}, input_row + column * kInputBytes, x[j]);
    } else {
#pragma unroll
      for (int i = 0; i < kElementsPerVector; ++i) x[j][i] = 0.0f;
    }
  }

  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < kVectors; ++j) {
#pragma unroll
    for (int i = 0; i < kElementsPerVector; ++i) amax = fmaxf(amax, fabsf(x[j][i]));  // no NaN
  }
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset /= 2) {
    amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, offset));
  }
  if (!active) return;

  float scale = __fdiv_rn(fmaxf(fminf(amax, p.amax_bound), p.eps), p.qmax);
  if (p.power_of_two_scale) scale = round_scale_up_to_power_of_two(scale);
  const SharedDivisor divisor = make_shared_divisor(scale, amax);

  char* output_row = p.output + row * p.output_row_bytes;
#pragma unroll
  for (int j = 0; j < kVectors; ++j) {
    float q[kElementsPerVector];
    divide_group(x[j], divisor, q);
    const std::int64_t column = group_column + (j * kLanes + lane) * kElementsPerVector;
    store8_quantized(OutTag{}, output_row + column, q);
  }
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
  p.input_row_bytes =
      params.input_row_stride * static_cast<std::int64_t>(dtype_size(params.input_dtype));
  p.output_row_bytes = params.output_row_stride;  // 1-byte outputs
  p.scale_stride_row = params.scale_stride_row;
  p.scale_stride_group = params.scale_stride_group;
  p.eps = params.eps;
  p.amax_bound = params.amax_bound;
  p.qmax = params.output_dtype == DType::kFP8E4M3 ? kFP8E4M3Max : kInt8Max;
  p.power_of_two_scale = params.power_of_two_scale;

  const int sm_count = current_device_sm_count(kOp);
  dispatch_float_input(kOp, params.input_dtype, [&](auto in_tag) {
    dispatch_quantized_output(kOp, params.output_dtype, [&](auto out_tag) {
      dispatch_group_size(kOp, params.group_size, [&](auto group) {
        constexpr int kGroup = decltype(group)::value;
        constexpr int kLanes = GroupShape<kGroup>::kLanes;
        const GroupQuantConfig config =
            choose_group_quant_config(kOp, total_groups, kGroup, kLanes, sm_count);
        const int groups_per_block = config.threads_per_block / kLanes;
        const std::int64_t blocks = (total_groups + groups_per_block - 1) / groups_per_block;
        per_token_group_quant_kernel<decltype(in_tag), decltype(out_tag), kGroup>
            <<<static_cast<unsigned>(blocks), config.threads_per_block, 0, stream>>>(p);
      });
    });
  });
  check_launch(kOp);
}

}  // namespace lowbit::cuda
