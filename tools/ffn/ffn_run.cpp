// `lowbit ffn`: chooses the device and size, runs the layer, checks it against the reference,
// times it, and prints the report.
#include "ffn_run.h"

#include <chrono>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "bench.h"
#include "ffn_layer.h"
#include "ffn_memory.h"
#include "ffn_weights.h"
#if LOWBIT_WITH_CUDA
#include "ffn_gpu.h"
#endif

namespace lowbit::tools {
namespace {

constexpr std::int64_t kGpuDefaultTokens = 4096;
constexpr std::int64_t kCpuDefaultTokens = 16;

bool runs_on_gpu(const FfnOptions& options) {
  return !options.force_cpu && bench::cuda_device_count() > 0;
}

double elapsed_us(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

void print_accuracy(const char* label, const FfnAccuracy& a) {
  std::printf("  %-34s relative error %.4f  cosine %.6f  max |error| %.3g%s\n", label,
              a.relative_error, a.cosine, a.max_abs_error,
              a.non_finite ? "  NON-FINITE OUTPUT" : "");
}

nlohmann::json accuracy_json(const FfnAccuracy& a) {
  return {{"relative_error", a.relative_error}, {"cosine", a.cosine},
          {"max_abs_error", a.max_abs_error}, {"non_finite", a.non_finite}};
}

void write_json(const FfnResult& r, const std::string& path) {
  nlohmann::json stages = nlohmann::json::array();
  for (const FfnStageResult& s : r.stages) {
    stages.push_back({{"name", s.name}, {"us", s.us}, {"bytes", s.bytes}, {"flops", s.flops},
                      {"floor_us", s.floor_us},
                      {"fraction_of_floor", s.floor_us > 0 ? s.floor_us / s.us : 0.0}});
  }
  const nlohmann::json report = {
      {"command", "ffn"}, {"model", r.shape.model}, {"hidden", r.shape.hidden},
      {"intermediate", r.shape.intermediate}, {"tokens", r.tokens}, {"weights", r.source},
      {"device", r.device}, {"on_gpu", r.on_gpu}, {"reference_rows", r.reference_rows},
      {"accuracy", accuracy_json(r.accuracy)}, {"stages", stages}, {"total_us", r.total_us},
      {"held_stream_us", r.held_stream_us}, {"graph_us", r.graph_us},
      {"graph_pdl_us", r.graph_pdl_us},
      {"copy_gbps", r.copy_gbps}, {"fp8_tflops", r.fp8_tflops},
      {"bf16_total_us", r.bf16_total_us}, {"bf16_accuracy", accuracy_json(r.bf16_accuracy)},
      {"speedup_vs_bf16", r.bf16_total_us > 0 ? r.bf16_total_us / r.total_us : 0.0}};
  std::ofstream(path) << report.dump(2) << "\n";
  std::printf("wrote %s\n", path.c_str());
}

void print_report(const FfnResult& r) {
  std::printf("accuracy on %zu rows against the double-precision reference layer:\n",
              r.reference_rows.size());
  print_accuracy("FP8 layer (lowbit):", r.accuracy);
  if (r.on_gpu) print_accuracy("bf16 layer (cuBLASLt):", r.bf16_accuracy);
  std::printf("  bar: relative error <= %.2f, cosine >= %.3f, all finite: %s\n",
              kFfnMaxRelativeError, kFfnMinCosine, accuracy_ok(r.accuracy) ? "met" : "MISSED");
  if (r.on_gpu) {
    std::printf("ceilings measured in this run: copy %.0f GB/s, cuBLASLt FP8 8192^3 %.0f TFLOP/s\n",
                r.copy_gbps, r.fp8_tflops);
  }
  std::printf("%-26s %11s %11s %9s %11s\n", "stage", "time us", "floor us", "bound",
              r.on_gpu ? "% of floor" : "");
  double floor_total = 0;
  for (const FfnStageResult& s : r.stages) {
    floor_total += s.floor_us;
    if (r.on_gpu) {
      const bool compute = s.flops / (r.fp8_tflops * 1e6) > s.bytes / (r.copy_gbps * 1e3);
      std::printf("%-26s %11.1f %11.1f %9s %10.1f%%\n", s.name.c_str(), s.us, s.floor_us,
                  compute ? "compute" : "memory", 100 * s.floor_us / s.us);
    } else {
      std::printf("%-26s %11.1f %11s %9s\n", s.name.c_str(), s.us, "-", "-");
    }
  }
  if (r.on_gpu) {
    std::printf("%-26s %11.1f %11.1f %9s %10.1f%%\n", "FP8 layer (4 launches)", r.total_us,
                floor_total, "", 100 * floor_total / r.total_us);
    std::printf("  sampled in turn, held: stream %.1f us, CUDA graph %.1f us, graph + PDL %.1f us "
                "(%.1f%% of floor)\n", r.held_stream_us, r.graph_us, r.graph_pdl_us,
                100 * floor_total / r.graph_pdl_us);
    std::printf("%-26s %11.1f   -> lowbit FP8 layer is %.2fx faster\n", "bf16 layer (cuBLASLt)",
                r.bf16_total_us, r.bf16_total_us / r.total_us);
  } else {
    std::printf("%-26s %11.1f  (CPU reference ops; roofline and bf16 cuBLASLt baseline need a GPU)\n",
                "FP8 layer", r.total_us);
  }
}

}  // namespace

FfnResult run_ffn_layer(const FfnOptions& options) {
  FfnResult result;
  result.on_gpu = runs_on_gpu(options);
  result.device = result.on_gpu ? "gpu" : "cpu";
  FfnWeights weights;
  if (!options.weights_path.empty()) {
    weights = load_ffn_checkpoint(options.weights_path, options.layer);
  } else {
    const FfnShape preset = ffn_preset(options.model);
    weights = random_ffn_weights(result.on_gpu ? preset : reduced_for_cpu(preset), options.seed);
  }
  result.shape = weights.shape;
  result.source = weights.source;
  result.tokens = options.tokens > 0 ? options.tokens
                                     : (result.on_gpu ? kGpuDefaultTokens : kCpuDefaultTokens);
  const std::vector<std::uint16_t> x =
      ffn_activations(result.tokens, weights.shape.hidden, options.seed);

  std::unique_ptr<FfnMemory> memory;
#if LOWBIT_WITH_CUDA
  if (result.on_gpu) memory = make_cuda_memory();
#endif
  if (!memory) memory = make_host_memory();
  FfnLayer layer(weights, result.tokens, *memory);
  layer.set_input(x);
  if (result.on_gpu) {
    layer.run();  // timed below by measure_ffn_on_gpu
  }
  for (const FfnStage& stage : layer.stages()) {
    // On the CPU the one run is the timed run: wall clock of the reference loops.
    const double us = result.on_gpu ? 0.0 : elapsed_us([&] { stage.run(nullptr, false); });
    result.stages.push_back({stage.name, us, stage.bytes, stage.flops, 0});
    result.total_us += us;
  }
  const std::vector<std::uint16_t> y = layer.output();
  result.reference_rows = reference_row_indices(result.tokens, options.reference_rows);
  const std::vector<double> reference = reference_rows(weights, x, result.reference_rows);
  result.accuracy = compare_with_reference(y, weights.shape.hidden, result.reference_rows, reference);

#if LOWBIT_WITH_CUDA
  if (result.on_gpu) {
    const FfnGpuMeasurement gpu = measure_ffn_on_gpu(layer, weights, result.tokens, 20);
    result.device = gpu.device;
    result.copy_gbps = gpu.copy_gbps;
    result.fp8_tflops = gpu.fp8_tflops;
    for (std::size_t s = 0; s < result.stages.size(); ++s) {
      FfnStageResult& stage = result.stages[s];
      stage.us = gpu.stage_us[s];
      stage.floor_us = std::max(stage.bytes / (gpu.copy_gbps * 1e3),
                                stage.flops / (gpu.fp8_tflops * 1e6));
    }
    result.total_us = gpu.total_us;
    result.held_stream_us = gpu.held_stream_us;
    result.graph_us = gpu.graph_us;
    result.graph_pdl_us = gpu.graph_pdl_us;
    result.bf16_total_us = gpu.bf16_total_us;
    result.bf16_accuracy = compare_with_reference(gpu.bf16_output, weights.shape.hidden,
                                                  result.reference_rows, reference);
  }
#endif
  return result;
}

int run_ffn(const FfnOptions& options) {
  if (!runs_on_gpu(options)) {
    std::printf("lowbit ffn: no CUDA GPU %s: running the CPU reference ops%s\n",
                options.force_cpu ? "requested (--cpu)" : "found",
                options.weights_path.empty() ? " on a reduced size (widths / 8)" : "");
  }
  const FfnResult r = run_ffn_layer(options);
  std::printf("lowbit ffn: %s SwiGLU FFN in FP8 (H = %lld, I = %lld), T = %lld tokens, on %s\n",
              r.shape.model.c_str(), static_cast<long long>(r.shape.hidden),
              static_cast<long long>(r.shape.intermediate), static_cast<long long>(r.tokens),
              r.device.c_str());
  std::printf("weights: %s; x -> per_token_group_quant -> block_fp8_mm -> silu_and_mul_quant -> "
              "block_fp8_mm -> y\n", r.source.c_str());
  print_report(r);
  if (!options.json_path.empty()) write_json(r, options.json_path);
  return accuracy_ok(r.accuracy) ? 0 : 1;
}

}  // namespace lowbit::tools
