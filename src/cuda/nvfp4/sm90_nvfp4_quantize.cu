// NVFP4 weight quantization and dequantization for sm_90a, bit-identical to
// src/reference/nvfp4.cpp (recipe: docs/nvfp4.md, float32 steps in src/common/nvfp4_recipe.h).
// Weight preparation runs once per load, so the kernels favour plainness: an amax pass (one
// atomicMax per warp into a 4-byte workspace zeroed by cudaMemsetAsync, no host sync), then one
// thread per 16-element block reading the amax and writing 8 code bytes and one scale byte.
#include <cuda_runtime.h>

#include <cstdint>

#include "../../common/nvfp4_recipe.h"
#include "../common/check.cuh"
#include "../common/dispatch.cuh"
#include "../common/vector_io.cuh"
#include "lowbit/formats.h"
#include "nvfp4_launch.h"

namespace lowbit::cuda {

namespace {

constexpr int kThreads = 256;
constexpr char kQuantizeOp[] = "nvfp4_quantize_weight";
constexpr char kDequantizeOp[] = "nvfp4_dequantize_weight";

template <typename InTag>
inline constexpr int kElementBytes = std::is_same_v<InTag, Fp32Tag> ? 4 : 2;

// The 16 elements of block b (row-major over rows x cols / 16) as float32.
template <typename InTag>
__device__ __forceinline__ void load_block(const Nvfp4QuantizeParams& p, std::int64_t b,
                                           float (&x)[16]) {
  const std::int64_t blocks_per_row = p.cols / 16;
  const std::int64_t row = b / blocks_per_row;
  const char* at = static_cast<const char*>(p.weight) +
                   (row * p.row_stride + (b - row * blocks_per_row) * 16) * kElementBytes<InTag>;
  float half[8];
  load8_as_float(InTag{}, at, half);
#pragma unroll
  for (int i = 0; i < 8; ++i) x[i] = half[i];
  load8_as_float(InTag{}, at + 8 * kElementBytes<InTag>, half);
#pragma unroll
  for (int i = 0; i < 8; ++i) x[8 + i] = half[i];
}

template <typename InTag>
__global__ void __launch_bounds__(kThreads) nvfp4_amax_kernel(Nvfp4QuantizeParams p) {
  const std::int64_t blocks = p.rows * (p.cols / 16);
  float amax = 0.0f;
  for (std::int64_t b = blockIdx.x * static_cast<std::int64_t>(kThreads) + threadIdx.x; b < blocks;
       b += static_cast<std::int64_t>(gridDim.x) * kThreads) {
    float x[16];
    load_block<InTag>(p, b, x);
#pragma unroll
    for (int i = 0; i < 16; ++i) amax = fmaxf(amax, fabsf(x[i]));  // fmaxf drops NaN
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, offset));
  }
  // Non-negative floats order like their bit patterns.
  if (threadIdx.x % 32 == 0) atomicMax(p.amax_bits, __float_as_uint(amax));
}

template <typename InTag>
__global__ void __launch_bounds__(kThreads) nvfp4_quantize_kernel(Nvfp4QuantizeParams p) {
  float global;
  if (p.global_scale_is_input) {
    global = *p.global_scale;
  } else {  // every thread derives the same global scale from the amax
    global = detail::nvfp4_global_scale(__uint_as_float(*p.amax_bits));
    if (blockIdx.x == 0 && threadIdx.x == 0) *p.global_scale = global;
  }
  const std::int64_t b = blockIdx.x * static_cast<std::int64_t>(kThreads) + threadIdx.x;
  if (b >= p.rows * (p.cols / 16)) return;
  float x[16];
  load_block<InTag>(p, b, x);
  float block_amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) block_amax = fmaxf(block_amax, fabsf(x[i]));
  const std::uint8_t code = detail::nvfp4_block_scale_code(block_amax, global);
  const float block_scale = fp8_e4m3_to_float(code);
  std::uint32_t words[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    words[i / 8] |= static_cast<std::uint32_t>(detail::nvfp4_quantize_value(x[i], block_scale, global))
                    << (4 * (i % 8));
  }
  reinterpret_cast<uint2*>(p.packed)[b] = make_uint2(words[0], words[1]);
  p.block_scales[b] = code;
}

template <typename OutTag>
__global__ void __launch_bounds__(kThreads) nvfp4_dequantize_kernel(Nvfp4DequantizeParams p) {
  const std::int64_t b = blockIdx.x * static_cast<std::int64_t>(kThreads) + threadIdx.x;
  if (b >= p.rows * (p.cols / 16)) return;
  const uint2 codes = reinterpret_cast<const uint2*>(p.packed)[b];
  const float block_scale = fp8_e4m3_to_float(p.block_scales[b]);
  const float global = *p.global_scale;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const std::uint32_t word = i < 8 ? codes.x : codes.y;
    const float w = detail::nvfp4_dequantize_value(
        static_cast<std::uint8_t>((word >> (4 * (i % 8))) & 0xF), block_scale, global);
    const std::int64_t at = b * 16 + i;
    if constexpr (std::is_same_v<OutTag, Fp32Tag>) {
      static_cast<float*>(p.output)[at] = w;
    } else if constexpr (std::is_same_v<OutTag, Bf16Tag>) {
      static_cast<std::uint16_t*>(p.output)[at] = float_to_bf16(w);
    } else {
      static_cast<std::uint16_t*>(p.output)[at] = float_to_fp16(w);
    }
  }
}

unsigned grid_for(std::int64_t items) {
  return static_cast<unsigned>((items + kThreads - 1) / kThreads);
}

}  // namespace

void launch_nvfp4_quantize_weight(const Nvfp4QuantizeParams& p, cudaStream_t stream) {
  const std::int64_t blocks = p.rows * (p.cols / 16);
  if (blocks == 0) return;
  dispatch_float_input(kQuantizeOp, p.dtype, [&](auto in_tag) {
    using In = decltype(in_tag);
    if (!p.global_scale_is_input) {
      check_cuda(cudaMemsetAsync(p.amax_bits, 0, sizeof(std::uint32_t), stream), kQuantizeOp,
                 "cudaMemsetAsync");
      const unsigned amax_grid = static_cast<unsigned>(std::min<std::int64_t>(grid_for(blocks), 4096));
      nvfp4_amax_kernel<In><<<amax_grid, kThreads, 0, stream>>>(p);
    }
    nvfp4_quantize_kernel<In><<<grid_for(blocks), kThreads, 0, stream>>>(p);
  });
  check_launch(kQuantizeOp);
}

void launch_nvfp4_dequantize_weight(const Nvfp4DequantizeParams& p, cudaStream_t stream) {
  const std::int64_t blocks = p.rows * (p.cols / 16);
  if (blocks == 0) return;
  dispatch_float_input(kDequantizeOp, p.dtype, [&](auto out_tag) {
    nvfp4_dequantize_kernel<decltype(out_tag)><<<grid_for(blocks), kThreads, 0, stream>>>(p);
  });
  check_launch(kDequantizeOp);
}

}  // namespace lowbit::cuda
