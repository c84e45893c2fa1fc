// `lowbit bench nvfp4`: the NVFP4 MoE-decode GEMVs as weight streams. For each model's expert
// shapes (gate_up and down) and M = 1, 4, 16 tokens routed top-k over the real expert count:
//   dense  nvfp4_gemv:          reads A experts x (N K / 2 codes + N K / 16 scales) + x, writes y
//   2:4    nvfp4_sparse24_gemv: reads A experts x (N K / 4 values + N K / 8 indices + N K / 16)
//   cuBLASLt bf16 batched GEMM: the same experts in bf16 (4x the dense bytes), m = ceil(P / A)
//                               tokens per expert (the in-run baseline the issue names)
// GB/s counts those bytes once over the median time and is set against the device copy
// bandwidth measured in the same run. Each launch draws its own routing (rotation sets), so the
// weight bytes of successive launches differ and the working set exceeds 2.5x L2. Then whole MoE
// layers (gate_up, silu_and_mul, down) of each model: bench_nvfp4_layer.cu; and each model's
// projections with every token routed to the same experts, where compute starts to bind:
// bench_nvfp4_tokens_per_expert.cu.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "bench.h"
#include "families.h"
#include "cublaslt_gemm.cuh"
#include "bench_nvfp4_layer.h"
#include "bench_nvfp4_tokens_per_expert.h"
#include "harness.cuh"
#include "lowbit/nvfp4.h"
#include "nvfp4_bench_data.h"

namespace lowbit::bench {

namespace {

struct Measured {
  double us, gbps;
};

// Held like the GEMV variants (interleaved_median_us with one variant).
Measured measure(const std::function<void(int)>& launch, int sets, int samples, double bytes,
                 Replay replay = Replay::kStream) {
  const double us = interleaved_median_us({{launch, replay}}, sets, samples)[0];
  return {us, bytes / (us * 1e-6) / 1e9};
}

}  // namespace

nlohmann::json run_nvfp4_bench(const BenchOptions& options) {
  const DeviceInfo device = device_info();
  const int samples = options.quick ? 5 : 30;
  const double copy_gbps = measure_copy_gbps(samples);
  std::printf("device: %s (%d SMs, L2 %lld MB)\n", device.name.c_str(), device.sm_count,
              static_cast<long long>(device.l2_bytes >> 20));
  std::printf("ceiling: device copy %.1f GB/s (read + write)\n", copy_gbps);
  const double gib_read_us = measure_read_us(std::int64_t{1} << 30, device.l2_bytes, samples);
  std::printf("read stream: 1 GiB in %.1f us (%.1f GB/s); \"rd us\" is the same stream over the "
              "dense bytes, \"%%rd\" its time over the dense kernel's\n",
              gib_read_us, 1073741824.0 / (gib_read_us * 1e3));
  std::printf("%-20s %-7s %3s %4s | %9s %7s %6s %7s %4s | %9s %7s %6s %6s | %9s %7s %6s %6s\n", "model", "proj",
              "M", "exp", "dense us", "GB/s", "%copy", "rd us", "%rd", "2:4 us", "GB/s", "%copy", "x dns", "bf16 us",
              "GB/s", "%copy", "dns x");
  nlohmann::json results = nlohmann::json::array();
  const std::vector<std::int64_t> token_counts = {1, 4, 16};
  for (const Nvfp4Model& m : kNvfp4Models) {
    for (bool gate_up : {true, false}) {
      const std::int64_t n = gate_up ? 2 * m.intermediate : m.hidden;
      const std::int64_t k = gate_up ? m.hidden : m.intermediate;
      const std::int64_t codes = n * k, e = m.experts;
      const ProjectionWeights w(e, n, k, 1);
      DeviceMemory globals(e * 4), x(16 * k * 2), y(16 * m.top_k * n * 2);
      std::vector<float> g(e, 1.0f / 1024);
      check(cudaMemcpy(globals.get(), g.data(), e * 4, cudaMemcpyHostToDevice), "globals");
      fill_random_activations(x.get(), 16 * k, 2, 7);
      const std::string shape = std::string(m.name) + " " + (gate_up ? "gate_up" : "down");
      for (std::int64_t tokens : token_counts) {
        if (!row_selected(options.filter, shape.c_str(), tokens)) continue;
        std::mt19937_64 rng(row_seed(options.seed, shape + " M=" + std::to_string(tokens)));
        // Routing sets: enough that the weight bytes of successive launches exceed 2.5x L2.
        std::vector<RoutingSet> sets;
        sets.push_back(make_routing(m, tokens, rng));
        const std::int64_t active = sets[0].active;
        const double weight_bytes = static_cast<double>(active) * (codes / 2 + codes / 16);
        const int count = rotation_sets(static_cast<std::int64_t>(weight_bytes), device.l2_bytes);
        while (static_cast<int>(sets.size()) < count) sets.push_back(make_routing(m, tokens, rng));
        const double io_bytes = tokens * k * 2.0 + sets[0].rows * n * 2.0;
        // Set s's lists where they stay (behind_router false) or in the live buffers a router
        // stand-in rewrites before each launch (true).
        const LiveRouting live(sets);
        auto gemv_args = [&](int s, bool behind_router = false) {
          const RoutingSet& r = sets[s];
          Nvfp4MoeRouting routing{
              TensorView::contiguous((behind_router ? live.ids : r.ids)->get(), DType::kInt32, {r.slots}, Device::kCUDA),
              TensorView::contiguous((behind_router ? live.offsets : r.offsets)->get(), DType::kInt32, {r.slots + 1}, Device::kCUDA),
              TensorView::contiguous((behind_router ? live.tokens : r.tokens)->get(), DType::kInt32, {r.rows}, Device::kCUDA)};
          return routing;
        };
        const TensorView xv = TensorView::contiguous(x.get(), DType::kBF16, {tokens, k}, Device::kCUDA);
        const TensorView gv = TensorView::contiguous(globals.get(), DType::kFP32, {e}, Device::kCUDA);
        auto yv = [&](int s) {
          return TensorView::contiguous(y.get(), DType::kBF16, {sets[s].rows, n}, Device::kCUDA);
        };
        // prefetch: the balanced kernels' early L2 prefetch under PDL; behind_router: the lists
        // are the live ones a router stand-in rewrites before the launch.
        auto run_dense = [&](int s, bool pdl, bool prefetch = true, bool behind_router = false) {
          run_projection(w, false, xv, gv, yv(s), gemv_args(s, behind_router), pdl, bench_stream(), prefetch);
        };
        auto run_sparse = [&](int s, bool pdl, bool prefetch = true, bool behind_router = false) {
          run_projection(w, true, xv, gv, yv(s), gemv_args(s, behind_router), pdl, bench_stream(), prefetch);
        };
        // Behind a router that writes each launch's lists (gate_up in an engine): both under PDL,
        // with the early prefetch (its guesses read the previous launch's routing) and without.
        auto behind_router = [&](int s, bool sparse, bool prefetch) {
          launch_router_copy(sets[s], live, bench_stream());
          if (sparse) {
            run_sparse(s, true, prefetch, true);
          } else {
            run_dense(s, true, prefetch, true);
          }
        };
        const double sparse_weight_bytes = static_cast<double>(active) * (codes / 4 + codes / 8 + codes / 16);
        const double dense_all = weight_bytes + io_bytes, sparse_all = sparse_weight_bytes + io_bytes;
        // Dense and 2:4, on a stream and as an engine runs MoE decode (replayed from a graph with
        // programmatic dependent launch; every routing list is in memory before the launch, as
        // a MoE layer's down projection's is, so the balanced kernels' early prefetch guesses
        // right: docs/perf/nvfp4_gemv.md, "The early prefetch when its guesses are wrong"), and
        // replayed from a graph without PDL (an engine whose neighbouring kernels do not take
        // part), timed sample by sample in turn: their ratio is the bar.
        const std::vector<double> times_us = interleaved_median_us(
            {{[&](int s) { run_dense(s, false); }},
             {[&](int s) { run_sparse(s, false); }},
             {[&](int s) { run_dense(s, true); }, Replay::kGraph},
             {[&](int s) { run_sparse(s, true); }, Replay::kGraph},
             {[&](int s) { run_dense(s, false); }, Replay::kGraph},
             {[&](int s) { run_sparse(s, false); }, Replay::kGraph}},
            count, samples);
        // Behind the router at M <= 4 only: at 16 its rows measured within 0.3% either way, and
        // their hundreds of µs per launch interleaved with the rows above moved those by +2..8%
        // (identical main-loop SASS; fifty-second session, docs/perf/nvfp4_gemv.md).
        const bool router_rows = tokens <= 4;
        const std::vector<double> router_us =
            router_rows ? interleaved_median_us(
                              {{[&](int s) { behind_router(s, false, true); }, Replay::kGraph},
                               {[&](int s) { behind_router(s, false, false); }, Replay::kGraph},
                               {[&](int s) { behind_router(s, true, true); }, Replay::kGraph},
                               {[&](int s) { behind_router(s, true, false); }, Replay::kGraph}},
                              count, samples)
                        : std::vector<double>(4, -1.0);
        const double router_dense_us = router_us[0], router_dense_no_prefetch_us = router_us[1];
        const double router_sparse_us = router_us[2], router_sparse_no_prefetch_us = router_us[3];
        auto measured = [](double us, double bytes) { return Measured{us, bytes / (us * 1e3)}; };
        const Measured dense = measured(times_us[0], dense_all), sparse = measured(times_us[1], sparse_all);
        const Measured dense_pdl = measured(times_us[2], dense_all), sparse_pdl = measured(times_us[3], sparse_all);
        const Measured dense_graph = measured(times_us[4], dense_all), sparse_graph = measured(times_us[5], sparse_all);
        // Plain reads of each kernel's bytes, launched as the kernels are: their ratio is what
        // 2:4 over dense would be if both kernels ran as fast as a read of their bytes.
        auto read_of = [&](double bytes, ReadLaunch how) {
          return measure_read_us(static_cast<std::int64_t>(bytes), device.l2_bytes, samples, how);
        };
        const double read_us = read_of(dense_all, ReadLaunch::kStream);
        const double read_pdl_us = read_of(dense_all, ReadLaunch::kGraphDependent);
        const double read_graph_us = read_of(dense_all, ReadLaunch::kGraph);
        const double sparse_read_us = read_of(sparse_all, ReadLaunch::kStream);
        const double sparse_read_pdl_us = read_of(sparse_all, ReadLaunch::kGraphDependent);
        // cuBLASLt bf16: the active experts' weights in bf16, m tokens each.
        const std::int64_t per_expert = (sets[0].rows + active - 1) / active;
        const double bf16_bytes = static_cast<double>(active) * codes * 2;
        const int bf16_sets = rotation_sets(static_cast<std::int64_t>(bf16_bytes), device.l2_bytes);
        std::vector<std::unique_ptr<DeviceMemory>> bf16_weights;
        for (int s = 0; s < bf16_sets; ++s) {
          bf16_weights.push_back(std::make_unique<DeviceMemory>(static_cast<std::size_t>(bf16_bytes)));
          fill_random_activations(bf16_weights.back()->get(), active * codes, 2, 100 + s);
        }
        DeviceMemory bx(active * per_expert * k * 2), by(active * per_expert * n * 2);
        fill_random_activations(bx.get(), active * per_expert * k, 2, 9);
        const CublasLtBf16Gemm gemm(per_expert, n, k, active);
        const Measured bf16 = measure([&](int s) { gemm.run(bf16_weights[s]->get(), bx.get(), by.get()); },
                                      bf16_sets, samples,
                                      bf16_bytes + active * per_expert * (k + n) * 2.0);
        std::printf("%-20s %-7s %3lld %4lld | %9.2f %7.0f %5.1f%% %7.2f %3.0f%% | %9.2f %7.0f %5.1f%% %5.2fx | %9.2f %7.0f %5.1f%% %5.2fx\n",
                    m.name, gate_up ? "gate_up" : "down", static_cast<long long>(tokens),
                    static_cast<long long>(active), dense.us, dense.gbps, 100 * dense.gbps / copy_gbps,
                    read_us, 100 * read_us / dense.us, sparse.us, sparse.gbps, 100 * sparse.gbps / copy_gbps,
                    dense.us / sparse.us, bf16.us,
                    bf16.gbps, 100 * bf16.gbps / copy_gbps, bf16.us / dense.us);
        std::printf("%36s graph + PDL: dense %.2f us (%.1f%% copy; read stream %.2f us), 2:4 %.2f us "
                    "(%.2fx dense)\n",
                    "", dense_pdl.us, 100 * dense_pdl.gbps / copy_gbps, read_pdl_us, sparse_pdl.us,
                    dense_pdl.us / sparse_pdl.us);
        std::printf("%36s graph, no PDL: dense %.2f us (%.1f%% copy; read stream %.2f us), 2:4 %.2f us "
                    "(%.2fx dense)\n",
                    "", dense_graph.us, 100 * dense_graph.gbps / copy_gbps, read_graph_us, sparse_graph.us,
                    dense_graph.us / sparse_graph.us);
        std::printf("%36s read of the 2:4 bytes: %.2f us (%.2fx the dense bytes' read); graph + PDL "
                    "%.2f us (%.2fx)\n",
                    "", sparse_read_us, read_us / sparse_read_us, sparse_read_pdl_us,
                    read_pdl_us / sparse_read_pdl_us);
        if (router_rows) {
          std::printf("%36s behind a router, graph + PDL (router + GEMV): dense %.2f us, no early "
                      "prefetch %.2f; 2:4 %.2f, no early prefetch %.2f\n",
                      "", router_dense_us, router_dense_no_prefetch_us, router_sparse_us,
                      router_sparse_no_prefetch_us);
        }
        std::fflush(stdout);
        results.push_back({{"model", m.name}, {"projection", gate_up ? "gate_up" : "down"},
                           {"n", n}, {"k", k}, {"tokens", tokens}, {"top_k", m.top_k},
                           {"active_experts", active}, {"output_rows", sets[0].rows}, {"routing_sets", count},
                           {"dense_us", dense.us}, {"dense_gbps", dense.gbps}, {"dense_fraction_of_copy", dense.gbps / copy_gbps},
                           {"dense_bytes", weight_bytes + io_bytes}, {"same_size_read_us", read_us},
                           {"sparse24_us", sparse.us}, {"sparse24_gbps", sparse.gbps},
                           {"sparse24_fraction_of_copy", sparse.gbps / copy_gbps},
                           {"sparse24_bytes", sparse_weight_bytes + io_bytes},
                           {"sparse24_speedup_vs_dense", dense.us / sparse.us},
                           {"cublaslt_bf16_us", bf16.us}, {"cublaslt_bf16_gbps", bf16.gbps},
                           {"cublaslt_bf16_tokens_per_expert", per_expert},
                           {"dense_speedup_vs_cublaslt_bf16", bf16.us / dense.us},
                           {"graph_pdl_dense_us", dense_pdl.us},
                           {"graph_pdl_dense_fraction_of_copy", dense_pdl.gbps / copy_gbps},
                           {"graph_pdl_same_size_read_us", read_pdl_us},
                           {"graph_pdl_sparse24_us", sparse_pdl.us},
                           {"graph_pdl_sparse24_speedup_vs_dense", dense_pdl.us / sparse_pdl.us},
                           {"sparse24_same_size_read_us", sparse_read_us},
                           {"graph_pdl_sparse24_same_size_read_us", sparse_read_pdl_us},
                           {"graph_dense_us", dense_graph.us},
                           {"graph_dense_fraction_of_copy", dense_graph.gbps / copy_gbps},
                           {"graph_same_size_read_us", read_graph_us},
                           {"graph_sparse24_us", sparse_graph.us},
                           {"graph_sparse24_speedup_vs_dense", dense_graph.us / sparse_graph.us},
                           {"router_graph_pdl_dense_us", router_dense_us},
                           {"router_graph_pdl_dense_no_early_prefetch_us", router_dense_no_prefetch_us},
                           {"router_graph_pdl_sparse24_us", router_sparse_us},
                           {"router_graph_pdl_sparse24_no_early_prefetch_us", router_sparse_no_prefetch_us}});
      }
    }
  }
  const nlohmann::json layers = run_nvfp4_layer_rows(options, copy_gbps, samples);
  const nlohmann::json shared = run_nvfp4_tokens_per_expert_rows(options, copy_gbps, samples);
  return {{"benchmark", "nvfp4"}, {"device", device.name}, {"copy_gbps", copy_gbps},
          {"read_stream_1gib_us", gib_read_us}, {"routing_seed", options.seed},
          {"results", results}, {"layers", layers}, {"tokens_per_expert", shared}};
}

}  // namespace lowbit::bench
