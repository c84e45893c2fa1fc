// The group quantization recipe applied to one row of float32 values (docs/quant.md), shared by
// the CPU references of per_token_group_quant and silu_and_mul_quant.
#pragma once

#include <cstdint>

#include "../ops/scale_layout.h"
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

}  // namespace lowbit::reference
