// `lowbit bench block-gemm`: block_fp8_mm (DeepSeek-V3 1x128 x 128x128 scaled FP8, bf16 out) on
// DeepSeek-V3's projection shapes, against, in the same run:
//   cuBLASLt block-scaled FP8 (VEC128_32F activations x BLK128x128_32F weights, CUDA 12.9+);
//   cuBLASLt FP8 with per-tensor scales on the same shape (what block scaling costs).
// TFLOP/s = 2 M N K / time. For M <= 128 the weight stream (N K bytes + block scales) over the
// time is also set against the device copy bandwidth measured in this run. Weights rotate over
// enough copies that each launch reads them from HBM, not L2.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench.h"
#include "families.h"
#include "cublaslt_gemm.cuh"
#include "harness.cuh"
#include "lowbit/block_gemm.h"
#include "lowbit/quant.h"

namespace lowbit::bench {

namespace {

// DeepSeek-V3: the six shapes of the issue's prefill bar, plus kv_a (576 x 7168).
// o_proj runs last: cuBLASLt 13.1's block-scaled kernel hit an illegal address at M = 1 there
// on an H200 (it poisons the context), so its block-scaled baseline runs only at M = 4096.
// `--shape` replaces them.
const std::vector<GemmShape> kModelShapes = {
    {"q_a+kv_a 2112x7168", 2112, 7168}, {"q_b 24576x1536", 24576, 1536},
    {"kv_b 32768x512", 32768, 512},     {"gate_up 4096x7168", 4096, 7168},
    {"down 7168x2048", 7168, 2048},     {"kv_a 576x7168", 576, 7168},
    {"o_proj 7168x16384", 7168, 16384}};

// Floats of a scale buffer for rows x cols scales, with both dims padded to multiples of 128.
std::int64_t padded_scale_count(std::int64_t rows, std::int64_t cols) {
  return ((rows + 127) / 128 * 128) * ((cols + 127) / 128 * 128);
}

}  // namespace

nlohmann::json run_block_gemm_bench(const BenchOptions& options) {
  const DeviceInfo device = device_info();
  const int samples = options.quick ? 5 : 20;
  const double copy_gbps = measure_copy_gbps(samples);
  std::printf("device: %s (%d SMs, L2 %lld MB)\n", device.name.c_str(), device.sm_count,
              static_cast<long long>(device.l2_bytes >> 20));
  const double fp8_tflops = measure_cublaslt_fp8_tflops(samples);
  std::printf("ceilings: device copy %.1f GB/s (read + write), cuBLASLt FP8 8192^3 %.0f TFLOP/s\n",
              copy_gbps, fp8_tflops);
  std::printf("cuBLASLt %zu (runtime), CUDA runtime %d\n", cublasLtGetVersion(), [] {
    int v = 0;
    cudaRuntimeGetVersion(&v);
    return v;
  }());
  std::printf("\"rd us\" is a plain read stream over one weight's bytes (and scales), launched one\n"
              "by one like ours; \"%%rd\" its time over ours: the same-size floor of a weight stream\n");
  std::printf("%-20s %5s | %9s %7s %7s %6s %7s %5s | %9s %7s %6s | %9s %7s %6s | %s\n", "shape", "M",
              "ours us", "TFLOP/s", "wGB/s", "%copy", "rd us", "%rd", "ltblk us", "TFLOP/s", "x blk",
              "lt1 us", "TFLOP/s", "x pt", "each config forced (us)");
  const std::vector<std::int64_t> token_counts =
      !options.tokens.empty() ? options.tokens
      : options.quick ? std::vector<std::int64_t>{1, 4096}
                      : std::vector<std::int64_t>{1, 16, 32, 64, 128, 512, 1024, 4096, 8192};
  nlohmann::json results = nlohmann::json::array();
  for (const GemmShape& s : options.shapes.empty() ? kModelShapes : options.shapes) {
    const std::int64_t n = s.n, k = s.k, kb = (k + 127) / 128, nb = (n + 127) / 128;
    const std::int64_t weight_bytes = n * k + nb * kb * 4;
    const int sets = rotation_sets(weight_bytes, device.l2_bytes);
    std::vector<std::unique_ptr<DeviceMemory>> weights, weight_scales;
    for (int i = 0; i < sets; ++i) {
      weights.push_back(std::make_unique<DeviceMemory>(n * k));
      fill_random_bytes(weights.back()->get(), n * k, 11 + i, 0xF7);
      // Scale buffers padded far beyond [NB, KB]: cuBLASLt's block layouts pad their dims.
      weight_scales.push_back(std::make_unique<DeviceMemory>(padded_scale_count(nb, kb) * 4));
      fill_scales(static_cast<float*>(weight_scales.back()->get()), padded_scale_count(nb, kb), 1.0f / 256);
    }
    double read_us = -1;  // measured with the shape's first selected decode row
    for (std::int64_t m : token_counts) {
      if (!row_selected(options.filter, s.name.c_str(), m)) continue;
      const std::int64_t m_aligned = (m + 3) / 4 * 4;
      DeviceMemory x(m * k), x_scales(padded_scale_count(m, kb) * 4), y(m * n * 2), scalar(16);
      fill_random_bytes(x.get(), m * k, 5, 0xF7);
      fill_scales(static_cast<float*>(x_scales.get()), padded_scale_count(m, kb), 1.0f / 64);
      fill_scales(static_cast<float*>(scalar.get()), 4, 1.0f);
      check(cudaGetLastError(), "fill");
      const ScaleLayout layout = ScaleLayout::kColumnMajorTmaAligned;
      // Every configuration that applies to this M is also forced once below; one workspace
      // sized for the largest of them serves the default run and every forced one.
      using Names = std::vector<const char*>;
      const Names configs =
          m <= 32   ? Names{"gemv_split_k", "gemv_wgmma", "gemv_tma", "decode32", "decode64",
                            "prefill128x128", "prefill64x128pp", "splitk128x128"}
          : m <= 64 ? Names{"gemv_tma", "decode64", "prefill128x128", "prefill64x128pp",
                            "splitk128x128"}
                    : Names{"prefill128x128", "prefill64x128pp", "prefill128x192mc",
                            "prefill256x128mc", "prefill128x144mc", "splitk128x128"};
      std::int64_t ws_bytes = block_fp8_mm_workspace_bytes(m, n, k, layout, DType::kBF16);
      for (const char* name : configs) {
        setenv("LOWBIT_BLOCK_GEMM", name, 1);
        ws_bytes = std::max(ws_bytes, block_fp8_mm_workspace_bytes(m, n, k, layout, DType::kBF16));
        unsetenv("LOWBIT_BLOCK_GEMM");
      }
      DeviceMemory workspace(static_cast<std::size_t>(std::max<std::int64_t>(ws_bytes, 256)));
      auto ours = [&](int set, bool pdl) {
        BlockFp8MmArgs args;
        args.a = TensorView::contiguous(x.get(), DType::kFP8E4M3, {m, k}, Device::kCUDA);
        args.a_scales = TensorView::contiguous(x_scales.get(), DType::kFP32, {kb, m_aligned}, Device::kCUDA);
        args.a_scale_layout = layout;
        args.b = TensorView::contiguous(weights[set]->get(), DType::kFP8E4M3, {n, k}, Device::kCUDA);
        args.b_scales = TensorView::contiguous(weight_scales[set]->get(), DType::kFP32, {nb, kb}, Device::kCUDA);
        args.output = TensorView::contiguous(y.get(), DType::kBF16, {m, n}, Device::kCUDA);
        if (ws_bytes > 0) args.workspace = TensorView::contiguous(workspace.get(), DType::kUInt8, {ws_bytes}, Device::kCUDA);
        args.enable_pdl = pdl;
        block_fp8_mm(args, bench_stream());
      };
      // Every variant of this row, sampled in turn (interleaved_median_us).
      std::vector<Variant> variants;
      auto add = [&](std::function<void(int)> launch, Replay replay = Replay::kStream) {
        variants.push_back({std::move(launch), replay});
        return variants.size() - 1;
      };
      const std::size_t ours_at = add([&](int set) { ours(set, false); });
      // Decode as an engine runs it: replayed from a graph with programmatic dependent launch,
      // against the same-size read stream launched the same way.
      const bool decode = m <= 128;
      std::size_t pdl_at = 0;
      double read_pdl_us = -1;
      // And behind the kernel that quantizes its activations (per_token_group_quant of bf16
      // rows): in a graph without PDL, with PDL on the GEMM only, and on both.
      DeviceMemory x_bf16(decode ? m * k * 2 : 0);
      auto quant_then_ours = [&](int set, bool quant_pdl, bool gemm_pdl) {
        PerTokenGroupQuantArgs q;
        q.input = TensorView::contiguous(x_bf16.get(), DType::kBF16, {m, k}, Device::kCUDA);
        q.output = TensorView::contiguous(x.get(), DType::kFP8E4M3, {m, k}, Device::kCUDA);
        q.scales = TensorView::contiguous(x_scales.get(), DType::kFP32, {kb, m_aligned}, Device::kCUDA);
        q.scale_layout = layout;
        q.enable_pdl = quant_pdl;
        per_token_group_quant(q, bench_stream());
        ours(set, gemm_pdl);
      };
      std::size_t chain_at[3] = {0, 0, 0};
      if (decode) {
        if (read_us < 0) read_us = measure_read_us(weight_bytes, device.l2_bytes, samples);
        pdl_at = add([&](int set) { ours(set, true); }, Replay::kGraph);
        read_pdl_us = measure_read_us(weight_bytes, device.l2_bytes, samples,
                                      ReadLaunch::kGraphDependent);
        fill_random_activations(x_bf16.get(), m * k, 2, 17);
        chain_at[0] = add([&](int set) { quant_then_ours(set, false, false); }, Replay::kGraph);
        chain_at[1] = add([&](int set) { quant_then_ours(set, false, true); }, Replay::kGraph);
        chain_at[2] = add([&](int set) { quant_then_ours(set, true, true); }, Replay::kGraph);
      }
      std::vector<std::size_t> config_at;
      for (const char* name : configs) {
        config_at.push_back(add([&, name](int set) {
          setenv("LOWBIT_BLOCK_GEMM", name, 1);
          ours(set, false);
          unsetenv("LOWBIT_BLOCK_GEMM");
        }));
      }
      const char* blk_orientation = "none";
      const bool skip_block_baseline = k == 16384 && m < 4096;
      if (skip_block_baseline) {
        std::fprintf(stderr, "cuBLASLt block-scaled skipped for M=%lld %s (illegal address in cuBLASLt 13.1)\n",
                     static_cast<long long>(m), s.name.c_str());
      }
      std::unique_ptr<CublasLtFp8Gemm> blk, pt;
      auto run_blk = [&](int set) {
        blk->run(weights[set]->get(), static_cast<const float*>(weight_scales[set]->get()), x.get(),
                 static_cast<const float*>(x_scales.get()), y.get());
      };
      for (bool weights_as_a : {true, false}) {
        if (skip_block_baseline) break;
        try {
          blk = std::make_unique<CublasLtFp8Gemm>(m, n, k, true, weights_as_a,
                                                  static_cast<const float*>(weight_scales[0]->get()),
                                                  static_cast<const float*>(x_scales.get()));
          run_blk(0);
          check(cudaStreamSynchronize(bench_stream()), "cuBLASLt block-scaled trial");
          blk_orientation = weights_as_a ? "weights_as_A" : "activations_as_A";
          break;
        } catch (const Error& e) {
          blk.reset();
          std::fprintf(stderr, "cuBLASLt block-scaled (%s) unavailable for M=%lld %s: %s\n",
                       weights_as_a ? "weights as A" : "activations as A", static_cast<long long>(m), s.name.c_str(), e.what());
        }
      }
      const std::size_t blk_at = blk ? add(run_blk) : 0;
      try {
        pt = std::make_unique<CublasLtFp8Gemm>(m, n, k, false, true, static_cast<const float*>(scalar.get()),
                                               static_cast<const float*>(scalar.get()));
      } catch (const Error& e) {
        std::fprintf(stderr, "cuBLASLt per-tensor unavailable for M=%lld %s: %s\n", static_cast<long long>(m), s.name.c_str(), e.what());
      }
      const std::size_t pt_at = pt ? add([&](int set) {
        pt->run(weights[set]->get(), static_cast<const float*>(scalar.get()), x.get(),
                static_cast<const float*>(scalar.get()), y.get());
      }) : 0;
      const std::vector<double> times_us = interleaved_median_us(variants, sets, samples);
      const double ours_us = times_us[ours_at];
      const double pdl_us = decode ? times_us[pdl_at] : -1;
      const double blk_us = blk ? times_us[blk_at] : -1, pt_us = pt ? times_us[pt_at] : -1;
      nlohmann::json per_config = nlohmann::json::object();
      std::string config_text;
      for (std::size_t c = 0; c < configs.size(); ++c) {
        per_config[configs[c]] = times_us[config_at[c]];
        char text[64];
        std::snprintf(text, sizeof(text), " %s=%.1f", configs[c], times_us[config_at[c]]);
        config_text += text;
      }
      const double flops = 2.0 * m * n * k;
      auto tflops = [&](double us) { return us > 0 ? flops / (us * 1e-6) / 1e12 : 0.0; };
      const double weight_gbps = weight_bytes / (ours_us * 1e-6) / 1e9;
      std::printf("%-20s %5lld | %9.2f %7.1f %7.0f %5.1f%% %7.2f %4.0f%% | %9.2f %7.1f %5.2fx | %9.2f %7.1f %5.2fx |%s\n",
                  s.name.c_str(), static_cast<long long>(m), ours_us, tflops(ours_us), weight_gbps,
                  decode ? 100 * weight_gbps / copy_gbps : 0.0, decode ? read_us : 0.0,
                  decode ? 100 * read_us / ours_us : 0.0, blk_us, tflops(blk_us),
                  blk_us > 0 ? blk_us / ours_us : 0.0, pt_us, tflops(pt_us), pt_us > 0 ? pt_us / ours_us : 0.0, config_text.c_str());
      if (decode) {
        std::printf("%28s graph + PDL: %.2f us (%.1f%% copy); read stream graph + PDL %.2f us\n", "",
                    pdl_us, 100 * weight_bytes / (pdl_us * 1e3) / copy_gbps, read_pdl_us);
        std::printf("%28s group quant -> GEMM in a graph: %.2f us; PDL on the GEMM %.2f; on both %.2f\n",
                    "", times_us[chain_at[0]], times_us[chain_at[1]], times_us[chain_at[2]]);
      }
      std::fflush(stdout);
      results.push_back({{"shape", s.name}, {"m", m}, {"n", n}, {"k", k}, {"forced_config_us", per_config},
                         {"cublaslt_block_orientation", blk_orientation},
                         {"ours_us", ours_us}, {"ours_tflops", tflops(ours_us)},
                         {"weight_bytes", weight_bytes}, {"weight_gbps", weight_gbps},
                         {"weight_fraction_of_copy", weight_gbps / copy_gbps},
                         {"cublaslt_block_us", blk_us}, {"cublaslt_block_tflops", tflops(blk_us)},
                         {"speedup_vs_cublaslt_block", blk_us > 0 ? blk_us / ours_us : 0.0},
                         {"cublaslt_per_tensor_us", pt_us}, {"cublaslt_per_tensor_tflops", tflops(pt_us)},
                         {"ratio_vs_cublaslt_per_tensor", pt_us > 0 ? pt_us / ours_us : 0.0},
                         {"same_size_read_us", decode ? read_us : -1},
                         {"graph_pdl_us", pdl_us}, {"graph_pdl_same_size_read_us", read_pdl_us},
                         {"quant_then_gemm_graph_us", decode ? times_us[chain_at[0]] : -1},
                         {"quant_then_gemm_graph_gemm_pdl_us", decode ? times_us[chain_at[1]] : -1},
                         {"quant_then_gemm_graph_both_pdl_us", decode ? times_us[chain_at[2]] : -1},
                         {"a_scale_layout", scale_layout_name(layout)}, {"rotation_sets", sets}});
    }
  }
  return {{"benchmark", "block-gemm"}, {"device", device.name}, {"copy_gbps", copy_gbps},
          {"fp8_tflops", fp8_tflops}, {"results", results}};
}

}  // namespace lowbit::bench
