// CPU reference of per_token_group_quant: each row converted exactly to float32, then the group
// recipe of docs/quant.md (group_quant_row.cpp).
#include "quant.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "../ops/scale_layout.h"
#include "group_quant_row.h"
#include "lowbit/formats.h"

namespace lowbit::reference {

float element_as_float(const TensorView& t, std::int64_t row, std::int64_t col) {
  const std::int64_t offset = row * t.strides[0] + col;
  switch (t.dtype) {
    case DType::kBF16: return bf16_to_float(static_cast<const std::uint16_t*>(t.data)[offset]);
    case DType::kFP16: return fp16_to_float(static_cast<const std::uint16_t*>(t.data)[offset]);
    default: return static_cast<const float*>(t.data)[offset];
  }
}

GroupQuantRecipe recipe_of(int group_size, DType output_dtype, float eps,
                           const std::optional<float>& scale_ub, bool power_of_two_scale) {
  return {group_size, output_dtype, eps,
          scale_ub ? *scale_ub : std::numeric_limits<float>::infinity(), power_of_two_scale};
}

void per_token_group_quant(const PerTokenGroupQuantArgs& args) {
  const std::int64_t rows = args.input.shape[0];
  const std::int64_t cols = args.input.shape[1];
  const GroupQuantRecipe recipe = recipe_of(args.group_size, args.output.dtype, args.eps,
                                            args.scale_ub, args.power_of_two_scale);
  const detail::ScaleStrides strides =
      detail::scale_strides(args.scale_layout, rows, cols / args.group_size);
  std::vector<float> x(cols);
  for (std::int64_t row = 0; row < rows; ++row) {
    for (std::int64_t col = 0; col < cols; ++col) x[col] = element_as_float(args.input, row, col);
    quantize_row_in_groups(x.data(), cols, recipe,
                           static_cast<std::uint8_t*>(args.output.data) + row * args.output.strides[0],
                           static_cast<float*>(args.scales.data), row, strides);
  }
}

}  // namespace lowbit::reference
