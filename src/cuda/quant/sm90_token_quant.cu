// Per-token and per-tensor quantization for sm_90a (recipes: docs/quant.md; bit-identical to
// src/reference/token_quant.cpp).
//
// per-token: one block per row. Pass 1 reads the row with 16-byte loads (4 in flight per thread)
// and reduces amax (or min and max) over the block; pass 2 reads the row again, which an L2 of
// 50-60 MB still holds (a row is at most K * 4 bytes and ~2k rows are in flight), and writes.
// per-tensor: an amax kernel (grid-stride, one atomicMax per block into a 4-byte workspace
// zeroed by cudaMemsetAsync) and an elementwise quantize kernel that derives the scale from
// the workspace, so nothing synchronizes the host.
#include <cuda_runtime.h>

#include <cstdint>

#include "../../common/asymmetric_int8.h"
#include "../common/check.cuh"
#include "../common/device_properties.cuh"
#include "../common/dispatch.cuh"
#include "../common/exact_division.cuh"
#include "../common/vector_io.cuh"
#include "lowbit/formats.h"
#include "token_quant_launch.h"

namespace lowbit::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kUnroll = 4;

template <typename InTag>
inline constexpr int kInBytes = std::is_same_v<InTag, Fp32Tag> ? 4 : 2;

// Block-wide reduction of one float with `op`; every thread gets the result.
template <typename Op>
__device__ float block_reduce(float value, Op op, float* scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    value = op(value, __shfl_xor_sync(0xFFFFFFFFu, value, offset));
  }
  __syncthreads();  // scratch may still be read from a previous reduction
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = value;
  __syncthreads();
  value = scratch[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) value = op(value, scratch[w]);
  return value;
}

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct MinOp {
  __device__ float operator()(float a, float b) const { return fminf(a, b); }
};

// Calls visit(v, x) for every 8-element vector v of a row this thread owns (v = threadIdx.x,
// + kThreads, ...), with kUnroll 16-byte loads issued before the first visit.
template <typename InTag, typename Visit>
__device__ __forceinline__ void for_each_row_vector(const char* row, int vectors, Visit&& visit) {
  for (int base = threadIdx.x; base < vectors; base += kThreads * kUnroll) {
    float x[kUnroll][8];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int v = base + u * kThreads;
      if (v < vectors) load8_as_float(InTag{}, row + v * 8 * kInBytes<InTag>, x[u]);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int v = base + u * kThreads;
      if (v < vectors) visit(v, x[u]);
    }
  }
}

template <typename InTag, typename OutTag, bool kAsymmetric>
__global__ void __launch_bounds__(kThreads)
    per_token_quant_kernel(RowQuantParams p, float* scales, std::int32_t* zero_points,
                           float amax_bound, float qmax) {
  __shared__ float scratch[kWarps];
  const std::int64_t row = blockIdx.x;
  const char* in = static_cast<const char*>(p.input) + row * p.input_row_stride * kInBytes<InTag>;
  char* out = static_cast<char*>(p.output) + row * p.output_row_stride;
  const int vectors = static_cast<int>(p.cols / 8);

  // Pass 1: amax, or min and max (fminf/fmaxf drop NaN).
  float amax = 0.0f;
  float lo = __int_as_float(0x7F800000);
  float hi = -lo;
  for_each_row_vector<InTag>(in, vectors, [&](int, const float (&x)[8]) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      amax = fmaxf(amax, fabsf(x[i]));
      lo = fminf(lo, x[i]);
      hi = fmaxf(hi, x[i]);
    }
  });

  float scale;
  std::int32_t zero_point = 0;
  if constexpr (kAsymmetric) {
    lo = block_reduce(lo, MinOp{}, scratch);
    hi = block_reduce(hi, MaxOp{}, scratch);
    const detail::AsymmetricParams params = detail::asymmetric_int8_params(lo, hi, p.eps);
    scale = params.scale;
    zero_point = params.zero_point;
    amax = fmaxf(fabsf(lo), fabsf(hi));
  } else {
    amax = block_reduce(amax, MaxOp{}, scratch);
    scale = __fdiv_rn(fmaxf(fminf(amax, amax_bound), p.eps), qmax);
  }
  if (threadIdx.x == 0) {
    scales[row] = scale;
    if constexpr (kAsymmetric) zero_points[row] = zero_point;
  }
  const SharedDivisor divisor = make_shared_divisor(scale, amax);

  // Pass 2: quantize (the row comes from L2), kUnroll loads in flight per thread as in pass 1.
  for_each_row_vector<InTag>(in, vectors, [&](int v, const float (&x)[8]) {
    float q[8];
    divide_group(x, divisor, q);
    if constexpr (kAsymmetric) {
      std::uint32_t words[2] = {0, 0};
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const std::uint32_t code =
            static_cast<std::uint8_t>(detail::asymmetric_int8_code(q[i], zero_point));
        words[i / 4] |= code << (8 * (i % 4));
      }
      *reinterpret_cast<uint2*>(out + v * 8) = make_uint2(words[0], words[1]);
    } else {
      store8_quantized(OutTag{}, out + v * 8, q);
    }
  });
}

// ---- per-tensor ---------------------------------------------------------------------------------

template <typename InTag>
__global__ void __launch_bounds__(kThreads)
    tensor_amax_kernel(RowQuantParams p, std::uint32_t* amax_bits) {
  __shared__ float scratch[kWarps];
  const std::int64_t vectors_per_row = p.cols / 8;
  const std::int64_t total = p.rows * vectors_per_row;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kThreads;
  float amax = 0.0f;
  for (std::int64_t base = blockIdx.x * static_cast<std::int64_t>(kThreads) + threadIdx.x;
       base < total; base += stride * kUnroll) {
    float x[kUnroll][8];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t v = base + u * stride;
      if (v >= total) continue;
      const std::int64_t row = v / vectors_per_row;
      const std::int64_t col = (v - row * vectors_per_row) * 8;
      load8_as_float(InTag{},
                     static_cast<const char*>(p.input) +
                         (row * p.input_row_stride + col) * kInBytes<InTag>,
                     x[u]);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + u * stride >= total) continue;
#pragma unroll
      for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(x[u][i]));
    }
  }
  amax = block_reduce(amax, MaxOp{}, scratch);
  // Non-negative floats order like their bit patterns.
  if (threadIdx.x == 0) atomicMax(amax_bits, __float_as_uint(amax));
}

template <typename InTag, typename OutTag>
__global__ void __launch_bounds__(kThreads)
    tensor_quant_kernel(RowQuantParams p, float* scale_slot, const std::uint32_t* amax_bits,
                        float amax_bound, float qmax) {
  float scale;
  if (amax_bits != nullptr) {  // dynamic: every block derives the same scale
    const float amax = __uint_as_float(*amax_bits);
    scale = __fdiv_rn(fmaxf(fminf(amax, amax_bound), p.eps), qmax);
    if (blockIdx.x == 0 && threadIdx.x == 0) *scale_slot = scale;
  } else {
    scale = *scale_slot;
  }
  const std::int64_t vectors_per_row = p.cols / 8;
  const std::int64_t v = blockIdx.x * static_cast<std::int64_t>(kThreads) + threadIdx.x;
  if (v >= p.rows * vectors_per_row) return;
  const std::int64_t row = v / vectors_per_row;
  const std::int64_t col = (v - row * vectors_per_row) * 8;
  float x[8], q[8];
  load8_as_float(InTag{},
                 static_cast<const char*>(p.input) + (row * p.input_row_stride + col) * kInBytes<InTag>,
                 x);
  float local_amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) local_amax = fmaxf(local_amax, fabsf(x[i]));
  divide_group(x, make_shared_divisor(scale, local_amax), q);
  store8_quantized(OutTag{}, static_cast<char*>(p.output) + row * p.output_row_stride + col, q);
}

float qmax_of(DType output) { return output == DType::kFP8E4M3 ? kFP8E4M3Max : kInt8Max; }

}  // namespace

void launch_per_token_quant(const char* op, const RowQuantParams& p, float* scales,
                            std::int32_t* zero_points, float amax_bound, cudaStream_t stream) {
  if (p.rows == 0 || p.cols == 0) return;
  dispatch_float_input(op, p.input_dtype, [&](auto in_tag) {
    using In = decltype(in_tag);
    if (zero_points != nullptr) {
      per_token_quant_kernel<In, Int8Tag, true><<<static_cast<unsigned>(p.rows), kThreads, 0,
                                                  stream>>>(p, scales, zero_points, amax_bound,
                                                            kInt8Max);
      return;
    }
    dispatch_quantized_output(op, p.output_dtype, [&](auto out_tag) {
      per_token_quant_kernel<In, decltype(out_tag), false>
          <<<static_cast<unsigned>(p.rows), kThreads, 0, stream>>>(
              p, scales, nullptr, amax_bound, qmax_of(p.output_dtype));
    });
  });
  check_launch(op);
}

void launch_per_tensor_quant(const char* op, const RowQuantParams& p, float* scale, bool dynamic,
                             float amax_bound, std::uint32_t* amax_workspace,
                             cudaStream_t stream) {
  if (p.rows == 0 || p.cols == 0) return;
  const std::int64_t vectors = p.rows * (p.cols / 8);
  const std::int64_t quant_blocks = (vectors + kThreads - 1) / kThreads;
  dispatch_float_input(op, p.input_dtype, [&](auto in_tag) {
    using In = decltype(in_tag);
    if (dynamic) {
      check_cuda(cudaMemsetAsync(amax_workspace, 0, sizeof(std::uint32_t), stream), op,
                 "cudaMemsetAsync");
      const std::int64_t wanted = (vectors + kThreads * kUnroll - 1) / (kThreads * kUnroll);
      const std::int64_t blocks =
          std::min<std::int64_t>(wanted, std::int64_t{current_device_sm_count(op)} * 8);
      tensor_amax_kernel<In><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
          p, amax_workspace);
    }
    dispatch_quantized_output(op, p.output_dtype, [&](auto out_tag) {
      tensor_quant_kernel<In, decltype(out_tag)>
          <<<static_cast<unsigned>(quant_blocks), kThreads, 0, stream>>>(
              p, scale, dynamic ? amax_workspace : nullptr, amax_bound, qmax_of(p.output_dtype));
    });
  });
  check_launch(op);
}

}  // namespace lowbit::cuda
