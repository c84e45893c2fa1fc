// Fills cuda::GroupQuantParams from validated op arguments and launches (or, in a build
// without CUDA, reports that device tensors cannot run).
#pragma once

#include <cstdint>
#include <optional>

#include "arg_check.h"
#include "lowbit/quant.h"

namespace lowbit::detail {

struct GroupQuantLaunch {
  const TensorView& input;
  const TensorView& output;
  const TensorView& scales;
  std::int64_t rows;
  std::int64_t cols;  // quantized columns
  int group_size;
  ScaleLayout scale_layout;
  float eps;
  const std::optional<float>& scale_ub;
  bool power_of_two_scale;
  bool enable_pdl;
};

// silu_mul: x = silu(input[:, c]) * input[:, cols + c], clamped with `limit` when given.
void launch_group_quant_kernel(const ArgCheck& check, const GroupQuantLaunch& launch,
                               const std::optional<float>& limit, bool silu_mul,
                               cudaStream_t stream);

}  // namespace lowbit::detail
