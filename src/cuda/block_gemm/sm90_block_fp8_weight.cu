// 128 x 128 block FP8 weight quantization and dequantization (docs/block_gemm.md) for sm_90a.
// Weight preparation, run once per checkpoint: one CTA per block, amax by a block reduction,
// then every element divided by the block's scale, exactly as the CPU reference does it.
#include <cuda_runtime.h>

#include "../common/check.cuh"
#include "block_fp8_weight_launch.h"
#include "lowbit/formats.h"

namespace lowbit::cuda {

namespace {

constexpr int kBlock = kBlockFp8Block;
constexpr int kThreads = 256;

struct Bf16 { std::uint16_t bits; };
struct Fp16 { std::uint16_t bits; };
__device__ float to_float(float v) { return v; }
__device__ float to_float(Bf16 v) { return bf16_to_float(v.bits); }
__device__ float to_float(Fp16 v) { return fp16_to_float(v.bits); }
__device__ void from_float(float v, float* out) { *out = v; }
__device__ void from_float(float v, Bf16* out) { out->bits = float_to_bf16(v); }
__device__ void from_float(float v, Fp16* out) { out->bits = float_to_fp16(v); }

template <class In>
__global__ void __launch_bounds__(kThreads)
    quantize_weight_kernel(const In* __restrict__ weight, std::int64_t ld_weight,
                           std::uint8_t* __restrict__ output, std::int64_t ld_output,
                           float* __restrict__ scales, std::int64_t rows, std::int64_t cols,
                           float eps) {
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * kBlock;
  const std::int64_t c0 = static_cast<std::int64_t>(blockIdx.x) * kBlock;
  const int block_rows = static_cast<int>((rows - r0 < kBlock ? rows - r0 : kBlock));
  const int block_cols = static_cast<int>((cols - c0 < kBlock ? cols - c0 : kBlock));
  // Each thread walks columns threadIdx.x % 128 of rows threadIdx.x / 128 + 2 i.
  const int col = threadIdx.x % kBlock;
  const int row_start = threadIdx.x / kBlock;
  float amax = 0.0f;
  if (col < block_cols) {
    for (int r = row_start; r < block_rows; r += kThreads / kBlock) {
      const float magnitude = fabsf(to_float(weight[(r0 + r) * ld_weight + c0 + col]));
      amax = magnitude > amax ? magnitude : amax;  // NaN compares false: it never becomes amax
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  }
  __shared__ float warp_amax[kThreads / 32];
  __shared__ float block_scale;
  if (threadIdx.x % 32 == 0) warp_amax[threadIdx.x / 32] = amax;
  __syncthreads();
  if (threadIdx.x == 0) {
    float block_amax = 0.0f;
    for (int w = 0; w < kThreads / 32; ++w) block_amax = fmaxf(block_amax, warp_amax[w]);
    const float scale = fmaxf(block_amax, eps) / kFP8E4M3Max;
    block_scale = scale;
    scales[blockIdx.y * static_cast<std::int64_t>(gridDim.x) + blockIdx.x] = scale;
  }
  __syncthreads();
  const float scale = block_scale;
  if (col >= block_cols) return;
  for (int r = row_start; r < block_rows; r += kThreads / kBlock) {
    const float w = to_float(weight[(r0 + r) * ld_weight + c0 + col]);
    output[(r0 + r) * ld_output + c0 + col] = float_to_fp8_e4m3(w / scale, Saturation::kFinite);
  }
}

template <class Out>
__global__ void __launch_bounds__(kThreads)
    dequantize_weight_kernel(const std::uint8_t* __restrict__ weight, std::int64_t ld_weight,
                             const float* __restrict__ scales, Out* __restrict__ output,
                             std::int64_t ld_output, std::int64_t rows, std::int64_t cols) {
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * kBlock;
  const std::int64_t c0 = static_cast<std::int64_t>(blockIdx.x) * kBlock;
  const int block_rows = static_cast<int>((rows - r0 < kBlock ? rows - r0 : kBlock));
  const int block_cols = static_cast<int>((cols - c0 < kBlock ? cols - c0 : kBlock));
  const int col = threadIdx.x % kBlock;
  if (col >= block_cols) return;
  const float scale = scales[blockIdx.y * static_cast<std::int64_t>(gridDim.x) + blockIdx.x];
  for (int r = threadIdx.x / kBlock; r < block_rows; r += kThreads / kBlock) {
    const float q = fp8_e4m3_to_float(weight[(r0 + r) * ld_weight + c0 + col]);
    from_float(q * scale, &output[(r0 + r) * ld_output + c0 + col]);
  }
}

dim3 block_grid(std::int64_t rows, std::int64_t cols) {
  return dim3(static_cast<unsigned>((cols + kBlock - 1) / kBlock),
              static_cast<unsigned>((rows + kBlock - 1) / kBlock));
}

std::int64_t row_stride(const TensorView& t) { return t.shape[0] > 1 ? t.strides[0] : t.shape[1]; }

}  // namespace

void launch_block_fp8_quantize_weight(const BlockFp8QuantizeWeightArgs& args, cudaStream_t stream) {
  const std::int64_t rows = args.weight.shape[0], cols = args.weight.shape[1];
  const dim3 grid = block_grid(rows, cols);
  auto* out = static_cast<std::uint8_t*>(args.output.data);
  auto* scales = static_cast<float*>(args.scales.data);
  const std::int64_t ld_in = row_stride(args.weight), ld_out = row_stride(args.output);
  switch (args.weight.dtype) {
    case DType::kBF16:
      quantize_weight_kernel<<<grid, kThreads, 0, stream>>>(
          static_cast<const Bf16*>(args.weight.data), ld_in, out, ld_out, scales, rows, cols,
          args.eps);
      break;
    case DType::kFP16:
      quantize_weight_kernel<<<grid, kThreads, 0, stream>>>(
          static_cast<const Fp16*>(args.weight.data), ld_in, out, ld_out, scales, rows, cols,
          args.eps);
      break;
    default:
      quantize_weight_kernel<<<grid, kThreads, 0, stream>>>(
          static_cast<const float*>(args.weight.data), ld_in, out, ld_out, scales, rows, cols,
          args.eps);
      break;
  }
  check_launch("block_fp8_quantize_weight");
}

void launch_block_fp8_dequantize_weight(const BlockFp8DequantizeWeightArgs& args,
                                        cudaStream_t stream) {
  const std::int64_t rows = args.weight.shape[0], cols = args.weight.shape[1];
  const dim3 grid = block_grid(rows, cols);
  const auto* in = static_cast<const std::uint8_t*>(args.weight.data);
  const auto* scales = static_cast<const float*>(args.scales.data);
  const std::int64_t ld_in = row_stride(args.weight), ld_out = row_stride(args.output);
  switch (args.output.dtype) {
    case DType::kBF16:
      dequantize_weight_kernel<<<grid, kThreads, 0, stream>>>(
          in, ld_in, scales, static_cast<Bf16*>(args.output.data), ld_out, rows, cols);
      break;
    case DType::kFP16:
      dequantize_weight_kernel<<<grid, kThreads, 0, stream>>>(
          in, ld_in, scales, static_cast<Fp16*>(args.output.data), ld_out, rows, cols);
      break;
    default:
      dequantize_weight_kernel<<<grid, kThreads, 0, stream>>>(
          in, ld_in, scales, static_cast<float*>(args.output.data), ld_out, rows, cols);
      break;
  }
  check_launch("block_fp8_dequantize_weight");
}

}  // namespace lowbit::cuda
