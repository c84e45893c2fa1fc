// CPU reference of per_token_group_quant: each row converted exactly to float32, then the group
// recipe of docs/quant.md (group_quant_row.cpp).
#include "quant.h"

#include <cstdint>
#include <limits>
#include <vector>

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

void row_as_float(const TensorView& t, std::int64_t row, std::vector<float>& x) {
  for (std::size_t col = 0; col < x.size(); ++col) {
    x[col] = element_as_float(t, row, static_cast<std::int64_t>(col));
  }
}

GroupQuantRecipe recipe_of(int group_size, DType output_dtype, float eps,
                           const std::optional<float>& scale_ub, bool power_of_two_scale) {
  return {group_size, output_dtype, eps,
          scale_ub ? *scale_ub : std::numeric_limits<float>::infinity(), power_of_two_scale};
}

void per_token_group_quant(const PerTokenGroupQuantArgs& args) {
  const GroupQuantRecipe recipe = recipe_of(args.group_size, args.output.dtype, args.eps,
                                            args.scale_ub, args.power_of_two_scale);
  quantize_rows_in_groups(args.input.shape[0], args.input.shape[1], recipe, args.output,
                          args.scales, args.scale_layout, [&](std::int64_t row, std::vector<float>& x) {
                            row_as_float(args.input, row, x);
                          });
}

}  // namespace lowbit::reference
