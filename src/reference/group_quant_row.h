// The group quantization recipe applied to one row of float32 values (docs/quant.md), shared by
// the CPU references of per_token_group_quant and silu_and_mul_quant.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "../ops/scale_layout.h"
#include "lowbit/quant.h"
#include "lowbit/tensor.h"

namespace lowbit::reference {

struct GroupQuantRecipe {
  int group_size;
  DType output_dtype;  // kFP8E4M3 or kInt8
  float eps;
  float amax_bound;  // scale_ub, or +Inf
  bool power_of_two_scale;
};

// Quantizes x[0, cols) of row `row`: bytes to q_row, scale of group g to
// scales[row * strides.per_row + g * strides.per_group].
void quantize_row_in_groups(const float* x, std::int64_t cols, const GroupQuantRecipe& recipe,
                            std::uint8_t* q_row, float* scales, std::int64_t row,
                            const detail::ScaleStrides& strides);

// Quantizes rows [0, rows) of a [rows, cols] 1-byte output: values_of_row(row, x) fills the
// row's float32 values into x (size cols), then the recipe applies with `layout` scales.
void quantize_rows_in_groups(std::int64_t rows, std::int64_t cols, const GroupQuantRecipe& recipe,
                             const TensorView& output, const TensorView& scales, ScaleLayout layout,
                             const std::function<void(std::int64_t, std::vector<float>&)>& values_of_row);

}  // namespace lowbit::reference
