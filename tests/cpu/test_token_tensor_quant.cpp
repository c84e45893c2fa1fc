// per_token_quant, per_token_asymmetric_int8_quant and per_tensor_quant on host tensors:
// hand-computed rows, specials, options, and validation errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "lowbit/error.h"
#include "lowbit/formats.h"
#include "lowbit/quant.h"

namespace lowbit {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(PerTokenQuant, HandComputedRows) {
  // Row 0: amax 7 -> s = 7/448 = 2^-6. Row 1: all zeros -> s = eps / 448.
  std::vector<float> x = {7.0f, -1.0f, 0.5f, 0.0f, 0, 0, 0, 0};
  std::vector<std::uint8_t> q(8, 0x7F);
  std::vector<float> s(2);
  PerTokenQuantArgs args;
  args.input = TensorView::contiguous(x.data(), DType::kFP32, {2, 4});
  args.output = TensorView::contiguous(q.data(), DType::kFP8E4M3, {2, 4});
  args.scales = TensorView::contiguous(s.data(), DType::kFP32, {2});
  per_token_quant(args);
  EXPECT_EQ(s[0], 0.015625f);
  EXPECT_EQ(q[0], 0x7E);  // 448
  EXPECT_EQ(q[1], 0xE8);  // -64
  EXPECT_EQ(q[2], 0x60);  // 32
  EXPECT_EQ(q[3], 0x00);
  EXPECT_EQ(s[1], 1e-10f / 448.0f);
  args.scale_ub = 3.5f;  // bounds amax: s = 3.5 / 448, 7 saturates
  per_token_quant(args);
  EXPECT_EQ(s[0], 3.5f / 448.0f);
  EXPECT_EQ(q[0], 0x7E);
  EXPECT_EQ(q[1], 0xF0);  // -128
}

TEST(PerTokenQuant, Int8AndNaN) {
  std::vector<float> x = {127.0f, 2.5f, kNaN, -3.5f};
  std::vector<std::uint8_t> q(4);
  std::vector<float> s(1);
  PerTokenQuantArgs args;
  args.input = TensorView::contiguous(x.data(), DType::kFP32, {1, 4});
  args.output = TensorView::contiguous(q.data(), DType::kInt8, {1, 4});
  args.scales = TensorView::contiguous(s.data(), DType::kFP32, {1, 1});
  per_token_quant(args);
  EXPECT_EQ(s[0], 1.0f);
  EXPECT_EQ(static_cast<std::int8_t>(q[1]), 2);
  EXPECT_EQ(static_cast<std::int8_t>(q[2]), 0);  // NaN -> 0, and it did not set the scale
  EXPECT_EQ(static_cast<std::int8_t>(q[3]), -4);
}

// Host buffers and arguments for an asymmetric quantization of `x` viewed as [rows, cols].
struct AsymmetricProblem {
  std::vector<float> x;
  std::vector<std::uint8_t> q;
  std::vector<float> s;
  std::vector<std::int32_t> zp;
  PerTokenAsymmetricInt8QuantArgs args;

  AsymmetricProblem(std::vector<float> values, std::int64_t rows, std::int64_t cols)
      : x(std::move(values)), q(rows * cols), s(rows), zp(rows) {
    args.input = TensorView::contiguous(x.data(), DType::kFP32, {rows, cols});
    args.output = TensorView::contiguous(q.data(), DType::kInt8, {rows, cols});
    args.scales = TensorView::contiguous(s.data(), DType::kFP32, {rows});
    args.zero_points = TensorView::contiguous(zp.data(), DType::kInt32, {rows});
  }
  std::int8_t code(std::size_t i) const { return static_cast<std::int8_t>(q[i]); }
};

TEST(PerTokenAsymmetricInt8Quant, HandComputedRow) {
  // lo = -1, hi = 4.1: s = 5.1 / 255 = 0.02, zp = rne(-128 - (-1 / 0.02)) = rne(-78) = -78
  AsymmetricProblem p({-1.0f, 4.1f, 0.0f, 1.0f}, 1, 4);
  per_token_asymmetric_int8_quant(p.args);
  const float scale = (4.1f - -1.0f) / 255.0f;
  EXPECT_EQ(p.s[0], scale);
  EXPECT_EQ(p.zp[0], static_cast<std::int32_t>(std::nearbyint(-128.0f - (-1.0f / scale))));
  EXPECT_EQ(p.code(0), -128);   // lo maps to the bottom code
  EXPECT_EQ(p.code(1), 127);    // hi maps to the top code
  EXPECT_EQ(p.code(2), p.zp[0]);  // 0 maps to the zero point
  for (int i = 0; i < 4; ++i) {  // dequantization error within one step
    EXPECT_NEAR((p.code(i) - p.zp[0]) * p.s[0], p.x[i], p.s[0] + 1e-6f);
  }
}

TEST(PerTokenAsymmetricInt8Quant, ConstantAndSpecialRows) {
  AsymmetricProblem p({2.0f, 2.0f, 2.0f, 2.0f,   // constant: range [0, 2]
                       kNaN, kNaN, kNaN, kNaN,   // all NaN: range [0, 0]
                       kInf, 1.0f, -1.0f, 0.0f}, // Inf: s = Inf
                      3, 4);
  per_token_asymmetric_int8_quant(p.args);
  EXPECT_EQ(p.s[0], 2.0f / 255.0f);
  EXPECT_EQ(p.zp[0], -128);
  EXPECT_EQ(p.code(0), 127);  // 2.0 is the top of the range, exactly
  EXPECT_EQ(p.s[1], 1e-10f);
  EXPECT_EQ(p.zp[1], -128);
  EXPECT_EQ(p.code(4), -128);  // NaN -> 0 + zp
  EXPECT_EQ(p.s[2], kInf);
  EXPECT_EQ(p.zp[2], -128);
  EXPECT_EQ(p.code(9), -128);  // 1 / Inf = 0 -> zp
}

TEST(PerTokenAsymmetricInt8Quant, PositiveRowKeepsZeroRepresentable) {
  AsymmetricProblem p({3.0f, 5.0f, 4.0f, 5.0f}, 1, 4);  // range widened to [0, 5]
  per_token_asymmetric_int8_quant(p.args);
  EXPECT_EQ(p.s[0], 5.0f / 255.0f);
  EXPECT_EQ(p.zp[0], -128);
  EXPECT_EQ(p.code(1), 127);
}

TEST(PerTensorQuant, StaticAndDynamic) {
  std::vector<float> x = {1.0f, -2.0f, 3.5f, 0.0f, 14.0f, -0.25f, 7.0f, 1.5f};
  std::vector<std::uint8_t> q(8);
  std::vector<float> scale = {0.5f};
  PerTensorQuantArgs args;
  args.input = TensorView::contiguous(x.data(), DType::kFP32, {2, 4});
  args.output = TensorView::contiguous(q.data(), DType::kInt8, {2, 4});
  args.scale = TensorView::contiguous(scale.data(), DType::kFP32, {1});
  per_tensor_quant(args);  // static: q = x / 0.5
  const std::int8_t expected_static[8] = {2, -4, 7, 0, 28, 0, 14, 3};  // -0.5 -> -0, 3 exactly
  for (int i = 0; i < 8; ++i) EXPECT_EQ(static_cast<std::int8_t>(q[i]), expected_static[i]) << i;
  args.dynamic = true;  // amax 14 -> s = 14 / 127
  per_tensor_quant(args);
  EXPECT_EQ(scale[0], 14.0f / 127.0f);
  EXPECT_EQ(static_cast<std::int8_t>(q[4]), 127);
  args.scale_ub = 7.0f;  // amax bounded to 7
  per_tensor_quant(args);
  EXPECT_EQ(scale[0], 7.0f / 127.0f);
  EXPECT_EQ(static_cast<std::int8_t>(q[4]), 127);  // saturates
  EXPECT_EQ(static_cast<std::int8_t>(q[6]), 127);
}

void expect_error(const std::function<void()>& run, const char* argument, const char* fragment) {
  try {
    run();
    ADD_FAILURE() << "expected an error on '" << argument << "'";
  } catch (const Error& error) {
    EXPECT_EQ(error.argument(), argument) << error.what();
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

TEST(TokenTensorQuantValidation, Errors) {
  std::vector<float> x(8), s(2), one(1, 1.0f);
  std::vector<std::uint8_t> q(8);
  std::vector<std::int32_t> zp(2);
  PerTokenQuantArgs token;
  token.input = TensorView::contiguous(x.data(), DType::kFP32, {2, 4});
  token.output = TensorView::contiguous(q.data(), DType::kFP8E4M3, {2, 4});
  token.scales = TensorView::contiguous(s.data(), DType::kFP32, {2});
  EXPECT_NO_THROW(per_token_quant(token));
  auto bad_scales = token;
  bad_scales.scales = TensorView::contiguous(s.data(), DType::kFP32, {1});
  expect_error([&] { per_token_quant(bad_scales); }, "scales", "shape [2]");
  auto bad_out = token;
  bad_out.output.dtype = DType::kBF16;
  expect_error([&] { per_token_quant(bad_out); }, "output", "fp8_e4m3fn or int8");
  auto bad_ub = token;
  bad_ub.scale_ub = kNaN;
  expect_error([&] { per_token_quant(bad_ub); }, "scale_ub", "finite value > 0");

  PerTokenAsymmetricInt8QuantArgs asym;
  asym.input = token.input;
  asym.output = TensorView::contiguous(q.data(), DType::kInt8, {2, 4});
  asym.scales = token.scales;
  asym.zero_points = TensorView::contiguous(zp.data(), DType::kInt32, {2});
  EXPECT_NO_THROW(per_token_asymmetric_int8_quant(asym));
  auto fp8_asym = asym;
  fp8_asym.output.dtype = DType::kFP8E4M3;
  expect_error([&] { per_token_asymmetric_int8_quant(fp8_asym); }, "output", "dtype int8");
  auto bad_zp = asym;
  bad_zp.zero_points.dtype = DType::kFP32;
  expect_error([&] { per_token_asymmetric_int8_quant(bad_zp); }, "zero_points", "dtype int32");

  PerTensorQuantArgs tensor;
  tensor.input = token.input;
  tensor.output = token.output;
  tensor.scale = TensorView::contiguous(one.data(), DType::kFP32, {1});
  EXPECT_NO_THROW(per_tensor_quant(tensor));
  auto ub_static = tensor;
  ub_static.scale_ub = 1.0f;
  expect_error([&] { per_tensor_quant(ub_static); }, "scale_ub", "dynamic amax");
  std::vector<float> zero_scale = {0.0f};
  auto zero = tensor;
  zero.scale = TensorView::contiguous(zero_scale.data(), DType::kFP32, {1});
  expect_error([&] { per_tensor_quant(zero); }, "scale", "finite value > 0");
  auto two = tensor;
  two.scale = TensorView::contiguous(s.data(), DType::kFP32, {2});
  expect_error([&] { per_tensor_quant(two); }, "scale", "shape [1]");
  std::vector<float> x16(16);
  std::vector<std::uint8_t> q16(16);
  auto cuda_no_workspace = tensor;
  cuda_no_workspace.input = TensorView::contiguous(x16.data(), DType::kFP32, {2, 8});
  cuda_no_workspace.output = TensorView::contiguous(q16.data(), DType::kFP8E4M3, {2, 8});
  cuda_no_workspace.dynamic = true;
  cuda_no_workspace.input.device = cuda_no_workspace.output.device =
      cuda_no_workspace.scale.device = Device::kCUDA;
  expect_error([&] { per_tensor_quant(cuda_no_workspace); }, "workspace", ">= 4 bytes");
  EXPECT_EQ(per_tensor_quant_workspace_bytes(), 4);
}

}  // namespace
}  // namespace lowbit
