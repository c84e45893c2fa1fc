// CPU reference of per_token_group_quant: the recipe of docs/quant.md spelled out as plain
// float32 loops, one element at a time, using the scalar codecs of lowbit/formats.h.
#include "quant.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "../ops/scale_layout.h"
#include "lowbit/formats.h"

namespace lowbit::reference {

namespace {

float load_as_float(const TensorView& t, std::int64_t row, std::int64_t col) {
  const std::int64_t offset = row * t.strides[0] + col;
  switch (t.dtype) {
    case DType::kBF16: return bf16_to_float(static_cast<const std::uint16_t*>(t.data)[offset]);
    case DType::kFP16: return fp16_to_float(static_cast<const std::uint16_t*>(t.data)[offset]);
    default: return static_cast<const float*>(t.data)[offset];
  }
}

void store_quantized(const TensorView& t, std::int64_t row, std::int64_t col, float value) {
  const std::int64_t offset = row * t.strides[0] + col;
  if (t.dtype == DType::kFP8E4M3) {
    static_cast<std::uint8_t*>(t.data)[offset] = float_to_fp8_e4m3(value, Saturation::kFinite);
  } else {
    static_cast<std::int8_t*>(t.data)[offset] = float_to_int8(value);
  }
}

}  // namespace

void per_token_group_quant(const PerTokenGroupQuantArgs& args) {
  const std::int64_t rows = args.input.shape[0];
  const std::int64_t cols = args.input.shape[1];
  const int group = args.group_size;
  const std::int64_t groups_per_row = cols / group;
  const float qmax = args.output.dtype == DType::kFP8E4M3 ? kFP8E4M3Max : kInt8Max;
  const float amax_bound =
      args.scale_ub ? *args.scale_ub : std::numeric_limits<float>::infinity();
  const detail::ScaleStrides scale_at =
      detail::scale_strides(args.scale_layout, rows, groups_per_row);
  float* scales = static_cast<float*>(args.scales.data);

  for (std::int64_t row = 0; row < rows; ++row) {
    for (std::int64_t g = 0; g < groups_per_row; ++g) {
      const std::int64_t first = g * group;
      float amax = 0.0f;
      for (int i = 0; i < group; ++i) {
        const float magnitude = std::fabs(load_as_float(args.input, row, first + i));
        if (magnitude > amax) amax = magnitude;  // NaN compares false: it never becomes amax
      }
      float scale = std::max(std::min(amax, amax_bound), args.eps) / qmax;
      if (args.power_of_two_scale) scale = round_scale_up_to_power_of_two(scale);
      scales[row * scale_at.per_row + g * scale_at.per_group] = scale;
      for (int i = 0; i < group; ++i) {
        store_quantized(args.output, row, first + i,
                        load_as_float(args.input, row, first + i) / scale);
      }
    }
  }
}

}  // namespace lowbit::reference
