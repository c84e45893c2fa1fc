// Hand-computed cases for lowbit/formats.h: known codes, ties to even, saturation, specials.
// Independent of CUDA's headers (test_formats_vs_cuda_host.cpp covers agreement with those).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "lowbit/formats.h"

namespace lowbit {
namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(Formats, Fp8E4M3KnownCodes) {
  EXPECT_EQ(float_to_fp8_e4m3(1.0f), 0x38);
  EXPECT_EQ(float_to_fp8_e4m3(-1.0f), 0xB8);
  EXPECT_EQ(float_to_fp8_e4m3(448.0f), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3(64.0f), 0x68);
  EXPECT_EQ(float_to_fp8_e4m3(0.001953125f), 0x01);  // 2^-9, smallest subnormal
  EXPECT_EQ(float_to_fp8_e4m3(0.0009765625f), 0x00);  // 2^-10: tie between 0 and 2^-9 -> even
  EXPECT_EQ(float_to_fp8_e4m3(1.0625f), 0x38);        // tie 1 | 1.125 -> even (1)
  EXPECT_EQ(float_to_fp8_e4m3(1.1875f), 0x3A);        // tie 1.125 | 1.25 -> even (1.25)
  EXPECT_EQ(fp8_e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(fp8_e4m3_to_float(0x01), 0.001953125f);
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0xFF)));
}

TEST(Formats, Fp8E4M3Saturation) {
  EXPECT_EQ(float_to_fp8_e4m3(464.0f, Saturation::kNone), 0x7E);  // tie 448 | 480 -> 448
  EXPECT_EQ(float_to_fp8_e4m3(465.0f, Saturation::kNone), 0x7F);  // overflow -> NaN (no Inf)
  EXPECT_EQ(float_to_fp8_e4m3(465.0f, Saturation::kFinite), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3(-1e30f, Saturation::kFinite), 0xFE);
  EXPECT_EQ(float_to_fp8_e4m3(kInf, Saturation::kFinite), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3(-kInf, Saturation::kFinite), 0xFE);
  EXPECT_EQ(float_to_fp8_e4m3(kNaN), 0x7F);
  EXPECT_EQ(float_to_fp8_e4m3(-kNaN), 0x7F);  // canonical NaN, sign dropped (as CUDA)
}

TEST(Formats, Fp8E5M2) {
  EXPECT_EQ(float_to_fp8_e5m2(1.0f), 0x3C);
  EXPECT_EQ(float_to_fp8_e5m2(57344.0f), 0x7B);
  EXPECT_EQ(float_to_fp8_e5m2(61440.0f, Saturation::kNone), 0x7C);  // tie to even -> Inf
  EXPECT_EQ(float_to_fp8_e5m2(61440.0f, Saturation::kFinite), 0x7B);
  EXPECT_EQ(float_to_fp8_e5m2(-kInf, Saturation::kNone), 0xFC);
  EXPECT_EQ(fp8_e5m2_to_float(0x7C), kInf);
  EXPECT_TRUE(std::isnan(fp8_e5m2_to_float(0x7D)));
}

TEST(Formats, E2M1AllValues) {
  const float values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int code = 0; code < 8; ++code) {
    EXPECT_EQ(e2m1_to_float(code), values[code]);
    EXPECT_EQ(e2m1_to_float(code | 8), -values[code]);
    EXPECT_EQ(float_to_e2m1(values[code]), code);
  }
  EXPECT_EQ(float_to_e2m1(5.0f), 6);    // tie 4 | 6 -> even mantissa (4)
  EXPECT_EQ(float_to_e2m1(2.5f), 4);    // tie 2 | 3 -> 2
  EXPECT_EQ(float_to_e2m1(0.25f), 0);   // tie 0 | 0.5 -> 0
  EXPECT_EQ(float_to_e2m1(100.0f), 7);  // saturates
  EXPECT_EQ(float_to_e2m1(-kInf), 0xF);
  EXPECT_EQ(pack_e2m1x2(0x1, 0xF), 0xF1);  // element 0 in the low nibble
}

TEST(Formats, Ue8m0) {
  EXPECT_EQ(float_to_ue8m0(1.0f, ScaleRounding::kUp), 127);
  EXPECT_EQ(float_to_ue8m0(1.5f, ScaleRounding::kUp), 128);
  EXPECT_EQ(float_to_ue8m0(1.5f, ScaleRounding::kDown), 127);
  EXPECT_EQ(float_to_ue8m0(-1.5f, ScaleRounding::kUp), 128);  // magnitude
  EXPECT_EQ(float_to_ue8m0(kInf, ScaleRounding::kUp), 0xFE);
  EXPECT_EQ(float_to_ue8m0(kNaN, ScaleRounding::kUp), 0xFF);
  EXPECT_EQ(ue8m0_to_float(127), 1.0f);
  EXPECT_EQ(ue8m0_to_float(0), std::ldexp(1.0f, -127));
  EXPECT_EQ(round_scale_up_to_power_of_two(0.0223f), 0.03125f);
  EXPECT_EQ(round_scale_up_to_power_of_two(0.015625f), 0.015625f);
}

TEST(Formats, Bf16AndFp16) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(1.00390625f), 0x3F80);  // tie 1 | 1+2^-7 -> even
  EXPECT_EQ(float_to_bf16(1.01171875f), 0x3F82);  // tie 1+2^-7 | 1+2^-6 -> even
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);       // overflow -> Inf by default
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max(), Saturation::kFinite), 0x7F7F);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7C00);  // tie 65504 | 65536 -> even -> Inf
  EXPECT_EQ(float_to_fp16(65520.0f, Saturation::kFinite), 0x7BFF);
  EXPECT_EQ(fp16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(bf16_to_float(0x0001), std::ldexp(1.0f, -133));
}

TEST(Formats, Int8) {
  EXPECT_EQ(float_to_int8(2.5f), 2);
  EXPECT_EQ(float_to_int8(3.5f), 4);
  EXPECT_EQ(float_to_int8(-2.5f), -2);
  EXPECT_EQ(float_to_int8(126.5f), 126);
  EXPECT_EQ(float_to_int8(127.4f), 127);
  EXPECT_EQ(float_to_int8(-128.6f), -128);
  EXPECT_EQ(float_to_int8(-1000.0f), -128);
  EXPECT_EQ(float_to_int8(kInf), 127);
  EXPECT_EQ(float_to_int8(kNaN), 0);
  EXPECT_EQ(float_to_int8(0.49999997f), 0);
}

}  // namespace
}  // namespace lowbit
