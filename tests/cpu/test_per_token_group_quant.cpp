// per_token_group_quant on host tensors (the CPU reference behind the public entry point):
// hand-computed groups, every option and layout, edge shapes, and every validation error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "lowbit/error.h"
#include "lowbit/formats.h"
#include "lowbit/quant.h"

namespace lowbit {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
// fp8 NaN: only a NaN input produces it, so it marks outputs the op never wrote.
constexpr std::uint8_t kUnwritten = 0x7F;

// One quantization problem with host buffers.
struct Problem {
  std::int64_t rows, cols;
  std::vector<std::uint16_t> input;  // bf16 codes
  std::vector<std::uint8_t> output;
  std::vector<float> scales;
  PerTokenGroupQuantArgs args;

  Problem(std::int64_t m, std::int64_t k, int group, DType out_dtype = DType::kFP8E4M3,
          ScaleLayout layout = ScaleLayout::kRowMajor)
      : rows(m), cols(k), input(m * k, 0), output(m * k, kUnwritten) {
    const ScaleShape shape = scale_storage_shape(layout, m, k, group);
    scales.assign(shape.rows * shape.cols, -7.0f);
    args.input = TensorView::contiguous(input.data(), DType::kBF16, {m, k});
    args.output = TensorView::contiguous(output.data(), out_dtype, {m, k});
    args.scales = TensorView::contiguous(scales.data(), DType::kFP32, {shape.rows, shape.cols});
    args.group_size = group;
    args.scale_layout = layout;
  }
  void set(std::int64_t r, std::int64_t c, float value) { input[r * cols + c] = float_to_bf16(value); }
  void run() { per_token_group_quant(args); }
};

TEST(PerTokenGroupQuant, HandComputedFp8Group) {
  Problem p(1, 32, 32);
  p.set(0, 0, 7.0f);    // amax 7 -> s = 7 / 448 = 2^-6, so q = 64 x
  p.set(0, 1, 1.0f);    // 64 -> 0x68
  p.set(0, 2, -3.5f);   // -224 -> 0xF6
  p.set(0, 3, 0.01f);   // bf16 0.010009765625 * 64 = 0.640625 -> 0.625 = 0x32
  p.set(0, 4, 0.0f);
  p.run();
  EXPECT_EQ(p.scales[0], 0.015625f);
  EXPECT_EQ(p.output[0], 0x7E);
  EXPECT_EQ(p.output[1], 0x68);
  EXPECT_EQ(p.output[2], 0xF6);
  EXPECT_EQ(p.output[3], 0x32);
  for (int c = 4; c < 32; ++c) EXPECT_EQ(p.output[c], 0x00) << c;
}

TEST(PerTokenGroupQuant, HandComputedInt8Group) {
  Problem p(1, 32, 32, DType::kInt8);
  p.set(0, 0, 127.0f);  // s = 1: q = round_half_even(x)
  p.set(0, 1, 2.5f);
  p.set(0, 2, 3.5f);
  p.set(0, 3, -2.5f);
  p.set(0, 4, -126.5f);
  p.run();
  EXPECT_EQ(p.scales[0], 1.0f);
  const std::int8_t expected[5] = {127, 2, 4, -2, -126};
  for (int c = 0; c < 5; ++c) EXPECT_EQ(static_cast<std::int8_t>(p.output[c]), expected[c]) << c;
}

TEST(PerTokenGroupQuant, AllZeroGroupUsesEps) {
  Problem p(1, 64, 64);
  p.args.eps = 1e-4f;
  p.run();
  EXPECT_EQ(p.scales[0], 1e-4f / 448.0f);
  for (int c = 0; c < 64; ++c) EXPECT_EQ(p.output[c], 0x00);
}

TEST(PerTokenGroupQuant, ScaleUpperBoundClampsAmaxAndSaturates) {
  Problem p(1, 32, 32);
  p.set(0, 0, 1000.0f);
  p.set(0, 1, -1.0f);
  p.args.scale_ub = 448.0f;  // bounds amax: s = 448 / 448 = 1
  p.run();
  EXPECT_EQ(p.scales[0], 1.0f);
  EXPECT_EQ(p.output[0], 0x7E);  // 1000 saturates to 448
  EXPECT_EQ(p.output[1], 0xB8);
}

TEST(PerTokenGroupQuant, PowerOfTwoScaleRoundsUp) {
  Problem p(2, 32, 32);
  p.set(0, 0, 10.0f);  // s = 10 / 448 = 0.0223 -> 2^-5; q = 320 -> 0x7A
  p.set(1, 0, 7.0f);   // s = 2^-6 exactly, unchanged
  p.args.power_of_two_scale = true;
  p.run();
  EXPECT_EQ(p.scales[0], 0.03125f);
  EXPECT_EQ(p.output[0], 0x7A);
  EXPECT_EQ(p.scales[1], 0.015625f);
  EXPECT_EQ(p.output[32], 0x7E);
}

TEST(PerTokenGroupQuant, NanStaysInItsElementAndGroup) {
  Problem p(1, 64, 32);
  p.set(0, 0, 7.0f);
  p.set(0, 1, kNaN);
  p.set(0, 2, 1.0f);
  p.set(0, 32, 7.0f);
  p.run();
  EXPECT_EQ(p.scales[0], 0.015625f);  // NaN does not take part in amax
  EXPECT_EQ(p.output[1], 0x7F);       // NaN element -> fp8 NaN
  EXPECT_EQ(p.output[2], 0x68);
  EXPECT_EQ(p.scales[1], 0.015625f);
}

TEST(PerTokenGroupQuant, InfMakesItsGroupScaleInf) {
  Problem p(1, 64, 32);
  p.set(0, 0, kInf);
  p.set(0, 1, 3.0f);
  p.set(0, 32, 7.0f);
  p.run();
  EXPECT_EQ(p.scales[0], kInf);
  EXPECT_EQ(p.output[0], 0x7F);  // Inf / Inf = NaN
  EXPECT_EQ(p.output[1], 0x00);  // 3 / Inf = 0
  EXPECT_EQ(p.scales[1], 0.015625f);
  EXPECT_EQ(p.output[32], 0x7E);
}

TEST(PerTokenGroupQuant, NanInInt8GivesZero) {
  Problem p(1, 32, 32, DType::kInt8);
  p.set(0, 0, 127.0f);
  p.set(0, 1, kNaN);
  p.run();
  EXPECT_EQ(p.output[1], 0);
}

// Fills each problem with the same distinct values so results can be compared across layouts.
void fill_pattern(Problem& p) {
  for (std::int64_t r = 0; r < p.rows; ++r) {
    for (std::int64_t c = 0; c < p.cols; ++c) {
      p.set(r, c, std::sin(0.37f * static_cast<float>(r * p.cols + c)) * (1.0f + r + c % 7));
    }
  }
}

TEST(PerTokenGroupQuant, ScaleLayoutsHoldTheSameScales) {
  const std::int64_t m = 5, k = 96;
  const int g = 32;
  Problem row(m, k, g, DType::kFP8E4M3, ScaleLayout::kRowMajor);
  Problem col(m, k, g, DType::kFP8E4M3, ScaleLayout::kColumnMajor);
  Problem tma(m, k, g, DType::kFP8E4M3, ScaleLayout::kColumnMajorTmaAligned);
  for (Problem* p : {&row, &col, &tma}) {
    fill_pattern(*p);
    p->run();
  }
  ASSERT_EQ(tma.scales.size(), 3u * 8u);  // [K/g, round_up(5, 4)]
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t gi = 0; gi < k / g; ++gi) {
      const float s = row.scales[r * (k / g) + gi];
      EXPECT_GT(s, 0.0f);
      EXPECT_EQ(col.scales[gi * m + r], s);
      EXPECT_EQ(tma.scales[gi * 8 + r], s);
    }
  }
  for (std::int64_t gi = 0; gi < k / g; ++gi) {
    for (std::int64_t r = m; r < 8; ++r) EXPECT_EQ(tma.scales[gi * 8 + r], -7.0f) << "padding";
  }
  EXPECT_EQ(row.output, col.output);
  EXPECT_EQ(row.output, tma.output);
}

TEST(PerTokenGroupQuant, StridedRowsMatchContiguous) {
  const std::int64_t m = 3, k = 128, in_stride = 200, out_stride = 136;
  Problem dense(m, k, 64);
  fill_pattern(dense);
  dense.run();

  std::vector<std::uint16_t> input(m * in_stride, float_to_bf16(kNaN));  // padding is NaN
  std::vector<std::uint8_t> output(m * out_stride, 0xEE);
  for (std::int64_t r = 0; r < m; ++r) {
    std::memcpy(&input[r * in_stride], &dense.input[r * k], k * 2);
  }
  std::vector<float> scales(m * 2, 0.0f);
  PerTokenGroupQuantArgs args = dense.args;
  args.input = TensorView::strided(input.data(), DType::kBF16, {m, k}, {in_stride, 1});
  args.output = TensorView::strided(output.data(), DType::kFP8E4M3, {m, k}, {out_stride, 1});
  args.scales = TensorView::contiguous(scales.data(), DType::kFP32, {m, 2});
  per_token_group_quant(args);
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t c = 0; c < out_stride; ++c) {
      if (c < k) {
        EXPECT_EQ(output[r * out_stride + c], dense.output[r * k + c]);
      } else {
        EXPECT_EQ(output[r * out_stride + c], 0xEE) << "row padding written";
      }
    }
  }
  EXPECT_EQ(scales, dense.scales);
}

TEST(PerTokenGroupQuant, Fp16AndFp32InputsAgreeWithBf16OnBf16Values) {
  Problem p(2, 128, 128);
  fill_pattern(p);
  p.run();
  std::vector<std::uint16_t> half(p.input.size());
  std::vector<float> single(p.input.size());
  for (std::size_t i = 0; i < p.input.size(); ++i) {
    single[i] = bf16_to_float(p.input[i]);
    half[i] = float_to_fp16(single[i]);
  }
  for (DType dtype : {DType::kFP16, DType::kFP32}) {
    std::vector<std::uint8_t> out(p.output.size(), 0);
    std::vector<float> scales(2, 0.0f);
    PerTokenGroupQuantArgs args = p.args;
    void* data = dtype == DType::kFP32 ? static_cast<void*>(single.data()) : half.data();
    args.input = TensorView::contiguous(data, dtype, {2, 128});
    args.output = TensorView::contiguous(out.data(), DType::kFP8E4M3, {2, 128});
    args.scales = TensorView::contiguous(scales.data(), DType::kFP32, {2, 1});
    per_token_group_quant(args);
    if (dtype == DType::kFP32) {
      // same real values, so the same result
      EXPECT_EQ(out, p.output);
      EXPECT_EQ(scales, p.scales);
    } else {
      EXPECT_GT(scales[0], 0.0f);
    }
  }
}

TEST(PerTokenGroupQuant, EmptyAndSingleRow) {
  Problem empty(0, 128, 128);
  EXPECT_NO_THROW(empty.run());
  Problem one(1, 128, 128);
  fill_pattern(one);
  one.run();
  EXPECT_GT(one.scales[0], 0.0f);
  Problem k_is_group(4, 64, 64);
  fill_pattern(k_is_group);
  k_is_group.run();
  for (float s : k_is_group.scales) EXPECT_GT(s, 0.0f);
}

TEST(PerTokenGroupQuant, KNotMultipleOf128WithSmallerGroups) {
  for (int g : {32, 64}) {
    Problem p(3, 3 * g, g);  // 96 and 192: not multiples of 128
    fill_pattern(p);
    p.run();
    for (float s : p.scales) EXPECT_GT(s, 0.0f);
    for (std::uint8_t q : p.output) EXPECT_NE(q, kUnwritten);
  }
}

// ---- validation ---------------------------------------------------------------------------

void expect_error(Problem& p, const char* argument, const char* fragment) {
  try {
    p.run();
    ADD_FAILURE() << "expected an error on '" << argument << "'";
  } catch (const Error& error) {
    EXPECT_EQ(error.op(), "per_token_group_quant");
    EXPECT_EQ(error.argument(), argument) << error.what();
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

TEST(PerTokenGroupQuantValidation, GroupSize) {
  Problem p(2, 96, 32);
  p.args.group_size = 48;
  expect_error(p, "group_size", "32, 64 or 128");
}

TEST(PerTokenGroupQuantValidation, KNotMultipleOfGroup) {
  Problem p(2, 96, 32);
  p.args.group_size = 64;
  expect_error(p, "input", "multiple of group_size 64");
}

TEST(PerTokenGroupQuantValidation, InputDtype) {
  Problem p(2, 64, 64);
  p.args.input.dtype = DType::kInt8;
  expect_error(p, "input", "bf16, fp16 or fp32, got int8");
}

TEST(PerTokenGroupQuantValidation, InputRank) {
  Problem p(2, 64, 64);
  p.args.input = TensorView::contiguous(p.input.data(), DType::kBF16, {128});
  expect_error(p, "input", "rank 2");
}

TEST(PerTokenGroupQuantValidation, InputColumnStride) {
  Problem p(2, 64, 64);
  p.args.input.strides[1] = 2;
  expect_error(p, "input", "unit stride");
}

TEST(PerTokenGroupQuantValidation, InputRowStrideTooSmall) {
  Problem p(2, 64, 64);
  p.args.input.strides[0] = 32;
  expect_error(p, "input", "row stride >= number of columns");
}

TEST(PerTokenGroupQuantValidation, OutputDtype) {
  Problem p(2, 64, 64);
  p.args.output.dtype = DType::kFP8E5M2;
  expect_error(p, "output", "fp8_e4m3fn or int8, got fp8_e5m2");
}

TEST(PerTokenGroupQuantValidation, OutputShape) {
  Problem p(2, 64, 64);
  p.args.output.shape[0] = 1;
  expect_error(p, "output", "shape [2, 64]");
}

TEST(PerTokenGroupQuantValidation, ScalesDtype) {
  Problem p(2, 64, 64);
  p.args.scales.dtype = DType::kBF16;
  expect_error(p, "scales", "dtype fp32");
}

TEST(PerTokenGroupQuantValidation, ScalesShapeForEachLayout) {
  Problem row(5, 64, 32, DType::kFP8E4M3, ScaleLayout::kRowMajor);
  row.args.scale_layout = ScaleLayout::kColumnMajor;  // storage still [5, 2]
  expect_error(row, "scales", "shape [2, 5] for layout column_major");
  Problem col(5, 64, 32, DType::kFP8E4M3, ScaleLayout::kColumnMajor);
  col.args.scale_layout = ScaleLayout::kColumnMajorTmaAligned;
  expect_error(col, "scales", "shape [2, 8] for layout column_major_tma_aligned");
}

TEST(PerTokenGroupQuantValidation, ScalesNotContiguous) {
  Problem p(4, 64, 32);
  p.args.scales.strides[0] = 3;
  expect_error(p, "scales", "contiguous");
}

TEST(PerTokenGroupQuantValidation, EpsAndScaleUb) {
  Problem zero_eps(1, 32, 32);
  zero_eps.args.eps = 0.0f;
  expect_error(zero_eps, "eps", "finite value > 0");
  Problem nan_eps(1, 32, 32);
  nan_eps.args.eps = kNaN;
  expect_error(nan_eps, "eps", "finite value > 0");
  Problem negative_ub(1, 32, 32);
  negative_ub.args.scale_ub = -1.0f;
  expect_error(negative_ub, "scale_ub", "finite value > 0");
  Problem inf_ub(1, 32, 32);
  inf_ub.args.scale_ub = kInf;
  expect_error(inf_ub, "scale_ub", "finite value > 0");
}

TEST(PerTokenGroupQuantValidation, MixedDevices) {
  Problem p(1, 32, 32);
  p.args.output.device = Device::kCUDA;
  expect_error(p, "output", "device cpu");
}

TEST(PerTokenGroupQuantValidation, NullData) {
  Problem p(1, 32, 32);
  p.args.input.data = nullptr;
  expect_error(p, "input", "non-null");
}

}  // namespace
}  // namespace lowbit
