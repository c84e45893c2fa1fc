// `lowbit bench quant`: per_token_group_quant (bf16 -> fp8 e4m3fn, group 128) over
// M in {16, 256, 4096, 16384} x K in {7168, 18432}, for each scale layout, against the device
// copy bandwidth measured in the same run. Bytes counted once: read M*K*2, write M*K + scales.
#include <cuda_runtime.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench.h"
#include "harness.cuh"
#include "lowbit/quant.h"

namespace lowbit::bench {

namespace {

__global__ void empty_kernel() {}

struct QuantCase {
  std::int64_t m, k;
  ScaleLayout layout;
  DType output;
  bool power_of_two;
};

nlohmann::json bench_case(const QuantCase& c, double copy_gbps, std::int64_t l2_bytes,
                          int samples, double launch_floor_ms) {
  const int group = 128;
  const ScaleShape scale_shape = scale_storage_shape(c.layout, c.m, c.k, group);
  const std::int64_t in_bytes = c.m * c.k * 2;
  const std::int64_t out_bytes = c.m * c.k;
  const std::int64_t scale_bytes = scale_shape.rows * scale_shape.cols * 4;
  const std::int64_t moved = in_bytes + out_bytes + c.m * (c.k / group) * 4;
  const int sets = rotation_sets(in_bytes + out_bytes + scale_bytes, l2_bytes);

  std::vector<std::unique_ptr<DeviceMemory>> buffers;
  std::vector<PerTokenGroupQuantArgs> args(sets);
  for (int s = 0; s < sets; ++s) {
    buffers.push_back(std::make_unique<DeviceMemory>(in_bytes));
    void* in = buffers.back()->get();
    fill_random_activations(in, c.m * c.k, 2, 1234 + s);
    buffers.push_back(std::make_unique<DeviceMemory>(out_bytes));
    void* out = buffers.back()->get();
    buffers.push_back(std::make_unique<DeviceMemory>(scale_bytes));
    void* scales = buffers.back()->get();
    args[s].input = TensorView::contiguous(in, DType::kBF16, {c.m, c.k}, Device::kCUDA);
    args[s].output = TensorView::contiguous(out, c.output, {c.m, c.k}, Device::kCUDA);
    args[s].scales = TensorView::contiguous(scales, DType::kFP32,
                                            {scale_shape.rows, scale_shape.cols}, Device::kCUDA);
    args[s].scale_layout = c.layout;
    args[s].power_of_two_scale = c.power_of_two;
  }
  const Timing t = time_launches([&](int s) { per_token_group_quant(args[s]); }, sets, samples);
  const double gbps = static_cast<double>(moved) / (t.median_ms * 1e-3) / 1e9;

  std::printf("%6lld %6lld  %-24s %-10s %-5s %10.2f %9.1f %7.1f%% %8.2fx\n",
              static_cast<long long>(c.m), static_cast<long long>(c.k),
              scale_layout_name(c.layout), dtype_name(c.output), c.power_of_two ? "yes" : "no",
              t.median_ms * 1e3, gbps, 100.0 * gbps / copy_gbps, t.median_ms / launch_floor_ms);
  return {{"op", "per_token_group_quant"},
          {"m", c.m},
          {"k", c.k},
          {"group", group},
          {"input", "bf16"},
          {"output", dtype_name(c.output)},
          {"scale_layout", scale_layout_name(c.layout)},
          {"power_of_two_scale", c.power_of_two},
          {"bytes_moved", moved},
          {"median_us", t.median_ms * 1e3},
          {"min_us", t.min_ms * 1e3},
          {"max_us", t.max_ms * 1e3},
          {"samples", t.samples},
          {"launches_per_sample", t.launches_per_sample},
          {"buffer_sets", sets},
          {"gbps", gbps},
          {"fraction_of_copy", gbps / copy_gbps},
          {"ratio_to_empty_launch", t.median_ms / launch_floor_ms}};
}

}  // namespace

int run_quant_bench(const BenchOptions& options) {
  const DeviceInfo device = device_info();
  const int samples = options.quick ? 5 : 30;
  const double copy_gbps = measure_copy_gbps(samples);
  const Timing empty = time_launches([](int) { empty_kernel<<<1, 32>>>(); }, 1, samples);
  std::printf("device: %s (%d SMs, L2 %lld MB)\n", device.name.c_str(), device.sm_count,
              static_cast<long long>(device.l2_bytes >> 20));
  std::printf("ceiling: device copy %.1f GB/s (read + write); empty-kernel launch %.2f us\n",
              copy_gbps, empty.median_ms * 1e3);
  std::printf("per_token_group_quant bf16 -> 1x128 groups\n");
  std::printf("%6s %6s  %-24s %-10s %-5s %10s %9s %8s %9s\n", "M", "K", "scale layout", "output",
              "pow2", "median us", "GB/s", "of copy", "x launch");

  std::vector<QuantCase> cases;
  for (std::int64_t k : {7168, 18432}) {
    for (std::int64_t m : {16, 256, 4096, 16384}) {
      cases.push_back({m, k, ScaleLayout::kRowMajor, DType::kFP8E4M3, false});
      cases.push_back({m, k, ScaleLayout::kColumnMajorTmaAligned, DType::kFP8E4M3, true});
    }
    cases.push_back({16384, k, ScaleLayout::kColumnMajor, DType::kFP8E4M3, false});
    cases.push_back({16384, k, ScaleLayout::kRowMajor, DType::kInt8, false});
  }
  nlohmann::json results = nlohmann::json::array();
  for (const QuantCase& c : cases) {
    results.push_back(bench_case(c, copy_gbps, device.l2_bytes, samples, empty.median_ms));
  }
  if (!options.json_path.empty()) {
    nlohmann::json report = {{"benchmark", "quant"},
                             {"device", device.name},
                             {"sm_count", device.sm_count},
                             {"l2_bytes", device.l2_bytes},
                             {"copy_gbps", copy_gbps},
                             {"empty_launch_us", empty.median_ms * 1e3},
                             {"results", results}};
    std::ofstream(options.json_path) << report.dump(2) << "\n";
    std::printf("wrote %s\n", options.json_path.c_str());
  }
  return 0;
}

}  // namespace lowbit::bench
