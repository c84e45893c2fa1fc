// Our scalar codecs (lowbit/formats.h) against CUDA's own host-side converters in cuda_fp8.h,
// cuda_fp4.h, cuda_bf16.h and cuda_fp16.h: every code decoded, and float32 inputs encoded over
// a strided sweep of all bit patterns plus, for each format, every representable value, every
// midpoint between neighbours (the ties) and the float32 neighbours of both.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "lowbit/formats.h"

namespace lowbit {
namespace {

bool same_float(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return float_bits(a) == float_bits(b);
}

float half_raw_to_float(__half_raw raw) { return __half2float(__half(raw)); }

// Inputs that probe every rounding boundary of a format whose decoded values are `values`.
std::vector<float> probe_inputs(const std::vector<float>& values) {
  std::vector<float> probes;
  auto add_with_neighbours = [&](float x) {
    const std::uint32_t bits = float_bits(x);
    for (int delta = -2; delta <= 2; ++delta) {
      probes.push_back(bits_float(bits + delta));
      probes.push_back(-bits_float(bits + delta));
    }
  };
  std::vector<float> finite;
  for (float v : values) {
    if (std::isfinite(v)) finite.push_back(v);
  }
  std::sort(finite.begin(), finite.end());
  finite.erase(std::unique(finite.begin(), finite.end()), finite.end());
  for (std::size_t i = 0; i < finite.size(); ++i) {
    add_with_neighbours(finite[i]);
    // The midpoint to the next value is the tie; past the largest value, the midpoint to where
    // the next binade step would be is the overflow tie.
    const double next = i + 1 < finite.size()
                            ? double(finite[i + 1])
                            : double(finite[i]) + (double(finite[i]) - double(finite[i - 1]));
    add_with_neighbours(static_cast<float>((double(finite[i]) + next) / 2.0));
  }
  // A strided sweep of all float32 bit patterns: every exponent, sign, NaN and Inf region.
  for (std::uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 1021) {
    probes.push_back(bits_float(static_cast<std::uint32_t>(bits)));
  }
  for (std::uint32_t special : {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u,
                                0x00000001u, 0x80000001u, 0x007FFFFFu, 0x7F7FFFFFu, 0x0u,
                                0x80000000u}) {
    probes.push_back(bits_float(special));
  }
  return probes;
}

std::vector<float> decoded_values(int code_count, float (*decode)(std::uint8_t)) {
  std::vector<float> values;
  for (int code = 0; code < code_count; ++code) values.push_back(decode(code));
  return values;
}

TEST(FormatsVsCudaHost, Fp8E4M3DecodeEveryCode) {
  for (int code = 0; code < 256; ++code) {
    const float cuda =
        half_raw_to_float(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(code), __NV_E4M3));
    EXPECT_TRUE(same_float(fp8_e4m3_to_float(code), cuda)) << "code " << code;
  }
}

TEST(FormatsVsCudaHost, Fp8E5M2DecodeEveryCode) {
  for (int code = 0; code < 256; ++code) {
    const float cuda =
        half_raw_to_float(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(code), __NV_E5M2));
    EXPECT_TRUE(same_float(fp8_e5m2_to_float(code), cuda)) << "code " << code;
  }
}

TEST(FormatsVsCudaHost, E2M1DecodeEveryCode) {
  for (int code = 0; code < 16; ++code) {
    const float cuda = half_raw_to_float(
        __nv_cvt_fp4_to_halfraw(static_cast<__nv_fp4_storage_t>(code), __NV_E2M1));
    EXPECT_TRUE(same_float(e2m1_to_float(code), cuda)) << "code " << code;
  }
}

TEST(FormatsVsCudaHost, Ue8m0DecodeEveryCode) {
  for (int code = 0; code < 256; ++code) {
    const __nv_bfloat16_raw raw = __nv_cvt_e8m0_to_bf16raw(static_cast<__nv_fp8_storage_t>(code));
    const float cuda = __bfloat162float(__nv_bfloat16(raw));
    EXPECT_TRUE(same_float(ue8m0_to_float(code), cuda)) << "code " << code;
  }
}

TEST(FormatsVsCudaHost, Fp16AndBf16DecodeEveryCode) {
  for (std::uint32_t code = 0; code < 65536; ++code) {
    __half_raw h;
    h.x = static_cast<unsigned short>(code);
    ASSERT_TRUE(same_float(fp16_to_float(code), __half2float(__half(h)))) << "fp16 code " << code;
    __nv_bfloat16_raw b;
    b.x = static_cast<unsigned short>(code);
    ASSERT_TRUE(same_float(bf16_to_float(code), __bfloat162float(__nv_bfloat16(b))))
        << "bf16 code " << code;
  }
}

template <typename Ours, typename Theirs>
void expect_same_codes(const std::vector<float>& inputs, Ours ours, Theirs theirs,
                       const char* what) {
  int failures = 0;
  for (float x : inputs) {
    const unsigned a = ours(x);
    const unsigned b = theirs(x);
    if (a != b && ++failures <= 10) {
      ADD_FAILURE() << what << ": input 0x" << std::hex << float_bits(x) << " (" << x
                    << ") ours 0x" << a << " cuda 0x" << b;
    }
  }
  EXPECT_EQ(failures, 0) << what;
}

TEST(FormatsVsCudaHost, Fp8E4M3Encode) {
  const auto inputs = probe_inputs(decoded_values(256, fp8_e4m3_to_float));
  expect_same_codes(inputs, [](float x) { return float_to_fp8_e4m3(x, Saturation::kFinite); },
      [](float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); },
      "e4m3 satfinite");
  expect_same_codes(inputs, [](float x) { return float_to_fp8_e4m3(x, Saturation::kNone); },
      [](float x) { return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3); }, "e4m3 nosat");
}

TEST(FormatsVsCudaHost, Fp8E5M2Encode) {
  const auto inputs = probe_inputs(decoded_values(256, fp8_e5m2_to_float));
  expect_same_codes(inputs, [](float x) { return float_to_fp8_e5m2(x, Saturation::kFinite); },
      [](float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2); },
      "e5m2 satfinite");
  expect_same_codes(inputs, [](float x) { return float_to_fp8_e5m2(x, Saturation::kNone); },
      [](float x) { return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2); }, "e5m2 nosat");
}

TEST(FormatsVsCudaHost, E2M1Encode) {
  const auto inputs = probe_inputs(decoded_values(16, e2m1_to_float));
  expect_same_codes(inputs, [](float x) { return float_to_e2m1(x); },
      [](float x) { return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest); }, "e2m1");
}

TEST(FormatsVsCudaHost, Ue8m0Encode) {
  const auto inputs = probe_inputs(decoded_values(256, ue8m0_to_float));
  expect_same_codes(inputs, [](float x) { return float_to_ue8m0(x, ScaleRounding::kDown); },
      [](float x) { return __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundZero); },
      "ue8m0 toward zero");
  expect_same_codes(inputs, [](float x) { return float_to_ue8m0(x, ScaleRounding::kUp); },
      [](float x) { return __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundPosInf); },
      "ue8m0 up");
}

TEST(FormatsVsCudaHost, Bf16AndFp16Encode) {
  std::vector<float> some_values;
  for (std::uint32_t code = 0; code < 65536; code += 7) some_values.push_back(fp16_to_float(code));
  const auto fp16_inputs = probe_inputs(some_values);
  expect_same_codes(fp16_inputs, [](float x) { return float_to_fp16(x); },
      [](float x) { return unsigned(__half_as_ushort(__float2half_rn(x))); }, "fp16");
  some_values.clear();
  for (std::uint32_t code = 0; code < 65536; code += 7) some_values.push_back(bf16_to_float(code));
  const auto bf16_inputs = probe_inputs(some_values);
  expect_same_codes(bf16_inputs, [](float x) { return float_to_bf16(x); },
      [](float x) { return unsigned(__bfloat16_as_ushort(__float2bfloat16_rn(x))); }, "bf16");
}

}  // namespace
}  // namespace lowbit
