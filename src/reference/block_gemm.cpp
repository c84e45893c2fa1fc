// CPU references of docs/block_gemm.md: 128 x 128 block weight quantization, its inverse, and the
// block-scaled GEMM, written as plain loops over blocks.
#include "block_gemm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "../ops/scale_layout.h"
#include "lowbit/formats.h"
#include "quant.h"  // element_as_float

namespace lowbit::reference {

namespace {

constexpr std::int64_t kBlock = kBlockFp8Block;

std::int64_t blocks(std::int64_t extent) { return (extent + kBlock - 1) / kBlock; }

std::uint8_t* row_bytes(const TensorView& t, std::int64_t row) {
  return static_cast<std::uint8_t*>(t.data) + row * t.strides[0];
}

void store_float(const TensorView& t, std::int64_t row, std::int64_t col, float value) {
  const std::int64_t at = row * t.strides[0] + col;
  switch (t.dtype) {
    case DType::kBF16: static_cast<std::uint16_t*>(t.data)[at] = float_to_bf16(value); break;
    case DType::kFP16: static_cast<std::uint16_t*>(t.data)[at] = float_to_fp16(value); break;
    default: static_cast<float*>(t.data)[at] = value; break;
  }
}

}  // namespace

void block_fp8_quantize_weight(const BlockFp8QuantizeWeightArgs& args) {
  const std::int64_t rows = args.weight.shape[0], cols = args.weight.shape[1];
  auto* scales = static_cast<float*>(args.scales.data);
  for (std::int64_t bi = 0; bi < blocks(rows); ++bi) {
    const std::int64_t r0 = bi * kBlock, r1 = std::min(rows, r0 + kBlock);
    for (std::int64_t bj = 0; bj < blocks(cols); ++bj) {
      const std::int64_t c0 = bj * kBlock, c1 = std::min(cols, c0 + kBlock);
      float amax = 0.0f;
      for (std::int64_t r = r0; r < r1; ++r) {
        for (std::int64_t c = c0; c < c1; ++c) {
          const float magnitude = std::fabs(element_as_float(args.weight, r, c));
          if (magnitude > amax) amax = magnitude;  // NaN compares false: it never becomes amax
        }
      }
      const float scale = std::max(amax, args.eps) / kFP8E4M3Max;
      scales[bi * blocks(cols) + bj] = scale;
      for (std::int64_t r = r0; r < r1; ++r) {
        for (std::int64_t c = c0; c < c1; ++c) {
          row_bytes(args.output, r)[c] =
              float_to_fp8_e4m3(element_as_float(args.weight, r, c) / scale, Saturation::kFinite);
        }
      }
    }
  }
}

void block_fp8_dequantize_weight(const BlockFp8DequantizeWeightArgs& args) {
  const std::int64_t rows = args.weight.shape[0], cols = args.weight.shape[1];
  const auto* scales = static_cast<const float*>(args.scales.data);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const float scale = scales[(r / kBlock) * blocks(cols) + c / kBlock];
      store_float(args.output, r, c, fp8_e4m3_to_float(row_bytes(args.weight, r)[c]) * scale);
    }
  }
}

void block_fp8_mm(const BlockFp8MmArgs& args) {
  const std::int64_t m = args.a.shape[0], k = args.a.shape[1], n = args.b.shape[0];
  const std::int64_t k_blocks = blocks(k);
  const detail::ScaleStrides a_strides = detail::scale_strides(args.a_scale_layout, m, k_blocks);
  const auto* a_scales = static_cast<const float*>(args.a_scales.data);
  const auto* b_scales = static_cast<const float*>(args.b_scales.data);
  // Decode every fp8 code once.
  std::vector<double> a_row(k), b_values(static_cast<std::size_t>(n * k));
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t c = 0; c < k; ++c) b_values[j * k + c] = fp8_e4m3_to_float(row_bytes(args.b, j)[c]);
  }
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t c = 0; c < k; ++c) a_row[c] = fp8_e4m3_to_float(row_bytes(args.a, i)[c]);
    for (std::int64_t j = 0; j < n; ++j) {
      double total = 0.0;
      for (std::int64_t kb = 0; kb < k_blocks; ++kb) {
        double block_sum = 0.0;
        for (std::int64_t c = kb * kBlock; c < std::min(k, (kb + 1) * kBlock); ++c) {
          block_sum += a_row[c] * b_values[j * k + c];
        }
        const double a_scale = a_scales[i * a_strides.per_row + kb * a_strides.per_group];
        const double b_scale = b_scales[(j / kBlock) * k_blocks + kb];
        total += block_sum * a_scale * b_scale;
      }
      store_float(args.output, i, j, static_cast<float>(total));
    }
  }
}

}  // namespace lowbit::reference
