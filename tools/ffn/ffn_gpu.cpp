// Timings of the FP8 FFN layer on the GPU against its roofline ceilings and a bf16 cuBLASLt layer,
// all measured in this run with the benchmark harness (median of samples, warm-up first).
#include "ffn_gpu.h"

#include <cuda_runtime.h>

#include "cublaslt_gemm.cuh"
#include "ffn_random.h"
#include "harness.cuh"
#include "lowbit/activation.h"
#include "lowbit/formats.h"

namespace lowbit::tools {
namespace {

using bench::DeviceMemory;

double median_us(const std::function<void()>& launch, int samples) {
  return bench::time_launches([&](int) { launch(); }, 1, samples).median_ms * 1e3;
}

std::vector<std::uint16_t> to_bf16(const std::vector<float>& values) {
  std::vector<std::uint16_t> out(values.size());
  parallel_ranges(static_cast<std::int64_t>(values.size()), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) out[i] = float_to_bf16(values[i]);
  });
  return out;
}

}  // namespace

FfnGpuMeasurement measure_ffn_on_gpu(const FfnLayer& layer, const FfnWeights& weights,
                                     std::int64_t tokens, int samples) {
  FfnGpuMeasurement result;
  result.device = bench::device_info().name;
  result.copy_gbps = bench::measure_copy_gbps(samples);
  result.fp8_tflops = bench::measure_cublaslt_fp8_tflops(samples);
  for (const FfnStage& stage : layer.stages()) {
    result.stage_us.push_back(median_us([&] { stage.run(nullptr, false); }, samples));
  }
  result.total_us = median_us([&] { layer.run(nullptr); }, samples);
  // As an engine runs decode: the four kernels replayed from a CUDA graph, without and with
  // programmatic dependent launch on every one (each starts while the one before finishes);
  // sampled in turn with the stream launches, each sample held behind an L2 sweep.
  const std::vector<double> held_us = bench::interleaved_median_us(
      {{[&](int) { layer.run(bench::bench_stream(), false); }},
       {[&](int) { layer.run(bench::bench_stream(), false); }, bench::Replay::kGraph},
       {[&](int) { layer.run(bench::bench_stream(), true); }, bench::Replay::kGraph}},
      1, samples);
  result.held_stream_us = held_us[0];
  result.graph_us = held_us[1];
  result.graph_pdl_us = held_us[2];

  // The same layer in bf16: x and the unquantized weights through cuBLASLt, our bf16 SiLU*mul.
  const std::int64_t t = tokens, h = weights.shape.hidden, i = weights.shape.intermediate;
  const std::vector<std::uint16_t> gate_up = to_bf16(weights.gate_up), down = to_bf16(weights.down);
  DeviceMemory w_gate_up(gate_up.size() * 2), w_down(down.size() * 2);
  DeviceMemory hidden(t * 2 * i * 2), activation(t * i * 2), y(t * h * 2);
  bench::check(cudaMemcpy(w_gate_up.get(), gate_up.data(), gate_up.size() * 2, cudaMemcpyHostToDevice), "copy");
  bench::check(cudaMemcpy(w_down.get(), down.data(), down.size() * 2, cudaMemcpyHostToDevice), "copy");
  bench::check(cudaMemset(y.get(), 0xFF, t * h * 2), "poison");
  const bench::CublasLtBf16Gemm first(t, 2 * i, h), second(t, h, i);
  SiluAndMulArgs silu;
  silu.input = TensorView::contiguous(hidden.get(), DType::kBF16, {t, 2 * i}, Device::kCUDA);
  silu.output = TensorView::contiguous(activation.get(), DType::kBF16, {t, i}, Device::kCUDA);
  const auto bf16_layer = [&] {
    first.run(w_gate_up.get(), layer.input().data, hidden.get());
    silu_and_mul(silu);
    second.run(w_down.get(), activation.get(), y.get());
  };
  bf16_layer();
  result.bf16_output.resize(t * h);
  bench::check(cudaMemcpy(result.bf16_output.data(), y.get(), t * h * 2, cudaMemcpyDeviceToHost), "copy");
  result.bf16_total_us = median_us(bf16_layer, samples);
  return result;
}

}  // namespace lowbit::tools
