// Shared validation of the group quantizers (see group_quant_check.h).
#include "group_quant_check.h"

#include <cmath>
#include <string>

namespace lowbit::detail {

std::string shape_text(std::int64_t rows, std::int64_t cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

void check_float_rows_input(const ArgCheck& check, const TensorView& input,
                            std::initializer_list<DType> allowed) {
  check.row_major_rows("input", input);
  check.dtype_in("input", input, allowed);
  if (input.device != Device::kCUDA || input.numel() == 0) return;
  check.not_null("input", input);
  check.aligned("input", input, 16);
  if (input.shape[0] > 1 && (input.strides[0] * dtype_size(input.dtype)) % 16 != 0) {
    check.fail("input", "row stride a multiple of 16 bytes (CUDA kernel)", input.describe());
  }
}

void check_group_quant_outputs(const ArgCheck& check, const TensorView& input,
                               const TensorView& output, const TensorView& scales,
                               std::int64_t rows, std::int64_t cols, int group_size,
                               ScaleLayout layout, float eps,
                               const std::optional<float>& scale_ub) {
  const int g = group_size;
  if (g != 32 && g != 64 && g != 128) check.fail("group_size", "32, 64 or 128", std::to_string(g));
  if (cols % g != 0) {
    check.fail("input", "a quantized width that is a multiple of group_size " + std::to_string(g) +
                            " (got " + std::to_string(cols) + ")",
               input.describe());
  }
  check.row_major_rows("output", output);
  check.dtype_in("output", output, {DType::kFP8E4M3, DType::kInt8});
  if (output.shape[0] != rows || output.shape[1] != cols) {
    check.fail("output", "shape " + shape_text(rows, cols), output.describe());
  }
  const ScaleShape want = scale_storage_shape(layout, rows, cols, g);
  check.dtype_in("scales", scales, {DType::kFP32});
  if (scales.rank != 2 || scales.shape[0] != want.rows || scales.shape[1] != want.cols) {
    check.fail("scales",
               "shape " + shape_text(want.rows, want.cols) + " for layout " +
                   scale_layout_name(layout),
               scales.describe());
  }
  check.contiguous("scales", scales);
  if (!(std::isfinite(eps) && eps > 0.0f)) check.fail("eps", "a finite value > 0", std::to_string(eps));
  if (scale_ub && !(std::isfinite(*scale_ub) && *scale_ub > 0.0f)) {
    check.fail("scale_ub", "a finite value > 0", std::to_string(*scale_ub));
  }
  check.same_device("output", output, "input", input);
  check.same_device("scales", scales, "input", input);
  if (rows * cols == 0) return;
  check.not_null("input", input);
  check.not_null("output", output);
  check.not_null("scales", scales);
  if (input.device == Device::kCUDA) {
    check.aligned("output", output, 8);  // 8 quantized bytes per store
    if (rows > 1 && output.strides[0] % 8 != 0) {
      check.fail("output", "row stride a multiple of 8 bytes (CUDA kernel)", output.describe());
    }
    check.aligned("scales", scales, 4);
    if (rows * (cols / g) >= (std::int64_t{1} << 32)) {
      check.fail("input", "fewer than 2^32 groups (CUDA kernel)", input.describe());
    }
  }
}

}  // namespace lowbit::detail
