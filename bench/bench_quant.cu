// `lowbit bench quant`: the memory-bound activation kernels against the device copy bandwidth
// measured in the same run. Bytes are counted once (each input read once, each output written
// once). Inputs are random and rotated over > 2.5x L2.
//   per_token_group_quant  bf16 -> fp8/int8, group 128: read 2MK, write MK + scales
//   silu_and_mul_quant     bf16 [T, 2H] -> fp8, group 128: read 4TH, write TH + scales
//   silu_and_mul           bf16 [T, 2H] -> bf16 [T, H]: read 4TH, write 2TH
//   per_token_quant        bf16 -> fp8 (and asymmetric int8): read 2MK, write MK + scales
//   per_tensor_quant       bf16 -> fp8, static and dynamic: read 2MK, write MK (the dynamic
//                          path reads the input twice; the count still says once)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench.h"
#include "families.h"
#include "harness.cuh"
#include "lowbit/activation.h"
#include "lowbit/quant.h"

namespace lowbit::bench {

namespace {

__global__ void empty_kernel() {}

struct Context {
  double copy_gbps;
  double empty_launch_ms;
  std::int64_t l2_bytes;
  int samples;
  std::string filter;  // run only rows whose label contains it (empty: all)
};

// One buffer set: its device memory and the launch that uses it.
struct BufferSet {
  std::vector<std::unique_ptr<DeviceMemory>> memory;
  std::function<void()> launch;
  void* allocate(std::size_t bytes) {
    memory.push_back(std::make_unique<DeviceMemory>(bytes));
    return memory.back()->get();
  }
};

// Times make_set()'s launches rotated over enough sets to exceed the L2, prints a table row and
// returns the JSON record.
nlohmann::json time_memory_bound(const Context& ctx, nlohmann::json record,
                                 const std::string& label, std::int64_t bytes_moved,
                                 std::int64_t bytes_per_set,
                                 const std::function<void(BufferSet&, int)>& make_set) {
  if (label.find(ctx.filter) == std::string::npos) return nullptr;
  const int count = rotation_sets(bytes_per_set, ctx.l2_bytes);
  std::vector<BufferSet> sets(count);
  for (int s = 0; s < count; ++s) make_set(sets[s], s);
  const Timing t = time_launches([&](int s) { sets[s].launch(); }, count, ctx.samples);
  const double gbps = static_cast<double>(bytes_moved) / (t.median_ms * 1e-3) / 1e9;
  std::printf("%-58s %10.2f %9.1f %7.1f%% %8.2fx\n", label.c_str(), t.median_ms * 1e3, gbps,
              100.0 * gbps / ctx.copy_gbps, t.median_ms / ctx.empty_launch_ms);
  record["bytes_moved"] = bytes_moved;
  record["median_us"] = t.median_ms * 1e3;
  record["min_us"] = t.min_ms * 1e3;
  record["max_us"] = t.max_ms * 1e3;
  record["samples"] = t.samples;
  record["launches_per_sample"] = t.launches_per_sample;
  record["buffer_sets"] = count;
  record["gbps"] = gbps;
  record["fraction_of_copy"] = gbps / ctx.copy_gbps;
  record["ratio_to_empty_launch"] = t.median_ms / ctx.empty_launch_ms;
  return record;
}

struct GroupCase {
  std::int64_t m, k;  // quantized [m, k]
  ScaleLayout layout;
  DType output;
  bool power_of_two;
};

std::string group_label(const char* op, const GroupCase& c) {
  char text[160];
  std::snprintf(text, sizeof(text), "%-20s %6lld %6lld %-12.12s %-4s %s", op,
                static_cast<long long>(c.m), static_cast<long long>(c.k),
                scale_layout_name(c.layout), c.output == DType::kInt8 ? "int8" : "fp8",
                c.power_of_two ? "pow2" : "");
  return text;
}

nlohmann::json group_record(const char* op, const GroupCase& c) {
  return {{"op", op}, {"m", c.m}, {"k", c.k}, {"group", 128}, {"input", "bf16"},
          {"output", dtype_name(c.output)}, {"scale_layout", scale_layout_name(c.layout)},
          {"power_of_two_scale", c.power_of_two}};
}

nlohmann::json bench_group_quant(const Context& ctx, const GroupCase& c) {
  const ScaleShape shape = scale_storage_shape(c.layout, c.m, c.k, 128);
  const std::int64_t in_bytes = c.m * c.k * 2, out_bytes = c.m * c.k;
  const std::int64_t scale_bytes = shape.rows * shape.cols * 4;
  const std::int64_t moved = in_bytes + out_bytes + c.m * (c.k / 128) * 4;
  return time_memory_bound(
      ctx, group_record("per_token_group_quant", c), group_label("per_token_group_quant", c),
      moved, in_bytes + out_bytes + scale_bytes, [&](BufferSet& set, int index) {
        PerTokenGroupQuantArgs args;
        void* in = set.allocate(in_bytes);
        fill_random_activations(in, c.m * c.k, 2, 1234 + index);
        args.input = TensorView::contiguous(in, DType::kBF16, {c.m, c.k}, Device::kCUDA);
        args.output = TensorView::contiguous(set.allocate(out_bytes), c.output, {c.m, c.k},
                                             Device::kCUDA);
        args.scales = TensorView::contiguous(set.allocate(scale_bytes), DType::kFP32,
                                             {shape.rows, shape.cols}, Device::kCUDA);
        args.scale_layout = c.layout;
        args.power_of_two_scale = c.power_of_two;
        set.launch = [args] { per_token_group_quant(args); };
      });
}

nlohmann::json bench_silu_and_mul_quant(const Context& ctx, const GroupCase& c) {
  const ScaleShape shape = scale_storage_shape(c.layout, c.m, c.k, 128);
  const std::int64_t in_bytes = c.m * 2 * c.k * 2, out_bytes = c.m * c.k;
  const std::int64_t scale_bytes = shape.rows * shape.cols * 4;
  const std::int64_t moved = in_bytes + out_bytes + c.m * (c.k / 128) * 4;
  return time_memory_bound(
      ctx, group_record("silu_and_mul_quant", c), group_label("silu_and_mul_quant", c), moved,
      in_bytes + out_bytes + scale_bytes, [&](BufferSet& set, int index) {
        SiluAndMulQuantArgs args;
        void* in = set.allocate(in_bytes);
        fill_random_activations(in, c.m * 2 * c.k, 2, 777 + index);
        args.input = TensorView::contiguous(in, DType::kBF16, {c.m, 2 * c.k}, Device::kCUDA);
        args.output = TensorView::contiguous(set.allocate(out_bytes), c.output, {c.m, c.k},
                                             Device::kCUDA);
        args.scales = TensorView::contiguous(set.allocate(scale_bytes), DType::kFP32,
                                             {shape.rows, shape.cols}, Device::kCUDA);
        args.scale_layout = c.layout;
        args.power_of_two_scale = c.power_of_two;
        set.launch = [args] { silu_and_mul_quant(args); };
      });
}

nlohmann::json bench_silu_and_mul(const Context& ctx, std::int64_t t, std::int64_t h) {
  const std::int64_t in_bytes = t * 2 * h * 2, out_bytes = t * h * 2;
  char label[160];
  std::snprintf(label, sizeof(label), "%-20s %6lld %6lld %-12s %-4s", "silu_and_mul",
                static_cast<long long>(t), static_cast<long long>(h), "-", "bf16");
  return time_memory_bound(
      ctx, {{"op", "silu_and_mul"}, {"m", t}, {"k", h}, {"input", "bf16"}, {"output", "bf16"}},
      label, in_bytes + out_bytes, in_bytes + out_bytes, [&](BufferSet& set, int index) {
        SiluAndMulArgs args;
        void* in = set.allocate(in_bytes);
        fill_random_activations(in, t * 2 * h, 2, 555 + index);
        args.input = TensorView::contiguous(in, DType::kBF16, {t, 2 * h}, Device::kCUDA);
        args.output = TensorView::contiguous(set.allocate(out_bytes), DType::kBF16, {t, h},
                                             Device::kCUDA);
        set.launch = [args] { silu_and_mul(args); };
      });
}

enum class RowOp { kPerToken, kAsymmetric, kPerTensorStatic, kPerTensorDynamic };

nlohmann::json bench_row_quant(const Context& ctx, RowOp op, std::int64_t m, std::int64_t k) {
  static const char* const kNames[] = {"per_token_quant", "per_token_asym_int8",
                                       "per_tensor_static", "per_tensor_dynamic"};
  const char* name = kNames[static_cast<int>(op)];
  const bool asymmetric = op == RowOp::kAsymmetric;
  const std::int64_t in_bytes = m * k * 2, out_bytes = m * k;
  const std::int64_t side_bytes = op == RowOp::kPerToken ? m * 4 : (asymmetric ? m * 8 : 4);
  char label[160];
  std::snprintf(label, sizeof(label), "%-20s %6lld %6lld %-12s %-4s", name,
                static_cast<long long>(m), static_cast<long long>(k), "-",
                asymmetric ? "int8" : "fp8");
  return time_memory_bound(
      ctx, {{"op", name}, {"m", m}, {"k", k}, {"input", "bf16"}, {"output", asymmetric ? "int8" : "fp8_e4m3fn"}},
      label, in_bytes + out_bytes + side_bytes, in_bytes + out_bytes + side_bytes,
      [&](BufferSet& set, int index) {
        void* in = set.allocate(in_bytes);
        fill_random_activations(in, m * k, 2, 4321 + index);
        const TensorView input = TensorView::contiguous(in, DType::kBF16, {m, k}, Device::kCUDA);
        const TensorView output = TensorView::contiguous(
            set.allocate(out_bytes), asymmetric ? DType::kInt8 : DType::kFP8E4M3, {m, k}, Device::kCUDA);
        if (op == RowOp::kPerToken) {
          PerTokenQuantArgs args{input, output,
                                 TensorView::contiguous(set.allocate(m * 4), DType::kFP32, {m}, Device::kCUDA)};
          set.launch = [args] { per_token_quant(args); };
        } else if (asymmetric) {
          PerTokenAsymmetricInt8QuantArgs args{
              input, output, TensorView::contiguous(set.allocate(m * 4), DType::kFP32, {m}, Device::kCUDA),
              TensorView::contiguous(set.allocate(m * 4), DType::kInt32, {m}, Device::kCUDA)};
          set.launch = [args] { per_token_asymmetric_int8_quant(args); };
        } else {
          PerTensorQuantArgs args;
          args.input = input;
          args.output = output;
          void* scale = set.allocate(4);
          const float one = 0.05f;
          check(cudaMemcpy(scale, &one, 4, cudaMemcpyHostToDevice), "cudaMemcpy");
          args.scale = TensorView::contiguous(scale, DType::kFP32, {1}, Device::kCUDA);
          args.dynamic = op == RowOp::kPerTensorDynamic;
          args.workspace = TensorView::contiguous(set.allocate(4), DType::kUInt8, {4}, Device::kCUDA);
          set.launch = [args] { per_tensor_quant(args); };
        }
      });
}

}  // namespace

nlohmann::json run_quant_bench(const BenchOptions& options) {
  const DeviceInfo device = device_info();
  Context ctx;
  ctx.samples = options.quick ? 5 : 30;
  ctx.filter = options.filter;
  ctx.l2_bytes = device.l2_bytes;
  ctx.copy_gbps = measure_copy_gbps(ctx.samples);
  ctx.empty_launch_ms =
      time_launches([](int) { empty_kernel<<<1, 32>>>(); }, 1, ctx.samples).median_ms;
  std::printf("device: %s (%d SMs, L2 %lld MB)\n", device.name.c_str(), device.sm_count,
              static_cast<long long>(device.l2_bytes >> 20));
  std::printf("ceiling: device copy %.1f GB/s (read + write); empty-kernel launch %.2f us\n",
              ctx.copy_gbps, ctx.empty_launch_ms * 1e3);
  std::printf("%-20s %6s %6s %-12s %-4s %-5s %10s %9s %8s %9s\n", "op (bf16 in, g=128)", "M", "K",
              "scales", "out", "", "median us", "GB/s", "of copy", "x launch");

  nlohmann::json results = nlohmann::json::array();
  for (std::int64_t k : {7168, 18432}) {
    for (std::int64_t m : {16, 256, 4096, 16384}) {
      results.push_back(bench_group_quant(ctx, {m, k, ScaleLayout::kRowMajor, DType::kFP8E4M3, false}));
      results.push_back(bench_group_quant(
          ctx, {m, k, ScaleLayout::kColumnMajorTmaAligned, DType::kFP8E4M3, true}));
    }
    results.push_back(bench_group_quant(ctx, {16384, k, ScaleLayout::kColumnMajor, DType::kFP8E4M3, false}));
    results.push_back(bench_group_quant(ctx, {16384, k, ScaleLayout::kRowMajor, DType::kInt8, false}));
  }
  for (std::int64_t h : {7168, 18432}) {
    for (std::int64_t t : {16, 256, 4096, 16384}) {
      results.push_back(
          bench_silu_and_mul_quant(ctx, {t, h, ScaleLayout::kRowMajor, DType::kFP8E4M3, false}));
    }
    results.push_back(bench_silu_and_mul_quant(
        ctx, {16384, h, ScaleLayout::kColumnMajorTmaAligned, DType::kFP8E4M3, true}));
  }
  for (std::int64_t h : {7168, 18432}) {
    for (std::int64_t t : {16, 4096, 16384}) results.push_back(bench_silu_and_mul(ctx, t, h));
  }
  for (RowOp op : {RowOp::kPerToken, RowOp::kAsymmetric, RowOp::kPerTensorStatic,
                   RowOp::kPerTensorDynamic}) {
    for (std::int64_t k : {7168, 18432}) {
      for (std::int64_t m : {16, 4096, 16384}) results.push_back(bench_row_quant(ctx, op, m, k));
    }
  }
  results.erase(std::remove(results.begin(), results.end(), nullptr), results.end());
  return {{"benchmark", "quant"},
          {"device", device.name},
          {"sm_count", device.sm_count},
          {"l2_bytes", device.l2_bytes},
          {"copy_gbps", ctx.copy_gbps},
          {"empty_launch_us", ctx.empty_launch_ms * 1e3},
          {"results", results}};
}

}  // namespace lowbit::bench
