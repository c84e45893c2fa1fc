// `lowbit bench gemm`: scaled_mm (W8A8, dequantization in the epilogue, bf16 out) on Llama-3-8B
// and DeepSeek-V3 dense FFN shapes, against, in the same run:
//   cuBLASLt FP8 with per-tensor scales and bf16 output, default accumulation and fast
//   accumulation (the latter is scaled_mm's own numerics);
//   cuBLASLt int8 x int8 -> int32 followed by a dequantization kernel (the INT8 baseline).
// TFLOP/s = 2 M N K / time, also as a fraction of the cuBLASLt FP8 8192^3 rate measured here.
// For M <= 64 the weight stream (N K bytes) over the time is set against the copy bandwidth:
// the bar is time <= 1.25 x weight bytes / copy bandwidth (>= 80% of copy).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench.h"
#include "cublaslt_gemm.cuh"
#include "families.h"
#include "harness.cuh"
#include "lowbit/quant.h"
#include "lowbit/scaled_gemm.h"

namespace lowbit::bench {

namespace {

// The model shapes (`--shape` replaces them).
const std::vector<GemmShape> kModelShapes = {{"llama3-8b qkv/o 4096x4096", 4096, 4096},
                                             {"llama3-8b up 14336x4096", 14336, 4096},
                                             {"llama3-8b down 4096x14336", 4096, 14336},
                                             {"dsv3 dense up 18432x7168", 18432, 7168},
                                             {"dsv3 dense down 7168x18432", 7168, 18432}};

// scaled_mm's configurations by LOWBIT_SCALED_GEMM name: the swapped CUTLASS tiles (timed for
// both dtypes at decode sizes), the other CUTLASS tiles, and the GEMVs.
constexpr const char* kSwapConfigs[] = {"swap64x16", "swap64x32", "swap64x64", "swap128x32",
                                        "swap192x64"};
constexpr const char* kTokenTileConfigs[] = {"large128x128", "medium64x128", "small64x64",
                                            "coop128x192"};
// Swapped tiles of 80 and 192 tokens, timed above 64 tokens.
constexpr const char* kWideSwapConfigs[] = {"swap64x80", "swap128x192"};
constexpr const char* kGemvConfigs[] = {"gemv_split_k", "gemv_wgmma", "gemv_tma"};

__global__ void fill_ints_kernel(std::int32_t* data, std::int64_t count, std::int32_t base) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    data[i] = base + static_cast<std::int32_t>(i % 17);
  }
}

// The INT8 baseline's second kernel: y[m, n] = bf16(s_a[m] * s_b[n] * float(acc[m, n])),
// 4 elements per thread (16-byte loads).
__global__ void dequantize_int32_kernel(const int4* __restrict__ acc, const float* __restrict__ s_a,
                                        const float* __restrict__ s_b, std::int64_t m,
                                        std::int64_t n, __nv_bfloat162* __restrict__ y) {
  const std::int64_t quads = m * n / 4;
  for (std::int64_t q = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; q < quads;
       q += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int4 v = acc[q];
    const std::int64_t row = q * 4 / n, col = q * 4 % n;
    const float sa = s_a[row];
    y[2 * q] = __floats2bfloat162_rn(sa * s_b[col] * v.x, sa * s_b[col + 1] * v.y);
    y[2 * q + 1] = __floats2bfloat162_rn(sa * s_b[col + 2] * v.z, sa * s_b[col + 3] * v.w);
  }
}

}  // namespace

nlohmann::json run_gemm_bench(const BenchOptions& options) {
  const DeviceInfo device = device_info();
  const int samples = options.quick ? 5 : 10;
  const int interleaved_samples = options.quick ? 5 : 30;  // per variant of a row
  const double copy_gbps = measure_copy_gbps(samples);
  std::printf("device: %s (%d SMs, L2 %lld MB)\n", device.name.c_str(), device.sm_count,
              static_cast<long long>(device.l2_bytes >> 20));
  const double fp8_tflops = measure_cublaslt_fp8_tflops(samples);
  std::printf("ceilings: device copy %.1f GB/s (read + write), cuBLASLt FP8 8192^3 %.0f TFLOP/s\n",
              copy_gbps, fp8_tflops);
  const double gib_read_us = measure_read_us(std::int64_t{1} << 30, device.l2_bytes, samples);
  std::printf("read stream: 1 GiB in %.1f us (%.1f GB/s); \"rd us\" is the same stream over one "
              "weight's bytes, \"%%rd\" its time over ours\n",
              gib_read_us, 1073741824.0 / (gib_read_us * 1e3));
  std::printf("cuBLASLt %zu (runtime)\n", cublasLtGetVersion());
  std::printf("%-27s %5s | %8s %6s %5s %5s %7s %4s | %8s %5s | %8s %5s | %8s %5s | %8s %8s %8s %5s %5s | %8s %5s\n",
              "shape", "M", "fp8 us", "TFLOPs", "%rate", "%copy", "rd us", "%rd", "lt us", "x lt", "ltfa us", "x lfa",
              "tokch us", "+%", "i8 us", "azp us", "azpt us", "+%", "+%", "lti8 us", "x lti8");
  const std::vector<std::int64_t> token_counts =
      !options.tokens.empty() ? options.tokens
      : options.quick         ? std::vector<std::int64_t>{1, 4096}
                              : std::vector<std::int64_t>{1, 16, 32, 64, 128, 4096, 8192};
  nlohmann::json results = nlohmann::json::array();
  for (const GemmShape& s : options.shapes.empty() ? kModelShapes : options.shapes) {
    const std::int64_t n = s.n, k = s.k;
    const std::int64_t weight_bytes = n * k;
    const int sets = rotation_sets(weight_bytes, device.l2_bytes);
    std::vector<std::unique_ptr<DeviceMemory>> fp8_weights, int8_weights;
    for (int i = 0; i < sets; ++i) {
      fp8_weights.push_back(std::make_unique<DeviceMemory>(n * k));
      fill_random_bytes(fp8_weights.back()->get(), n * k, 11 + i, 0xF7);
      int8_weights.push_back(std::make_unique<DeviceMemory>(n * k));
      fill_random_bytes(int8_weights.back()->get(), n * k, 21 + i, 0xFF);
    }
    DeviceMemory b_scales(n * 4), azp_adj(n * 4), scalar(16);
    fill_scales(static_cast<float*>(b_scales.get()), n, 1.0f / 256);
    fill_ints_kernel<<<64, 256, 0, bench_stream()>>>(static_cast<std::int32_t*>(azp_adj.get()), n, -300);
    fill_scales(static_cast<float*>(scalar.get()), 4, 1.0f / 64);
    // The read floors, measured with the shape's first selected row (graph ones with its first
    // decode row).
    double read_us = 0, read_graph_us = 0, read_dependent_us = 0;
    for (std::int64_t m : token_counts) {
      if (!row_selected(options.filter, s.name.c_str(), m)) continue;
      if (read_us == 0) read_us = measure_read_us(weight_bytes, device.l2_bytes, samples);
      const bool decode = m <= 64;
      if (decode && read_graph_us == 0) {
        read_graph_us = measure_read_us(weight_bytes, device.l2_bytes, samples, ReadLaunch::kGraph);
        read_dependent_us = measure_read_us(weight_bytes, device.l2_bytes, samples,
                                            ReadLaunch::kGraphDependent);
      }
      DeviceMemory x8(m * k), xi(m * k), a_scales(m * 4), azp(m * 4), y(m * n * 2), acc(m * n * 4);
      fill_random_bytes(x8.get(), m * k, 5, 0xF7);
      fill_random_bytes(xi.get(), m * k, 6, 0xFF);
      fill_scales(static_cast<float*>(a_scales.get()), m, 1.0f / 64);
      fill_ints_kernel<<<64, 256, 0, bench_stream()>>>(static_cast<std::int32_t*>(azp.get()), m, -8);
      check(cudaGetLastError(), "fill");
      std::int64_t ws_bytes = 0;
      auto add_workspace = [&](const char* config) {
        for (DType ab : {DType::kFP8E4M3, DType::kInt8}) {
          setenv("LOWBIT_SCALED_GEMM", config, 1);
          ws_bytes = std::max(ws_bytes, scaled_mm_workspace_bytes(m, n, k, ab, DType::kBF16));
          unsetenv("LOWBIT_SCALED_GEMM");
        }
      };
      for (const char* config : kTokenTileConfigs) add_workspace(config);
      for (const char* config : kSwapConfigs) add_workspace(config);
      for (const char* config : kWideSwapConfigs) add_workspace(config);
      for (const char* config : kGemvConfigs) add_workspace(config);
      DeviceMemory workspace(static_cast<std::size_t>(std::max<std::int64_t>(ws_bytes, 256)));
      const Device cuda = Device::kCUDA;
      auto run_ours = [&](int set, bool int8, bool per_token, ScaledMmEpilogue epilogue,
                          bool pdl) {
        ScaledMmArgs args;
        const DType ab = int8 ? DType::kInt8 : DType::kFP8E4M3;
        args.a = TensorView::contiguous(int8 ? xi.get() : x8.get(), ab, {m, k}, cuda);
        args.b = TensorView::contiguous(int8 ? int8_weights[set]->get() : fp8_weights[set]->get(), ab, {n, k}, cuda);
        args.a_scales = per_token ? TensorView::contiguous(a_scales.get(), DType::kFP32, {m}, cuda)
                                  : TensorView::contiguous(scalar.get(), DType::kFP32, {1}, cuda);
        args.b_scales = per_token ? TensorView::contiguous(b_scales.get(), DType::kFP32, {n}, cuda)
                                  : TensorView::contiguous(scalar.get(), DType::kFP32, {1}, cuda);
        if (epilogue == ScaledMmEpilogue::kScaledAzp || epilogue == ScaledMmEpilogue::kScaledAzpPerToken) {
          args.azp_adj = TensorView::contiguous(azp_adj.get(), DType::kInt32, {n}, cuda);
        }
        if (epilogue == ScaledMmEpilogue::kScaledAzpPerToken) {
          args.azp = TensorView::contiguous(azp.get(), DType::kInt32, {m}, cuda);
        }
        args.output = TensorView::contiguous(y.get(), DType::kBF16, {m, n}, cuda);
        args.workspace = TensorView::contiguous(workspace.get(), DType::kUInt8, {std::max<std::int64_t>(ws_bytes, 256)}, cuda);
        args.enable_pdl = pdl;
        scaled_mm(args, bench_stream());
      };
      // Every variant of this shape, sampled in turn (interleaved_median_us).
      std::vector<Variant> launches;
      auto ours = [&](bool int8, bool per_token, ScaledMmEpilogue epilogue, const char* config,
                      Replay replay = Replay::kStream, bool pdl = false) {
        launches.push_back({[&, int8, per_token, epilogue, config, pdl](int set) {
                              if (config != nullptr) setenv("LOWBIT_SCALED_GEMM", config, 1);
                              run_ours(set, int8, per_token, epilogue, pdl);
                              if (config != nullptr) unsetenv("LOWBIT_SCALED_GEMM");
                            },
                            replay});
        return launches.size() - 1;
      };
      const std::size_t fp8_at = ours(false, false, ScaledMmEpilogue::kScaled, nullptr);
      const std::size_t fp8_token_channel_at = ours(false, true, ScaledMmEpilogue::kScaled, nullptr);
      const std::size_t int8_at = ours(true, true, ScaledMmEpilogue::kScaled, nullptr);
      const std::size_t int8_azp_at = ours(true, true, ScaledMmEpilogue::kScaledAzp, nullptr);
      const std::size_t int8_azp_token_at = ours(true, true, ScaledMmEpilogue::kScaledAzpPerToken, nullptr);
      // Decode as an engine runs it: the fp8 launches replayed from a graph, without and with
      // programmatic dependent launch (each launch's weights stream while the previous drains).
      std::size_t fp8_graph_at = 0, fp8_pdl_at = 0;
      if (decode) {
        fp8_graph_at = ours(false, false, ScaledMmEpilogue::kScaled, nullptr, Replay::kGraph);
        fp8_pdl_at = ours(false, false, ScaledMmEpilogue::kScaled, nullptr, Replay::kGraph, true);
      }
      // And behind the kernel that quantizes its activations (per_token_quant of bf16 rows, then
      // fp8 per-token x per-channel): in a graph without PDL, with PDL on the GEMM only, on both.
      DeviceMemory x_bf16(decode ? m * k * 2 : 0);
      std::size_t chain_at[3] = {0, 0, 0};
      if (decode) {
        fill_random_activations(x_bf16.get(), m * k, 2, 17);
        auto chain = [&](bool quant_pdl, bool gemm_pdl) {
          launches.push_back({[&, quant_pdl, gemm_pdl](int set) {
                                PerTokenQuantArgs q;
                                q.input = TensorView::contiguous(x_bf16.get(), DType::kBF16, {m, k}, cuda);
                                q.output = TensorView::contiguous(x8.get(), DType::kFP8E4M3, {m, k}, cuda);
                                q.scales = TensorView::contiguous(a_scales.get(), DType::kFP32, {m}, cuda);
                                q.enable_pdl = quant_pdl;
                                per_token_quant(q, bench_stream());
                                run_ours(set, false, true, ScaledMmEpilogue::kScaled, gemm_pdl);
                              },
                              Replay::kGraph});
          return launches.size() - 1;
        };
        chain_at[0] = chain(false, false);
        chain_at[1] = chain(false, true);
        chain_at[2] = chain(true, true);
      }
      // The GEMVs hold at most 32 tokens, the TMA-fed one 64 (forced beyond that they would run
      // the default).
      std::vector<const char*> configs(std::begin(kTokenTileConfigs), std::end(kTokenTileConfigs));
      configs.insert(configs.end(), std::begin(kSwapConfigs), std::end(kSwapConfigs));
      // int8's own tiles: the swapped ones at decode sizes (its GEMVs are added below), all of
      // fp8's above 64 tokens.
      std::vector<const char*> int8_configs;
      if (decode) int8_configs.assign(std::begin(kSwapConfigs), std::end(kSwapConfigs));
      if (m > 64) {
        configs.insert(configs.end(), std::begin(kWideSwapConfigs), std::end(kWideSwapConfigs));
        int8_configs = configs;
      }
      for (const char* gemv : kGemvConfigs) {
        if (m <= (std::string(gemv) == "gemv_tma" ? 64 : 32)) {
          configs.push_back(gemv);
          int8_configs.push_back(gemv);
        }
      }
      std::vector<std::size_t> config_at, int8_config_at;
      for (const char* config : configs) config_at.push_back(ours(false, false, ScaledMmEpilogue::kScaled, config));
      std::vector<std::size_t> config_graph_at, config_pdl_at;
      if (options.graph_configs) {
        for (const char* config : configs) {
          config_graph_at.push_back(ours(false, false, ScaledMmEpilogue::kScaled, config, Replay::kGraph));
          config_pdl_at.push_back(ours(false, false, ScaledMmEpilogue::kScaled, config, Replay::kGraph, true));
        }
      }
      for (const char* config : int8_configs) int8_config_at.push_back(ours(true, true, ScaledMmEpilogue::kScaled, config));

      const auto* one = static_cast<const float*>(scalar.get());
      std::unique_ptr<CublasLtFp8Gemm> lt, lt_fast;
      std::unique_ptr<CublasLtInt8Gemm> lt8;
      std::size_t lt_at = 0, lt_fast_at = 0, lt8_at = 0, lt_graph_at = 0;
      try {
        lt = std::make_unique<CublasLtFp8Gemm>(m, n, k, false, true, one, one, false);
        lt_fast = std::make_unique<CublasLtFp8Gemm>(m, n, k, false, true, one, one, true);
        auto run_lt = [&](int set) { lt->run(fp8_weights[set]->get(), one, x8.get(), one, y.get()); };
        launches.push_back({run_lt});
        lt_at = launches.size() - 1;
        launches.push_back({[&](int set) { lt_fast->run(fp8_weights[set]->get(), one, x8.get(), one, y.get()); }});
        lt_fast_at = launches.size() - 1;
        if (decode) {
          launches.push_back({run_lt, Replay::kGraph});
          lt_graph_at = launches.size() - 1;
        }
      } catch (const Error& e) {
        std::fprintf(stderr, "cuBLASLt FP8 unavailable for M=%lld %s: %s\n", static_cast<long long>(m), s.name.c_str(), e.what());
      }
      try {
        lt8 = std::make_unique<CublasLtInt8Gemm>(m, n, k);
        launches.push_back({[&](int set) {
          lt8->run(int8_weights[set]->get(), xi.get(), acc.get());
          dequantize_int32_kernel<<<4 * device.sm_count, 256, 0, bench_stream()>>>(
              static_cast<const int4*>(acc.get()), static_cast<const float*>(a_scales.get()),
              static_cast<const float*>(b_scales.get()), m, n, static_cast<__nv_bfloat162*>(y.get()));
        }});
        lt8_at = launches.size() - 1;
      } catch (const Error& e) {
        std::fprintf(stderr, "cuBLASLt int8 unavailable for M=%lld %s: %s\n", static_cast<long long>(m), s.name.c_str(), e.what());
      }
      const std::vector<double> us = interleaved_median_us(launches, sets, interleaved_samples);
      const double fp8_us = us[fp8_at], fp8_token_channel_us = us[fp8_token_channel_at];
      const double int8_us = us[int8_at], int8_azp_us = us[int8_azp_at];
      const double int8_azp_token_us = us[int8_azp_token_at];
      const double lt_us = lt ? us[lt_at] : -1, lt_fast_us = lt ? us[lt_fast_at] : -1;
      const double lt_int8_us = lt8 ? us[lt8_at] : -1;
      const double fp8_graph_us = decode ? us[fp8_graph_at] : -1;
      const double fp8_pdl_us = decode ? us[fp8_pdl_at] : -1;
      const double lt_graph_us = decode && lt ? us[lt_graph_at] : -1;
      nlohmann::json per_config = nlohmann::json::object(), int8_per_config = nlohmann::json::object();
      for (std::size_t c = 0; c < config_at.size(); ++c) per_config[configs[c]] = us[config_at[c]];
      for (std::size_t c = 0; c < int8_config_at.size(); ++c) int8_per_config[int8_configs[c]] = us[int8_config_at[c]];
      nlohmann::json graph_per_config = nlohmann::json::object(), pdl_per_config = nlohmann::json::object();
      for (std::size_t c = 0; c < config_graph_at.size(); ++c) {
        graph_per_config[configs[c]] = us[config_graph_at[c]];
        pdl_per_config[configs[c]] = us[config_pdl_at[c]];
      }

      const double flops = 2.0 * m * n * k;
      auto tflops = [&](double us) { return us > 0 ? flops / (us * 1e-6) / 1e12 : 0.0; };
      auto ratio = [](double base, double ours) { return base > 0 ? base / ours : 0.0; };
      auto over = [](double us, double base) { return 100.0 * (us / base - 1.0); };
      const double weight_gbps = weight_bytes / (fp8_us * 1e-6) / 1e9;
      std::printf("%-27s %5lld | %8.2f %6.0f %4.0f%% %4.0f%% %7.2f %3.0f%% | %8.2f %4.2fx | %8.2f %4.2fx | %8.2f %+4.1f | %8.2f %8.2f %8.2f %+4.1f %+4.1f | %8.2f %4.2fx\n",
                  s.name.c_str(), static_cast<long long>(m), fp8_us, tflops(fp8_us), 100 * tflops(fp8_us) / fp8_tflops,
                  100 * weight_gbps / copy_gbps, read_us, 100 * read_us / fp8_us, lt_us, ratio(lt_us, fp8_us), lt_fast_us, ratio(lt_fast_us, fp8_us),
                  fp8_token_channel_us, over(fp8_token_channel_us, fp8_us), int8_us, int8_azp_us, int8_azp_token_us,
                  over(int8_azp_us, int8_us), over(int8_azp_token_us, int8_us), lt_int8_us, ratio(lt_int8_us, int8_us));
      if (decode) {
        std::printf("%33s graph replay: fp8 %.2f us (%.0f%% copy), with PDL %.2f us (%.0f%% copy, "
                    "%.2fx cuBLASLt graph %.2f us); read stream graph %.2f, PDL %.2f us\n",
                    "", fp8_graph_us, 100 * weight_bytes / (fp8_graph_us * 1e3) / copy_gbps,
                    fp8_pdl_us, 100 * weight_bytes / (fp8_pdl_us * 1e3) / copy_gbps,
                    ratio(lt_graph_us, fp8_pdl_us), lt_graph_us, read_graph_us, read_dependent_us);
        std::printf("%33s per_token_quant -> fp8 per-token GEMM in a graph: %.2f us; PDL on the GEMM "
                    "%.2f; on both %.2f\n", "", us[chain_at[0]], us[chain_at[1]], us[chain_at[2]]);
      }
      std::printf("%33s forced fp8:", "");
      for (std::size_t c = 0; c < config_at.size(); ++c) std::printf(" %s=%.2f", configs[c], us[config_at[c]]);
      if (!int8_configs.empty()) std::printf(" | int8:");
      for (std::size_t c = 0; c < int8_config_at.size(); ++c) std::printf(" %s=%.2f", int8_configs[c], us[int8_config_at[c]]);
      std::printf("\n");
      if (!config_graph_at.empty()) {
        std::printf("%33s forced fp8 graph / with PDL:", "");
        for (std::size_t c = 0; c < config_graph_at.size(); ++c) {
          std::printf(" %s=%.2f/%.2f", configs[c], us[config_graph_at[c]], us[config_pdl_at[c]]);
        }
        std::printf("\n");
      }
      std::fflush(stdout);
      results.push_back({{"shape", s.name}, {"m", m}, {"n", n}, {"k", k}, {"rotation_sets", sets},
                         {"weight_bytes", weight_bytes},
                         {"fp8_per_tensor_us", fp8_us}, {"fp8_per_tensor_tflops", tflops(fp8_us)},
                         {"quant_then_gemm_graph_us", decode ? us[chain_at[0]] : -1},
                         {"quant_then_gemm_graph_gemm_pdl_us", decode ? us[chain_at[1]] : -1},
                         {"quant_then_gemm_graph_both_pdl_us", decode ? us[chain_at[2]] : -1},
                         {"fp8_fraction_of_cublaslt_rate", tflops(fp8_us) / fp8_tflops},
                         {"weight_gbps", weight_gbps}, {"weight_fraction_of_copy", weight_gbps / copy_gbps},
                         {"same_size_read_us", read_us},
                         {"fp8_per_token_channel_us", fp8_token_channel_us},
                         {"cublaslt_fp8_us", lt_us}, {"speedup_vs_cublaslt_fp8", ratio(lt_us, fp8_us)},
                         {"cublaslt_fp8_fast_accum_us", lt_fast_us},
                         {"speedup_vs_cublaslt_fp8_fast_accum", ratio(lt_fast_us, fp8_us)},
                         {"int8_scaled_us", int8_us}, {"int8_azp_us", int8_azp_us},
                         {"int8_azp_per_token_us", int8_azp_token_us},
                         {"cublaslt_int8_plus_dequant_us", lt_int8_us},
                         {"speedup_vs_cublaslt_int8", ratio(lt_int8_us, int8_us)},
                         {"fp8_forced_config_us", per_config},
                         {"graph_fp8_per_tensor_us", fp8_graph_us},
                         {"graph_pdl_fp8_per_tensor_us", fp8_pdl_us},
                         {"graph_cublaslt_fp8_us", lt_graph_us},
                         {"graph_same_size_read_us", decode ? read_graph_us : -1},
                         {"graph_pdl_same_size_read_us", decode ? read_dependent_us : -1},
                         {"int8_forced_config_us", int8_per_config},
                         {"fp8_forced_config_graph_us", graph_per_config},
                         {"fp8_forced_config_graph_pdl_us", pdl_per_config}});
    }
  }
  return {{"benchmark", "gemm"}, {"device", device.name}, {"copy_gbps", copy_gbps},
          {"read_stream_1gib_us", gib_read_us},
          {"fp8_tflops", fp8_tflops}, {"results", results}};
}

}  // namespace lowbit::bench
