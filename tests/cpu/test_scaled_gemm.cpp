// Scaled GEMM on the CPU: a hand-computed int8 case through all four epilogues, the reference
// against an independent long-double evaluation of D = s_a s_b (A^ B^ - azp term) + bias for fp8
// and int8 at every scale granularity, the azp adjustment helper, and every validation error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/test_data.h"
#include "lowbit/error.h"
#include "lowbit/formats.h"
#include "lowbit/scaled_gemm.h"

namespace lowbit {
namespace {

using testing::test_seed;

TensorView vec(void* data, DType dtype, std::int64_t n) {
  return TensorView::contiguous(data, dtype, {n});
}

// Problem data on the host; operands hold int8 codes or e4m3 codes.
struct Problem {
  std::int64_t m, n, k;
  DType ab;
  std::vector<std::uint8_t> a, b;
  std::vector<float> a_scales, b_scales;
  std::vector<std::uint16_t> bias;  // bf16
  std::vector<std::int32_t> azp_adj, azp;
  std::vector<std::uint16_t> out;

  ScaledMmArgs args() {
    ScaledMmArgs args;
    args.a = TensorView::contiguous(a.data(), ab, {m, k});
    args.b = TensorView::contiguous(b.data(), ab, {n, k});
    args.a_scales = vec(a_scales.data(), DType::kFP32, static_cast<std::int64_t>(a_scales.size()));
    args.b_scales = vec(b_scales.data(), DType::kFP32, static_cast<std::int64_t>(b_scales.size()));
    if (!bias.empty()) args.bias = vec(bias.data(), DType::kBF16, n);
    if (!azp_adj.empty()) args.azp_adj = vec(azp_adj.data(), DType::kInt32, n);
    if (!azp.empty()) args.azp = vec(azp.data(), DType::kInt32, m);
    out.assign(static_cast<std::size_t>(m * n), 0xFFFF);
    args.output = TensorView::contiguous(out.data(), DType::kBF16, {m, n});
    return args;
  }
  float out_at(std::int64_t r, std::int64_t c) const { return bf16_to_float(out[r * n + c]); }
};

TEST(ScaledMm, HandComputedInt8ThroughEveryEpilogue) {
  // A [2, 3], B [2, 3]: A B^T = [[1*2 + 2*0 + 3*1, 1*-1 + 2*4 + 3*0], [-2*2 + 0 + 5*1, -2*-1 + 0 + 0]]
  //                           = [[5, 7], [1, 2]]
  Problem p{2, 2, 3, DType::kInt8};
  const std::int8_t a[] = {1, 2, 3, -2, 0, 5};
  const std::int8_t b[] = {2, 0, 1, -1, 4, 0};
  p.a.assign(reinterpret_cast<const std::uint8_t*>(a), reinterpret_cast<const std::uint8_t*>(a) + 6);
  p.b.assign(reinterpret_cast<const std::uint8_t*>(b), reinterpret_cast<const std::uint8_t*>(b) + 6);
  p.a_scales = {0.5f, 2.0f};   // per-token
  p.b_scales = {0.25f};        // per-tensor
  ScaledMmArgs args = p.args();
  EXPECT_EQ(scaled_mm_epilogue(args), ScaledMmEpilogue::kScaled);
  scaled_mm(args);
  EXPECT_EQ(p.out_at(0, 0), 0.5f * 0.25f * 5);
  EXPECT_EQ(p.out_at(0, 1), 0.5f * 0.25f * 7);
  EXPECT_EQ(p.out_at(1, 0), 2.0f * 0.25f * 1);
  EXPECT_EQ(p.out_at(1, 1), 2.0f * 0.25f * 2);

  p.bias = {float_to_bf16(1.0f), float_to_bf16(-3.0f)};
  args = p.args();
  EXPECT_EQ(scaled_mm_epilogue(args), ScaledMmEpilogue::kScaledBias);
  scaled_mm(args);
  EXPECT_EQ(p.out_at(0, 0), 0.625f + 1.0f);
  EXPECT_EQ(p.out_at(1, 1), 1.0f - 3.0f);

  // ScaledAzp with z_a = 2: azp_adj = 2 * colsum(B) = [2 * 3, 2 * 3] = [6, 6].
  std::vector<std::int32_t> adj(2, -1);
  ScaledMmAzpAdjustmentArgs adj_args;
  adj_args.b = TensorView::contiguous(p.b.data(), DType::kInt8, {2, 3});
  adj_args.output = vec(adj.data(), DType::kInt32, 2);
  adj_args.zero_point = 2;
  scaled_mm_azp_adjustment(adj_args);
  EXPECT_EQ(adj, (std::vector<std::int32_t>{6, 6}));
  p.azp_adj = adj;
  args = p.args();
  EXPECT_EQ(scaled_mm_epilogue(args), ScaledMmEpilogue::kScaledAzp);
  scaled_mm(args);
  EXPECT_EQ(p.out_at(0, 0), 0.5f * 0.25f * (5 - 6) + 1.0f);
  EXPECT_EQ(p.out_at(1, 1), 2.0f * 0.25f * (2 - 6) - 3.0f);

  // ScaledAzpPerToken: azp = [1, -3], azp_adj = colsum = [3, 3].
  p.azp_adj = {3, 3};
  p.azp = {1, -3};
  args = p.args();
  EXPECT_EQ(scaled_mm_epilogue(args), ScaledMmEpilogue::kScaledAzpPerToken);
  scaled_mm(args);
  EXPECT_EQ(p.out_at(0, 1), 0.5f * 0.25f * (7 - 3) - 3.0f);
  EXPECT_EQ(p.out_at(1, 0), 2.0f * 0.25f * (1 + 9) + 1.0f);
}

// Fills a problem with random codes and scales of the given granularities.
Problem random_problem(DType ab, std::int64_t m, std::int64_t n, std::int64_t k, bool per_token,
                       bool per_channel, std::uint64_t salt) {
  Problem p{m, n, k, ab};
  std::mt19937_64 rng(test_seed() ^ salt);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.1f);
  auto code = [&] {
    for (;;) {
      const auto c = static_cast<std::uint8_t>(byte(rng));
      if (ab == DType::kInt8 || (c & 0x7F) != 0x7F) return c;  // e4m3: no NaN codes
    }
  };
  p.a.resize(m * k);
  p.b.resize(n * k);
  for (auto& c : p.a) c = code();
  for (auto& c : p.b) c = code();
  p.a_scales.resize(per_token ? m : 1);
  p.b_scales.resize(per_channel ? n : 1);
  for (auto& s : p.a_scales) s = scale(rng);
  for (auto& s : p.b_scales) s = scale(rng);
  return p;
}

long double operand(DType ab, std::uint8_t c) {
  return ab == DType::kInt8 ? static_cast<std::int8_t>(c) : fp8_e4m3_to_float(c);
}

// D in long double straight from the definition, the bias and zero points as given.
long double independent(const Problem& p, std::int64_t r, std::int64_t c) {
  long double dot = 0;
  const std::int32_t azp = p.azp.empty() ? 1 : p.azp[r];
  for (std::int64_t i = 0; i < p.k; ++i) {
    dot += operand(p.ab, p.a[r * p.k + i]) * operand(p.ab, p.b[c * p.k + i]);
  }
  if (!p.azp_adj.empty()) dot -= static_cast<long double>(azp) * p.azp_adj[c];
  const long double sa = p.a_scales.size() == 1 ? p.a_scales[0] : p.a_scales[r];
  const long double sb = p.b_scales.size() == 1 ? p.b_scales[0] : p.b_scales[c];
  const long double bias = p.bias.empty() ? 0 : bf16_to_float(p.bias[c]);
  return sa * sb * dot + bias;
}

// The reference's float32 epilogue adds at most three roundings (2^-24 each, relative to its
// terms) before the bf16 rounding (2^-9): 2^-8 of the larger of |D| and |s_a s_b acc| covers it.
void expect_matches_independent(const Problem& p) {
  for (std::int64_t r = 0; r < p.m; ++r) {
    for (std::int64_t c = 0; c < p.n; ++c) {
      const long double want = independent(p, r, c);
      const long double bias = p.bias.empty() ? 0 : bf16_to_float(p.bias[c]);
      const long double scale_term = std::fabs(want - bias);
      const long double bound = std::ldexp(1.0L, -8) * std::fmax(std::fabs(want), scale_term) + 1e-30L;
      ASSERT_LE(std::fabs(p.out_at(r, c) - want), bound)
          << "row " << r << " col " << c << " got " << p.out_at(r, c) << " want " << static_cast<double>(want);
    }
  }
}

TEST(ScaledMm, Fp8AgainstIndependentEveryGranularity) {
  for (const bool per_token : {false, true}) {
    for (const bool per_channel : {false, true}) {
      Problem p = random_problem(DType::kFP8E4M3, 7, 24, 272, per_token, per_channel,
                                 per_token * 2 + per_channel);
      p.bias.resize(24);
      for (std::int64_t c = 0; c < 24; ++c) p.bias[c] = float_to_bf16(0.01f * static_cast<float>(c - 12));
      ScaledMmArgs args = p.args();
      scaled_mm(args);
      expect_matches_independent(p);
    }
  }
}

TEST(ScaledMm, Int8AgainstIndependentWithZeroPoints) {
  for (const bool per_token : {false, true}) {
    Problem p = random_problem(DType::kInt8, 9, 16, 1040, per_token, !per_token, 7 + per_token);
    std::vector<std::int32_t> colsum(16);
    ScaledMmAzpAdjustmentArgs adj;
    adj.b = TensorView::contiguous(p.b.data(), DType::kInt8, {16, 1040});
    adj.output = vec(colsum.data(), DType::kInt32, 16);
    scaled_mm_azp_adjustment(adj);
    p.azp_adj = colsum;
    p.azp.resize(9);
    for (std::int64_t r = 0; r < 9; ++r) p.azp[r] = static_cast<std::int32_t>(r * 29 % 256) - 128;
    ScaledMmArgs args = p.args();
    scaled_mm(args);
    expect_matches_independent(p);

    // The per-tensor form gives the same bits: azp_adj = z * colsum, no azp vector.
    const std::vector<std::uint16_t> per_token_out = [&] {
      p.azp.assign(9, 37);
      p.args();
      ScaledMmArgs a2 = p.args();
      scaled_mm(a2);
      return p.out;
    }();
    p.azp.clear();
    adj.zero_point = 37;
    scaled_mm_azp_adjustment(adj);
    p.azp_adj = colsum;
    ScaledMmArgs a3 = p.args();
    scaled_mm(a3);
    EXPECT_EQ(p.out, per_token_out);
  }
}

TEST(ScaledMm, EmptyProblemsWriteNothing) {
  Problem p = random_problem(DType::kFP8E4M3, 0, 8, 32, true, true, 11);
  ScaledMmArgs args = p.args();
  args.a_scales = vec(nullptr, DType::kFP32, 0);
  EXPECT_NO_THROW(scaled_mm(args));
  Problem q = random_problem(DType::kInt8, 3, 8, 0, false, false, 12);
  ScaledMmArgs qa = q.args();
  scaled_mm(qa);  // K = 0: D = bias = 0
  for (std::uint16_t v : q.out) EXPECT_EQ(bf16_to_float(v), 0.0f);
}

void expect_error(const ScaledMmArgs& args, const std::string& argument) {
  try {
    scaled_mm(args);
    ADD_FAILURE() << "no error for " << argument;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("argument '" + argument + "'"), std::string::npos)
        << e.what();
  }
}

TEST(ScaledMm, ValidationNamesTheArgument) {
  Problem p = random_problem(DType::kInt8, 4, 8, 32, true, true, 13);
  std::vector<std::uint8_t> fp8(8 * 32);
  std::vector<float> wrong_scales(5, 1.0f);
  std::vector<std::int32_t> ints(8, 0);
  std::vector<float> floats(8, 0.0f);
  {
    ScaledMmArgs a = p.args();
    a.b = TensorView::contiguous(fp8.data(), DType::kFP8E4M3, {8, 32});
    expect_error(a, "b");  // dtype differs from a
  }
  {
    ScaledMmArgs a = p.args();
    a.b = TensorView::contiguous(p.b.data(), DType::kInt8, {8, 16});
    expect_error(a, "b");  // K differs
  }
  {
    ScaledMmArgs a = p.args();
    a.a = TensorView::contiguous(p.a.data(), DType::kFP16, {4, 16});
    expect_error(a, "a");
  }
  {
    ScaledMmArgs a = p.args();
    a.a_scales = vec(wrong_scales.data(), DType::kFP32, 5);
    expect_error(a, "a_scales");
  }
  {
    ScaledMmArgs a = p.args();
    a.b_scales = vec(wrong_scales.data(), DType::kFP32, 5);
    expect_error(a, "b_scales");
  }
  {
    ScaledMmArgs a = p.args();
    a.b_scales = vec(ints.data(), DType::kInt32, 8);
    expect_error(a, "b_scales");
  }
  {
    ScaledMmArgs a = p.args();
    a.bias = vec(floats.data(), DType::kFP32, 8);  // must be the output dtype
    expect_error(a, "bias");
  }
  {
    ScaledMmArgs a = p.args();
    a.azp = vec(ints.data(), DType::kInt32, 4);  // without azp_adj
    expect_error(a, "azp_adj");
  }
  {
    ScaledMmArgs a = p.args();
    a.azp_adj = vec(ints.data(), DType::kInt32, 7);
    expect_error(a, "azp_adj");
  }
  {
    ScaledMmArgs a = p.args();
    a.azp_adj = vec(ints.data(), DType::kInt32, 8);
    a.azp = vec(ints.data(), DType::kInt32, 3);
    expect_error(a, "azp");
  }
  {
    Problem f = random_problem(DType::kFP8E4M3, 4, 8, 32, false, false, 14);
    ScaledMmArgs a = f.args();
    a.azp_adj = vec(ints.data(), DType::kInt32, 8);
    expect_error(a, "azp_adj");  // zero points are int8 only
  }
  {
    ScaledMmArgs a = p.args();
    a.output = TensorView::contiguous(p.out.data(), DType::kBF16, {4, 4});
    expect_error(a, "output");
  }
  {
    ScaledMmArgs a = p.args();
    a.output = TensorView::contiguous(floats.data(), DType::kFP32, {1, 8});
    expect_error(a, "output");
  }
  {
    // K beyond the int32 accumulator's reach (the shape alone is checked, so no data).
    ScaledMmArgs a = p.args();
    a.a = TensorView::contiguous(p.a.data(), DType::kInt8, {0, 65552});
    a.b = TensorView::contiguous(p.b.data(), DType::kInt8, {0, 65552});
    expect_error(a, "a");
  }
  ScaledMmAzpAdjustmentArgs adj;
  adj.b = TensorView::contiguous(p.b.data(), DType::kInt8, {8, 32});
  adj.output = vec(ints.data(), DType::kInt32, 8);
  adj.zero_point = 300;
  EXPECT_THROW(scaled_mm_azp_adjustment(adj), Error);
  adj.zero_point = 1;
  adj.output = vec(floats.data(), DType::kFP32, 8);
  EXPECT_THROW(scaled_mm_azp_adjustment(adj), Error);
  EXPECT_THROW(scaled_mm_workspace_bytes(1, 8, 32, DType::kBF16), Error);
}

}  // namespace
}  // namespace lowbit
