// Block-scaled FP8 on the GPU: the 128 x 128 weight quantizer and dequantizer bit for bit against
// the CPU reference; block_fp8_mm against a double-precision evaluation of the dequantized
// operands over M in {1, 2, 16, 64, 128, 129, 1000, 4096, 8192} and DeepSeek-V3's (N, K), every
// activation-scale layout, bf16 and fp32 output, fresh random data, outputs poisoned with NaN;
// determinism and CUDA-graph replay. Accuracy per shape is printed (relative Frobenius error,
// max error in bf16 ulps) and bounded by the tolerance below.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/device_buffer.cuh"
#include "common/slow_producer.cuh"
#include "common/test_data.h"
#include "lowbit/block_gemm.h"
#include "lowbit/formats.h"

namespace lowbit {
namespace {

using testing::DeviceBuffer;
using testing::mix;
using Bytes = std::vector<std::uint8_t>;

// Tolerance (docs/block_gemm.md): |gpu - y| <= 2^-8 |y| + 2^-12 * sum_k |a_k b_k| against the
// double y of the dequantized operands. 2^-8 |y| is the output's rounding to bf16 (half an ulp
// is 2^-9 relative at worst; the rest covers fp32 output). The sum term covers the tensor
// cores' accumulation inside each 128-deep block, which keeps fewer bits than fp32 (DeepSeek-V3
// reports ~14), plus the fp32 promotion over K / 128 blocks. A misread block scale or operand
// moves outputs by a sizable fraction of the sum and fails this everywhere; the test also bounds
// the relative Frobenius error of the whole output by 2^-9.
constexpr double kRelativeTolerance = 1.0 / 256;
constexpr double kSumTolerance = 1.0 / 4096;
constexpr double kFrobeniusTolerance = 1.0 / 512;

struct Shape {
  std::int64_t n, k;
};
// DeepSeek-V3: q_a/kv_a (2112 x 7168), q_b (24576 x 1536), kv_b (32768 x 512), o_proj
// (7168 x 16384), shared-expert gate_up (4096 x 7168), shared down (7168 x 2048), kv_a (576).
const Shape kShapes[] = {{2112, 7168}, {24576, 1536}, {32768, 512}, {7168, 16384},
                         {4096, 7168}, {7168, 2048},  {576, 7168}};
const std::int64_t kTokens[] = {1, 2, 16, 64, 128, 129, 1000, 4096, 8192};

// fp8 codes of roughly normal values with a per-row spread (what a quantizer leaves behind).
Bytes random_codes(std::int64_t rows, std::int64_t cols, std::uint64_t salt) {
  Bytes codes(static_cast<std::size_t>(rows * cols));
  testing::parallel_for(rows, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::uint64_t h = mix(testing::test_seed() ^ (salt << 40) ^ (r * cols + c));
        codes[r * cols + c] = testing::normal_fp8_code(h);
      }
    }
  }, /*min_per_worker=*/1);
  return codes;
}

std::vector<float> random_scales(std::int64_t count, std::uint64_t salt) {
  std::vector<float> s(count);
  for (std::int64_t i = 0; i < count; ++i) {
    s[i] = std::ldexp(1.0f + static_cast<float>(mix(testing::test_seed() ^ (salt << 40) ^ i) % 1000) / 1000.0f, -12);
  }
  return s;
}

struct Problem {
  std::int64_t m, n, k, k_blocks;
  Bytes a, b;
  std::vector<float> as;  // [M, KB] row-major (logical)
  std::vector<float> bs;  // [NB, KB]
  std::vector<double> b_decoded;
};

Problem make_problem(std::int64_t m, std::int64_t n, std::int64_t k, std::uint64_t salt) {
  Problem p{m, n, k, (k + 127) / 128, random_codes(m, k, salt), random_codes(n, k, salt + 1),
            random_scales(m * ((k + 127) / 128), salt + 2),
            random_scales(((n + 127) / 128) * ((k + 127) / 128), salt + 3), {}};
  p.b_decoded.resize(static_cast<std::size_t>(n * k));
  testing::parallel_for(n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t j = begin; j < end; ++j) {
      for (std::int64_t c = 0; c < k; ++c) {
        p.b_decoded[j * k + c] = fp8_e4m3_to_float(p.b[j * k + c]) * static_cast<double>(p.bs[(j / 128) * p.k_blocks + c / 128]);
      }
    }
  }, /*min_per_worker=*/16);
  return p;
}

std::vector<float> scales_in_layout(const Problem& p, ScaleLayout layout) {
  const ScaleShape shape = scale_storage_shape(layout, p.m, p.k_blocks * 128, 128);
  std::vector<float> out(shape.rows * shape.cols, std::numeric_limits<float>::quiet_NaN());
  for (std::int64_t i = 0; i < p.m; ++i) {
    for (std::int64_t g = 0; g < p.k_blocks; ++g) {
      const float s = p.as[i * p.k_blocks + g];
      if (layout == ScaleLayout::kRowMajor) out[i * p.k_blocks + g] = s; else out[g * shape.cols + i] = s;
    }
  }
  return out;
}


// Runs block_fp8_mm on the device; NaN-poisoned output; returns the output as float. With
// `late_inputs`, A and As hold other values until a kernel that lets block_fp8_mm start at once
// (enable_pdl) writes them 50 us after the op is enqueued.
std::vector<float> run_gpu(const Problem& p, ScaleLayout layout, DType out_dtype, cudaStream_t stream = nullptr,
                           bool late_inputs = false) {
  const std::vector<float> scales = scales_in_layout(p, layout);
  const ScaleShape shape = scale_storage_shape(layout, p.m, p.k_blocks * 128, 128);
  DeviceBuffer a(p.a.size()), b(p.b.size()), as(scales.size() * 4), bs(p.bs.size() * 4);
  DeviceBuffer late_a(late_inputs ? p.a.size() : 0), late_as(late_inputs ? scales.size() * 4 : 0);
  const std::size_t out_bytes = static_cast<std::size_t>(p.m * p.n) * dtype_size(out_dtype);
  DeviceBuffer out(out_bytes);
  if (late_inputs) {
    a.upload(random_codes(p.m, p.k, p.m * 7919 + 1));
    as.upload(std::vector<float>(scales.size(), 1000.0f));
    late_a.upload(p.a);
    late_as.upload(scales);
  } else {
    a.upload(p.a);
    as.upload(scales);
  }
  b.upload(p.b);
  bs.upload(p.bs);
  out.fill_byte(0xFF);  // NaN in bf16 and fp32
  const std::int64_t ws_bytes = block_fp8_mm_workspace_bytes(p.m, p.n, p.k, layout, out_dtype);
  DeviceBuffer ws(static_cast<std::size_t>(ws_bytes));
  BlockFp8MmArgs args;
  args.a = TensorView::contiguous(a.data(), DType::kFP8E4M3, {p.m, p.k}, Device::kCUDA);
  args.a_scales = TensorView::contiguous(as.data(), DType::kFP32, {shape.rows, shape.cols}, Device::kCUDA);
  args.a_scale_layout = layout;
  args.b = TensorView::contiguous(b.data(), DType::kFP8E4M3, {p.n, p.k}, Device::kCUDA);
  args.b_scales = TensorView::contiguous(bs.data(), DType::kFP32, {(p.n + 127) / 128, p.k_blocks}, Device::kCUDA);
  args.output = TensorView::contiguous(out.data(), out_dtype, {p.m, p.n}, Device::kCUDA);
  if (ws_bytes > 0) args.workspace = TensorView::contiguous(ws.data(), DType::kUInt8, {ws_bytes}, Device::kCUDA);
  testing::HeldProducer producer;
  if (late_inputs) {
    testing::SlowCopies copies;
    copies.jobs[0] = {a.data(), late_a.data(), static_cast<std::int64_t>(p.a.size())};
    copies.jobs[1] = {as.data(), late_as.data(), static_cast<std::int64_t>(scales.size() * 4)};
    copies.count = 2;
    copies.delay_ns = 50000;
    EXPECT_EQ(producer.enqueue(copies, stream), cudaSuccess);
    args.enable_pdl = true;
  }
  block_fp8_mm(args, stream);
  producer.release();
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<float> result(static_cast<std::size_t>(p.m * p.n));
  if (out_dtype == DType::kFP32) {
    result = out.download<float>();
  } else {
    const auto bits = out.download<std::uint16_t>();
    for (std::size_t i = 0; i < bits.size(); ++i) result[i] = bf16_to_float(bits[i]);
  }
  return result;
}

// Rows checked against the double evaluation: all of them up to 129, else the first, the last,
// and 14 random ones (every output element is still checked for NaN).
std::vector<std::int64_t> rows_to_check(std::int64_t m, std::uint64_t salt) {
  std::vector<std::int64_t> rows;
  if (m <= 129) {
    for (std::int64_t i = 0; i < m; ++i) rows.push_back(i);
  } else {
    rows = {0, m - 1};
    for (int i = 0; i < 14; ++i) rows.push_back(static_cast<std::int64_t>(mix(salt + i) % m));
  }
  return rows;
}

struct Accuracy {
  double relative_frobenius = 0.0, max_ulps = 0.0;
  std::int64_t failures = 0, nans = 0;
};

Accuracy check(const Problem& p, const std::vector<float>& got, std::uint64_t salt) {
  Accuracy acc;
  for (float v : got) acc.nans += std::isnan(v) ? 1 : 0;
  const auto rows = rows_to_check(p.m, salt);
  std::vector<double> err2(rows.size(), 0.0), ref2(rows.size(), 0.0), ulps(rows.size(), 0.0);
  std::vector<std::int64_t> fails(rows.size(), 0);
  testing::parallel_for(static_cast<std::int64_t>(rows.size()), [&](std::int64_t begin, std::int64_t end) {
    std::vector<double> a_row(p.k);
    for (std::int64_t r = begin; r < end; ++r) {
      const std::int64_t i = rows[r];
      for (std::int64_t c = 0; c < p.k; ++c) {
        a_row[c] = fp8_e4m3_to_float(p.a[i * p.k + c]) * static_cast<double>(p.as[i * p.k_blocks + c / 128]);
      }
      for (std::int64_t j = 0; j < p.n; ++j) {
        const double* b = &p.b_decoded[j * p.k];
        double y = 0.0, magnitude = 0.0;
        for (std::int64_t c = 0; c < p.k; ++c) {
          y += a_row[c] * b[c];
          magnitude += std::fabs(a_row[c] * b[c]);
        }
        const double g = got[i * p.n + j];
        const double e = std::fabs(g - y);
        err2[r] += e * e;
        ref2[r] += y * y;
        const double ulp = std::ldexp(1.0, std::ilogb(std::max(std::fabs(y), 1e-30)) - 7);
        ulps[r] = std::max(ulps[r], e / ulp);
        if (!(e <= kRelativeTolerance * std::fabs(y) + kSumTolerance * magnitude)) ++fails[r];
      }
    }
  }, /*min_per_worker=*/1);  // a row costs N x K multiply-adds: one row is worth a thread
  double e2 = 0.0, y2 = 0.0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    e2 += err2[r];
    y2 += ref2[r];
    acc.max_ulps = std::max(acc.max_ulps, ulps[r]);
    acc.failures += fails[r];
  }
  acc.relative_frobenius = std::sqrt(e2 / std::max(y2, 1e-300));
  return acc;
}

TEST(BlockFp8MmGpu, DeepSeekShapesEveryTokenCount) {
  const ScaleLayout layouts[] = {ScaleLayout::kRowMajor, ScaleLayout::kColumnMajor,
                                 ScaleLayout::kColumnMajorTmaAligned};
  std::uint64_t salt = 100;
  int index = 0;
  std::printf("%6s %6s %6s %-26s %12s %9s\n", "M", "N", "K", "a_scale_layout", "rel_frob", "max_ulps");
  for (const Shape& s : kShapes) {
    for (std::int64_t m : kTokens) {
      const ScaleLayout layout = layouts[index++ % 3];
      const Problem p = make_problem(m, s.n, s.k, salt += 10);
      const std::vector<float> got = run_gpu(p, layout, DType::kBF16);
      const Accuracy acc = check(p, got, salt);
      std::printf("%6lld %6lld %6lld %-26s %12.3e %9.2f\n", static_cast<long long>(m),
                  static_cast<long long>(s.n), static_cast<long long>(s.k),
                  scale_layout_name(layout), acc.relative_frobenius, acc.max_ulps);
      EXPECT_EQ(acc.nans, 0) << "M=" << m << " N=" << s.n << " K=" << s.k;
      EXPECT_EQ(acc.failures, 0) << "M=" << m << " N=" << s.n << " K=" << s.k;
      EXPECT_LE(acc.relative_frobenius, kFrobeniusTolerance) << "M=" << m << " N=" << s.n;
    }
  }
}

TEST(BlockFp8MmGpu, Fp32OutputAndOddShapes) {
  // fp32 output; N and K off the 128 grid (N % 8 == 0, K % 16 == 0); M off every tile.
  const Shape shapes[] = {{2112, 7168}, {200, 336}, {136, 4112}};
  std::uint64_t salt = 5000;
  for (const Shape& s : shapes) {
    for (std::int64_t m : {1, 37, 300}) {
      for (ScaleLayout layout : {ScaleLayout::kRowMajor, ScaleLayout::kColumnMajor}) {
        const Problem p = make_problem(m, s.n, s.k, salt += 10);
        for (DType out : {DType::kFP32, DType::kBF16}) {
          const Accuracy acc = check(p, run_gpu(p, layout, out), salt);
          EXPECT_EQ(acc.nans, 0) << m << "x" << s.n << "x" << s.k;
          EXPECT_EQ(acc.failures, 0) << m << "x" << s.n << "x" << s.k << " " << dtype_name(out);
        }
      }
    }
  }
}

TEST(BlockFp8MmGpu, EveryForcedConfiguration) {
  // The heuristic picks by shape; here every configuration runs the same problems.
  std::uint64_t salt = 6000;
  for (const char* config : {"prefill128x128", "prefill64x128pp", "decode32", "decode64", "gemv_split_k", "gemv_wgmma",
                             "gemv_tma", "prefill128x192mc", "prefill256x128mc",
                             "prefill128x144mc", "splitk128x128"}) {
    setenv("LOWBIT_BLOCK_GEMM", config, 1);
    for (std::int64_t m : {1, 33, 129}) {
      for (ScaleLayout layout : {ScaleLayout::kRowMajor, ScaleLayout::kColumnMajor}) {
        const Problem p = make_problem(m, 2112, 2048, salt += 10);
        const Accuracy acc = check(p, run_gpu(p, layout, DType::kBF16), salt);
        EXPECT_EQ(acc.nans, 0) << config << " M=" << m;
        EXPECT_EQ(acc.failures, 0) << config << " M=" << m << " " << scale_layout_name(layout);
      }
    }
  }
  unsetenv("LOWBIT_BLOCK_GEMM");
}

TEST(BlockFp8MmGpu, SplitKEveryClusterAndEdge) {
  // The split-K tile with every cluster size (LOWBIT_BLOCK_GEMM_SPLITS), N off the 128-row
  // block, K off the 128-deep block and short enough that some blocks of the cluster get no K
  // (K = 336: 3 K blocks over up to 8 blocks), M within one 128-token tile, on its edge and over
  // two tiles, both scale layouts.
  struct Shape {
    std::int64_t n, k;
  };
  const Shape shapes[] = {{576, 7168}, {200, 336}, {2112, 4112}};
  std::uint64_t salt = 6300;
  setenv("LOWBIT_BLOCK_GEMM", "splitk128x128", 1);
  for (const char* splits : {"1", "2", "3", "4", "8"}) {
    setenv("LOWBIT_BLOCK_GEMM_SPLITS", splits, 1);
    for (const Shape& s : shapes) {
      for (std::int64_t m : {1, 64, 128, 129, 300}) {
        for (ScaleLayout layout : {ScaleLayout::kRowMajor, ScaleLayout::kColumnMajor}) {
          const Problem p = make_problem(m, s.n, s.k, salt += 10);
          const Accuracy acc = check(p, run_gpu(p, layout, DType::kBF16), salt);
          EXPECT_EQ(acc.nans, 0) << "splits " << splits << " M=" << m << " " << s.n << "x" << s.k;
          EXPECT_EQ(acc.failures, 0)
              << "splits " << splits << " M=" << m << " " << s.n << "x" << s.k << " "
              << scale_layout_name(layout);
        }
      }
    }
  }
  unsetenv("LOWBIT_BLOCK_GEMM_SPLITS");
  unsetenv("LOWBIT_BLOCK_GEMM");
}

TEST(BlockFp8MmGpu, GemvEveryTokenTileAndEdge) {
  // The decode GEMVs (M <= 32; the TMA-fed one to 64): each token-tile width (8 / 16 / 32 / 64)
  // and its partial tiles, N off the 32- and 64-row blocks, K off the 128-deep step, every scale
  // layout, both output dtypes; the wgmma GEMV's K split runs from 1 warpgroup per block
  // (N = 24576) to 4 x 8 cluster blocks (N = 136, 200), the TMA-fed one's from 1 to 8 blocks,
  // with its step scales staged before the loop and the other blocks' sums pushed to the
  // leader (the defaults), and with the scales copied with each stage and the sums read between
  // two cluster barriers.
  struct Shape {
    std::int64_t n, k;
  };
  const Shape shapes[] = {{576, 7168}, {200, 336}, {136, 4112}, {24576, 1536}};
  struct Run {
    const char* config;
    const char* staged_scales;  // LOWBIT_GEMV_TMA_STAGED_SCALES
    const char* push_sums;      // LOWBIT_GEMV_TMA_PUSH_SUMS
  };
  std::uint64_t salt = 6500;
  for (const Run& run : {Run{"gemv_split_k", "1", "1"}, Run{"gemv_wgmma", "1", "1"},
                         Run{"gemv_tma", "1", "1"}, Run{"gemv_tma", "0", "0"}}) {
    const char* config = run.config;
    setenv("LOWBIT_BLOCK_GEMM", config, 1);
    setenv("LOWBIT_GEMV_TMA_STAGED_SCALES", run.staged_scales, 1);
    setenv("LOWBIT_GEMV_TMA_PUSH_SUMS", run.push_sums, 1);
    for (const Shape& s : shapes) {
      std::vector<std::int64_t> token_counts = {1, 2, 8, 9, 16, 17, 32};
      if (std::string(config) == "gemv_tma") token_counts.insert(token_counts.end(), {33, 64});
      for (std::int64_t m : token_counts) {
        for (ScaleLayout layout : {ScaleLayout::kRowMajor, ScaleLayout::kColumnMajor,
                                   ScaleLayout::kColumnMajorTmaAligned}) {
          const Problem p = make_problem(m, s.n, s.k, salt += 10);
          for (DType out : {DType::kFP32, DType::kBF16}) {
            const Accuracy acc = check(p, run_gpu(p, layout, out), salt);
            EXPECT_EQ(acc.nans, 0) << config << " " << m << "x" << s.n << "x" << s.k;
            EXPECT_EQ(acc.failures, 0) << config << " " << m << "x" << s.n << "x" << s.k << " "
                                       << scale_layout_name(layout) << " " << dtype_name(out)
                                       << " staged scales " << run.staged_scales
                                       << " pushed sums " << run.push_sums;
          }
        }
      }
    }
  }
  unsetenv("LOWBIT_BLOCK_GEMM");
  unsetenv("LOWBIT_GEMV_TMA_STAGED_SCALES");
  unsetenv("LOWBIT_GEMV_TMA_PUSH_SUMS");
}

TEST(BlockFp8MmGpu, DeterministicAndMatchesCpuReferenceOnSmallShape) {
  const Problem p = make_problem(48, 256, 512, 7000);
  const std::vector<float> first = run_gpu(p, ScaleLayout::kRowMajor, DType::kFP32);
  const std::vector<float> second = run_gpu(p, ScaleLayout::kRowMajor, DType::kFP32);
  EXPECT_EQ(first, second);
  // The library's CPU reference on the same data agrees within the tolerance too.
  Problem host = p;
  std::vector<float> ref(p.m * p.n);
  std::vector<float> scales = scales_in_layout(p, ScaleLayout::kRowMajor);
  BlockFp8MmArgs args;
  args.a = TensorView::contiguous(host.a.data(), DType::kFP8E4M3, {p.m, p.k});
  args.a_scales = TensorView::contiguous(scales.data(), DType::kFP32, {p.m, p.k_blocks});
  args.b = TensorView::contiguous(host.b.data(), DType::kFP8E4M3, {p.n, p.k});
  args.b_scales = TensorView::contiguous(host.bs.data(), DType::kFP32, {2, p.k_blocks});
  args.output = TensorView::contiguous(ref.data(), DType::kFP32, {p.m, p.n});
  block_fp8_mm(args);
  // Both within the tolerance of the double evaluation, and of each other.
  const Accuracy gpu = check(p, first, 7001), cpu = check(p, ref, 7001);
  EXPECT_EQ(gpu.failures, 0);
  EXPECT_EQ(cpu.failures, 0);
  EXPECT_LE(cpu.relative_frobenius, 1e-6);  // fp32 output of a double sum
}

TEST(BlockFp8MmGpu, CudaGraphReplayWithNewInputs) {
  // Decode shape (stream-K workspace in use) captured once, replayed over new activations.
  const std::int64_t m = 16, n = 2112, k = 7168;
  Problem p = make_problem(m, n, k, 8000);
  DeviceBuffer a(p.a.size()), b(p.b.size()), as(p.as.size() * 4), bs(p.bs.size() * 4), out(m * n * 2);
  b.upload(p.b);
  bs.upload(p.bs);
  const std::int64_t ws_bytes = block_fp8_mm_workspace_bytes(m, n, k, ScaleLayout::kRowMajor, DType::kBF16);
  DeviceBuffer ws(static_cast<std::size_t>(std::max<std::int64_t>(ws_bytes, 1)));
  BlockFp8MmArgs args;
  args.a = TensorView::contiguous(a.data(), DType::kFP8E4M3, {m, k}, Device::kCUDA);
  args.a_scales = TensorView::contiguous(as.data(), DType::kFP32, {m, p.k_blocks}, Device::kCUDA);
  args.b = TensorView::contiguous(b.data(), DType::kFP8E4M3, {n, k}, Device::kCUDA);
  args.b_scales = TensorView::contiguous(bs.data(), DType::kFP32, {(n + 127) / 128, p.k_blocks}, Device::kCUDA);
  args.output = TensorView::contiguous(out.data(), DType::kBF16, {m, n}, Device::kCUDA);
  if (ws_bytes > 0) args.workspace = TensorView::contiguous(ws.data(), DType::kUInt8, {ws_bytes}, Device::kCUDA);
  cudaStream_t stream;
  LOWBIT_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  LOWBIT_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  block_fp8_mm(args, stream);
  LOWBIT_TEST_CUDA(cudaStreamEndCapture(stream, &graph));
  LOWBIT_TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) {
    p.a = random_codes(m, k, 8100 + replay);
    p.as = random_scales(m * p.k_blocks, 8200 + replay);
    a.upload(p.a);
    as.upload(p.as);
    out.fill_byte(0xFF);
    LOWBIT_TEST_CUDA(cudaGraphLaunch(exec, stream));
    LOWBIT_TEST_CUDA(cudaStreamSynchronize(stream));
    const auto bits = out.download<std::uint16_t>();
    std::vector<float> got(bits.size());
    for (std::size_t i = 0; i < bits.size(); ++i) got[i] = bf16_to_float(bits[i]);
    const Accuracy acc = check(p, got, 8300);
    EXPECT_EQ(acc.nans, 0);
    EXPECT_EQ(acc.failures, 0) << "replay " << replay;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(BlockFp8MmGpu, ProgrammaticDependentLaunchWaitsForTheActivations) {
  // Each decode kernel (forced in turn) behind a producer that writes A and As late; 24
  // tokens: gemv_tma lets the next kernel launch as soon as it starts (its deep ring).
  cudaStream_t stream;
  LOWBIT_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::uint64_t salt = 7700;
  for (const char* config : {"gemv_split_k", "gemv_tma", "decode32"}) {
    for (const std::int64_t m : {1, 16, 24}) {
      const Problem p = make_problem(m, 4096, 7168, salt += 10);
      setenv("LOWBIT_BLOCK_GEMM", config, 1);
      // A plain run first loads the kernel's module, which would wait for the held producer.
      run_gpu(p, ScaleLayout::kColumnMajorTmaAligned, DType::kBF16, stream);
      const std::vector<float> got =
          run_gpu(p, ScaleLayout::kColumnMajorTmaAligned, DType::kBF16, stream, true);
      unsetenv("LOWBIT_BLOCK_GEMM");
      const Accuracy acc = check(p, got, salt);
      EXPECT_EQ(acc.nans, 0) << config << " M=" << m;
      EXPECT_EQ(acc.failures, 0) << config << " M=" << m;
    }
  }
  cudaStreamDestroy(stream);
}

TEST(BlockFp8QuantizeWeightGpu, BitExactAgainstCpuReference) {
  // Edge blocks (300 x 1000), strided rows, and a DeepSeek shape; bf16, fp16 and fp32 inputs.
  struct Case { std::int64_t rows, cols, ld; };
  for (const Case c : {Case{300, 1000, 1008}, Case{576, 7168, 7168}}) {
    for (DType dtype : {DType::kBF16, DType::kFP16, DType::kFP32}) {
      const auto bytes = testing::random_activations(dtype, c.rows, c.ld, c.cols, 77 + c.rows);
      const std::int64_t rb = (c.rows + 127) / 128, cb = (c.cols + 127) / 128;
      Bytes ref_codes(c.rows * c.cols);
      std::vector<float> ref_scales(rb * cb);
      std::vector<std::uint8_t> host_in = bytes;
      BlockFp8QuantizeWeightArgs args;
      args.weight = TensorView::strided(host_in.data(), dtype, {c.rows, c.cols}, {c.ld, 1});
      args.output = TensorView::contiguous(ref_codes.data(), DType::kFP8E4M3, {c.rows, c.cols});
      args.scales = TensorView::contiguous(ref_scales.data(), DType::kFP32, {rb, cb});
      block_fp8_quantize_weight(args);

      DeviceBuffer in(bytes.size()), codes(ref_codes.size()), scales(ref_scales.size() * 4);
      in.upload(bytes);
      codes.fill_byte(0xAA);
      scales.fill_byte(0xFF);
      args.weight = TensorView::strided(in.data(), dtype, {c.rows, c.cols}, {c.ld, 1}, Device::kCUDA);
      args.output = TensorView::contiguous(codes.data(), DType::kFP8E4M3, {c.rows, c.cols}, Device::kCUDA);
      args.scales = TensorView::contiguous(scales.data(), DType::kFP32, {rb, cb}, Device::kCUDA);
      block_fp8_quantize_weight(args);
      EXPECT_EQ(codes.download<std::uint8_t>(), ref_codes) << dtype_name(dtype) << " " << c.rows;
      EXPECT_EQ(scales.download<float>(), ref_scales) << dtype_name(dtype) << " " << c.rows;

      // Dequantize on both sides, bf16 output.
      std::vector<std::uint16_t> ref_back(c.rows * c.cols);
      BlockFp8DequantizeWeightArgs back;
      back.weight = TensorView::contiguous(ref_codes.data(), DType::kFP8E4M3, {c.rows, c.cols});
      back.scales = TensorView::contiguous(ref_scales.data(), DType::kFP32, {rb, cb});
      back.output = TensorView::contiguous(ref_back.data(), DType::kBF16, {c.rows, c.cols});
      block_fp8_dequantize_weight(back);
      DeviceBuffer out(ref_back.size() * 2);
      out.fill_byte(0xFF);
      back.weight = args.output;
      back.scales = args.scales;
      back.output = TensorView::contiguous(out.data(), DType::kBF16, {c.rows, c.cols}, Device::kCUDA);
      block_fp8_dequantize_weight(back);
      EXPECT_EQ(out.download<std::uint16_t>(), ref_back) << dtype_name(dtype);
    }
  }
}

}  // namespace
}  // namespace lowbit
