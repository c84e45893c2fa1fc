// The reference the FP8 layer is judged against: the same SwiGLU FFN computed in double precision
// from the fp32 weights (the bf16 draw before quantization, or the checkpoint's dequantized
// weights) and the bf16 input, with no intermediate rounding, on a sample of rows.
#pragma once

#include <cstdint>
#include <vector>

#include "ffn_weights.h"

namespace lowbit::tools {

// `count` rows spread evenly over [0, tokens) (all rows when tokens <= count).
std::vector<std::int64_t> reference_row_indices(std::int64_t tokens, int count);

// y rows [rows.size(), H] of y = W_down (silu(W_gate x) * (W_up x)).
std::vector<double> reference_rows(const FfnWeights& weights, const std::vector<std::uint16_t>& x,
                                   const std::vector<std::int64_t>& rows);

struct FfnAccuracy {
  double relative_error = 0;  // ||y - ref||_F / ||ref||_F over the sampled rows
  double cosine = 0;          // <y, ref> / (||y|| ||ref||)
  double max_abs_error = 0;
  std::int64_t non_finite = 0;  // NaN or Inf elements in the sampled rows of y
};

// Compares rows `rows` of y [T, H] bf16 with the reference rows.
FfnAccuracy compare_with_reference(const std::vector<std::uint16_t>& y, std::int64_t hidden,
                                   const std::vector<std::int64_t>& rows,
                                   const std::vector<double>& reference);

// The bar the FP8 layer must meet (two block-FP8 GEMMs and two 1x128 activation quantizations
// of Gaussian data land near 5% relative error; 10% leaves room for outliers, not for a bug).
inline constexpr double kFfnMaxRelativeError = 0.10;
inline constexpr double kFfnMinCosine = 0.995;
bool accuracy_ok(const FfnAccuracy& accuracy);

}  // namespace lowbit::tools
