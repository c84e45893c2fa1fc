// `lowbit demo`: quantizes a DeepSeek-V3-shaped activation [T, 7168] bf16 to fp8 e4m3fn in
// 1 x 128 groups with per_token_group_quant, reports the dequantization error (fp32 and UE8M0
// scales), and on a GPU checks the kernel bit for bit against the CPU reference and times it.
#include "demo.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "bench.h"
#include "lowbit/formats.h"
#include "lowbit/quant.h"

#if LOWBIT_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace lowbit::tools {

namespace {

constexpr int kGroup = 128;

// Activation-like data: per-token magnitude, a few outlier channels (as LLM activations have).
std::vector<std::uint16_t> make_activations(std::int64_t tokens, std::int64_t hidden) {
  std::mt19937_64 rng(20261121);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> channel_gain(hidden, 1.0f);
  for (std::int64_t c = 0; c < hidden; c += 997) channel_gain[c] = 40.0f;
  std::vector<std::uint16_t> x(tokens * hidden);
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float token_gain = std::exp(normal(rng));
    for (std::int64_t c = 0; c < hidden; ++c) {
      x[t * hidden + c] = float_to_bf16(normal(rng) * token_gain * channel_gain[c]);
    }
  }
  return x;
}

struct Quantized {
  std::vector<std::uint8_t> q;
  std::vector<float> scales;
  double seconds = 0;
};

Quantized quantize_on_cpu(const std::vector<std::uint16_t>& x, std::int64_t tokens,
                          std::int64_t hidden, bool power_of_two) {
  Quantized result;
  result.q.resize(x.size());
  result.scales.resize(tokens * (hidden / kGroup));
  PerTokenGroupQuantArgs args;
  args.input = TensorView::contiguous(const_cast<std::uint16_t*>(x.data()), DType::kBF16,
                                      {tokens, hidden});
  args.output = TensorView::contiguous(result.q.data(), DType::kFP8E4M3, {tokens, hidden});
  args.scales = TensorView::contiguous(result.scales.data(), DType::kFP32,
                                       {tokens, hidden / kGroup});
  args.power_of_two_scale = power_of_two;
  const auto start = std::chrono::steady_clock::now();
  per_token_group_quant(args);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

void report_error(const char* label, const std::vector<std::uint16_t>& x, const Quantized& r,
                  std::int64_t hidden) {
  double err2 = 0, ref2 = 0, worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double ref = bf16_to_float(x[i]);
    const double scale = r.scales[(i / hidden) * (hidden / kGroup) + (i % hidden) / kGroup];
    const double deq = fp8_e4m3_to_float(r.q[i]) * scale;
    err2 += (deq - ref) * (deq - ref);
    ref2 += ref * ref;
    worst = std::max(worst, std::fabs(deq - ref) / (scale * kFP8E4M3Max));
  }
  std::printf("  %-22s relative error %.4f   worst element error %.4f of its group amax\n", label,
              std::sqrt(err2 / ref2), worst);
}

#if LOWBIT_WITH_CUDA
bool check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) std::printf("  CUDA error in %s: %s\n", what, cudaGetErrorString(status));
  return status == cudaSuccess;
}

int run_on_gpu(const std::vector<std::uint16_t>& x, const Quantized& reference,
               std::int64_t tokens, std::int64_t hidden) {
  const std::size_t groups = tokens * (hidden / kGroup);
  void *d_x = nullptr, *d_q = nullptr, *d_s = nullptr;
  if (!check_cuda(cudaMalloc(&d_x, x.size() * 2), "cudaMalloc") ||
      !check_cuda(cudaMalloc(&d_q, x.size()), "cudaMalloc") ||
      !check_cuda(cudaMalloc(&d_s, groups * 4), "cudaMalloc")) {
    return 1;
  }
  cudaMemcpy(d_x, x.data(), x.size() * 2, cudaMemcpyHostToDevice);
  cudaMemset(d_q, 0x7F, x.size());
  PerTokenGroupQuantArgs args;
  args.input = TensorView::contiguous(d_x, DType::kBF16, {tokens, hidden}, Device::kCUDA);
  args.output = TensorView::contiguous(d_q, DType::kFP8E4M3, {tokens, hidden}, Device::kCUDA);
  args.scales = TensorView::contiguous(d_s, DType::kFP32, {tokens, hidden / kGroup}, Device::kCUDA);
  per_token_group_quant(args);
  std::vector<std::uint8_t> q(x.size());
  std::vector<float> scales(groups);
  if (!check_cuda(cudaMemcpy(q.data(), d_q, q.size(), cudaMemcpyDeviceToHost), "copy back")) return 1;
  cudaMemcpy(scales.data(), d_s, groups * 4, cudaMemcpyDeviceToHost);
  const bool same = q == reference.q && std::equal(scales.begin(), scales.end(),
      reference.scales.begin(), [](float a, float b) { return float_bits(a) == float_bits(b); });
  std::printf("  GPU kernel vs CPU reference: %s\n", same ? "bit-identical (bytes and scales)" : "DIFFERENT");

  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> times;
  for (int i = 0; i < 25; ++i) {
    cudaEventRecord(start);
    per_token_group_quant(args);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  const double ms = times[times.size() / 2];
  const double bytes = x.size() * 3.0 + groups * 4.0;
  std::printf("  GPU time %.1f us (median of 25, one warm buffer), %.0f GB/s; run `lowbit bench "
              "quant` for the rotated-buffer benchmark against copy bandwidth\n",
              ms * 1e3, bytes / (ms * 1e-3) / 1e9);
  cudaFree(d_x);
  cudaFree(d_q);
  cudaFree(d_s);
  return same ? 0 : 1;
}
#endif

}  // namespace

int run_demo(const DemoOptions& options) {
  const bool gpu = !options.force_cpu && bench::cuda_device_count() > 0;
  const std::int64_t tokens = options.tokens > 0 ? options.tokens : (gpu ? 4096 : 64);
  const std::int64_t hidden = options.hidden;
  std::printf("lowbit demo: per_token_group_quant of x [%lld, %lld] bf16 -> fp8 e4m3fn, 1x%d "
              "groups (DeepSeek-V3 activations)\n",
              static_cast<long long>(tokens), static_cast<long long>(hidden), kGroup);
  if (!gpu) {
    std::printf("  no CUDA GPU %s: running the CPU reference on a reduced size\n",
                options.force_cpu ? "requested (--cpu)" : "found");
  }
  const auto x = make_activations(tokens, hidden);
  const Quantized fp32_scales = quantize_on_cpu(x, tokens, hidden, false);
  const Quantized ue8m0_scales = quantize_on_cpu(x, tokens, hidden, true);
  std::printf("  CPU reference: %.1f ms\n", fp32_scales.seconds * 1e3);
  report_error("fp32 scales:", x, fp32_scales, hidden);
  report_error("UE8M0 (pow2) scales:", x, ue8m0_scales, hidden);
#if LOWBIT_WITH_CUDA
  if (gpu) return run_on_gpu(x, fp32_scales, tokens, hidden);
#endif
  return 0;
}

}  // namespace lowbit::tools
