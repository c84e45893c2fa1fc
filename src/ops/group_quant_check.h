// Validation shared by the group quantizers (per_token_group_quant, silu_and_mul_quant) and the
// translation of their arguments into kernel parameters.
#pragma once

#include <cstdint>
#include <optional>

#include "arg_check.h"
#include "lowbit/quant.h"

namespace lowbit::detail {

std::string shape_text(std::int64_t rows, std::int64_t cols);

// Checks group_size, eps, scale_ub, the [rows, cols] quantized output, the scale tensor of
// `layout`, devices (against `input`), null pointers and the CUDA kernel's alignment.
void check_group_quant_outputs(const ArgCheck& check, const TensorView& input,
                               const TensorView& output, const TensorView& scales,
                               std::int64_t rows, std::int64_t cols, int group_size,
                               ScaleLayout layout, float eps, const std::optional<float>& scale_ub);

// Input [rows, width] of `allowed` 16/32-bit float dtypes, checked for the CUDA kernel's
// 16-byte vector loads when on the device.
void check_float_rows_input(const ArgCheck& check, const TensorView& input,
                            std::initializer_list<DType> allowed);

}  // namespace lowbit::detail
