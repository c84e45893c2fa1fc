// lowbit/formats.h compiled for the device against CUDA's device conversions, over all 2^32
// float32 bit patterns, and against the exact conversion helpers the kernels use
// (src/cuda/common/vector_io.cuh). The CPU suite shows the same source agrees with CUDA's host
// converters; together they tie host reference, device codec and hardware instructions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>

#include "common/device_buffer.cuh"
#include "lowbit/formats.h"
#include "../../src/cuda/common/vector_io.cuh"

namespace lowbit {
namespace {

enum Check : int {
  kE4M3Quad,      // the quant kernels' fp8 packer: cvt.rn.satfinite.e4m3x2.f32 into each half
  kE4M3Sat,
  kE4M3NoSat,
  kE5M2Sat,
  kE5M2NoSat,
  kE2M1,
  kUe8m0Up,
  kUe8m0Down,
  kBf16,
  kFp16,
  kInt8Quad,      // the quant kernels' int8 packer
  kCheckCount,
};
const char* const kCheckNames[kCheckCount] = {
    "e4m3 quad (kernel packer)", "e4m3 satfinite", "e4m3 nosat", "e5m2 satfinite", "e5m2 nosat",
    "e2m1", "ue8m0 up", "ue8m0 toward zero", "bf16", "fp16", "int8 quad (kernel packer)"};

struct Mismatches {
  unsigned long long count[kCheckCount];
  unsigned first_input[kCheckCount];
  unsigned theirs[kCheckCount];
  unsigned ours[kCheckCount];
};

__device__ void record(Mismatches* m, int check, unsigned input, unsigned theirs, unsigned ours) {
  if (theirs == ours) return;
  if (atomicAdd(&m->count[check], 1ull) == 0) {
    m->first_input[check] = input;
    m->theirs[check] = theirs;
    m->ours[check] = ours;
  }
}

__global__ void compare_encoders(std::uint64_t base, Mismatches* m) {
  const std::uint64_t index = base + blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  const unsigned bits = static_cast<unsigned>(index);
  const float x = __uint_as_float(bits);
  // Pair the input with its bit-neighbour's negation so every packer slot sees every input.
  const float partner = -__uint_as_float(bits ^ 0x5A5A5Au);

  // The kernels' 4-code packers: byte i holds the i-th argument.
  const unsigned quad = cuda::quantize_quad(cuda::Fp8E4M3Tag{}, x, partner, partner, x);
  const unsigned x_e4m3 = float_to_fp8_e4m3(x, Saturation::kFinite);
  const unsigned partner_e4m3 = float_to_fp8_e4m3(partner, Saturation::kFinite);
  record(m, kE4M3Quad, bits, quad, x_e4m3 | partner_e4m3 << 8 | partner_e4m3 << 16 | x_e4m3 << 24);
  record(m, kE4M3Sat, bits, __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3),
         float_to_fp8_e4m3(x, Saturation::kFinite));
  record(m, kE4M3NoSat, bits, __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3),
         float_to_fp8_e4m3(x, Saturation::kNone));
  record(m, kE5M2Sat, bits, __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2),
         float_to_fp8_e5m2(x, Saturation::kFinite));
  record(m, kE5M2NoSat, bits, __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2),
         float_to_fp8_e5m2(x, Saturation::kNone));
  record(m, kE2M1, bits, __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest), float_to_e2m1(x));
  record(m, kUe8m0Up, bits, __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundPosInf),
         float_to_ue8m0(x, ScaleRounding::kUp));
  record(m, kUe8m0Down, bits, __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundZero),
         float_to_ue8m0(x, ScaleRounding::kDown));
  record(m, kBf16, bits, __bfloat16_as_ushort(__float2bfloat16_rn(x)), float_to_bf16(x));
  record(m, kFp16, bits, __half_as_ushort(__float2half_rn(x)), float_to_fp16(x));
  const unsigned int8_quad = cuda::quantize_quad(cuda::Int8Tag{}, x, partner, partner, x);
  const unsigned x_int8 = static_cast<std::uint8_t>(float_to_int8(x));
  const unsigned partner_int8 = static_cast<std::uint8_t>(float_to_int8(partner));
  record(m, kInt8Quad, bits, int8_quad, x_int8 | partner_int8 << 8 | partner_int8 << 16 | x_int8 << 24);
}

TEST(FormatsGpu, EncodersMatchCudaForEveryFloat32) {
  testing::DeviceBuffer buffer(sizeof(Mismatches));
  buffer.fill_byte(0);
  Mismatches* device_mismatches = static_cast<Mismatches*>(buffer.data());
  constexpr std::uint64_t kChunk = 1ull << 30;
  for (std::uint64_t base = 0; base < (1ull << 32); base += kChunk) {
    compare_encoders<<<kChunk / 256, 256>>>(base, device_mismatches);
    LOWBIT_TEST_CUDA(cudaGetLastError());
  }
  LOWBIT_TEST_CUDA(cudaDeviceSynchronize());
  Mismatches host;
  LOWBIT_TEST_CUDA(cudaMemcpy(&host, device_mismatches, sizeof(host), cudaMemcpyDeviceToHost));
  const Mismatches* m = &host;
  for (int check = 0; check < kCheckCount; ++check) {
    EXPECT_EQ(m->count[check], 0ull)
        << kCheckNames[check] << ": first mismatch at input 0x" << std::hex << m->first_input[check]
        << " cuda 0x" << m->theirs[check] << " ours 0x" << m->ours[check];
  }
  std::printf("[lowbit] compared %d conversions on all 2^32 float32 inputs\n", kCheckCount);
}

__global__ void decode_every_code(float* out) {
  const unsigned code = threadIdx.x;  // 256 threads
  // Hardware decodes: fp8 -> f16 (cvt.rn.f16x2.e4m3x2), then exact f16 -> f32.
  out[code * 8 + 0] = __half2float(__half(__nv_cvt_fp8_to_halfraw(code, __NV_E4M3)));
  out[code * 8 + 1] = fp8_e4m3_to_float(code);
  out[code * 8 + 2] = __half2float(__half(__nv_cvt_fp8_to_halfraw(code, __NV_E5M2)));
  out[code * 8 + 3] = fp8_e5m2_to_float(code);
  out[code * 8 + 4] = __half2float(__half(__nv_cvt_fp4_to_halfraw(code & 0xF, __NV_E2M1)));
  out[code * 8 + 5] = e2m1_to_float(code);
  out[code * 8 + 6] = __bfloat162float(__nv_bfloat16(__nv_cvt_e8m0_to_bf16raw(code)));
  out[code * 8 + 7] = ue8m0_to_float(code);
}

TEST(FormatsGpu, DecodersMatchCudaForEveryCode) {
  testing::DeviceBuffer out(256 * 8 * sizeof(float));
  decode_every_code<<<1, 256>>>(static_cast<float*>(out.data()));
  LOWBIT_TEST_CUDA(cudaDeviceSynchronize());
  const auto values = out.download<float>();
  const char* names[4] = {"e4m3", "e5m2", "e2m1", "ue8m0"};
  for (int code = 0; code < 256; ++code) {
    for (int f = 0; f < 4; ++f) {
      const float theirs = values[code * 8 + 2 * f];
      const float ours = values[code * 8 + 2 * f + 1];
      const bool same = (theirs != theirs) ? (ours != ours) : float_bits(theirs) == float_bits(ours);
      EXPECT_TRUE(same) << names[f] << " code " << code << ": cuda " << theirs << " ours " << ours;
    }
  }
}

}  // namespace
}  // namespace lowbit
