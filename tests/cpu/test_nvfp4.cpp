// NVFP4 on the CPU: the quantization recipe on hand-computed cases, 2:4 pruning and its format,
// the GEMV layout, the GEMV references against dequantize-then-matmul, routing, and every
// validation error.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "../../src/common/nvfp4_gemv_layout.h"
#include "common/test_data.h"
#include "lowbit/error.h"
#include "lowbit/formats.h"
#include "lowbit/nvfp4.h"

namespace lowbit {
namespace {

using Bytes = std::vector<std::uint8_t>;

struct Quantized {
  Bytes packed, scales;
  float global = 0.0f;
};

Quantized quantize(std::vector<float>& w, std::int64_t rows, std::int64_t cols) {
  Quantized q{Bytes(rows * cols / 2, 0xEE), Bytes(rows * cols / 16, 0xEE), 0.0f};
  Nvfp4QuantizeWeightArgs args;
  args.weight = TensorView::contiguous(w.data(), DType::kFP32, {rows, cols});
  args.packed = TensorView::contiguous(q.packed.data(), DType::kUInt8, {rows, cols / 2});
  args.block_scales = TensorView::contiguous(q.scales.data(), DType::kFP8E4M3, {rows, cols / 16});
  args.global_scale = TensorView::contiguous(&q.global, DType::kFP32, {1});
  nvfp4_quantize_weight(args);
  return q;
}

std::uint8_t code_at(const Bytes& packed, std::int64_t index) {
  return (packed[index / 2] >> (4 * (index % 2))) & 0xF;
}

TEST(Nvfp4Quantize, ScalesAndTies) {
  // global 1 (amax 2688 in block 1); block 0 amax 6 -> scale 1.0 exactly.
  std::vector<float> w(32, 0.0f);
  const float block0[16] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, -6.0f,
                            -0.5f, 6.0f, 0.0f, -0.0f, 0.3f, 1.0f, -2.0f, 3.0f};
  // round half to even on e2m1 {0, 0.5, 1, 1.5, 2, 3, 4, 6}
  const std::uint8_t want[16] = {0x0, 0x2, 0x2, 0x4, 0x4, 0x6, 0x6, 0xF,
                                 0x9, 0x7, 0x0, 0x8, 0x1, 0x2, 0xC, 0x5};
  for (int i = 0; i < 16; ++i) w[i] = block0[i];
  w[16] = -2688.0f;
  const Quantized q = quantize(w, 1, 32);
  EXPECT_EQ(q.global, 1.0f);
  EXPECT_EQ(q.scales[0], 0x38);
  EXPECT_EQ(q.scales[1], 0x7E);  // 2688 / 6 = 448: the e4m3 maximum
  for (int i = 0; i < 16; ++i) EXPECT_EQ(code_at(q.packed, i), want[i]) << "element " << i;
  EXPECT_EQ(code_at(q.packed, 16), 0xF);  // -2688 / 448 = -6
}

TEST(Nvfp4Quantize, ZeroTensorZeroBlockAndUnderflow) {
  std::vector<float> zeros(32, 0.0f);
  const Quantized z = quantize(zeros, 1, 32);
  EXPECT_EQ(z.global, 1.0f);  // amax 0: global 1, never a division by zero
  EXPECT_EQ(z.scales[0], 0x38);
  EXPECT_EQ(z.packed[0], 0);

  // A block whose scale would round to 0 in e4m3 gets 2^-9 instead; values stay in range.
  std::vector<float> w(32, 0.0f);
  w[0] = 1e-7f;
  w[16] = 2688.0f;
  const Quantized q = quantize(w, 1, 32);
  EXPECT_EQ(q.scales[0], 0x01);
  EXPECT_EQ(code_at(q.packed, 0), 0);  // 1e-7 / 2^-9 rounds to 0 in e2m1
  EXPECT_EQ(q.scales[1], 0x7E);
}

TEST(Nvfp4Quantize, GlobalFromAmaxAndDequantizeRecipe) {
  const std::int64_t rows = 8, cols = 64;
  std::mt19937 rng(testing::test_seed());
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> w(rows * cols);
  float amax = 0.0f;
  for (float& v : w) {
    v = normal(rng);
    amax = std::fmax(amax, std::fabs(v));
  }
  const Quantized q = quantize(w, rows, cols);
  EXPECT_EQ(q.global, amax / 2688.0f);
  std::vector<float> back(rows * cols, NAN);
  Nvfp4DequantizeWeightArgs d;
  d.packed = TensorView::contiguous(const_cast<std::uint8_t*>(q.packed.data()), DType::kUInt8, {rows, cols / 2});
  d.block_scales = TensorView::contiguous(const_cast<std::uint8_t*>(q.scales.data()), DType::kFP8E4M3, {rows, cols / 16});
  float global = q.global;
  d.global_scale = TensorView::contiguous(&global, DType::kFP32, {1});
  d.output = TensorView::contiguous(back.data(), DType::kFP32, {rows, cols});
  nvfp4_dequantize_weight(d);
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    const float s = fp8_e4m3_to_float(q.scales[i / 16]);
    EXPECT_EQ(back[i], (e2m1_to_float(code_at(q.packed, i)) * s) * q.global);
    // Each value is within half an e2m1 step of the scaled weight (or saturated at 6).
    const float scaled = w[i] / (s * q.global);
    if (std::fabs(scaled) <= 6.0f) {
      const float step = std::fabs(scaled) < 2.0f ? 0.5f : std::fabs(scaled) < 4.0f ? 1.0f : 2.0f;
      EXPECT_LE(std::fabs(e2m1_to_float(code_at(q.packed, i)) - scaled), step / 2 + 1e-6f);
    }
  }
}

TEST(Nvfp4Quantize, GivenGlobalScaleIsUsed) {
  std::vector<float> w(16, 0.0f);
  w[0] = 3.0f;
  Quantized q{Bytes(8), Bytes(1), 0.5f};
  Nvfp4QuantizeWeightArgs args;
  args.weight = TensorView::contiguous(w.data(), DType::kFP32, {1, 16});
  args.packed = TensorView::contiguous(q.packed.data(), DType::kUInt8, {1, 8});
  args.block_scales = TensorView::contiguous(q.scales.data(), DType::kFP8E4M3, {1, 1});
  args.global_scale = TensorView::contiguous(&q.global, DType::kFP32, {1});
  args.global_scale_is_input = true;
  nvfp4_quantize_weight(args);
  EXPECT_EQ(q.global, 0.5f);
  EXPECT_EQ(q.scales[0], 0x38);  // 3 / (6 * 0.5) = 1
  EXPECT_EQ(code_at(q.packed, 0), 0x7);
}

// ---- 2:4 ----------------------------------------------------------------------------------------

TEST(Nvfp4Sparse24, KeepsTwoLargestLowerIndexOnTies) {
  // Codes (low nibble first): group 0 = {1, -3, 0.5, 3} -> keeps positions 1, 3;
  // group 1 = {2, 2, 2, 0} -> keeps 0, 1; groups 2, 3 zero -> keeps 0, 1.
  const std::uint8_t g0[4] = {0x2, 0xD, 0x1, 0x5}, g1[4] = {0x4, 0x4, 0x4, 0x0};
  Bytes packed(8, 0);
  for (int i = 0; i < 4; ++i) {
    packed[i / 2] |= g0[i] << (4 * (i % 2));
    packed[2 + i / 2] |= g1[i] << (4 * (i % 2));
  }
  Bytes scales(1, 0x38), values(4, 0xEE), indices(2, 0xEE);
  Nvfp4Sparsify24Args args;
  args.packed = TensorView::contiguous(packed.data(), DType::kUInt8, {1, 8});
  args.block_scales = TensorView::contiguous(scales.data(), DType::kFP8E4M3, {1, 1});
  args.global_scale = 1.0f;
  args.values = TensorView::contiguous(values.data(), DType::kUInt8, {1, 4});
  args.indices = TensorView::contiguous(indices.data(), DType::kUInt8, {1, 2});
  const Nvfp4PruneReport report = nvfp4_sparsify_24(args);
  EXPECT_EQ(values[0], 0x5D);
  EXPECT_EQ(values[1], 0x44);
  EXPECT_EQ(values[2], 0x00);
  EXPECT_EQ(indices[0], (1 | 3 << 2) | ((0 | 1 << 2) << 4));
  EXPECT_EQ(indices[1], 0x44);
  EXPECT_EQ(report.groups, 4);
  EXPECT_EQ(report.groups_losing_nonzeros, 2);
  EXPECT_DOUBLE_EQ(report.max_abs_error, 2.0);
  // dropped: 1, 0.5 and 2 of a total energy 1 + 9 + 0.25 + 9 + 12
  EXPECT_NEAR(report.relative_frobenius_error, std::sqrt(5.25 / 31.25), 1e-12);

  Bytes dense(8, 0xEE);
  nvfp4_sparse24_to_dense(args.values, args.indices,
                          TensorView::contiguous(dense.data(), DType::kUInt8, {1, 8}));
  EXPECT_EQ(dense[0], 0xD0);
  EXPECT_EQ(dense[1], 0x50);
  EXPECT_EQ(dense[2], 0x44);
  EXPECT_EQ(dense[3], 0x00);
}

// ---- GEMV layout --------------------------------------------------------------------------------

TEST(Nvfp4GemvLayout, EveryCodeSlotAndScaleHasOneHome) {
  const std::int64_t rows = 32, cols = 128;
  std::set<std::int64_t> dense, scales, sparse_scales, values, indices;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t k = 0; k < cols; ++k) {
      dense.insert(detail::nvfp4_gemv_dense_slot(r, k, cols));
      if (k % 16 == 0) {
        scales.insert(detail::nvfp4_gemv_scale_byte(r, k, cols));
        sparse_scales.insert(detail::nvfp4_gemv_sparse_scale_byte(r, k, cols));
      }
      if (k % 4 == 0) {
        indices.insert(detail::nvfp4_gemv_sparse_index_nibble(r, k / 4, cols));
        for (int kept = 0; kept < 2; ++kept) {
          values.insert(detail::nvfp4_gemv_sparse_value_slot(r, k / 4, kept, cols));
        }
      }
    }
  }
  EXPECT_EQ(dense.size(), static_cast<std::size_t>(rows * cols));
  EXPECT_EQ(*dense.rbegin(), rows * cols - 1);
  EXPECT_EQ(scales.size(), static_cast<std::size_t>(rows * cols / 16));
  EXPECT_EQ(*scales.rbegin(), rows * cols / 16 - 1);
  EXPECT_EQ(sparse_scales.size(), static_cast<std::size_t>(rows * cols / 16));
  EXPECT_EQ(*sparse_scales.rbegin(), rows * cols / 16 - 1);
  EXPECT_EQ(values.size(), static_cast<std::size_t>(rows * cols / 2));
  EXPECT_EQ(*values.rbegin(), rows * cols / 2 - 1);
  EXPECT_EQ(indices.size(), static_cast<std::size_t>(rows * cols / 4));
  EXPECT_EQ(*indices.rbegin(), rows * cols / 4 - 1);
  // docs/nvfp4.md example: row 9, k 70 -> chunk 1 of tile 0, lane 4*1 + 0, half 1, step 1,
  // position 2 -> pair 2*1 + 1 = 3 at slot 3 of word 1 (byte 512 + 4*16 + 4).
  EXPECT_EQ(detail::nvfp4_gemv_dense_slot(9, 70, cols), (512 + 64 + 4) * 2 + 3);
  // docs/nvfp4.md 2:4 example: row 9, group 17 (k 68..71) -> chunk 1, a = 1: step 0, mma group
  // 4; lane 4 * 1 + 0, group slot 1, half 1: value slots 3 and 7 of word 0; metadata in lane
  // 4 * 1 + 1 at nibble 4 + 0; the scale of block 0 of the chunk at byte 64 + 8 + 2 * 0 + 1.
  EXPECT_EQ(detail::nvfp4_gemv_sparse_value_slot(9, 17, 0, cols), (256 + 4 * 8) * 2 + 3);
  EXPECT_EQ(detail::nvfp4_gemv_sparse_value_slot(9, 17, 1, cols), (256 + 4 * 8) * 2 + 7);
  EXPECT_EQ(detail::nvfp4_gemv_sparse_index_nibble(9, 17, cols), (128 + 5 * 4) * 2 + 4);
  EXPECT_EQ(detail::nvfp4_gemv_sparse_scale_byte(9, 68, cols), 64 + 8 + 1);
}

// Every code in every slot of a word decodes, through the kernels' gemv_pair_bits, to its
// e2m1 value times 2^-126 in the right bf16 half, whatever the other slots hold; and the eight
// slots use the 32 bits of the word exactly once.
TEST(Nvfp4GemvLayout, CodeBitsDecodeToTheirBf16Halves) {
  std::uint32_t used = 0;
  for (int slot = 0; slot < 8; ++slot) {
    for (int b = 0; b < 4; ++b) {
      const std::uint32_t bit = 1u << detail::gemv_code_bit(slot, b);
      EXPECT_EQ(used & bit, 0u) << "slot " << slot << ", code bit " << b;
      used |= bit;
    }
  }
  EXPECT_EQ(used, 0xFFFFFFFFu);
  std::mt19937 rng(7);
  for (int slot = 0; slot < 8; ++slot) {
    for (int code = 0; code < 16; ++code) {
      for (int trial = 0; trial < 4; ++trial) {
        std::uint8_t word[4];
        for (auto& b : word) b = static_cast<std::uint8_t>(rng());
        detail::write_gemv_code(word, slot, static_cast<std::uint8_t>(code));
        ASSERT_EQ(detail::read_gemv_code(word, slot), code);
        const std::uint32_t q = word[0] | word[1] << 8 | word[2] << 16 |
                                static_cast<std::uint32_t>(word[3]) << 24;
        std::uint32_t pair = 0;
        switch (slot % 4) {
          case 0: pair = detail::gemv_pair_bits<0>(q); break;
          case 1: pair = detail::gemv_pair_bits<1>(q); break;
          case 2: pair = detail::gemv_pair_bits<2>(q); break;
          default: pair = detail::gemv_pair_bits<3>(q); break;
        }
        const std::uint16_t half = static_cast<std::uint16_t>(pair >> (16 * (slot / 4)));
        const float value = bf16_to_float(half) * std::ldexp(1.0f, 126);
        EXPECT_EQ(value, e2m1_to_float(static_cast<std::uint8_t>(code)))
            << "slot " << slot << " code " << code;
        EXPECT_EQ(half & 0x7E3F, 0) << "slot " << slot << ": stray bits";
      }
    }
  }
}

// ---- GEMV references ---------------------------------------------------------------------------

struct Expert {
  Bytes packed, scales, gemv_packed, gemv_scales;
};

Bytes random_bytes(std::size_t n, std::mt19937& rng, bool scale_codes) {
  Bytes b(n);
  std::uniform_int_distribution<int> byte(0, 255), scale(0x20, 0x50);  // e4m3 2^-3 .. 2^3
  for (auto& v : b) v = static_cast<std::uint8_t>(scale_codes ? scale(rng) : byte(rng));
  return b;
}

std::vector<std::uint16_t> random_x(std::int64_t tokens, std::int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::uint16_t> x(tokens * cols);
  for (auto& v : x) v = float_to_bf16(normal(rng));
  return x;
}

// What writing each of an expert's `count` codes (source nibble e * count + c) with
// write_gemv_code at slot(c), into a buffer of other bits, gives.
template <typename Slot>
Bytes codes_at_slots(const Bytes& source, std::int64_t experts, std::int64_t count, Slot slot) {
  Bytes out(source.size(), 0x5A);
  for (std::int64_t e = 0; e < experts; ++e) {
    for (std::int64_t c = 0; c < count; ++c) {
      detail::write_gemv_code(out.data() + e * count / 2, slot(c), code_at(source, e * count + c));
    }
  }
  return out;
}

// The relayouts write whole words; each code must land where the layout's slot address puts it.
TEST(Nvfp4GemvLayout, RelayoutsPutEveryCodeAtItsSlot) {
  std::mt19937 rng(testing::test_seed());
  for (const auto& [experts, rows, cols] : {std::array<std::int64_t, 3>{2, 32, 128},
                                            std::array<std::int64_t, 3>{1, 48, 192}}) {
    const std::int64_t codes = rows * cols, groups = cols / 4;
    Bytes packed = random_bytes(experts * codes / 2, rng, false);
    Bytes scales = random_bytes(experts * codes / 16, rng, true);
    Bytes gemv_packed(packed.size(), 0xA5), gemv_scales(scales.size());
    nvfp4_relayout_for_gemv(
        TensorView::contiguous(packed.data(), DType::kUInt8, {experts, rows, cols / 2}),
        TensorView::contiguous(scales.data(), DType::kFP8E4M3, {experts, rows, cols / 16}),
        TensorView::contiguous(gemv_packed.data(), DType::kUInt8, {experts, rows, cols / 2}),
        TensorView::contiguous(gemv_scales.data(), DType::kFP8E4M3, {experts, rows, cols / 16}));
    EXPECT_EQ(gemv_packed, codes_at_slots(packed, experts, codes, [&](std::int64_t c) {
                return detail::nvfp4_gemv_dense_slot(c / cols, c % cols, cols);
              })) << rows << " x " << cols;

    // 2:4: random kept pairs (a byte a group, the lower position in the low nibble) and random
    // index nibbles (the relayout moves them without reading them).
    Bytes values = random_bytes(experts * codes / 4, rng, false);
    Bytes indices = random_bytes(experts * codes / 8, rng, false);
    Bytes gemv_values(values.size(), 0xA5), gemv_indices(indices.size());
    Bytes gemv_scales24(scales.size());
    nvfp4_sparse24_relayout_for_gemv(
        TensorView::contiguous(values.data(), DType::kUInt8, {experts, rows, cols / 4}),
        TensorView::contiguous(indices.data(), DType::kUInt8, {experts, rows, cols / 8}),
        TensorView::contiguous(scales.data(), DType::kFP8E4M3, {experts, rows, cols / 16}),
        TensorView::contiguous(gemv_values.data(), DType::kUInt8, {experts, rows, cols / 4}),
        TensorView::contiguous(gemv_indices.data(), DType::kUInt8, {experts, rows, cols / 8}),
        TensorView::contiguous(gemv_scales24.data(), DType::kFP8E4M3, {experts, rows, cols / 16}));
    EXPECT_EQ(gemv_values, codes_at_slots(values, experts, codes / 2, [&](std::int64_t c) {
                const std::int64_t group = c / 2;
                return detail::nvfp4_gemv_sparse_value_slot(group / groups, group % groups, c % 2,
                                                            cols);
              })) << rows << " x " << cols;
    Bytes expected_indices(indices.size(), 0x5A);
    for (std::int64_t e = 0; e < experts; ++e) {
      for (std::int64_t v = 0; v < rows * groups; ++v) {
        const std::int64_t nibble = e * rows * groups + detail::nvfp4_gemv_sparse_index_nibble(
                                                            v / groups, v % groups, cols);
        std::uint8_t& byte = expected_indices[nibble / 2];
        const int shift = 4 * (nibble % 2);
        byte = static_cast<std::uint8_t>((byte & ~(0xF << shift)) |
                                         code_at(indices, e * rows * groups + v) << shift);
      }
    }
    EXPECT_EQ(gemv_indices, expected_indices) << rows << " x " << cols;
  }
}

TEST(Nvfp4Gemv, CpuMatchesDequantizeThenMatmulWithRouting) {
  const std::int64_t experts = 3, rows = 32, cols = 128, tokens = 5;
  std::mt19937 rng(testing::test_seed());
  const std::int64_t codes = rows * cols;
  Bytes packed = random_bytes(experts * codes / 2, rng, false);
  Bytes scales = random_bytes(experts * codes / 16, rng, true);
  Bytes gemv_packed(packed.size()), gemv_scales(scales.size());
  nvfp4_relayout_for_gemv(
      TensorView::contiguous(packed.data(), DType::kUInt8, {experts, rows, cols / 2}),
      TensorView::contiguous(scales.data(), DType::kFP8E4M3, {experts, rows, cols / 16}),
      TensorView::contiguous(gemv_packed.data(), DType::kUInt8, {experts, rows, cols / 2}),
      TensorView::contiguous(gemv_scales.data(), DType::kFP8E4M3, {experts, rows, cols / 16}));
  std::vector<float> globals = {0.5f, 2.0f, 0.0078125f};
  std::vector<std::uint16_t> x = random_x(tokens, cols, rng);
  // slots: expert 2 <- tokens {4, 0}, idle, expert 0 <- {1}, expert 1 <- {3, 3, 2}
  std::vector<std::int32_t> expert_ids = {2, -1, 0, 1}, offsets = {0, 2, 2, 3, 6},
                            token_ids = {4, 0, 1, 3, 3, 2};
  std::vector<std::uint16_t> y(6 * rows, 0x1234);
  Nvfp4GemvArgs args;
  args.x = TensorView::contiguous(x.data(), DType::kBF16, {tokens, cols});
  args.packed = TensorView::contiguous(gemv_packed.data(), DType::kUInt8, {experts, rows, cols / 2});
  args.block_scales = TensorView::contiguous(gemv_scales.data(), DType::kFP8E4M3, {experts, rows, cols / 16});
  args.global_scales = TensorView::contiguous(globals.data(), DType::kFP32, {experts});
  args.output = TensorView::contiguous(y.data(), DType::kBF16, {6, rows});
  args.routing = Nvfp4MoeRouting{
      TensorView::contiguous(expert_ids.data(), DType::kInt32, {4}),
      TensorView::contiguous(offsets.data(), DType::kInt32, {5}),
      TensorView::contiguous(token_ids.data(), DType::kInt32, {6})};
  nvfp4_gemv(args);
  const std::int32_t slot_of_row[6] = {0, 0, 2, 3, 3, 3};
  for (std::int64_t p = 0; p < 6; ++p) {
    const std::int32_t e = expert_ids[slot_of_row[p]];
    for (std::int64_t n = 0; n < rows; ++n) {
      double acc = 0.0;
      for (std::int64_t k = 0; k < cols; ++k) {
        const std::int64_t at = e * codes + n * cols + k;
        const double w = e2m1_to_float(code_at(packed, at)) *
                         fp8_e4m3_to_float(scales[at / 16]) * globals[e];
        acc += bf16_to_float(x[token_ids[p] * cols + k]) * w;
      }
      EXPECT_EQ(y[p * rows + n], float_to_bf16(static_cast<float>(acc))) << "row " << p << " n " << n;
    }
  }

  // 2:4: prune expert by expert, then the sparse GEMV equals the dense GEMV of the pruned codes.
  Bytes values(experts * codes / 4), indices(experts * codes / 8), pruned(packed.size());
  for (std::int64_t e = 0; e < experts; ++e) {
    Nvfp4Sparsify24Args s;
    s.packed = TensorView::contiguous(packed.data() + e * codes / 2, DType::kUInt8, {rows, cols / 2});
    s.block_scales = TensorView::contiguous(scales.data() + e * codes / 16, DType::kFP8E4M3, {rows, cols / 16});
    s.global_scale = globals[e];
    s.values = TensorView::contiguous(values.data() + e * codes / 4, DType::kUInt8, {rows, cols / 4});
    s.indices = TensorView::contiguous(indices.data() + e * codes / 8, DType::kUInt8, {rows, cols / 8});
    const Nvfp4PruneReport report = nvfp4_sparsify_24(s);
    EXPECT_GT(report.relative_frobenius_error, 0.2);  // random codes lose real energy
    EXPECT_LT(report.relative_frobenius_error, 0.8);
  }
  const TensorView values_view = TensorView::contiguous(values.data(), DType::kUInt8, {experts, rows, cols / 4});
  const TensorView indices_view = TensorView::contiguous(indices.data(), DType::kUInt8, {experts, rows, cols / 8});
  nvfp4_sparse24_to_dense(values_view, indices_view,
                          TensorView::contiguous(pruned.data(), DType::kUInt8, {experts, rows, cols / 2}));
  nvfp4_relayout_for_gemv(
      TensorView::contiguous(pruned.data(), DType::kUInt8, {experts, rows, cols / 2}),
      TensorView::contiguous(scales.data(), DType::kFP8E4M3, {experts, rows, cols / 16}),
      args.packed, args.block_scales);
  std::vector<std::uint16_t> y_dense(6 * rows, 0x1234), y_sparse(6 * rows, 0x1234);
  args.output.data = y_dense.data();
  nvfp4_gemv(args);
  Bytes gemv_values(values.size()), gemv_indices(indices.size());
  nvfp4_sparse24_relayout_for_gemv(
      values_view, indices_view,
      TensorView::contiguous(scales.data(), DType::kFP8E4M3, {experts, rows, cols / 16}),
      TensorView::contiguous(gemv_values.data(), DType::kUInt8, {experts, rows, cols / 4}),
      TensorView::contiguous(gemv_indices.data(), DType::kUInt8, {experts, rows, cols / 8}),
      args.block_scales);
  Nvfp4Sparse24GemvArgs sparse;
  sparse.x = args.x;
  sparse.values = TensorView::contiguous(gemv_values.data(), DType::kUInt8, {experts, rows, cols / 4});
  sparse.indices = TensorView::contiguous(gemv_indices.data(), DType::kUInt8, {experts, rows, cols / 8});
  sparse.block_scales = args.block_scales;
  sparse.global_scales = args.global_scales;
  sparse.output = TensorView::contiguous(y_sparse.data(), DType::kBF16, {6, rows});
  sparse.routing = args.routing;
  nvfp4_sparse24_gemv(sparse);
  EXPECT_EQ(y_sparse, y_dense);
  EXPECT_NE(y_dense, y);
}

TEST(Nvfp4Gemv, OutOfRangeIdsGiveNaNRows) {
  const std::int64_t rows = 16, cols = 64;
  Bytes packed(rows * cols / 2), scales(rows * cols / 16, 0x38);
  for (std::int64_t slot = 0; slot < rows * cols; ++slot) detail::write_gemv_code(packed.data(), slot, 2);
  std::vector<std::uint16_t> x(2 * cols, float_to_bf16(1.0f)), y(3 * rows, 0);
  std::vector<float> global = {1.0f};
  std::vector<std::int32_t> expert_ids = {0, 5}, offsets = {0, 2, 3}, token_ids = {1, 7, 0};
  Nvfp4GemvArgs args;
  args.x = TensorView::contiguous(x.data(), DType::kBF16, {2, cols});
  args.packed = TensorView::contiguous(packed.data(), DType::kUInt8, {1, rows, cols / 2});
  args.block_scales = TensorView::contiguous(scales.data(), DType::kFP8E4M3, {1, rows, cols / 16});
  args.global_scales = TensorView::contiguous(global.data(), DType::kFP32, {1});
  args.output = TensorView::contiguous(y.data(), DType::kBF16, {3, rows});
  args.routing = Nvfp4MoeRouting{TensorView::contiguous(expert_ids.data(), DType::kInt32, {2}),
                                 TensorView::contiguous(offsets.data(), DType::kInt32, {3}),
                                 TensorView::contiguous(token_ids.data(), DType::kInt32, {3})};
  nvfp4_gemv(args);
  EXPECT_EQ(y[0], float_to_bf16(64.0f));  // every code 1.0, scale 1: sum of 64 ones
  EXPECT_TRUE(std::isnan(bf16_to_float(y[rows])));      // token 7 of 2
  EXPECT_TRUE(std::isnan(bf16_to_float(y[2 * rows])));  // expert 5 of 1
}

// ---- validation ---------------------------------------------------------------------------------

template <typename Fn>
void expect_error(Fn&& fn, const std::string& argument, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.argument(), argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Nvfp4Validation, ClearErrors) {
  std::vector<float> w(16 * 40);
  Bytes packed(16 * 20), scales(16 * 3);
  float global = 0.0f;
  Nvfp4QuantizeWeightArgs q;
  q.weight = TensorView::contiguous(w.data(), DType::kFP32, {16, 40});
  q.packed = TensorView::contiguous(packed.data(), DType::kUInt8, {16, 20});
  q.block_scales = TensorView::contiguous(scales.data(), DType::kFP8E4M3, {16, 2});
  q.global_scale = TensorView::contiguous(&global, DType::kFP32, {1});
  expect_error([&] { nvfp4_quantize_weight(q); }, "weight", "multiple of 16");
  q.weight = TensorView::contiguous(w.data(), DType::kFP32, {16, 32});
  q.packed = TensorView::contiguous(packed.data(), DType::kInt8, {16, 16});
  expect_error([&] { nvfp4_quantize_weight(q); }, "packed", "uint8");
  q.packed = TensorView::contiguous(packed.data(), DType::kUInt8, {16, 16});
  q.global_scale_is_input = true;
  expect_error([&] { nvfp4_quantize_weight(q); }, "global_scale", "finite value > 0");
  q.global_scale_is_input = false;
  // CUDA tensors need the amax workspace (checked before any launch).
  Nvfp4QuantizeWeightArgs on_gpu = q;
  for (TensorView* t : {&on_gpu.weight, &on_gpu.packed, &on_gpu.block_scales, &on_gpu.global_scale}) {
    t->device = Device::kCUDA;
    t->data = reinterpret_cast<void*>(0x10000);
  }
  expect_error([&] { nvfp4_quantize_weight(on_gpu); }, "workspace", "CUDA buffer of >= 4 bytes");

  std::vector<std::uint16_t> x(2 * 96), y(2 * 16);
  std::vector<float> globals(2, 1.0f);
  Bytes weights(2 * 16 * 48), block_scales(2 * 16 * 6);
  Nvfp4GemvArgs g;
  g.x = TensorView::contiguous(x.data(), DType::kBF16, {2, 96});
  g.packed = TensorView::contiguous(weights.data(), DType::kUInt8, {1, 16, 48});
  g.block_scales = TensorView::contiguous(block_scales.data(), DType::kFP8E4M3, {1, 16, 6});
  g.global_scales = TensorView::contiguous(globals.data(), DType::kFP32, {1});
  g.output = TensorView::contiguous(y.data(), DType::kBF16, {2, 16});
  expect_error([&] { nvfp4_gemv(g); }, "x", "multiple of 64");
  g.x = TensorView::contiguous(x.data(), DType::kBF16, {2, 64});
  g.packed = TensorView::contiguous(weights.data(), DType::kUInt8, {1, 16, 48});
  expect_error([&] { nvfp4_gemv(g); }, "packed", "shape [1, 16, 32]");
  g.packed = TensorView::contiguous(weights.data(), DType::kUInt8, {2, 16, 32});
  g.block_scales = TensorView::contiguous(block_scales.data(), DType::kFP8E4M3, {2, 16, 4});
  g.global_scales = TensorView::contiguous(globals.data(), DType::kFP32, {2});
  expect_error([&] { nvfp4_gemv(g); }, "routing", "token lists");
  g.packed = TensorView::contiguous(weights.data(), DType::kUInt8, {1, 8, 32});
  expect_error([&] { nvfp4_gemv(g); }, "packed", "multiple of 16");
  g.packed = TensorView::contiguous(weights.data(), DType::kUInt8, {1, 16, 32});
  g.block_scales = TensorView::contiguous(block_scales.data(), DType::kFP8E4M3, {1, 16, 4});
  g.global_scales = TensorView::contiguous(globals.data(), DType::kFP32, {1});
  g.output = TensorView::contiguous(y.data(), DType::kFP16, {2, 16});
  expect_error([&] { nvfp4_gemv(g); }, "output", "bf16");
  g.output = TensorView::contiguous(y.data(), DType::kBF16, {2, 16});
  std::vector<std::int32_t> ids(2), offsets(2), tokens(2);
  g.routing = Nvfp4MoeRouting{TensorView::contiguous(ids.data(), DType::kInt32, {2}),
                              TensorView::contiguous(offsets.data(), DType::kInt32, {2}),
                              TensorView::contiguous(tokens.data(), DType::kInt32, {2})};
  expect_error([&] { nvfp4_gemv(g); }, "routing.slot_offsets", "shape [3]");

  Bytes values(16 * 4), indices(16 * 2);
  expect_error(
      [&] {
        nvfp4_sparse24_relayout_for_gemv(
            TensorView::contiguous(values.data(), DType::kUInt8, {16, 4}),
            TensorView::contiguous(indices.data(), DType::kUInt8, {16, 2}),
            TensorView::contiguous(block_scales.data(), DType::kFP8E4M3, {16, 1}),
            TensorView::contiguous(values.data(), DType::kUInt8, {16, 4}),
            TensorView::contiguous(indices.data(), DType::kUInt8, {16, 2}),
            TensorView::contiguous(block_scales.data(), DType::kFP8E4M3, {16, 1}));
      },
      "values", "K a multiple of 64");
  TensorView on_device = TensorView::contiguous(values.data(), DType::kUInt8, {16, 4});
  on_device.device = Device::kCUDA;
  expect_error([&] { nvfp4_sparse24_to_dense(on_device, on_device, on_device); }, "values",
               "host tensor");
}

}  // namespace
}  // namespace lowbit
