// `lowbit bench nvfp4`'s tokens-per-expert rows: where compute starts to bind. Each of a model's
// top_k experts gets all M tokens (the densest routing M tokens can have), so the weight bytes
// stay one token's while the work per weight byte grows M-fold; M = 1 is the weight stream the
// projection rows measure. Dense and 2:4 on a stream and replayed from a graph with
// programmatic dependent launch, and cuBLASLt bf16 with M tokens per expert. "x M=1" is a
// kernel's time over its own time at M = 1: 1.00 while the weight stream binds.
#include "bench_nvfp4_tokens_per_expert.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cublaslt_gemm.cuh"
#include "harness.cuh"
#include "lowbit/nvfp4.h"
#include "nvfp4_bench_data.h"

namespace lowbit::bench {

namespace {

// M = 8 is the last count one 8-token activation tile holds; 9 starts the second.
constexpr std::int64_t kTokenCounts[] = {1, 2, 4, 8, 9, 12, 16};
constexpr std::int64_t kMostTokens = 16;

TensorView list_of(const DeviceMemory& d, std::int64_t n) {
  return TensorView::contiguous(d.get(), DType::kInt32, {n}, Device::kCUDA);
}

TensorView bf16_rows(const DeviceMemory& d, std::int64_t rows, std::int64_t cols) {
  return TensorView::contiguous(d.get(), DType::kBF16, {rows, cols}, Device::kCUDA);
}

}  // namespace

nlohmann::json run_nvfp4_tokens_per_expert_rows(const BenchOptions& options, double copy_gbps,
                                                int samples) {
  const DeviceInfo device = device_info();
  nlohmann::json rows = nlohmann::json::array();
  bool header = false;
  for (const Nvfp4Model& m : kNvfp4Models) {
    for (bool gate_up : {true, false}) {
      const std::string shape = std::string(m.name) + (gate_up ? " gate_up" : " down") + " shared";
      bool any = false;
      for (std::int64_t t : kTokenCounts) any = any || row_selected(options.filter, shape.c_str(), t);
      if (!any) continue;
      if (!header) {
        std::printf("\nEvery token to the same top-k experts: where compute starts to bind (x M=1: "
                    "time over the same kernel's at M = 1)\n%-20s %-7s %3s | %9s %6s %6s %7s | %9s "
                    "%6s %6s | %9s %9s | %9s %6s\n",
                    "model", "proj", "M", "dense us", "%copy", "x M=1", "TFLOP/s", "2:4 us", "x M=1",
                    "x dns", "PDL dns", "PDL 2:4", "bf16 us", "dns x");
        header = true;
      }
      const std::int64_t n = gate_up ? 2 * m.intermediate : m.hidden;
      const std::int64_t k = gate_up ? m.hidden : m.intermediate;
      const ProjectionWeights w(m.experts, n, k, 31);
      DeviceMemory globals(m.experts * 4), x(kMostTokens * k * 2), y(kMostTokens * m.top_k * n * 2);
      const std::vector<float> g(m.experts, 1.0f / 1024);
      check(cudaMemcpy(globals.get(), g.data(), m.experts * 4, cudaMemcpyHostToDevice), "globals");
      fill_random_activations(x.get(), kMostTokens * k, 2, 37);
      const TensorView gv =
          TensorView::contiguous(globals.get(), DType::kFP32, {m.experts}, Device::kCUDA);
      double dense_one_us = 0, sparse_one_us = 0;
      for (std::int64_t tokens : kTokenCounts) {
        if (!row_selected(options.filter, shape.c_str(), tokens)) continue;
        std::mt19937_64 rng(row_seed(options.seed, shape + " M=" + std::to_string(tokens)));
        std::vector<RoutingSet> sets;
        sets.push_back(make_shared_routing(m, tokens, rng));
        const double io_bytes = tokens * k * 2.0 + sets[0].rows * n * 2.0;
        const double dense_bytes = m.top_k * w.expert_bytes(false) + io_bytes;
        const int count = rotation_sets(static_cast<std::int64_t>(dense_bytes), device.l2_bytes);
        while (static_cast<int>(sets.size()) < count) sets.push_back(make_shared_routing(m, tokens, rng));
        auto run = [&](int s, bool sparse, bool pdl) {
          const RoutingSet& r = sets[s];
          const Nvfp4MoeRouting routing{list_of(*r.ids, r.slots), list_of(*r.offsets, r.slots + 1),
                                        list_of(*r.tokens, r.rows)};
          run_projection(w, sparse, bf16_rows(x, tokens, k), gv, bf16_rows(y, r.rows, n), routing,
                         pdl, bench_stream());
        };
        const std::vector<double> us = stream_and_pdl_median_us(run, count, samples);
        // cuBLASLt bf16: the same experts' weights in bf16 (4x the dense bytes), M tokens each.
        const double bf16_bytes = static_cast<double>(m.top_k) * n * k * 2;
        const int bf16_sets = rotation_sets(static_cast<std::int64_t>(bf16_bytes), device.l2_bytes);
        std::vector<std::unique_ptr<DeviceMemory>> bf16_weights;
        for (int s = 0; s < bf16_sets; ++s) {
          bf16_weights.push_back(std::make_unique<DeviceMemory>(static_cast<std::size_t>(bf16_bytes)));
          fill_random_activations(bf16_weights.back()->get(), m.top_k * n * k, 2, 200 + s);
        }
        DeviceMemory bx(m.top_k * tokens * k * 2), by(m.top_k * tokens * n * 2);
        fill_random_activations(bx.get(), m.top_k * tokens * k, 2, 41);
        const CublasLtBf16Gemm gemm(tokens, n, k, m.top_k);
        const double bf16_us = interleaved_median_us(
            {{[&](int s) { gemm.run(bf16_weights[s]->get(), bx.get(), by.get()); }}}, bf16_sets,
            samples)[0];
        if (tokens == 1) {
          dense_one_us = us[0];
          sparse_one_us = us[1];
        }
        const double flops = 2.0 * m.top_k * tokens * n * k;
        const double copy_share = dense_bytes / (us[0] * 1e3) / copy_gbps;
        const double dense_vs_one = dense_one_us > 0 ? us[0] / dense_one_us : -1;
        const double sparse_vs_one = sparse_one_us > 0 ? us[1] / sparse_one_us : -1;
        std::printf("%-20s %-7s %3lld | %9.2f %5.1f%% %6.2f %7.1f | %9.2f %6.2f %5.2fx | %9.2f %9.2f "
                    "| %9.2f %5.2fx\n",
                    m.name, gate_up ? "gate_up" : "down", static_cast<long long>(tokens), us[0],
                    100 * copy_share, dense_vs_one, flops / (us[0] * 1e6), us[1], sparse_vs_one,
                    us[0] / us[1], us[2], us[3], bf16_us, bf16_us / us[0]);
        std::fflush(stdout);
        rows.push_back({{"model", m.name}, {"projection", gate_up ? "gate_up" : "down"},
                        {"n", n}, {"k", k}, {"tokens", tokens}, {"tokens_per_expert", tokens},
                        {"active_experts", m.top_k}, {"output_rows", sets[0].rows},
                        {"routing_sets", count}, {"dense_bytes", dense_bytes},
                        {"dense_us", us[0]}, {"dense_fraction_of_copy", copy_share},
                        {"dense_time_over_one_token", dense_vs_one},
                        {"dense_tflops", flops / (us[0] * 1e6)}, {"sparse24_us", us[1]},
                        {"sparse24_time_over_one_token", sparse_vs_one},
                        {"sparse24_speedup_vs_dense", us[0] / us[1]},
                        {"graph_pdl_dense_us", us[2]}, {"graph_pdl_sparse24_us", us[3]},
                        {"cublaslt_bf16_us", bf16_us},
                        {"dense_speedup_vs_cublaslt_bf16", bf16_us / us[0]}});
      }
    }
  }
  return rows;
}

}  // namespace lowbit::bench
