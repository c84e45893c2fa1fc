// 16-byte vector loads of 8 consecutive elements as float32, and 8-byte stores of 8 quantized
// bytes. Callers guarantee the alignment (checked in the op layer).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace lowbit::cuda {

struct Bf16Tag {};
struct Fp16Tag {};
struct Fp32Tag {};
struct Fp8E4M3Tag {};
struct Int8Tag {};

// Streaming load: the input is read exactly once, so keep it from displacing useful L2 lines.
__device__ __forceinline__ uint4 load_streaming_16b(const void* pointer) {
  return __ldcs(static_cast<const uint4*>(pointer));
}

__device__ __forceinline__ void load8_as_float(Bf16Tag, const void* pointer, float (&x)[8]) {
  const uint4 raw = load_streaming_16b(pointer);
  const std::uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    x[2 * i] = __uint_as_float(words[i] << 16);  // element 2i is the low half
    x[2 * i + 1] = __uint_as_float(words[i] & 0xFFFF0000u);
  }
}

__device__ __forceinline__ void load8_as_float(Fp16Tag, const void* pointer, float (&x)[8]) {
  const uint4 raw = load_streaming_16b(pointer);
  const std::uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    __half2 pair;
    memcpy(&pair, &words[i], sizeof(pair));
    const float2 values = __half22float2(pair);
    x[2 * i] = values.x;
    x[2 * i + 1] = values.y;
  }
}

__device__ __forceinline__ void load8_as_float(Fp32Tag, const void* pointer, float (&x)[8]) {
  const float* floats = static_cast<const float*>(pointer);
  const uint4 low = load_streaming_16b(floats);
  const uint4 high = load_streaming_16b(floats + 4);
  x[0] = __uint_as_float(low.x);
  x[1] = __uint_as_float(low.y);
  x[2] = __uint_as_float(low.z);
  x[3] = __uint_as_float(low.w);
  x[4] = __uint_as_float(high.x);
  x[5] = __uint_as_float(high.y);
  x[6] = __uint_as_float(high.z);
  x[7] = __uint_as_float(high.w);
}

// fp8 e4m3fn, round-to-nearest-even, saturating (cvt.rn.satfinite.e4m3x2.f32).
__device__ __forceinline__ std::uint32_t quantize_pair(Fp8E4M3Tag, float first, float second) {
  return __nv_cvt_float2_to_fp8x2(make_float2(first, second), __NV_SATFINITE, __NV_E4M3);
}

// int8: round half to even, saturate to [-128, 127], NaN -> 0.
__device__ __forceinline__ std::uint32_t quantize_pair(Int8Tag, float first, float second) {
  const int a = min(max(__float2int_rn(first), -128), 127);
  const int b = min(max(__float2int_rn(second), -128), 127);
  return (static_cast<std::uint32_t>(a) & 0xFFu) | ((static_cast<std::uint32_t>(b) & 0xFFu) << 8);
}

template <typename OutTag>
__device__ __forceinline__ void store8_quantized(OutTag tag, void* pointer, const float (&q)[8]) {
  std::uint32_t packed[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const std::uint32_t low = quantize_pair(tag, q[4 * half], q[4 * half + 1]);
    const std::uint32_t high = quantize_pair(tag, q[4 * half + 2], q[4 * half + 3]);
    packed[half] = (low & 0xFFFFu) | (high << 16);
  }
  *static_cast<uint2*>(pointer) = make_uint2(packed[0], packed[1]);
}

}  // namespace lowbit::cuda
