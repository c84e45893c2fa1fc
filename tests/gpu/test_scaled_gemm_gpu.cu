// Scaled GEMM on the GPU against the library's CPU reference (itself checked against a
// long-double evaluation in tests/cpu/test_scaled_gemm.cpp): M in {1, 7, 16, 64, 127, 128,
// 1000, 4096, 8192} x Llama-3-8B and DeepSeek-V3 dense FFN (N, K); every epilogue, scale
// granularity, output dtype and kernel configuration; fresh random data, outputs poisoned with
// NaN; determinism, CUDA-graph replay, programmatic dependent launch behind a kernel that
// writes the activations late, and the azp adjustment helper.
// Tolerance policy (docs/scaled_gemm.md): int8 is bit-exact (int32 accumulation, then the
// reference's float32 epilogue in the kernel's order). fp8 uses the tensor cores' fast
// accumulation (as vLLM's CUTLASS kernels and cuBLASLt's FAST_ACCUM mode), which keeps fewer
// bits than fp32 over the whole K, so
//   |gpu - ref| <= 2^-7 |ref| + 2^-9 * s_a s_b * sum_k |a_k b_k|, relative Frobenius <= 2^-7.
// 2^-7 |ref| is one bf16 ulp at the bottom of a binade: a sum that differs from the exact one by
// a hair can round to the neighbouring output value (a bias far larger than the product makes
// this visible, since it keeps |ref| large while the sum term stays small). On an H200 the
// accumulation measured a relative Frobenius error of 2.0-4.05e-3 for K = 4096 - 18432 (bf16
// rounding alone gives ~1.1e-3) and at most 4.2e-4 of the sum term. A misread operand tile,
// scale or bias moves the relative Frobenius error by far more than 2^-7.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/device_buffer.cuh"
#include "common/slow_producer.cuh"
#include "common/test_data.h"
#include "lowbit/formats.h"
#include "lowbit/scaled_gemm.h"

namespace lowbit {
namespace {

using testing::DeviceBuffer;
using testing::mix;
using Bytes = std::vector<std::uint8_t>;

constexpr double kRelativeTolerance = 1.0 / 128;
constexpr double kFp8SumTolerance = 1.0 / 512;
constexpr double kFp8FrobeniusTolerance = 1.0 / 128;

// int8: uniform codes; fp8: roughly normal values over e4m3's range (never NaN).
Bytes random_codes(DType ab, std::int64_t rows, std::int64_t cols, std::uint64_t salt) {
  Bytes codes(static_cast<std::size_t>(rows * cols));
  testing::parallel_for(rows, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::uint64_t h = mix(testing::test_seed() ^ (salt << 40) ^ (r * cols + c));
        if (ab == DType::kInt8) {
          codes[r * cols + c] = static_cast<std::uint8_t>(h);
          continue;
        }
        codes[r * cols + c] = testing::normal_fp8_code(h);
      }
    }
  }, /*min_per_worker=*/1);
  return codes;
}

std::vector<float> random_scales(std::int64_t count, std::uint64_t salt) {
  std::vector<float> s(count);
  for (std::int64_t i = 0; i < count; ++i) {
    s[i] = std::ldexp(1.0f + static_cast<float>(mix(testing::test_seed() ^ (salt << 40) ^ i) % 1000) / 1000.0f, -10);
  }
  return s;
}

struct Options {
  DType ab = DType::kFP8E4M3, out = DType::kBF16;
  bool per_token = true, per_channel = true, bias = false, azp_adj = false, azp = false;
};

struct Problem {
  std::int64_t m, n, k;
  Options o;
  Bytes a, b;
  std::vector<float> a_scales, b_scales;
  std::vector<std::uint16_t> bias;
  std::vector<std::int32_t> azp_adj, azp;
};

Problem make_problem(std::int64_t m, std::int64_t n, std::int64_t k, const Options& o,
                     std::uint64_t salt) {
  Problem p{m, n, k, o, random_codes(o.ab, m, k, salt), random_codes(o.ab, n, k, salt + 1),
            random_scales(o.per_token ? m : 1, salt + 2),
            random_scales(o.per_channel ? n : 1, salt + 3), {}, {}, {}};
  if (o.bias) {
    p.bias.resize(n);
    for (std::int64_t j = 0; j < n; ++j) {
      const float v = static_cast<float>(static_cast<int>(mix(salt + 4 + j) % 2001) - 1000) / 100.0f;
      p.bias[j] = o.out == DType::kBF16 ? float_to_bf16(v) : float_to_fp16(v);
    }
  }
  if (o.azp_adj) {
    // azp_adj from the library's CPU helper: z * colsum (ScaledAzp) or colsum (PerToken).
    p.azp_adj.resize(n);
    ScaledMmAzpAdjustmentArgs adj;
    adj.b = TensorView::contiguous(p.b.data(), DType::kInt8, {n, k});
    adj.output = TensorView::contiguous(p.azp_adj.data(), DType::kInt32, {n});
    adj.zero_point = o.azp ? 1 : 23;
    scaled_mm_azp_adjustment(adj);
  }
  if (o.azp) {
    p.azp.resize(m);
    for (std::int64_t i = 0; i < m; ++i) p.azp[i] = static_cast<std::int32_t>(mix(salt + 5 + i) % 256) - 128;
  }
  return p;
}

float decode(DType dtype, std::uint16_t bits) {
  return dtype == DType::kBF16 ? bf16_to_float(bits) : fp16_to_float(bits);
}

// Runs scaled_mm on the device (NaN-poisoned output); returns the output bits. With
// `late_inputs`, A, its scales and zero points hold other values until a kernel that lets
// scaled_mm start at once (enable_pdl) writes them 50 us after the GEMM is enqueued.
std::vector<std::uint16_t> run_gpu(const Problem& p, cudaStream_t stream = nullptr,
                                   bool late_inputs = false) {
  DeviceBuffer a(p.a.size()), b(p.b.size()), sa(p.a_scales.size() * 4), sb(p.b_scales.size() * 4),
      bias(p.bias.size() * 2), adj(p.azp_adj.size() * 4), azp(p.azp.size() * 4),
      out(static_cast<std::size_t>(p.m * p.n) * 2);
  DeviceBuffer late_a(late_inputs ? a.bytes() : 0), late_sa(late_inputs ? sa.bytes() : 0),
      late_azp(late_inputs ? azp.bytes() : 0);
  if (late_inputs) {
    a.upload(random_codes(p.o.ab, p.m, p.k, p.m * 7919 + 1));
    sa.upload(std::vector<float>(p.a_scales.size(), 1000.0f));
    azp.upload(std::vector<std::int32_t>(p.azp.size(), 77));
    late_a.upload(p.a);
    late_sa.upload(p.a_scales);
    late_azp.upload(p.azp);
  } else {
    a.upload(p.a);
    sa.upload(p.a_scales);
    azp.upload(p.azp);
  }
  b.upload(p.b);
  sb.upload(p.b_scales);
  bias.upload(p.bias);
  adj.upload(p.azp_adj);
  out.fill_byte(0xFF);  // NaN in bf16 and fp16
  const std::int64_t ws_bytes = scaled_mm_workspace_bytes(p.m, p.n, p.k, p.o.ab, p.o.out);
  DeviceBuffer ws(static_cast<std::size_t>(ws_bytes));
  const Device cuda = Device::kCUDA;
  ScaledMmArgs args;
  args.a = TensorView::contiguous(a.data(), p.o.ab, {p.m, p.k}, cuda);
  args.b = TensorView::contiguous(b.data(), p.o.ab, {p.n, p.k}, cuda);
  args.a_scales = TensorView::contiguous(sa.data(), DType::kFP32, {static_cast<std::int64_t>(p.a_scales.size())}, cuda);
  args.b_scales = TensorView::contiguous(sb.data(), DType::kFP32, {static_cast<std::int64_t>(p.b_scales.size())}, cuda);
  if (p.o.bias) args.bias = TensorView::contiguous(bias.data(), p.o.out, {p.n}, cuda);
  if (p.o.azp_adj) args.azp_adj = TensorView::contiguous(adj.data(), DType::kInt32, {p.n}, cuda);
  if (p.o.azp) args.azp = TensorView::contiguous(azp.data(), DType::kInt32, {p.m}, cuda);
  args.output = TensorView::contiguous(out.data(), p.o.out, {p.m, p.n}, cuda);
  if (ws_bytes > 0) args.workspace = TensorView::contiguous(ws.data(), DType::kUInt8, {ws_bytes}, cuda);
  testing::HeldProducer producer;
  if (late_inputs) {
    testing::SlowCopies copies;
    copies.jobs[0] = {a.data(), late_a.data(), static_cast<std::int64_t>(a.bytes())};
    copies.jobs[1] = {sa.data(), late_sa.data(), static_cast<std::int64_t>(sa.bytes())};
    copies.jobs[2] = {azp.data(), late_azp.data(), static_cast<std::int64_t>(azp.bytes())};
    copies.count = 3;
    copies.delay_ns = 50000;
    EXPECT_EQ(producer.enqueue(copies, stream), cudaSuccess);
    args.enable_pdl = true;
  }
  scaled_mm(args, stream);
  producer.release();
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  return out.download<std::uint16_t>();
}

// The CPU reference of output[row, j0:j1] (a slice of the weight rows and channel vectors).
std::vector<std::uint16_t> reference_slice(const Problem& p, std::int64_t row, std::int64_t j0,
                                           std::int64_t j1) {
  const std::int64_t cols = j1 - j0;
  std::vector<std::uint16_t> out(cols);
  Problem& q = const_cast<Problem&>(p);
  ScaledMmArgs args;
  args.a = TensorView::contiguous(q.a.data() + row * p.k, p.o.ab, {1, p.k});
  args.b = TensorView::contiguous(q.b.data() + j0 * p.k, p.o.ab, {cols, p.k});
  args.a_scales = TensorView::contiguous(q.a_scales.data() + (p.o.per_token ? row : 0), DType::kFP32, {1});
  args.b_scales = p.o.per_channel
                      ? TensorView::contiguous(q.b_scales.data() + j0, DType::kFP32, {cols})
                      : TensorView::contiguous(q.b_scales.data(), DType::kFP32, {1});
  if (p.o.bias) args.bias = TensorView::contiguous(q.bias.data() + j0, p.o.out, {cols});
  if (p.o.azp_adj) args.azp_adj = TensorView::contiguous(q.azp_adj.data() + j0, DType::kInt32, {cols});
  if (p.o.azp) args.azp = TensorView::contiguous(q.azp.data() + row, DType::kInt32, {1});
  args.output = TensorView::contiguous(out.data(), p.o.out, {1, cols});
  scaled_mm(args);
  return out;
}


// Rows compared with the reference: all up to 16, else the first, the last and 14 random ones
// (every output element is still checked for NaN).
std::vector<std::int64_t> rows_to_check(std::int64_t m, std::uint64_t salt) {
  std::vector<std::int64_t> rows;
  if (m <= 16) {
    for (std::int64_t i = 0; i < m; ++i) rows.push_back(i);
  } else {
    rows = {0, m - 1};
    for (int i = 0; i < 14; ++i) rows.push_back(static_cast<std::int64_t>(mix(salt + i) % m));
  }
  return rows;
}

// e4m3 code -> float, for the magnitude sums.
const std::vector<double>& fp8_table() {
  static const std::vector<double> table = [] {
    std::vector<double> t(256);
    for (int c = 0; c < 256; ++c) t[c] = fp8_e4m3_to_float(static_cast<std::uint8_t>(c));
    return t;
  }();
  return table;
}

struct Accuracy {
  double relative_frobenius = 0.0, max_sum_ratio = 0.0;
  std::int64_t failures = 0, nans = 0, mismatches = 0;
};

Accuracy check(const Problem& p, const std::vector<std::uint16_t>& got, std::uint64_t salt) {
  Accuracy acc;
  for (std::uint16_t bits : got) acc.nans += std::isnan(decode(p.o.out, bits)) ? 1 : 0;
  const std::vector<double>& decode_fp8 = fp8_table();
  double e2 = 0.0, y2 = 0.0;
  std::mutex mutex;
  for (const std::int64_t i : rows_to_check(p.m, salt)) {
    const double sa = p.a_scales[p.o.per_token ? i : 0];
    testing::parallel_for(p.n, [&](std::int64_t j0, std::int64_t j1) {
      const std::vector<std::uint16_t> want = reference_slice(p, i, j0, j1);
      double err2 = 0.0, ref2 = 0.0, ratio = 0.0;
      std::int64_t fails = 0, mismatches = 0;
      for (std::int64_t j = j0; j < j1; ++j) {
        const double g = decode(p.o.out, got[i * p.n + j]), y = decode(p.o.out, want[j - j0]);
        if (g != y) ++mismatches;
        const double e = std::fabs(g - y);
        err2 += e * e;
        ref2 += y * y;
        if (p.o.ab == DType::kInt8) {
          if (!(g == y)) ++fails;
          continue;
        }
        const std::uint8_t* a_row = &p.a[i * p.k];
        const std::uint8_t* b_row = &p.b[j * p.k];
        double magnitude = 0.0;
        for (std::int64_t c = 0; c < p.k; ++c) {
          magnitude += std::fabs(decode_fp8[a_row[c]] * decode_fp8[b_row[c]]);
        }
        magnitude *= sa * p.b_scales[p.o.per_channel ? j : 0];
        const double beyond_rounding = std::max(0.0, e - kRelativeTolerance * std::fabs(y));
        ratio = std::max(ratio, beyond_rounding / std::max(magnitude, 1e-300));
        if (!(e <= kRelativeTolerance * std::fabs(y) + kFp8SumTolerance * magnitude)) ++fails;
      }
      const std::lock_guard<std::mutex> lock(mutex);
      e2 += err2;
      y2 += ref2;
      acc.max_sum_ratio = std::max(acc.max_sum_ratio, ratio);
      acc.failures += fails;
      acc.mismatches += mismatches;
    }, /*min_per_worker=*/64);
  }
  acc.relative_frobenius = std::sqrt(e2 / std::max(y2, 1e-300));
  return acc;
}

struct Shape {
  std::int64_t n, k;
};
// Llama-3-8B: qkv/o (4096 x 4096), gate or up (14336 x 4096), down (4096 x 14336);
// DeepSeek-V3 dense FFN (first 3 layers, intermediate 18432): gate or up, and down.
const Shape kShapes[] = {{4096, 4096}, {14336, 4096}, {4096, 14336}, {18432, 7168}, {7168, 18432}};
// 40: a partial token tile, where 14336 x 4096 takes the 192-channel swapped tile.
const std::int64_t kTokens[] = {1, 7, 16, 40, 64, 127, 128, 1000, 4096, 8192};

void expect_ok(const Problem& p, const Accuracy& acc, const char* what) {
  EXPECT_EQ(acc.nans, 0) << what << " M=" << p.m << " N=" << p.n << " K=" << p.k;
  EXPECT_EQ(acc.failures, 0) << what << " M=" << p.m << " N=" << p.n << " K=" << p.k
                             << " (max sum ratio " << acc.max_sum_ratio << ")";
  EXPECT_LE(acc.relative_frobenius, kFp8FrobeniusTolerance) << what << " M=" << p.m << " N=" << p.n;
}

TEST(ScaledMmGpu, ModelShapesEveryTokenCount) {
  std::uint64_t salt = 100;
  std::printf("%-28s %5s %6s %6s %12s %12s %10s\n", "case", "M", "N", "K", "rel_frob",
              "max_sum_ratio", "mismatch");
  Options fp8;  // per-token x per-channel, bf16, no bias
  Options int8;
  int8.ab = DType::kInt8;
  int8.out = DType::kFP16;
  int8.bias = int8.azp_adj = int8.azp = true;
  for (const Shape& s : kShapes) {
    for (std::int64_t m : kTokens) {
      for (const auto& [name, o] : {std::pair<const char*, Options>{"fp8 Scaled bf16", fp8},
                                    {"int8 AzpPerToken+bias fp16", int8}}) {
        const Problem p = make_problem(m, s.n, s.k, o, salt += 10);
        const Accuracy acc = check(p, run_gpu(p), salt);
        std::printf("%-28s %5lld %6lld %6lld %12.3e %12.3e %10lld\n", name,
                    static_cast<long long>(m), static_cast<long long>(s.n),
                    static_cast<long long>(s.k), acc.relative_frobenius, acc.max_sum_ratio,
                    static_cast<long long>(acc.mismatches));
        expect_ok(p, acc, name);
      }
    }
  }
}

TEST(ScaledMmGpu, EveryEpilogueGranularityOutputAndConfiguration) {
  // N and K off the tile grid (N % 8 == 0, K % 16 == 0); M off every tile.
  std::uint64_t salt = 5000;
  // M = 77 is off every tile (200: two token tiles of the cooperative one and of the 192-token
  // swapped one, three of the 80-token one); the GEMVs run 5, 13 and 29 (token tiles of 8 / 16
  // / 32), and the TMA-fed one (M <= 64) 45 too (64).
  const std::pair<const char*, std::vector<std::int64_t>> configs[] = {
      {"large128x128", {77}}, {"medium64x128", {77}}, {"small64x64", {77}},
      {"swap64x16", {5, 29, 77}}, {"swap64x32", {45, 77}}, {"swap64x64", {45, 77}},
      {"swap128x32", {29, 77}}, {"swap192x64", {45, 77}}, {"coop128x192", {77, 200}},
      {"swap64x80", {77, 200}}, {"swap128x192", {77, 200}},
      {"gemv_split_k", {5, 13, 29}}, {"gemv_wgmma", {5, 13, 29}}, {"gemv_tma", {5, 13, 29, 45}}};
  for (const auto& [config, token_counts] : configs) {
    setenv("LOWBIT_SCALED_GEMM", config, 1);
    for (std::int64_t m : token_counts) {
      for (DType ab : {DType::kFP8E4M3, DType::kInt8}) {
        for (int epilogue = 0; epilogue < (ab == DType::kInt8 ? 4 : 2); ++epilogue) {
          for (int granularity = 0; granularity < 4; ++granularity) {
            for (DType out : {DType::kBF16, DType::kFP16}) {
              Options o;
              o.ab = ab;
              o.out = out;
              o.per_token = granularity & 1;
              o.per_channel = granularity & 2;
              o.bias = epilogue >= 1;
              o.azp_adj = epilogue >= 2;
              o.azp = epilogue == 3;
              const Problem p = make_problem(m, 264, 1040, o, salt += 10);
              const Accuracy acc = check(p, run_gpu(p), salt);
              expect_ok(p, acc, config);
              EXPECT_EQ(acc.failures, 0) << config << " M=" << m << " " << dtype_name(ab) << " epilogue "
                                         << epilogue << " granularity " << granularity << " " << dtype_name(out);
            }
          }
        }
      }
    }
  }
  unsetenv("LOWBIT_SCALED_GEMM");
}

TEST(ScaledMmGpu, GemvNanCodesPoisonOnlyTheirRowAndColumn) {
  // NaN codes through the GEMVs' split-K sums and fp8 products: one in token 3 and one in
  // weight row 37 (different K positions and signs) make exactly output row 3 and column 37
  // NaN; the rest matches the reference.
  const std::int64_t m = 13, n = 264, k = 1040;
  Problem p = make_problem(m, n, k, Options{}, 7500);
  p.a[3 * k + 515] = 0x7F;
  p.b[37 * k + 1039] = 0xFF;
  for (const char* config : {"gemv_split_k", "gemv_wgmma", "gemv_tma"}) {
    setenv("LOWBIT_SCALED_GEMM", config, 1);
    const std::vector<std::uint16_t> got = run_gpu(p);
    unsetenv("LOWBIT_SCALED_GEMM");
    std::int64_t wrong = 0;
    for (std::int64_t row = 0; row < m; ++row) {
      const std::vector<std::uint16_t> ref = reference_slice(p, row, 0, n);
      for (std::int64_t col = 0; col < n; ++col) {
        const bool want_nan = row == 3 || col == 37;
        const float g = decode(p.o.out, got[row * n + col]), r = decode(p.o.out, ref[col]);
        ASSERT_EQ(std::isnan(r), want_nan) << "reference at " << row << "," << col;
        const bool ok = want_nan ? std::isnan(g) : std::fabs(g - r) <= 0.02f * std::fabs(r) + 1e-3f;
        wrong += ok ? 0 : 1;
      }
    }
    EXPECT_EQ(wrong, 0) << config;
  }
}

TEST(ScaledMmGpu, GemvConfigsOnModelShapes) {
  // Every GEMV forced over the model shapes and their token tiles (8 / 16 / 32, and 64 for
  // gemv_tma): the K split differs per shape (gemv_wgmma: 1 warpgroup per block at N = 18432,
  // 4 warpgroups x 2 cluster blocks at N = 4096; gemv_tma: 1 to 4 cluster blocks, whose sums
  // reach the leader pushed (the default where they fit) or read between cluster barriers).
  std::uint64_t salt = 9000;
  Options int8;
  int8.ab = DType::kInt8;
  int8.azp_adj = int8.azp = true;
  for (const auto& [config, push_sums] :
       {std::pair<const char*, const char*>{"gemv_split_k", "1"}, {"gemv_wgmma", "1"},
        {"gemv_tma", "1"}, {"gemv_tma", "0"}}) {
    setenv("LOWBIT_SCALED_GEMM", config, 1);
    setenv("LOWBIT_GEMV_TMA_PUSH_SUMS", push_sums, 1);
    for (const Shape& s : kShapes) {
      const std::vector<std::int64_t> token_counts =
          std::string(config) == "gemv_tma" ? std::vector<std::int64_t>{1, 7, 16, 32, 64}
                                            : std::vector<std::int64_t>{1, 7, 16, 32};
      for (std::int64_t m : token_counts) {
        for (const auto& [name, o] : {std::pair<const char*, Options>{"fp8", Options{}}, {"int8 azp", int8}}) {
          const Problem p = make_problem(m, s.n, s.k, o, salt += 10);
          const Accuracy acc = check(p, run_gpu(p), salt);
          expect_ok(p, acc, config);
          EXPECT_EQ(acc.failures, 0) << config << " " << name << " M=" << m << " N=" << s.n
                                     << " pushed sums " << push_sums;
        }
      }
    }
    unsetenv("LOWBIT_SCALED_GEMM");
  }
  unsetenv("LOWBIT_GEMV_TMA_PUSH_SUMS");
}

TEST(ScaledMmGpu, DeterministicAcrossRuns) {
  for (std::int64_t m : {5, 300}) {  // the split-K GEMV, and the persistent tile
    const Problem p = make_problem(m, 4096, 14336, Options{}, 7000 + m);
    EXPECT_EQ(run_gpu(p), run_gpu(p)) << "M=" << m;
  }
  // The wgmma GEMVs' sums over warpgroups and cluster blocks (4 x 2 and 8 at N = 4096).
  for (const char* config : {"gemv_wgmma", "gemv_tma"}) {
    setenv("LOWBIT_SCALED_GEMM", config, 1);
    const Problem p = make_problem(5, 4096, 14336, Options{}, 7005);
    EXPECT_EQ(run_gpu(p), run_gpu(p)) << config;
    unsetenv("LOWBIT_SCALED_GEMM");
  }
}

TEST(ScaledMmGpu, CudaGraphReplayWithNewInputs) {
  // Decode shape (the split-K GEMV) captured once, replayed over new activations.
  const std::int64_t m = 16, n = 4096, k = 14336;
  Options o;
  o.ab = DType::kInt8;
  o.azp_adj = o.azp = true;
  Problem p = make_problem(m, n, k, o, 8000);
  DeviceBuffer a(p.a.size()), b(p.b.size()), sa(m * 4), sb(n * 4), adj(n * 4), azp(m * 4), out(m * n * 2);
  b.upload(p.b);
  sb.upload(p.b_scales);
  adj.upload(p.azp_adj);
  const std::int64_t ws_bytes = scaled_mm_workspace_bytes(m, n, k, DType::kInt8, DType::kBF16);
  DeviceBuffer ws(static_cast<std::size_t>(std::max<std::int64_t>(ws_bytes, 1)));
  const Device cuda = Device::kCUDA;
  ScaledMmArgs args;
  args.a = TensorView::contiguous(a.data(), DType::kInt8, {m, k}, cuda);
  args.b = TensorView::contiguous(b.data(), DType::kInt8, {n, k}, cuda);
  args.a_scales = TensorView::contiguous(sa.data(), DType::kFP32, {m}, cuda);
  args.b_scales = TensorView::contiguous(sb.data(), DType::kFP32, {n}, cuda);
  args.azp_adj = TensorView::contiguous(adj.data(), DType::kInt32, {n}, cuda);
  args.azp = TensorView::contiguous(azp.data(), DType::kInt32, {m}, cuda);
  args.output = TensorView::contiguous(out.data(), DType::kBF16, {m, n}, cuda);
  if (ws_bytes > 0) args.workspace = TensorView::contiguous(ws.data(), DType::kUInt8, {ws_bytes}, cuda);
  cudaStream_t stream;
  LOWBIT_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  LOWBIT_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  scaled_mm(args, stream);
  LOWBIT_TEST_CUDA(cudaStreamEndCapture(stream, &graph));
  LOWBIT_TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) {
    p.a = random_codes(DType::kInt8, m, k, 8100 + replay);
    p.a_scales = random_scales(m, 8200 + replay);
    for (std::int64_t i = 0; i < m; ++i) p.azp[i] = static_cast<std::int32_t>(mix(8300 + replay * 64 + i) % 256) - 128;
    a.upload(p.a);
    sa.upload(p.a_scales);
    azp.upload(p.azp);
    out.fill_byte(0xFF);
    LOWBIT_TEST_CUDA(cudaGraphLaunch(exec, stream));
    LOWBIT_TEST_CUDA(cudaStreamSynchronize(stream));
    const Accuracy acc = check(p, out.download<std::uint16_t>(), 8400);
    EXPECT_EQ(acc.nans, 0);
    EXPECT_EQ(acc.failures, 0) << "replay " << replay;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(ScaledMmGpu, ProgrammaticDependentLaunchWaitsForTheActivations) {
  // The activations, their scales and zero points are written late (run_gpu's late_inputs).
  // Each configuration forced: the GEMVs, and CUTLASS tiles (pingpong, swapped, cooperative;
  // clusters along either dimension, so the multicast operand is the weights or the tokens),
  // whose mainloop waits (common/cutlass_programmatic.cuh); int8 cases with per-token zero
  // points.
  struct Case {
    const char* config;
    std::int64_t m, n, k;
    DType ab;
  };
  const Case cases[] = {{"gemv_split_k", 1, 4096, 4096, DType::kInt8},
                        {"gemv_split_k", 16, 4096, 4096, DType::kFP8E4M3},
                        {"gemv_tma", 16, 4096, 14336, DType::kFP8E4M3},
                        {"gemv_tma", 24, 6144, 4096, DType::kFP8E4M3},  // released at start
                        {"gemv_tma", 64, 18432, 7168, DType::kInt8},
                        {"swap64x16", 16, 4096, 4096, DType::kFP8E4M3},
                        {"swap64x32", 29, 4096, 2048, DType::kInt8},
                        {"swap64x64", 64, 6144, 4096, DType::kFP8E4M3},
                        {"swap128x32", 24, 14336, 4096, DType::kInt8},
                        {"swap192x64", 64, 18432, 7168, DType::kInt8},
                        {"coop128x192", 128, 18432, 7168, DType::kFP8E4M3},
                        {"large128x128", 128, 4096, 4096, DType::kFP8E4M3}};
  cudaStream_t stream;
  LOWBIT_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::uint64_t salt = 8500;
  for (const Case& c : cases) {
    Options o;
    o.ab = c.ab;
    o.bias = true;
    o.azp_adj = o.azp = c.ab == DType::kInt8;
    const Problem p = make_problem(c.m, c.n, c.k, o, salt += 10);
    setenv("LOWBIT_SCALED_GEMM", c.config, 1);
    // A plain run first: the first launch of a kernel loads its module, which waits for the
    // device to go idle, i.e. for the held producer.
    run_gpu(p, stream);
    expect_ok(p, check(p, run_gpu(p, stream, true), salt),
              (std::string("enable_pdl ") + c.config).c_str());
    unsetenv("LOWBIT_SCALED_GEMM");
  }
  cudaStreamDestroy(stream);
}

TEST(ScaledMmGpu, AzpAdjustmentMatchesCpu) {
  const std::int64_t n = 14336, k = 4096;
  Bytes b = random_codes(DType::kInt8, n, k, 9000);
  DeviceBuffer db(b.size()), dout(n * 4);
  db.upload(b);
  dout.fill_byte(0xAB);
  std::vector<std::int32_t> want(n);
  for (std::int32_t z : {1, -77}) {
    ScaledMmAzpAdjustmentArgs args;
    args.b = TensorView::contiguous(b.data(), DType::kInt8, {n, k});
    args.output = TensorView::contiguous(want.data(), DType::kInt32, {n});
    args.zero_point = z;
    scaled_mm_azp_adjustment(args);
    args.b = TensorView::contiguous(db.data(), DType::kInt8, {n, k}, Device::kCUDA);
    args.output = TensorView::contiguous(dout.data(), DType::kInt32, {n}, Device::kCUDA);
    scaled_mm_azp_adjustment(args);
    LOWBIT_TEST_CUDA(cudaDeviceSynchronize());
    EXPECT_EQ(dout.download<std::int32_t>(), want) << "zero_point " << z;
  }
}

}  // namespace
}  // namespace lowbit
