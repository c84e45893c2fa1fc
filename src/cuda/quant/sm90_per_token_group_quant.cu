// per_token_group_quant for sm_90a: [M, K] bf16/fp16/fp32 -> fp8 e4m3fn or int8 in 1 x G groups
// with one fp32 scale per group (recipe: docs/quant.md; bit-identical to
// src/reference/quant.cpp).
//
// Memory-bound: 2 bytes in, 1 byte out per element for bf16. Each thread owns 8 consecutive
// elements of a group per chunk (one 16-byte load for 16-bit inputs); G / 8 adjacent lanes
// share a group and reduce its amax with warp shuffles, so nothing touches shared memory and a
// warp's loads are 512 contiguous bytes. Groups are numbered row-major over the whole tensor;
// a block covers kChunks consecutive passes of 256 threads, and every thread issues all its
// chunk loads before using any (latency hiding; see quant_heuristics.cpp).
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

constexpr int kThreads = 256;
constexpr int kElementsPerThread = 8;

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

template <typename InTag, typename OutTag, int kGroup, int kChunks>
__global__ void __launch_bounds__(kThreads) per_token_group_quant_kernel(KernelParams p) {
  constexpr int kThreadsPerGroup = kGroup / kElementsPerThread;  // 4, 8 or 16 lanes
  constexpr int kGroupsPerPass = kThreads / kThreadsPerGroup;
  constexpr int kInputBytes = std::is_same_v<InTag, Fp32Tag> ? 4 : 2;

  const int lane = threadIdx.x % kThreadsPerGroup;
  const std::uint32_t first_group =
      blockIdx.x * (kGroupsPerPass * kChunks) + threadIdx.x / kThreadsPerGroup;

  // Row and group-in-row of each chunk: one division, then steps of kGroupsPerPass.
  std::uint32_t row[kChunks];
  std::uint32_t group_in_row[kChunks];
  row[0] = first_group / p.groups_per_row;
  group_in_row[0] = first_group - row[0] * p.groups_per_row;
#pragma unroll
  for (int c = 1; c < kChunks; ++c) {
    row[c] = row[c - 1];
    group_in_row[c] = group_in_row[c - 1] + kGroupsPerPass;
    while (group_in_row[c] >= p.groups_per_row) {
      group_in_row[c] -= p.groups_per_row;
      ++row[c];
    }
  }

  // Issue every load before using any. Inactive chunks hold zeros and still join the shuffles
  // (full-warp masks), so no lane returns early.
  float x[kChunks][kElementsPerThread];
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const bool active = first_group + c * kGroupsPerPass < p.total_groups;
    if (active) {
      const std::int64_t column =
          static_cast<std::int64_t>(group_in_row[c]) * kGroup + lane * kElementsPerThread;
      load8_as_float(InTag{}, p.input + row[c] * p.input_row_bytes + column * kInputBytes, x[c]);
    } else {
#pragma unroll
      for (int i = 0; i < kElementsPerThread; ++i) x[c][i] = 0.0f;
    }
  }

#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < kElementsPerThread; ++i) amax = fmaxf(amax, fabsf(x[c][i]));  // drops NaN
#pragma unroll
    for (int offset = kThreadsPerGroup / 2; offset > 0; offset /= 2) {
      amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, offset));
    }
    float scale = __fdiv_rn(fmaxf(fminf(amax, p.amax_bound), p.eps), p.qmax);
    if (p.power_of_two_scale) scale = round_scale_up_to_power_of_two(scale);

    if (first_group + c * kGroupsPerPass >= p.total_groups) continue;
    const SharedDivisor divisor = make_shared_divisor(scale);
    float q[kElementsPerThread];
    divide_all(x[c], divisor, q);
    const std::int64_t column =
        static_cast<std::int64_t>(group_in_row[c]) * kGroup + lane * kElementsPerThread;
    store8_quantized(OutTag{}, p.output + row[c] * p.output_row_bytes + column, q);
    if (lane == 0) {
      p.scales[row[c] * p.scale_stride_row + group_in_row[c] * p.scale_stride_group] = scale;
    }
  }
}

}  // namespace

void launch_per_token_group_quant(const PerTokenGroupQuantParams& params, cudaStream_t stream) {
  constexpr const char* kOp = "per_token_group_quant";
  const std::int64_t groups_per_row = params.cols / params.group_size;
  const std::int64_t total_groups = params.rows * groups_per_row;
  if (total_groups == 0) return;
  const GroupQuantConfig config = choose_group_quant_config(
      kOp, total_groups, params.group_size, current_device_sm_count(kOp));

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

  dispatch_float_input(kOp, params.input_dtype, [&](auto in_tag) {
    dispatch_quantized_output(kOp, params.output_dtype, [&](auto out_tag) {
      dispatch_group_size(kOp, params.group_size, [&](auto group) {
        dispatch_chunks(kOp, config.chunks_per_thread, [&](auto chunks) {
          constexpr int kGroup = decltype(group)::value;
          constexpr int kChunks = decltype(chunks)::value;
          constexpr int kGroupsPerBlock = kThreads / (kGroup / kElementsPerThread) * kChunks;
          const std::int64_t blocks = (total_groups + kGroupsPerBlock - 1) / kGroupsPerBlock;
          per_token_group_quant_kernel<decltype(in_tag), decltype(out_tag), kGroup, kChunks>
              <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p);
        });
      });
    });
  });
  check_launch(kOp);
}

}  // namespace lowbit::cuda
