// CPU references of NVFP4 weight quantization, dequantization and the dense / 2:4-sparse GEMVs:
// plain loops over the recipe of docs/nvfp4.md (src/common/nvfp4_recipe.h holds the float32
// steps shared with the kernels). GEMV sums run in double over exact products.
#include "nvfp4.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "../common/nvfp4_gemv_layout.h"
#include "../common/nvfp4_recipe.h"
#include "quant.h"

namespace lowbit::reference {

namespace {

float scalar_at(const TensorView& t, std::int64_t index) {
  return static_cast<const float*>(t.data)[index];
}

// Rank-2 [N, C] or rank-3 [E, N, C] weight tensor: experts, rows, and bytes per expert.
struct ExpertShape {
  std::int64_t experts, rows, cols_bytes;
};
ExpertShape expert_shape(const TensorView& t) {
  if (t.rank == 3) return {t.shape[0], t.shape[1], t.shape[2]};
  return {1, t.shape[0], t.shape[1]};
}

// Token lists of a GEMV call as host vectors: the routing, or one slot of every x row.
struct HostRouting {
  std::vector<std::int32_t> expert_ids, slot_offsets, token_ids;
};
HostRouting host_routing(const std::optional<Nvfp4MoeRouting>& routing, std::int64_t rows) {
  HostRouting host;
  if (!routing) {
    host.expert_ids = {0};
    host.slot_offsets = {0, static_cast<std::int32_t>(rows)};
    for (std::int64_t r = 0; r < rows; ++r) host.token_ids.push_back(static_cast<std::int32_t>(r));
    return host;
  }
  auto copy = [](const TensorView& t) {
    const auto* data = static_cast<const std::int32_t*>(t.data);
    return std::vector<std::int32_t>(data, data + t.numel());
  };
  return {copy(routing->expert_ids), copy(routing->slot_offsets), copy(routing->token_ids)};
}

// Shared GEMV loop: decode(e, n, k) gives e2m1 * s_b (exact) of expert e.
template <typename Decode>
void gemv_loop(const TensorView& x, const TensorView& global_scales, const TensorView& output,
               const std::optional<Nvfp4MoeRouting>& routing, std::int64_t experts,
               std::int64_t rows, std::int64_t cols, Decode decode) {
  const HostRouting r = host_routing(routing, x.shape[0]);
  auto* out = static_cast<std::uint16_t*>(output.data);
  const std::uint16_t kNaN = 0x7FC0;
  std::vector<double> w(static_cast<std::size_t>(cols));
  for (std::size_t s = 0; s + 1 < r.slot_offsets.size(); ++s) {
    const std::int32_t e = r.expert_ids[s];
    if (e < 0) continue;
    for (std::int64_t n = 0; n < rows; ++n) {
      if (e < experts) {
        for (std::int64_t k = 0; k < cols; ++k) w[k] = decode(e, n, k);
      }
      for (std::int32_t p = r.slot_offsets[s]; p < r.slot_offsets[s + 1]; ++p) {
        std::uint16_t& y = out[p * output.strides[0] + n];
        const std::int32_t t = r.token_ids[p];
        if (e >= experts || t < 0 || t >= x.shape[0]) {
          y = kNaN;
          continue;
        }
        double acc = 0.0;
        for (std::int64_t k = 0; k < cols; ++k) acc += element_as_float(x, t, k) * w[k];
        y = float_to_bf16(static_cast<float>(acc * scalar_at(global_scales, e)));
      }
    }
  }
}

}  // namespace

void nvfp4_quantize_weight(const Nvfp4QuantizeWeightArgs& args) {
  const std::int64_t rows = args.weight.shape[0], cols = args.weight.shape[1];
  auto* global_out = static_cast<float*>(args.global_scale.data);
  float global = *global_out;
  if (!args.global_scale_is_input) {
    float amax = 0.0f;
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) {
        amax = std::fmax(amax, std::fabs(element_as_float(args.weight, r, c)));
      }
    }
    global = detail::nvfp4_global_scale(amax);
    *global_out = global;
  }
  auto* packed = static_cast<std::uint8_t*>(args.packed.data);
  auto* scales = static_cast<std::uint8_t*>(args.block_scales.data);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t b = 0; b < cols / 16; ++b) {
      float block_amax = 0.0f;
      for (int i = 0; i < 16; ++i) {
        block_amax = std::fmax(block_amax, std::fabs(element_as_float(args.weight, r, b * 16 + i)));
      }
      const std::uint8_t code = detail::nvfp4_block_scale_code(block_amax, global);
      scales[r * (cols / 16) + b] = code;
      const float block_scale = fp8_e4m3_to_float(code);
      for (int i = 0; i < 16; i += 2) {
        const std::uint8_t low = detail::nvfp4_quantize_value(
            element_as_float(args.weight, r, b * 16 + i), block_scale, global);
        const std::uint8_t high = detail::nvfp4_quantize_value(
            element_as_float(args.weight, r, b * 16 + i + 1), block_scale, global);
        packed[r * (cols / 2) + (b * 16 + i) / 2] = pack_e2m1x2(low, high);
      }
    }
  }
}

void nvfp4_dequantize_weight(const Nvfp4DequantizeWeightArgs& args) {
  const std::int64_t rows = args.output.shape[0], cols = args.output.shape[1];
  const auto* packed = static_cast<const std::uint8_t*>(args.packed.data);
  const auto* scales = static_cast<const std::uint8_t*>(args.block_scales.data);
  const float global = scalar_at(args.global_scale, 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const float w = detail::nvfp4_dequantize_value(read_nibble(packed, r * cols + c),
                                                     fp8_e4m3_to_float(scales[r * (cols / 16) + c / 16]),
                                                     global);
      const std::int64_t at = r * cols + c;
      switch (args.output.dtype) {
        case DType::kBF16: static_cast<std::uint16_t*>(args.output.data)[at] = float_to_bf16(w); break;
        case DType::kFP16: static_cast<std::uint16_t*>(args.output.data)[at] = float_to_fp16(w); break;
        default: static_cast<float*>(args.output.data)[at] = w; break;
      }
    }
  }
}

void nvfp4_gemv(const Nvfp4GemvArgs& args) {
  const ExpertShape shape = expert_shape(args.packed);
  const std::int64_t cols = shape.cols_bytes * 2;
  const auto* packed = static_cast<const std::uint8_t*>(args.packed.data);
  const auto* scales = static_cast<const std::uint8_t*>(args.block_scales.data);
  gemv_loop(args.x, args.global_scales, args.output, args.routing, shape.experts, shape.rows, cols,
            [&](std::int64_t e, std::int64_t n, std::int64_t k) {
              const std::uint8_t* w = packed + e * shape.rows * shape.cols_bytes;
              const std::uint8_t* s = scales + e * shape.rows * (cols / 16);
              return static_cast<double>(e2m1_to_float(detail::read_gemv_code(w, detail::nvfp4_gemv_dense_slot(n, k, cols)))) *
                     fp8_e4m3_to_float(s[detail::nvfp4_gemv_scale_byte(n, k, cols)]);
            });
}

void nvfp4_sparse24_gemv(const Nvfp4Sparse24GemvArgs& args) {
  const ExpertShape shape = expert_shape(args.values);
  const std::int64_t cols = shape.cols_bytes * 4;
  const auto* values = static_cast<const std::uint8_t*>(args.values.data);
  const auto* indices = static_cast<const std::uint8_t*>(args.indices.data);
  const auto* scales = static_cast<const std::uint8_t*>(args.block_scales.data);
  gemv_loop(args.x, args.global_scales, args.output, args.routing, shape.experts, shape.rows, cols,
            [&](std::int64_t e, std::int64_t n, std::int64_t k) {
              const std::uint8_t* v = values + e * shape.rows * (cols / 4);
              const std::uint8_t* i = indices + e * shape.rows * (cols / 8);
              const std::uint8_t* s = scales + e * shape.rows * (cols / 16);
              const std::int64_t group = k / 4;
              const std::uint8_t code = read_nibble(i, detail::nvfp4_gemv_sparse_index_nibble(n, group, cols));
              const int position = static_cast<int>(k % 4);
              int kept = -1;
              if ((code & 3) == position) kept = 0;
              if ((code >> 2) == position) kept = 1;
              if (kept < 0) return 0.0;
              const std::uint8_t value =
                  detail::read_gemv_code(v, detail::nvfp4_gemv_sparse_value_slot(n, group, kept, cols));
              return static_cast<double>(e2m1_to_float(value)) *
                     fp8_e4m3_to_float(s[detail::nvfp4_gemv_sparse_scale_byte(n, k, cols)]);
            });
}

}  // namespace lowbit::reference
