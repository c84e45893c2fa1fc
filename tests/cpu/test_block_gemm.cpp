// Block-scaled FP8 on the CPU: the 128 x 128 weight recipe on hand-computed blocks (edges, zero
// blocks, NaN, saturation), dequantization, the GEMM reference against a hand-computed case and
// an independent long-double evaluation for every activation-scale layout, and validation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "common/test_data.h"
#include "lowbit/block_gemm.h"
#include "lowbit/error.h"
#include "lowbit/formats.h"

namespace lowbit {
namespace {

using Bytes = std::vector<std::uint8_t>;

struct BlockQuantized {
  Bytes codes;
  std::vector<float> scales;
};

BlockQuantized quantize(std::vector<float>& w, std::int64_t rows, std::int64_t cols) {
  const std::int64_t rb = (rows + 127) / 128, cb = (cols + 127) / 128;
  BlockQuantized q{Bytes(rows * cols, 0xEE), std::vector<float>(rb * cb, -1.0f)};
  BlockFp8QuantizeWeightArgs args;
  args.weight = TensorView::contiguous(w.data(), DType::kFP32, {rows, cols});
  args.output = TensorView::contiguous(q.codes.data(), DType::kFP8E4M3, {rows, cols});
  args.scales = TensorView::contiguous(q.scales.data(), DType::kFP32, {rb, cb});
  block_fp8_quantize_weight(args);
  return q;
}

TEST(BlockFp8QuantizeWeight, HandComputedBlocks) {
  // 130 x 260: blocks (2 x 3), edge blocks of 2 rows and 4 columns.
  const std::int64_t rows = 130, cols = 260;
  std::vector<float> w(rows * cols, 0.0f);
  for (std::int64_t r = 0; r < 128; ++r) {
    for (std::int64_t c = 0; c < 128; ++c) w[r * cols + c] = 0.01f * static_cast<float>((r + c) % 7);
  }
  w[5 * cols + 9] = -3.5f;                                    // block (0, 0) amax
  w[3 * cols + 130] = 896.0f;                                 // block (0, 1): 2 x 448
  w[4 * cols + 131] = std::numeric_limits<float>::quiet_NaN();  // takes no part in amax
  w[129 * cols + 259] = 0.75f;                                // edge block (1, 2), one element
  // block (0, 2) and block (1, 0), (1, 1) stay all zero.
  const BlockQuantized q = quantize(w, rows, cols);
  EXPECT_EQ(q.scales[0], 3.5f / 448.0f);
  EXPECT_EQ(q.scales[1], 896.0f / 448.0f);
  EXPECT_EQ(q.scales[2], 1e-10f / 448.0f);
  EXPECT_EQ(q.scales[3], 1e-10f / 448.0f);
  EXPECT_EQ(q.scales[5], 0.75f / 448.0f);
  EXPECT_EQ(q.codes[5 * cols + 9], 0xFE);     // -448: the amax element maps to the format max
  EXPECT_EQ(q.codes[3 * cols + 130], 0x7E);   // +448
  EXPECT_EQ(q.codes[4 * cols + 131] & 0x7F, 0x7F);  // NaN stays NaN
  EXPECT_EQ(q.codes[129 * cols + 259], 0x7E);
  EXPECT_EQ(q.codes[129 * cols + 258], 0x00);  // zeros of an edge block
  // Every other element: one float32 division by its block's scale, one rounding.
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      if (std::isnan(w[r * cols + c])) continue;
      const float scale = q.scales[(r / 128) * 3 + c / 128];
      ASSERT_EQ(q.codes[r * cols + c], float_to_fp8_e4m3(w[r * cols + c] / scale, Saturation::kFinite))
          << r << "," << c;
    }
  }
}

TEST(BlockFp8QuantizeWeight, DequantizeInvertsWithinHalfAnE4m3Step) {
  const std::int64_t rows = 256, cols = 384;
  std::mt19937 rng(static_cast<std::uint32_t>(testing::test_seed()));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(rows * cols);
  for (std::int64_t i = 0; i < rows * cols; ++i) w[i] = normal(rng) * ((i / cols) % 2 ? 1e-3f : 10.0f);
  const BlockQuantized q = quantize(w, rows, cols);
  std::vector<float> back(rows * cols, -1.0f);
  std::vector<std::uint16_t> back_bf16(rows * cols, 0);
  BlockFp8DequantizeWeightArgs args;
  args.weight = TensorView::contiguous(const_cast<std::uint8_t*>(q.codes.data()), DType::kFP8E4M3, {rows, cols});
  args.scales = TensorView::contiguous(const_cast<float*>(q.scales.data()), DType::kFP32, {2, 3});
  args.output = TensorView::contiguous(back.data(), DType::kFP32, {rows, cols});
  block_fp8_dequantize_weight(args);
  args.output = TensorView::contiguous(back_bf16.data(), DType::kBF16, {rows, cols});
  block_fp8_dequantize_weight(args);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t i = r * cols + c;
      const float scale = q.scales[(r / 128) * 3 + c / 128];
      ASSERT_EQ(back[i], fp8_e4m3_to_float(q.codes[i]) * scale);
      ASSERT_EQ(back_bf16[i], float_to_bf16(back[i]));
      // e4m3 keeps 3 mantissa bits: half a step is 2^-4 relative, 2^-10 * scale below 2^-6.
      const float bound = std::max(std::fabs(w[i]) * 0.0625f, scale * 0.0009765625f);
      ASSERT_LE(std::fabs(back[i] - w[i]), bound * 1.0001f) << r << "," << c;
    }
  }
}

// ---- block_fp8_mm ------------------------------------------------------------------------------

struct MmCase {
  std::int64_t m, n, k;
  Bytes a, b;
  std::vector<float> a_scales_row_major;  // [M, KB]
  std::vector<float> b_scales;            // [NB, KB]
};

MmCase random_case(std::int64_t m, std::int64_t n, std::int64_t k, std::uint32_t salt) {
  const std::int64_t kb = (k + 127) / 128, nb = (n + 127) / 128;
  MmCase c{m, n, k, Bytes(m * k), Bytes(n * k), std::vector<float>(m * kb), std::vector<float>(nb * kb)};
  std::mt19937 rng(static_cast<std::uint32_t>(testing::test_seed()) ^ salt);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.1f);
  auto finite_code = [&] {
    int code;
    do code = byte(rng); while ((code & 0x7F) == 0x7F);
    return static_cast<std::uint8_t>(code);
  };
  for (auto& v : c.a) v = finite_code();
  for (auto& v : c.b) v = finite_code();
  for (auto& v : c.a_scales_row_major) v = scale(rng);
  for (auto& v : c.b_scales) v = scale(rng);
  return c;
}

// Independent evaluation: dequantize each operand element, multiply, sum in long double.
long double expected(const MmCase& c, std::int64_t i, std::int64_t j) {
  const std::int64_t kb = (c.k + 127) / 128;
  long double sum = 0.0L;
  for (std::int64_t x = 0; x < c.k; ++x) {
    const long double a = static_cast<long double>(fp8_e4m3_to_float(c.a[i * c.k + x])) * c.a_scales_row_major[i * kb + x / 128];
    const long double b = static_cast<long double>(fp8_e4m3_to_float(c.b[j * c.k + x])) * c.b_scales[(j / 128) * kb + x / 128];
    sum += a * b;
  }
  return sum;
}

std::vector<float> a_scales_in(const MmCase& c, ScaleLayout layout) {
  const std::int64_t kb = (c.k + 127) / 128;
  const ScaleShape shape = scale_storage_shape(layout, c.m, kb * 128, 128);
  std::vector<float> out(shape.rows * shape.cols, std::numeric_limits<float>::quiet_NaN());
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::int64_t g = 0; g < kb; ++g) {
      const float s = c.a_scales_row_major[i * kb + g];
      if (layout == ScaleLayout::kRowMajor) out[i * kb + g] = s; else out[g * shape.cols + i] = s;
    }
  }
  return out;
}

BlockFp8MmArgs mm_args(MmCase& c, std::vector<float>& a_scales, ScaleLayout layout, void* out,
                       DType out_dtype) {
  const std::int64_t kb = (c.k + 127) / 128, nb = (c.n + 127) / 128;
  const ScaleShape shape = scale_storage_shape(layout, c.m, kb * 128, 128);
  BlockFp8MmArgs args;
  args.a = TensorView::contiguous(c.a.data(), DType::kFP8E4M3, {c.m, c.k});
  args.a_scales = TensorView::contiguous(a_scales.data(), DType::kFP32, {shape.rows, shape.cols});
  args.a_scale_layout = layout;
  args.b = TensorView::contiguous(c.b.data(), DType::kFP8E4M3, {c.n, c.k});
  args.b_scales = TensorView::contiguous(c.b_scales.data(), DType::kFP32, {nb, kb});
  args.output = TensorView::contiguous(out, out_dtype, {c.m, c.n});
  return args;
}

TEST(BlockFp8Mm, HandComputed) {
  // a = b = 1.0 (code 0x38) over K = 256: block sums are 128 each.
  MmCase c{1, 1, 256, Bytes(256, 0x38), Bytes(256, 0x38), {2.0f, 3.0f}, {0.5f, 0.25f}};
  std::vector<float> scales = c.a_scales_row_major;
  float out = 0.0f;
  block_fp8_mm(mm_args(c, scales, ScaleLayout::kRowMajor, &out, DType::kFP32));
  EXPECT_EQ(out, 128.0f * 2.0f * 0.5f + 128.0f * 3.0f * 0.25f);
}

TEST(BlockFp8Mm, MatchesIndependentSumForEveryScaleLayout) {
  // N and K not multiples of 128 (edge blocks), M = 5 (TMA-aligned layout pads to 8).
  MmCase c = random_case(5, 200, 336, 1);
  for (ScaleLayout layout : {ScaleLayout::kRowMajor, ScaleLayout::kColumnMajor,
                             ScaleLayout::kColumnMajorTmaAligned}) {
    std::vector<float> scales = a_scales_in(c, layout);
    std::vector<float> out(c.m * c.n, std::numeric_limits<float>::quiet_NaN());
    std::vector<std::uint16_t> out_bf16(c.m * c.n, 0xFFFF);
    block_fp8_mm(mm_args(c, scales, layout, out.data(), DType::kFP32));
    block_fp8_mm(mm_args(c, scales, layout, out_bf16.data(), DType::kBF16));
    for (std::int64_t i = 0; i < c.m; ++i) {
      for (std::int64_t j = 0; j < c.n; ++j) {
        const long double want = expected(c, i, j);
        const float got = out[i * c.n + j];
        ASSERT_NEAR(got, static_cast<double>(want), 1e-6 * std::fabs(static_cast<double>(want)) + 1e-30)
            << scale_layout_name(layout) << " " << i << "," << j;
        ASSERT_EQ(out_bf16[i * c.n + j], float_to_bf16(got));
      }
    }
  }
}

TEST(BlockFp8Mm, EmptyProblemsReturn) {
  MmCase c = random_case(0, 64, 128, 2);
  std::vector<float> scales(0);
  BlockFp8MmArgs args = mm_args(c, scales, ScaleLayout::kRowMajor, nullptr, DType::kBF16);
  EXPECT_NO_THROW(block_fp8_mm(args));
}

template <class Fn>
void expect_error_naming(const char* argument, Fn&& fn) {
  try {
    fn();
    ADD_FAILURE() << "no error for " << argument;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(argument), std::string::npos) << e.what();
  }
}

TEST(BlockFp8Mm, ValidationErrorsNameTheArgument) {
  MmCase c = random_case(4, 256, 256, 3);
  std::vector<float> scales = a_scales_in(c, ScaleLayout::kRowMajor);
  std::vector<float> out(4 * 256);
  auto good = [&] { return mm_args(c, scales, ScaleLayout::kRowMajor, out.data(), DType::kFP32); };
  EXPECT_NO_THROW(block_fp8_mm(good()));
  expect_error_naming("a", [&] { auto a = good(); a.a.dtype = DType::kInt8; block_fp8_mm(a); });
  expect_error_naming("b", [&] { auto a = good(); a.b.shape[1] = 128; block_fp8_mm(a); });
  expect_error_naming("a_scales", [&] { auto a = good(); a.a_scale_layout = ScaleLayout::kColumnMajor; block_fp8_mm(a); });
  expect_error_naming("a_scales", [&] { auto a = good(); a.a_scales.dtype = DType::kBF16; block_fp8_mm(a); });
  expect_error_naming("b_scales", [&] { auto a = good(); a.b_scales.shape[0] = 1; block_fp8_mm(a); });
  expect_error_naming("output", [&] { auto a = good(); a.output.dtype = DType::kFP16; block_fp8_mm(a); });
  expect_error_naming("output", [&] { auto a = good(); a.output.shape[1] = 128; block_fp8_mm(a); });
  expect_error_naming("output_dtype", [&] { block_fp8_mm_workspace_bytes(1, 1, 1, ScaleLayout::kRowMajor, DType::kFP16); });
}

TEST(BlockFp8QuantizeWeight, ValidationErrorsNameTheArgument) {
  std::vector<float> w(128 * 256, 1.0f);
  Bytes codes(128 * 256);
  std::vector<float> scales(2);
  auto good = [&] {
    BlockFp8QuantizeWeightArgs a;
    a.weight = TensorView::contiguous(w.data(), DType::kFP32, {128, 256});
    a.output = TensorView::contiguous(codes.data(), DType::kFP8E4M3, {128, 256});
    a.scales = TensorView::contiguous(scales.data(), DType::kFP32, {1, 2});
    return a;
  };
  EXPECT_NO_THROW(block_fp8_quantize_weight(good()));
  expect_error_naming("weight", [&] { auto a = good(); a.weight.dtype = DType::kInt8; block_fp8_quantize_weight(a); });
  expect_error_naming("output", [&] { auto a = good(); a.output.dtype = DType::kInt8; block_fp8_quantize_weight(a); });
  expect_error_naming("scales", [&] { auto a = good(); a.scales.shape[1] = 1; block_fp8_quantize_weight(a); });
  expect_error_naming("eps", [&] { auto a = good(); a.eps = 0.0f; block_fp8_quantize_weight(a); });
}

}  // namespace
}  // namespace lowbit
