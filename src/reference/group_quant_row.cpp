// CPU reference of the group quantization recipe (docs/quant.md), one row at a time, spelled
// out with the scalar codecs of lowbit/formats.h.
#include "group_quant_row.h"

#include <algorithm>
#include <cmath>

#include "lowbit/formats.h"

namespace lowbit::reference {

void quantize_row_in_groups(const float* x, std::int64_t cols, const GroupQuantRecipe& recipe,
                            std::uint8_t* q_row, float* scales, std::int64_t row,
                            const detail::ScaleStrides& strides) {
  const int group = recipe.group_size;
  const bool fp8 = recipe.output_dtype == DType::kFP8E4M3;
  const float qmax = fp8 ? kFP8E4M3Max : kInt8Max;
  for (std::int64_t g = 0; g < cols / group; ++g) {
    const float* xg = x + g * group;
    float amax = 0.0f;
    for (int i = 0; i < group; ++i) {
      const float magnitude = std::fabs(xg[i]);
      if (magnitude > amax) amax = magnitude;  // NaN compares false: it never becomes amax
    }
    float scale = std::max(std::min(amax, recipe.amax_bound), recipe.eps) / qmax;
    if (recipe.power_of_two_scale) scale = round_scale_up_to_power_of_two(scale);
    scales[row * strides.per_row + g * strides.per_group] = scale;
    for (int i = 0; i < group; ++i) {
      const float quotient = xg[i] / scale;
      q_row[g * group + i] = fp8 ? float_to_fp8_e4m3(quotient, Saturation::kFinite)
                                 : static_cast<std::uint8_t>(float_to_int8(quotient));
    }
  }
}

void quantize_rows_in_groups(std::int64_t rows, std::int64_t cols, const GroupQuantRecipe& recipe,
                             const TensorView& output, const TensorView& scales, ScaleLayout layout,
                             const std::function<void(std::int64_t, std::vector<float>&)>& values_of_row) {
  const detail::ScaleStrides strides = detail::scale_strides(layout, rows, cols / recipe.group_size);
  std::vector<float> x(cols);
  for (std::int64_t row = 0; row < rows; ++row) {
    values_of_row(row, x);
    quantize_row_in_groups(x.data(), cols, recipe,
                           static_cast<std::uint8_t*>(output.data) + row * output.strides[0],
                           static_cast<float*>(scales.data), row, strides);
  }
}

}  // namespace lowbit::reference
