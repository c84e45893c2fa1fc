// CPU reference of docs/scaled_gemm.md: the exact product sum of the quantized operands, then
// the dequantization epilogue in float32, written in the order the kernel evaluates it:
//   t = acc - azp[m] * azp_adj[n]  (int8: int32, exact)   x = float(t)   (fp8: x = float(acc))
//   y = s_b[n] * x                 d = fma(s_a[m], y, bias[n])          out = round(d)
#include "scaled_gemm.h"

#include <cmath>
#include <cstdint>

#include "lowbit/formats.h"

namespace lowbit::reference {

namespace {

float element_of(const TensorView& t, std::int64_t i) {
  switch (t.dtype) {
    case DType::kBF16: return bf16_to_float(static_cast<const std::uint16_t*>(t.data)[i]);
    case DType::kFP16: return fp16_to_float(static_cast<const std::uint16_t*>(t.data)[i]);
    default: return static_cast<const float*>(t.data)[i];
  }
}

// One element of a per-tensor (1 element) or per-row vector.
float scale_of(const TensorView& scales, std::int64_t i) {
  return static_cast<const float*>(scales.data)[scales.numel() == 1 ? 0 : i];
}

std::int32_t int32_at(const TensorView& t, std::int64_t i, std::int32_t absent) {
  return t.data == nullptr ? absent : static_cast<const std::int32_t*>(t.data)[i];
}

// The exact dot product of row m of a and row n of b, as the float the epilogue starts from.
float dequantized_product(const ScaledMmArgs& args, std::int64_t m, std::int64_t n,
                          std::int64_t k) {
  if (args.a.dtype == DType::kInt8) {
    const auto* a = static_cast<const std::int8_t*>(args.a.data) + m * args.a.strides[0];
    const auto* b = static_cast<const std::int8_t*>(args.b.data) + n * args.b.strides[0];
    std::int64_t acc = 0;
    for (std::int64_t i = 0; i < k; ++i) acc += std::int64_t{a[i]} * b[i];
    // Validation bounds K so that acc and the azp-corrected sum fit in int32.
    const std::int32_t azp_term = int32_at(args.azp, m, 1) * int32_at(args.azp_adj, n, 0);
    return static_cast<float>(static_cast<std::int32_t>(acc) - azp_term);
  }
  const auto* a = static_cast<const std::uint8_t*>(args.a.data) + m * args.a.strides[0];
  const auto* b = static_cast<const std::uint8_t*>(args.b.data) + n * args.b.strides[0];
  double acc = 0.0;
  for (std::int64_t i = 0; i < k; ++i) {
    acc += static_cast<double>(fp8_e4m3_to_float(a[i])) * fp8_e4m3_to_float(b[i]);
  }
  return static_cast<float>(acc);
}

}  // namespace

void scaled_mm(const ScaledMmArgs& args) {
  const std::int64_t m_count = args.a.shape[0], k = args.a.shape[1], n_count = args.b.shape[0];
  for (std::int64_t m = 0; m < m_count; ++m) {
    const float s_a = scale_of(args.a_scales, m);
    for (std::int64_t n = 0; n < n_count; ++n) {
      const float y = scale_of(args.b_scales, n) * dequantized_product(args, m, n, k);
      const float bias = args.bias.data == nullptr ? 0.0f : element_of(args.bias, n);
      const float d = std::fma(s_a, y, bias);
      const std::int64_t at = m * args.output.strides[0] + n;
      auto* out = static_cast<std::uint16_t*>(args.output.data);
      out[at] = args.output.dtype == DType::kBF16 ? float_to_bf16(d) : float_to_fp16(d);
    }
  }
}

void scaled_mm_azp_adjustment(const ScaledMmAzpAdjustmentArgs& args) {
  const std::int64_t n_count = args.b.shape[0], k = args.b.shape[1];
  auto* out = static_cast<std::int32_t*>(args.output.data);
  for (std::int64_t n = 0; n < n_count; ++n) {
    const auto* b = static_cast<const std::int8_t*>(args.b.data) + n * args.b.strides[0];
    std::int32_t sum = 0;
    for (std::int64_t i = 0; i < k; ++i) sum += b[i];
    out[n] = args.zero_point * sum;
  }
}

}  // namespace lowbit::reference
