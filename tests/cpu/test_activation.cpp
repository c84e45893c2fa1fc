// silu_and_mul and silu_and_mul_quant on host tensors: the float32 math of src/common/silu.h
// against double precision, the clamp, the fused op against per_token_group_quant of the same
// float32 values, and every validation error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <limits>
#include <vector>

#include "../../src/common/silu.h"
#include "lowbit/activation.h"
#include "lowbit/error.h"
#include "lowbit/formats.h"
#include "lowbit/quant.h"

namespace lowbit {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

double ulps_between(float got, double want) {
  const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(want)) - 23);
  return std::fabs(got - want) / ulp;
}

// One-constant ln2 in the range reduction: the error grows with |n|, to 4.5 ulp at |a| = 80.
// For |a| < 20 it stays within 2.7 ulp (2.6 measured).
TEST(SiluMath, ExpNegAccuracy) {
  double worst_small = 0, worst = 0;
  for (std::uint64_t bits = 0; bits < 0x42A00000u; bits += 97) {  // every 97th float in [0, 80)
    for (const float a : {bits_float(static_cast<std::uint32_t>(bits)),
                          -bits_float(static_cast<std::uint32_t>(bits))}) {
      const double ulps = ulps_between(detail::exp_neg(a), std::exp(-static_cast<double>(a)));
      worst = std::max(worst, ulps);
      if (std::fabs(a) < 20.0f) worst_small = std::max(worst_small, ulps);
    }
  }
  EXPECT_LT(worst_small, 2.7);
  EXPECT_LT(worst, 5.0);
  EXPECT_EQ(detail::exp_neg(0.0f), 1.0f);
  EXPECT_LT(ulps_between(detail::exp_neg(80.0f), std::exp(-80.0)), 5.0);   // n = -115: normal
  EXPECT_LT(ulps_between(detail::exp_neg(-80.0f), std::exp(80.0)), 5.0);   // n = 115: finite
}

// The host half of the contract; the device half (hardware seed + Newton == IEEE for every d in
// [1, 2^117)) is tests/gpu/test_silu_math_gpu.cu.
TEST(SiluMath, ReciprocalIsIeeeOnTheHost) {
  for (std::uint32_t bits = float_bits(1.0f); bits <= float_bits(0x1p117f); bits += 7777) {
    const float d = bits_float(bits);
    ASSERT_EQ(float_bits(detail::reciprocal_at_least_1(d)), float_bits(1.0f / d)) << d;
  }
}

TEST(SiluMath, SiluMulAgainstDouble) {
  double worst = 0;
  for (float g = -79.0f; g < 90.0f; g += 0.01171875f) {
    for (float u : {-2.0f, 0.5f, 3.0f}) {
      const double want = g / (1.0 + std::exp(-static_cast<double>(g))) * u;
      const float got = detail::silu_mul(g, u, false, 0.0f);
      if (want == 0.0) {
        EXPECT_EQ(got, 0.0f);
      } else {
        worst = std::max(worst, ulps_between(got, want));
      }
    }
  }
  EXPECT_LT(worst, 6.5);  // 6.4 near g = -73 (|silu| < 1e-29 there), 3.9 for g >= -20
  // Gates below -80 count as -80: a tiny negative number, never NaN, also for -Inf.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(detail::silu_mul(-200.0f, 1.0f, false, 0.0f), detail::silu_mul(-80.0f, 1.0f, false, 0));
  EXPECT_EQ(detail::silu_mul(-inf, 1.0f, false, 0.0f), detail::silu_mul(-80.0f, 1.0f, false, 0));
  EXPECT_LT(std::fabs(detail::silu_mul(-80.0f, 1.0f, false, 0.0f)), 1.5e-33f);
  EXPECT_LT(detail::silu_mul(-80.0f, 1.0f, false, 0.0f), 0.0f);
  EXPECT_EQ(detail::silu_mul(200.0f, 1.0f, false, 0.0f), 200.0f);
  EXPECT_EQ(detail::silu_mul(inf, 1.0f, false, 0.0f), inf);
  EXPECT_EQ(detail::silu_mul(0.0f, 1.0f, false, 0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(detail::silu_mul(-0.0f, 1.0f, false, 0.0f)));
}

TEST(SiluMath, Clamp) {
  const float limit = 7.0f;
  // gate clamped to <= 7, up to [-7, 7]
  EXPECT_EQ(detail::silu_mul(10.0f, 1.0f, true, limit), detail::silu_mul(7.0f, 1.0f, false, 0));
  EXPECT_EQ(detail::silu_mul(-10.0f, 1.0f, true, limit), detail::silu_mul(-10.0f, 1.0f, false, 0));
  EXPECT_EQ(detail::silu_mul(1.0f, 10.0f, true, limit), detail::silu_mul(1.0f, 7.0f, false, 0));
  EXPECT_EQ(detail::silu_mul(1.0f, -10.0f, true, limit), detail::silu_mul(1.0f, -7.0f, false, 0));
  EXPECT_TRUE(std::isnan(detail::silu_mul(kNaN, 1.0f, true, limit)));  // NaN is not clamped away
  EXPECT_TRUE(std::isnan(detail::silu_mul(1.0f, kNaN, true, limit)));
  EXPECT_TRUE(std::isnan(detail::silu_mul(kNaN, 1.0f, false, 0.0f)));
}

// [T, 2H] bf16 input with a deterministic pattern.
std::vector<std::uint16_t> gate_up(std::int64_t t, std::int64_t h) {
  std::vector<std::uint16_t> x(t * 2 * h);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = float_to_bf16(std::sin(0.61f * static_cast<float>(i)) * (1.0f + (i % 13)));
  }
  return x;
}

TEST(SiluAndMul, RoundsTheFloat32ProductOnce) {
  const std::int64_t t = 3, h = 64;
  const auto x = gate_up(t, h);
  std::vector<std::uint16_t> out(t * h);
  SiluAndMulArgs args;
  args.input = TensorView::contiguous(const_cast<std::uint16_t*>(x.data()), DType::kBF16, {t, 2 * h});
  args.output = TensorView::contiguous(out.data(), DType::kBF16, {t, h});
  silu_and_mul(args);
  for (std::int64_t r = 0; r < t; ++r) {
    for (std::int64_t c = 0; c < h; ++c) {
      const float g = bf16_to_float(x[r * 2 * h + c]);
      const float u = bf16_to_float(x[r * 2 * h + h + c]);
      EXPECT_EQ(out[r * h + c], float_to_bf16(detail::silu_mul(g, u, false, 0.0f)));
      const double exact = g / (1.0 + std::exp(-static_cast<double>(g))) * u;
      EXPECT_NEAR(bf16_to_float(out[r * h + c]), exact, std::fabs(exact) * 0.0079 + 1e-30);
    }
  }
}

TEST(SiluAndMulQuant, EqualsGroupQuantOfTheFloat32Product) {
  const std::int64_t t = 5, h = 256;
  const auto x = gate_up(t, h);
  for (std::optional<float> limit : {std::optional<float>{}, std::optional<float>{3.0f}}) {
    std::vector<float> product(t * h);
    for (std::int64_t r = 0; r < t; ++r) {
      for (std::int64_t c = 0; c < h; ++c) {
        product[r * h + c] = detail::silu_mul(bf16_to_float(x[r * 2 * h + c]),
                                              bf16_to_float(x[r * 2 * h + h + c]),
                                              limit.has_value(), limit.value_or(0.0f));
      }
    }
    std::vector<std::uint8_t> fused_q(t * h), plain_q(t * h);
    std::vector<float> fused_s(t * 2), plain_s(t * 2);
    SiluAndMulQuantArgs fused;
    fused.input = TensorView::contiguous(const_cast<std::uint16_t*>(x.data()), DType::kBF16, {t, 2 * h});
    fused.output = TensorView::contiguous(fused_q.data(), DType::kFP8E4M3, {t, h});
    fused.scales = TensorView::contiguous(fused_s.data(), DType::kFP32, {2, t});
    fused.scale_layout = ScaleLayout::kColumnMajor;
    fused.limit = limit;
    silu_and_mul_quant(fused);
    PerTokenGroupQuantArgs plain;
    plain.input = TensorView::contiguous(product.data(), DType::kFP32, {t, h});
    plain.output = TensorView::contiguous(plain_q.data(), DType::kFP8E4M3, {t, h});
    plain.scales = TensorView::contiguous(plain_s.data(), DType::kFP32, {2, t});
    plain.scale_layout = ScaleLayout::kColumnMajor;
    per_token_group_quant(plain);
    EXPECT_EQ(fused_q, plain_q);
    EXPECT_EQ(fused_s, plain_s);
  }
}

void expect_error(const std::function<void()>& run, const char* op, const char* argument,
                  const char* fragment) {
  try {
    run();
    ADD_FAILURE() << "expected an error on '" << argument << "'";
  } catch (const Error& error) {
    EXPECT_EQ(error.op(), op);
    EXPECT_EQ(error.argument(), argument) << error.what();
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

TEST(ActivationValidation, Errors) {
  std::vector<std::uint16_t> x(4 * 512), out16(4 * 256);
  std::vector<float> x32(4 * 512), scales(4 * 2);
  std::vector<std::uint8_t> q(4 * 256);
  auto quant_args = [&] {
    SiluAndMulQuantArgs a;
    a.input = TensorView::contiguous(x.data(), DType::kBF16, {4, 512});
    a.output = TensorView::contiguous(q.data(), DType::kFP8E4M3, {4, 256});
    a.scales = TensorView::contiguous(scales.data(), DType::kFP32, {4, 2});
    return a;
  };
  auto plain_args = [&] {
    SiluAndMulArgs a;
    a.input = TensorView::contiguous(x.data(), DType::kBF16, {4, 512});
    a.output = TensorView::contiguous(out16.data(), DType::kBF16, {4, 256});
    return a;
  };
  EXPECT_NO_THROW(silu_and_mul_quant(quant_args()));
  EXPECT_NO_THROW(silu_and_mul(plain_args()));

  auto odd = quant_args();
  odd.input = TensorView::contiguous(x.data(), DType::kBF16, {4, 511});
  expect_error([&] { silu_and_mul_quant(odd); }, "silu_and_mul_quant", "input", "even width");
  auto fp32 = quant_args();
  fp32.input = TensorView::contiguous(x32.data(), DType::kFP32, {4, 512});
  expect_error([&] { silu_and_mul_quant(fp32); }, "silu_and_mul_quant", "input", "bf16 or fp16");
  auto wrong_out = quant_args();
  wrong_out.output = TensorView::contiguous(q.data(), DType::kFP8E4M3, {4, 512});
  expect_error([&] { silu_and_mul_quant(wrong_out); }, "silu_and_mul_quant", "output", "[4, 256]");
  auto e5m2 = quant_args();
  e5m2.output.dtype = DType::kFP8E5M2;
  expect_error([&] { silu_and_mul_quant(e5m2); }, "silu_and_mul_quant", "output", "fp8_e4m3fn or int8");
  auto group = quant_args();
  group.group_size = 96;
  expect_error([&] { silu_and_mul_quant(group); }, "silu_and_mul_quant", "group_size", "32, 64 or 128");
  auto not_multiple = quant_args();
  not_multiple.input = TensorView::contiguous(x.data(), DType::kBF16, {4, 2 * 96});
  not_multiple.output = TensorView::contiguous(q.data(), DType::kFP8E4M3, {4, 96});
  not_multiple.group_size = 64;
  expect_error([&] { silu_and_mul_quant(not_multiple); }, "silu_and_mul_quant", "input", "multiple of group_size 64");
  auto scales_shape = quant_args();
  scales_shape.scale_layout = ScaleLayout::kColumnMajorTmaAligned;
  expect_error([&] { silu_and_mul_quant(scales_shape); }, "silu_and_mul_quant", "scales", "[2, 4]");
  auto limit = quant_args();
  limit.limit = -1.0f;
  expect_error([&] { silu_and_mul_quant(limit); }, "silu_and_mul_quant", "limit", "finite value > 0");
  auto ub = quant_args();
  ub.scale_ub = 0.0f;
  expect_error([&] { silu_and_mul_quant(ub); }, "silu_and_mul_quant", "scale_ub", "finite value > 0");

  auto plain_out = plain_args();
  plain_out.output.dtype = DType::kFP8E4M3;
  expect_error([&] { silu_and_mul(plain_out); }, "silu_and_mul", "output", "bf16 or fp16");
  auto plain_shape = plain_args();
  plain_shape.output = TensorView::contiguous(out16.data(), DType::kBF16, {4, 128});
  expect_error([&] { silu_and_mul(plain_shape); }, "silu_and_mul", "output", "[4, 256]");
  auto plain_nan_limit = plain_args();
  plain_nan_limit.limit = kNaN;
  expect_error([&] { silu_and_mul(plain_nan_limit); }, "silu_and_mul", "limit", "finite value > 0");
  auto mixed = plain_args();
  mixed.output.device = Device::kCUDA;
  expect_error([&] { silu_and_mul(mixed); }, "silu_and_mul", "output", "device cpu");
}

TEST(ActivationValidation, EmptyTokens) {
  SiluAndMulQuantArgs a;
  a.input = TensorView::contiguous(nullptr, DType::kBF16, {0, 512});
  a.output = TensorView::contiguous(nullptr, DType::kFP8E4M3, {0, 256});
  a.scales = TensorView::contiguous(nullptr, DType::kFP32, {0, 2});
  EXPECT_NO_THROW(silu_and_mul_quant(a));
}

}  // namespace
}  // namespace lowbit
