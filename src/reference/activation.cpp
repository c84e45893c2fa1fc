// CPU references of silu_and_mul and silu_and_mul_quant (docs/activation.md): silu(g) * u per
// element with the shared host/device math of src/common/silu.h, then a 16-bit store or the
// group quantization recipe.
#include <cstdint>
#include <vector>

#include "../common/silu.h"
#include "lowbit/formats.h"
#include "quant.h"

namespace lowbit::reference {

namespace {
// silu(gate) * up for one row of a [T, 2H] input, into x[0, H).
void silu_mul_row(const TensorView& input, std::int64_t row, const std::optional<float>& limit,
                  std::vector<float>& x) {
  const std::int64_t h = static_cast<std::int64_t>(x.size());
  for (std::int64_t col = 0; col < h; ++col) {
    x[col] = detail::silu_mul(element_as_float(input, row, col),
                              element_as_float(input, row, h + col), limit.has_value(),
                              limit.value_or(0.0f));
  }
}
}  // namespace

void silu_and_mul(const SiluAndMulArgs& args) {
  const std::int64_t rows = args.input.shape[0];
  std::vector<float> x(args.output.shape[1]);
  for (std::int64_t row = 0; row < rows; ++row) {
    silu_mul_row(args.input, row, args.limit, x);
    auto* out = static_cast<std::uint16_t*>(args.output.data) + row * args.output.strides[0];
    for (std::size_t col = 0; col < x.size(); ++col) {
      out[col] = args.output.dtype == DType::kBF16 ? float_to_bf16(x[col]) : float_to_fp16(x[col]);
    }
  }
}

void silu_and_mul_quant(const SiluAndMulQuantArgs& args) {
  const GroupQuantRecipe recipe = recipe_of(args.group_size, args.output.dtype, args.eps,
                                            args.scale_ub, args.power_of_two_scale);
  quantize_rows_in_groups(args.input.shape[0], args.output.shape[1], recipe, args.output,
                          args.scales, args.scale_layout, [&](std::int64_t row, std::vector<float>& x) {
                            silu_mul_row(args.input, row, args.limit, x);
                          });
}

}  // namespace lowbit::reference
