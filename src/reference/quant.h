// CPU references of the quantization and activation ops (arguments already validated by
// src/ops). Shared helpers: element_as_float and recipe_of.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "group_quant_row.h"
#include "lowbit/activation.h"
#include "lowbit/quant.h"

namespace lowbit::reference {

// Element (row, col) of a rank-2 bf16/fp16/fp32 tensor with unit column stride, as float32.
float element_as_float(const TensorView& t, std::int64_t row, std::int64_t col);

// Row `row` of such a tensor as float32, into x (x.size() columns).
void row_as_float(const TensorView& t, std::int64_t row, std::vector<float>& x);

GroupQuantRecipe recipe_of(int group_size, DType output_dtype, float eps,
                           const std::optional<float>& scale_ub, bool power_of_two_scale);

void per_token_group_quant(const PerTokenGroupQuantArgs& args);
void per_token_quant(const PerTokenQuantArgs& args);
void per_token_asymmetric_int8_quant(const PerTokenAsymmetricInt8QuantArgs& args);
void per_tensor_quant(const PerTensorQuantArgs& args);
void silu_and_mul(const SiluAndMulArgs& args);
void silu_and_mul_quant(const SiluAndMulQuantArgs& args);

}  // namespace lowbit::reference
