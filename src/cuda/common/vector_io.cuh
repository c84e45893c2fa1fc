// 16-byte vector loads of 8 consecutive elements as float32, and 8-byte stores of 8 quantized
// bytes. Callers guarantee the alignment (checked in the op layer).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

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

__device__ __forceinline__ uint4 load_shared_16b(const void* pointer) {
  return *static_cast<const uint4*>(pointer);
}

// 8 elements from 16 bytes of bf16 / fp16 words (element 2i is the low half of word i).
__device__ __forceinline__ void unpack8(Bf16Tag, const uint4 (&raw)[1], float (&x)[8]) {
  const std::uint32_t words[4] = {raw[0].x, raw[0].y, raw[0].z, raw[0].w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    x[2 * i] = __uint_as_float(words[i] << 16);
    x[2 * i + 1] = __uint_as_float(words[i] & 0xFFFF0000u);
  }
}

__device__ __forceinline__ void unpack8(Fp16Tag, const uint4 (&raw)[1], float (&x)[8]) {
  const std::uint32_t words[4] = {raw[0].x, raw[0].y, raw[0].z, raw[0].w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    __half2 pair;
    memcpy(&pair, &words[i], sizeof(pair));
    const float2 values = __half22float2(pair);
    x[2 * i] = values.x;
    x[2 * i + 1] = values.y;
  }
}

__device__ __forceinline__ void unpack8(Fp32Tag, const uint4 (&raw)[2], float (&x)[8]) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    x[4 * half + 0] = __uint_as_float(raw[half].x);
    x[4 * half + 1] = __uint_as_float(raw[half].y);
    x[4 * half + 2] = __uint_as_float(raw[half].z);
    x[4 * half + 3] = __uint_as_float(raw[half].w);
  }
}

// Bytes per element of each input type (fp32, or bf16/fp16).
template <typename InTag>
inline constexpr int kInputBytes = std::is_same_v<InTag, Fp32Tag> ? 4 : 2;

// 16-byte words that hold 8 elements of each input type.
template <typename InTag>
inline constexpr int kWordsPer8 = std::is_same_v<InTag, Fp32Tag> ? 2 : 1;

// 8 consecutive elements as float32, from global memory (streaming) or shared memory.
template <typename InTag>
__device__ __forceinline__ void load8_as_float(InTag tag, const void* pointer, float (&x)[8]) {
  uint4 raw[kWordsPer8<InTag>];
#pragma unroll
  for (int w = 0; w < kWordsPer8<InTag>; ++w) {
    raw[w] = load_streaming_16b(static_cast<const uint4*>(pointer) + w);
  }
  unpack8(tag, raw, x);
}

template <typename InTag>
__device__ __forceinline__ void load8_shared_as_float(InTag tag, const void* pointer,
                                                      float (&x)[8]) {
  uint4 raw[kWordsPer8<InTag>];
#pragma unroll
  for (int w = 0; w < kWordsPer8<InTag>; ++w) {
    raw[w] = load_shared_16b(static_cast<const uint4*>(pointer) + w);
  }
  unpack8(tag, raw, x);
}

// quantize_pair / quantize_quad: 2 or 4 codes, the first in the low byte.
// int8: round half to even, saturate to [-128, 127], NaN -> 0, in one cvt per value (the
// upper 16 bits of a pair are unspecified).
__device__ __forceinline__ std::uint32_t quantize_pair(Int8Tag, float first, float second) {
  std::uint32_t a, b;
  asm("cvt.rni.sat.s8.f32 %0, %1;" : "=r"(a) : "f"(first));
  asm("cvt.rni.sat.s8.f32 %0, %1;" : "=r"(b) : "f"(second));
  return __byte_perm(a, b, 0x0040);  // byte 0: a, byte 1: b (upper bytes unused)
}

// fp8 e4m3fn, round-to-nearest-even, saturating: two cvt per 4 codes, each writing one half of
// the word (F2FP's merge form), so no mask or byte permute is needed to combine the pairs.
__device__ __forceinline__ std::uint32_t quantize_quad(Fp8E4M3Tag, float q0, float q1, float q2,
                                                       float q3) {
  std::uint32_t word;
  asm("{\n\t.reg .b16 low, high;\n\t"
      "cvt.rn.satfinite.e4m3x2.f32 low, %2, %1;\n\t"   // first operand -> upper byte
      "cvt.rn.satfinite.e4m3x2.f32 high, %4, %3;\n\t"
      "mov.b32 %0, {low, high};\n\t}"
      : "=r"(word)
      : "f"(q0), "f"(q1), "f"(q2), "f"(q3));
  return word;
}

__device__ __forceinline__ std::uint32_t quantize_quad(Int8Tag tag, float q0, float q1, float q2,
                                                       float q3) {
  return __byte_perm(quantize_pair(tag, q0, q1), quantize_pair(tag, q2, q3), 0x5410);
}

template <typename OutTag>
__device__ __forceinline__ void store8_quantized(OutTag tag, void* pointer, const float (&q)[8]) {
  *static_cast<uint2*>(pointer) = make_uint2(quantize_quad(tag, q[0], q[1], q[2], q[3]),
                                             quantize_quad(tag, q[4], q[5], q[6], q[7]));
}

}  // namespace lowbit::cuda
