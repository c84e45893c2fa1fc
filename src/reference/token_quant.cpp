// CPU references of per_token_quant, per_token_asymmetric_int8_quant and per_tensor_quant
// (docs/quant.md): plain float32 loops over rows, with the scalar codecs of lowbit/formats.h.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "../common/asymmetric_int8.h"
#include "group_quant_row.h"
#include "lowbit/formats.h"
#include "quant.h"

namespace lowbit::reference {

namespace {
std::uint8_t* row_bytes(const TensorView& t, std::int64_t row) {
  return static_cast<std::uint8_t*>(t.data) + row * t.strides[0];
}
}  // namespace

void per_token_quant(const PerTokenQuantArgs& args) {
  // One group per row: the group recipe with group_size = K, scales [M] = row-major [M, 1].
  const std::int64_t cols = args.input.shape[1];
  const GroupQuantRecipe recipe = recipe_of(static_cast<int>(cols), args.output.dtype, args.eps,
                                            args.scale_ub, false);
  quantize_rows_in_groups(args.input.shape[0], cols, recipe, args.output, args.scales,
                          ScaleLayout::kRowMajor, [&](std::int64_t row, std::vector<float>& x) {
                            row_as_float(args.input, row, x);
                          });
}

void per_token_asymmetric_int8_quant(const PerTokenAsymmetricInt8QuantArgs& args) {
  const std::int64_t rows = args.input.shape[0];
  const std::int64_t cols = args.input.shape[1];
  for (std::int64_t row = 0; row < rows; ++row) {
    std::vector<float> x(cols);
    row_as_float(args.input, row, x);
    float lo = std::numeric_limits<float>::infinity();
    float hi = -std::numeric_limits<float>::infinity();
    for (float v : x) {
      if (v < lo) lo = v;  // NaN compares false
      if (v > hi) hi = v;
    }
    const detail::AsymmetricParams params = detail::asymmetric_int8_params(lo, hi, args.eps);
    static_cast<float*>(args.scales.data)[row] = params.scale;
    static_cast<std::int32_t*>(args.zero_points.data)[row] = params.zero_point;
    std::uint8_t* q = row_bytes(args.output, row);
    for (std::int64_t col = 0; col < cols; ++col) {
      q[col] = static_cast<std::uint8_t>(
          detail::asymmetric_int8_code(x[col] / params.scale, params.zero_point));
    }
  }
}

void per_tensor_quant(const PerTensorQuantArgs& args) {
  const std::int64_t rows = args.input.shape[0];
  const std::int64_t cols = args.input.shape[1];
  const bool fp8 = args.output.dtype == DType::kFP8E4M3;
  float* scale_slot = static_cast<float*>(args.scale.data);
  float scale = *scale_slot;
  if (args.dynamic) {
    float amax = 0.0f;
    for (std::int64_t row = 0; row < rows; ++row) {
      for (std::int64_t col = 0; col < cols; ++col) {
        const float magnitude = std::fabs(element_as_float(args.input, row, col));
        if (magnitude > amax) amax = magnitude;  // NaN never becomes amax
      }
    }
    const float bound = args.scale_ub ? *args.scale_ub : std::numeric_limits<float>::infinity();
    scale = std::max(std::min(amax, bound), args.eps) / (fp8 ? kFP8E4M3Max : kInt8Max);
    *scale_slot = scale;
  }
  for (std::int64_t row = 0; row < rows; ++row) {
    std::uint8_t* q = row_bytes(args.output, row);
    for (std::int64_t col = 0; col < cols; ++col) {
      const float quotient = element_as_float(args.input, row, col) / scale;
      q[col] = fp8 ? float_to_fp8_e4m3(quotient, Saturation::kFinite)
                   : static_cast<std::uint8_t>(float_to_int8(quotient));
    }
  }
}

}  // namespace lowbit::reference
