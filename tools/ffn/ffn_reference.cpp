// Double-precision reference rows of a SwiGLU FFN and the comparison of lowbit's output with them.
#include "ffn_reference.h"

#include <cmath>

#include "ffn_random.h"
#include "lowbit/formats.h"

namespace lowbit::tools {
namespace {

// out[r][n] = sum_k w[n][k] in[r][k] for every row r of `in` ([rows, k]), n in [0, n_out).
std::vector<double> matvec_rows(const std::vector<float>& w, std::int64_t n_out, std::int64_t k,
                                const std::vector<double>& in, std::int64_t rows) {
  std::vector<double> out(rows * n_out);
  parallel_ranges(n_out, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t n = begin; n < end; ++n) {
      const float* weight_row = w.data() + n * k;
      for (std::int64_t r = 0; r < rows; ++r) {
        const double* x = in.data() + r * k;
        double sum = 0;
        for (std::int64_t j = 0; j < k; ++j) sum += static_cast<double>(weight_row[j]) * x[j];
        out[r * n_out + n] = sum;
      }
    }
  });
  return out;
}

}  // namespace

std::vector<std::int64_t> reference_row_indices(std::int64_t tokens, int count) {
  std::vector<std::int64_t> rows;
  if (tokens <= count) {
    for (std::int64_t t = 0; t < tokens; ++t) rows.push_back(t);
    return rows;
  }
  for (int r = 0; r < count; ++r) rows.push_back(count == 1 ? 0 : r * (tokens - 1) / (count - 1));
  return rows;
}

std::vector<double> reference_rows(const FfnWeights& weights, const std::vector<std::uint16_t>& x,
                                   const std::vector<std::int64_t>& rows) {
  const std::int64_t h = weights.shape.hidden, i = weights.shape.intermediate;
  const std::int64_t count = static_cast<std::int64_t>(rows.size());
  std::vector<double> input(count * h);
  for (std::int64_t r = 0; r < count; ++r) {
    for (std::int64_t c = 0; c < h; ++c) input[r * h + c] = bf16_to_float(x[rows[r] * h + c]);
  }
  const std::vector<double> gate_up = matvec_rows(weights.gate_up, 2 * i, h, input, count);
  std::vector<double> activation(count * i);
  for (std::int64_t r = 0; r < count; ++r) {
    for (std::int64_t c = 0; c < i; ++c) {
      const double gate = gate_up[r * 2 * i + c], up = gate_up[r * 2 * i + i + c];
      activation[r * i + c] = gate / (1.0 + std::exp(-gate)) * up;
    }
  }
  return matvec_rows(weights.down, h, i, activation, count);
}

FfnAccuracy compare_with_reference(const std::vector<std::uint16_t>& y, std::int64_t hidden,
                                   const std::vector<std::int64_t>& rows,
                                   const std::vector<double>& reference) {
  FfnAccuracy accuracy;
  double error2 = 0, ref2 = 0, out2 = 0, dot = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::int64_t c = 0; c < hidden; ++c) {
      const double out = bf16_to_float(y[rows[r] * hidden + c]);
      const double ref = reference[r * hidden + c];
      if (!std::isfinite(out)) {
        ++accuracy.non_finite;
        continue;
      }
      error2 += (out - ref) * (out - ref);
      ref2 += ref * ref;
      out2 += out * out;
      dot += out * ref;
      accuracy.max_abs_error = std::max(accuracy.max_abs_error, std::fabs(out - ref));
    }
  }
  accuracy.relative_error = std::sqrt(error2 / ref2);
  accuracy.cosine = dot / std::sqrt(out2 * ref2);
  return accuracy;
}

bool accuracy_ok(const FfnAccuracy& accuracy) {
  return accuracy.non_finite == 0 && accuracy.relative_error <= kFfnMaxRelativeError &&
         accuracy.cosine >= kFfnMinCosine;
}

}  // namespace lowbit::tools
