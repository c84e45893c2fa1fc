// NVFP4 weight preparation on host tensors (run once at load time): 2:4 magnitude pruning into
// the compressed format, its inverse, and the re-layout into the GEMV kernels' layout
// (docs/nvfp4.md; byte addresses in src/common/nvfp4_gemv_layout.h).
#include <cmath>
#include <cstdint>
#include <string>

#include "../common/nvfp4_gemv_layout.h"
#include "../common/nvfp4_recipe.h"
#include "../reference/nvfp4.h"
#include "arg_check.h"
#include "lowbit/nvfp4.h"
#include "nvfp4_check.h"

namespace lowbit {

namespace {

using reference::read_nibble;
using reference::write_nibble;

void require_host(const detail::ArgCheck& check, const char* name, const TensorView& t) {
  if (t.device != Device::kCPU) {
    check.fail(name, "a host tensor (weight preparation runs on the CPU, once per load)",
               t.describe());
  }
}

// Experts, rows and logical K of a [N, K / elements_per_byte] or [E, N, ...] byte tensor.
struct WeightShape {
  std::int64_t experts, rows, cols;
};
WeightShape weight_shape(const detail::ArgCheck& check, const char* name, const TensorView& t,
                         int elements_per_byte, bool gemv_layout) {
  require_host(check, name, t);
  if (t.rank != 2 && t.rank != 3) check.fail(name, "rank 2 or 3", t.describe());
  const WeightShape shape{t.rank == 3 ? t.shape[0] : 1, t.shape[t.rank - 2],
                          t.shape[t.rank - 1] * elements_per_byte};
  if (shape.cols % 16 != 0) check.fail(name, "K a multiple of 16 (NVFP4 blocks)", t.describe());
  if (gemv_layout && (shape.rows % 16 != 0 || shape.cols % 64 != 0)) {
    check.fail(name, "N a multiple of 16 and K a multiple of 64 (GEMV layout)", t.describe());
  }
  return shape;
}

void check_like(const detail::ArgCheck& check, const char* name, const TensorView& t,
                const WeightShape& shape, int elements_per_byte, DType dtype, const TensorView& ref) {
  detail::check_expert_bytes(check, name, t, shape.experts, shape.rows,
                             shape.cols / elements_per_byte, dtype, ref);
}

const std::uint8_t* bytes_of(const TensorView& t) { return static_cast<const std::uint8_t*>(t.data); }
std::uint8_t* mutable_bytes_of(const TensorView& t) { return static_cast<std::uint8_t*>(t.data); }

// The two kept positions (ascending) of a group of 4 codes: largest magnitudes, lower index
// first among equals.
void pick_two(const std::uint8_t codes[4], int& first, int& second) {
  int best[2] = {-1, -1};
  for (int i = 0; i < 4; ++i) {
    const int magnitude = codes[i] & 7;  // e2m1 magnitudes are ordered like their codes
    if (best[0] < 0 || magnitude > (codes[best[0]] & 7)) {
      best[1] = best[0];
      best[0] = i;
    } else if (best[1] < 0 || magnitude > (codes[best[1]] & 7)) {
      best[1] = i;
    }
  }
  first = best[0] < best[1] ? best[0] : best[1];
  second = best[0] < best[1] ? best[1] : best[0];
}

// Row `row`'s block scales from [N, K / 16] row-major into a GEMV layout: `scale_byte` is
// detail::nvfp4_gemv_scale_byte (dense) or detail::nvfp4_gemv_sparse_scale_byte (2:4).
template <typename ScaleByte>
void relayout_scale_row(const std::uint8_t* from, std::uint8_t* to, std::int64_t row,
                        std::int64_t cols, ScaleByte scale_byte) {
  for (std::int64_t k = 0; k < cols; k += 16) {
    to[scale_byte(row, k, cols)] = from[row * (cols / 16) + k / 16];
  }
}

// One expert's code bytes into GEMV words, a word at a time (dense ~10x faster than a code at a
// time):
// - dense (`per_byte` 2 K values a source byte, [N, K / 2]; nvfp4_gemv_dense_slot): word `step`
//   of lane l in a chunk holds K codes 16 * (l % 4) + 4 * step .. + 3 of rows l / 4 and l / 4 + 8
//   of the tile;
// - 2:4 values (`per_byte` 4: a byte a group of 4, its kept pair; nvfp4_gemv_sparse_value_slot):
//   word `step` of lane 4g + t holds the kept pairs of groups 4t + 2 * step and + 1 of rows g and
//   g + 8.
// Either way two consecutive source bytes of each row, deposited in slots 0 / 2 (row l / 4) and
// 1 / 3 (row l / 4 + 8) and those + 4.
void relayout_code_words(const std::uint8_t* from, std::uint8_t* to, std::int64_t rows,
                         std::int64_t cols, int per_byte) {
  const auto& deposit = detail::kGemvByteDeposits.bits;
  const std::int64_t chunks = cols / 64, row_bytes = cols / per_byte;
  const int chunk_bytes = 64 / per_byte, lane_bytes = 16 / per_byte, steps = 8 / per_byte;
  for (std::int64_t tile = 0; tile < rows / 16; ++tile) {
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
      for (int lane = 0; lane < 32; ++lane) {
        const std::int64_t row = tile * 16 + lane / 4;
        const std::uint8_t* a =
            from + row * row_bytes + chunk * chunk_bytes + (lane % 4) * lane_bytes;
        const std::uint8_t* b = a + 8 * row_bytes;  // row + 8
        std::uint8_t* word = to + ((tile * chunks + chunk) * 32 + lane) * 4 * steps;
        for (int step = 0; step < steps; ++step) {
          detail::store_gemv_word(word + 4 * step,
                                  deposit[0][a[2 * step]] | deposit[2][a[2 * step + 1]] |
                                      deposit[1][b[2 * step]] | deposit[3][b[2 * step + 1]]);
        }
      }
    }
  }
}

// One expert's 2:4 indices from [N, K / 8] (a nibble a group) into GEMV metadata words
// (nvfp4_gemv_sparse_index_nibble): the word of lane 4g + 2s + h in a chunk holds at nibble q the
// index of group 4q + 2s + h of row g of the tile, at nibble 4 + q that of row g + 8.
void relayout_sparse_indices(const std::uint8_t* from, std::uint8_t* to, std::int64_t rows,
                             std::int64_t cols) {
  const std::int64_t chunks = cols / 64, groups_per_row = cols / 4;
  for (std::int64_t tile = 0; tile < rows / 16; ++tile) {
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
      for (int lane = 0; lane < 32; ++lane) {
        const std::int64_t first =
            (tile * 16 + lane / 4) * groups_per_row + chunk * 16 + lane % 4;  // q = 0, row g
        std::uint32_t word = 0;
        for (int q = 0; q < 4; ++q) {
          const std::int64_t group = first + 4 * q;
          word |= std::uint32_t{read_nibble(from, group)} << (4 * q) |
                  std::uint32_t{read_nibble(from, group + 8 * groups_per_row)} << (16 + 4 * q);
        }
        detail::store_gemv_word(to + (tile * chunks + chunk) * 128 + lane * 4, word);
      }
    }
  }
}

}  // namespace

Nvfp4PruneReport nvfp4_sparsify_24(const Nvfp4Sparsify24Args& args) {
  const detail::ArgCheck check("nvfp4_sparsify_24");
  const WeightShape shape = weight_shape(check, "packed", args.packed, 2, false);
  if (shape.experts != 1 || args.packed.rank != 2) check.fail("packed", "rank 2", args.packed.describe());
  check_like(check, "packed", args.packed, shape, 2, DType::kUInt8, args.packed);
  check_like(check, "block_scales", args.block_scales, shape, 16, DType::kFP8E4M3, args.packed);
  check_like(check, "values", args.values, shape, 4, DType::kUInt8, args.packed);
  check_like(check, "indices", args.indices, shape, 8, DType::kUInt8, args.packed);
  if (!(args.global_scale > 0.0f && std::isfinite(args.global_scale))) {
    check.fail("global_scale", "a finite value > 0", std::to_string(args.global_scale));
  }
  const std::uint8_t* dense = bytes_of(args.packed);
  const std::uint8_t* scales = bytes_of(args.block_scales);
  std::uint8_t* values = mutable_bytes_of(args.values);
  std::uint8_t* indices = mutable_bytes_of(args.indices);
  Nvfp4PruneReport report;
  double error_squares = 0.0, norm_squares = 0.0;
  const std::int64_t groups_per_row = shape.cols / 4;
  for (std::int64_t r = 0; r < shape.rows; ++r) {
    for (std::int64_t g = 0; g < groups_per_row; ++g) {
      const std::int64_t k0 = g * 4;
      std::uint8_t codes[4];
      int nonzero = 0;
      for (int i = 0; i < 4; ++i) {
        codes[i] = read_nibble(dense, r * shape.cols + k0 + i);
        nonzero += (codes[i] & 7) != 0;
      }
      int first = 0, second = 0;
      pick_two(codes, first, second);
      const std::int64_t v = r * groups_per_row + g;
      values[v] = pack_e2m1x2(codes[first], codes[second]);
      write_nibble(indices, v, static_cast<std::uint8_t>(first | (second << 2)));
      const float block_scale = fp8_e4m3_to_float(scales[r * (shape.cols / 16) + k0 / 16]);
      for (int i = 0; i < 4; ++i) {
        const double w = detail::nvfp4_dequantize_value(codes[i], block_scale, args.global_scale);
        const double kept = (i == first || i == second) ? w : 0.0;
        error_squares += (w - kept) * (w - kept);
        norm_squares += w * w;
        report.max_abs_error = std::fmax(report.max_abs_error, std::fabs(w - kept));
      }
      ++report.groups;
      report.groups_losing_nonzeros += nonzero > 2;
    }
  }
  report.relative_frobenius_error = norm_squares > 0.0 ? std::sqrt(error_squares / norm_squares) : 0.0;
  return report;
}

void nvfp4_sparse24_to_dense(const TensorView& values, const TensorView& indices,
                             const TensorView& packed) {
  const detail::ArgCheck check("nvfp4_sparse24_to_dense");
  const WeightShape shape = weight_shape(check, "values", values, 4, false);
  check_like(check, "values", values, shape, 4, DType::kUInt8, values);
  check_like(check, "indices", indices, shape, 8, DType::kUInt8, values);
  check_like(check, "packed", packed, shape, 2, DType::kUInt8, values);
  const std::int64_t groups = shape.experts * shape.rows * (shape.cols / 4);
  std::uint8_t* dense = mutable_bytes_of(packed);
  for (std::int64_t v = 0; v < groups; ++v) {
    const std::uint8_t code = read_nibble(bytes_of(indices), v);
    std::uint8_t group[4] = {0, 0, 0, 0};
    group[code & 3] = bytes_of(values)[v] & 0xF;
    group[code >> 2] = bytes_of(values)[v] >> 4;
    dense[2 * v] = pack_e2m1x2(group[0], group[1]);
    dense[2 * v + 1] = pack_e2m1x2(group[2], group[3]);
  }
}

void nvfp4_relayout_for_gemv(const TensorView& packed, const TensorView& block_scales,
                             const TensorView& gemv_packed, const TensorView& gemv_block_scales) {
  const detail::ArgCheck check("nvfp4_relayout_for_gemv");
  const WeightShape shape = weight_shape(check, "packed", packed, 2, true);
  check_like(check, "packed", packed, shape, 2, DType::kUInt8, packed);
  check_like(check, "block_scales", block_scales, shape, 16, DType::kFP8E4M3, packed);
  check_like(check, "gemv_packed", gemv_packed, shape, 2, DType::kUInt8, packed);
  check_like(check, "gemv_block_scales", gemv_block_scales, shape, 16, DType::kFP8E4M3, packed);
  const std::int64_t codes = shape.rows * shape.cols;
  for (std::int64_t e = 0; e < shape.experts; ++e) {
    const std::uint8_t* from = bytes_of(packed) + e * codes / 2;
    std::uint8_t* to = mutable_bytes_of(gemv_packed) + e * codes / 2;
    const std::uint8_t* scales_from = bytes_of(block_scales) + e * codes / 16;
    std::uint8_t* scales_to = mutable_bytes_of(gemv_block_scales) + e * codes / 16;
    relayout_code_words(from, to, shape.rows, shape.cols, 2);
    for (std::int64_t r = 0; r < shape.rows; ++r) {
      relayout_scale_row(scales_from, scales_to, r, shape.cols, detail::nvfp4_gemv_scale_byte);
    }
  }
}

void nvfp4_sparse24_relayout_for_gemv(const TensorView& values, const TensorView& indices,
                                      const TensorView& block_scales,
                                      const TensorView& gemv_values,
                                      const TensorView& gemv_indices,
                                      const TensorView& gemv_block_scales) {
  const detail::ArgCheck check("nvfp4_sparse24_relayout_for_gemv");
  const WeightShape shape = weight_shape(check, "values", values, 4, true);
  check_like(check, "values", values, shape, 4, DType::kUInt8, values);
  check_like(check, "indices", indices, shape, 8, DType::kUInt8, values);
  check_like(check, "block_scales", block_scales, shape, 16, DType::kFP8E4M3, values);
  check_like(check, "gemv_values", gemv_values, shape, 4, DType::kUInt8, values);
  check_like(check, "gemv_indices", gemv_indices, shape, 8, DType::kUInt8, values);
  check_like(check, "gemv_block_scales", gemv_block_scales, shape, 16, DType::kFP8E4M3, values);
  const std::int64_t codes = shape.rows * shape.cols;
  for (std::int64_t e = 0; e < shape.experts; ++e) {
    const std::uint8_t* v_from = bytes_of(values) + e * codes / 4;
    const std::uint8_t* i_from = bytes_of(indices) + e * codes / 8;
    std::uint8_t* v_to = mutable_bytes_of(gemv_values) + e * codes / 4;
    std::uint8_t* i_to = mutable_bytes_of(gemv_indices) + e * codes / 8;
    const std::uint8_t* scales_from = bytes_of(block_scales) + e * codes / 16;
    std::uint8_t* scales_to = mutable_bytes_of(gemv_block_scales) + e * codes / 16;
    relayout_code_words(v_from, v_to, shape.rows, shape.cols, 4);
    relayout_sparse_indices(i_from, i_to, shape.rows, shape.cols);
    for (std::int64_t r = 0; r < shape.rows; ++r) {
      relayout_scale_row(scales_from, scales_to, r, shape.cols,
                         detail::nvfp4_gemv_sparse_scale_byte);
    }
  }
}

}  // namespace lowbit
