// `lowbit bench nvfp4`'s layer rows: one MoE layer at decode, chained as an engine runs it,
//   gate_up nvfp4_gemv (x [M, H] -> h [P, 2I], P routed (token, expert) rows)
//   -> silu_and_mul (h -> a [P, I])
//   -> down nvfp4_gemv (row p of a by row p's expert -> y [P, H]),
// dense and 2:4 (nvfp4_sparse24_gemv for both projections), on a stream, replayed from a graph,
// and replayed from a graph with all three kernels under programmatic dependent launch. Each
// launch draws its routing (rotation sets beyond 2.5x L2), written before the chain runs as a
// router's would be; the weighted sum over each token's experts is left out. "% copy" counts the
// active experts' weight bytes of both projections plus x, h (written and read), a (written and
// read) and y.
// Then the down projection alone as the layer runs it, a row of x per routed pair (the projection
// rows above give every expert of a token the same x row), on a stream and under graph + PDL.
#include "bench_nvfp4_layer.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_shapes.h"
#include "harness.cuh"
#include "lowbit/activation.h"
#include "lowbit/nvfp4.h"
#include "nvfp4_bench_data.h"

namespace lowbit::bench {

namespace {

TensorView rows_of(const DeviceMemory& d, std::int64_t rows, std::int64_t cols) {
  return TensorView::contiguous(d.get(), DType::kBF16, {rows, cols}, Device::kCUDA);
}

}  // namespace

nlohmann::json run_nvfp4_layer_rows(const BenchOptions& options, double copy_gbps, int samples) {
  const DeviceInfo device = device_info();
  nlohmann::json rows = nlohmann::json::array();
  bool header = false;
  for (const Nvfp4Model& m : kNvfp4Models) {
    const std::string shape = std::string(m.name) + " layer";
    const std::vector<std::int64_t> token_counts = {1, 4, 16};
    bool any = false;
    for (std::int64_t tokens : token_counts) any = any || row_selected(options.filter, shape.c_str(), tokens);
    if (!any) continue;
    if (!header) {
      std::printf("\nMoE layer at decode: gate_up GEMV -> silu_and_mul -> down GEMV (x dns: dense "
                  "time over 2:4 time)\n%-20s %3s %4s | %9s %6s | %9s %6s | %9s %6s | %8s %6s %6s\n",
                  "model", "M", "exp", "dense us", "%copy", "graph us", "%copy", "+PDL us", "%copy",
                  "2:4 us", "x dns", "+PDL x");
      header = true;
    }
    const std::int64_t e = m.experts, h = m.hidden, inter = m.intermediate;
    const ProjectionWeights gate_up(e, 2 * inter, h, 11), down(e, h, inter, 21);
    const std::int64_t most_rows = 16 * m.top_k;
    DeviceMemory globals(e * 4), x(16 * h * 2), hidden(most_rows * 2 * inter * 2),
        act(most_rows * inter * 2), y(most_rows * h * 2), pair_rows(most_rows * 4);
    const std::vector<float> g(e, 1.0f / 1024);
    check(cudaMemcpy(globals.get(), g.data(), e * 4, cudaMemcpyHostToDevice), "globals");
    std::vector<std::int32_t> iota(most_rows);
    std::iota(iota.begin(), iota.end(), 0);
    check(cudaMemcpy(pair_rows.get(), iota.data(), most_rows * 4, cudaMemcpyHostToDevice), "rows");
    fill_random_activations(x.get(), 16 * h, 2, 17);
    fill_random_activations(act.get(), most_rows * inter, 2, 18);
    const TensorView gv = TensorView::contiguous(globals.get(), DType::kFP32, {e}, Device::kCUDA);
    for (std::int64_t tokens : token_counts) {
      if (!row_selected(options.filter, shape.c_str(), tokens)) continue;
      std::mt19937_64 rng(row_seed(options.seed, shape + " M=" + std::to_string(tokens)));
      std::vector<RoutingSet> sets;
      sets.push_back(make_routing(m, tokens, rng));
      const double active = static_cast<double>(sets[0].active);
      const double io = sets[0].rows * (2.0 * inter * 2 * 2 + inter * 2 * 2 + h * 2) + tokens * h * 2.0;
      const double dense_bytes = active * (gate_up.expert_bytes(false) + down.expert_bytes(false)) + io;
      const double sparse_bytes = active * (gate_up.expert_bytes(true) + down.expert_bytes(true)) + io;
      const int count = rotation_sets(static_cast<std::int64_t>(dense_bytes), device.l2_bytes);
      const double down_io = sets[0].rows * (inter + h) * 2.0;
      const double down_dense = active * down.expert_bytes(false) + down_io;
      const double down_sparse = active * down.expert_bytes(true) + down_io;
      const int down_count = rotation_sets(static_cast<std::int64_t>(down_dense), device.l2_bytes);
      while (static_cast<int>(sets.size()) < std::max(count, down_count)) {
        sets.push_back(make_routing(m, tokens, rng));
      }
      // One layer (down_only: its down projection alone) on routing set s.
      auto run = [&](int s, bool sparse, bool pdl, bool down_only) {
        const RoutingSet& r = sets[s];
        const auto list = [&](const DeviceMemory& d, std::int64_t n) {
          return TensorView::contiguous(d.get(), DType::kInt32, {n}, Device::kCUDA);
        };
        const Nvfp4MoeRouting by_token{list(*r.ids, r.slots), list(*r.offsets, r.slots + 1),
                                       list(*r.tokens, r.rows)};
        const Nvfp4MoeRouting by_row{by_token.expert_ids, by_token.slot_offsets,
                                     list(pair_rows, r.rows)};
        const TensorView xv = rows_of(x, tokens, h), hv = rows_of(hidden, r.rows, 2 * inter),
                         av = rows_of(act, r.rows, inter), yv = rows_of(y, r.rows, h);
        auto project = [&](const ProjectionWeights& w, const TensorView& in, const TensorView& out,
                           const Nvfp4MoeRouting& routing) {
          run_projection(w, sparse, in, gv, out, routing, pdl, bench_stream());
        };
        if (!down_only) {
          project(gate_up, xv, hv, by_token);
          SiluAndMulArgs silu;
          silu.input = hv;
          silu.output = av;
          silu.enable_pdl = pdl;
          silu_and_mul(silu, bench_stream());
        }
        project(down, av, yv, by_row);
      };
      auto run_layer = [&](int s, bool sparse, bool pdl) { run(s, sparse, pdl, false); };
      auto run_down = [&](int s, bool sparse, bool pdl) { run(s, sparse, pdl, true); };
      const std::vector<double> us = interleaved_median_us(
          {{[&](int s) { run_layer(s, false, false); }},
           {[&](int s) { run_layer(s, false, false); }, Replay::kGraph},
           {[&](int s) { run_layer(s, false, true); }, Replay::kGraph},
           {[&](int s) { run_layer(s, true, false); }},
           {[&](int s) { run_layer(s, true, false); }, Replay::kGraph},
           {[&](int s) { run_layer(s, true, true); }, Replay::kGraph}},
          count, samples);
      const std::vector<double> down_us = stream_and_pdl_median_us(run_down, down_count, samples);
      auto copy_share = [&](double bytes, double t_us) { return bytes / (t_us * 1e3) / copy_gbps; };
      std::printf("%-20s %3lld %4lld | %9.2f %5.1f%% | %9.2f %5.1f%% | %9.2f %5.1f%% | %8.2f %5.2fx %5.2fx\n",
                  m.name, static_cast<long long>(tokens), static_cast<long long>(sets[0].active),
                  us[0], 100 * copy_share(dense_bytes, us[0]), us[1],
                  100 * copy_share(dense_bytes, us[1]), us[2], 100 * copy_share(dense_bytes, us[2]),
                  us[3], us[0] / us[3], us[2] / us[5]);
      std::printf("%36s 2:4 in a graph %.2f us (%.2fx dense), graph + PDL %.2f us\n", "", us[4],
                  us[1] / us[4], us[5]);
      std::printf("%36s down alone, a row of x per pair: dense %.2f us (%.1f%% copy), 2:4 %.2f us "
                  "(%.2fx); graph + PDL: dense %.2f us (%.1f%%), 2:4 %.2f us (%.2fx)\n", "",
                  down_us[0], 100 * copy_share(down_dense, down_us[0]), down_us[1],
                  down_us[0] / down_us[1], down_us[2], 100 * copy_share(down_dense, down_us[2]),
                  down_us[3], down_us[2] / down_us[3]);
      std::fflush(stdout);
      rows.push_back({{"model", m.name}, {"tokens", tokens}, {"active_experts", sets[0].active},
                      {"output_rows", sets[0].rows}, {"routing_sets", count},
                      {"dense_bytes", dense_bytes}, {"sparse24_bytes", sparse_bytes},
                      {"dense_us", us[0]}, {"graph_dense_us", us[1]}, {"graph_pdl_dense_us", us[2]},
                      {"sparse24_us", us[3]}, {"graph_sparse24_us", us[4]},
                      {"graph_pdl_sparse24_us", us[5]},
                      {"dense_fraction_of_copy", copy_share(dense_bytes, us[0])},
                      {"graph_dense_fraction_of_copy", copy_share(dense_bytes, us[1])},
                      {"graph_pdl_dense_fraction_of_copy", copy_share(dense_bytes, us[2])},
                      {"sparse24_speedup_vs_dense", us[0] / us[3]},
                      {"graph_sparse24_speedup_vs_dense", us[1] / us[4]},
                      {"graph_pdl_sparse24_speedup_vs_dense", us[2] / us[5]},
                      {"down_routing_sets", down_count}, {"down_dense_bytes", down_dense},
                      {"down_sparse24_bytes", down_sparse}, {"down_dense_us", down_us[0]},
                      {"down_sparse24_us", down_us[1]}, {"graph_pdl_down_dense_us", down_us[2]},
                      {"graph_pdl_down_sparse24_us", down_us[3]},
                      {"down_dense_fraction_of_copy", copy_share(down_dense, down_us[0])},
                      {"graph_pdl_down_dense_fraction_of_copy", copy_share(down_dense, down_us[2])},
                      {"down_sparse24_speedup_vs_dense", down_us[0] / down_us[1]},
                      {"graph_pdl_down_sparse24_speedup_vs_dense", down_us[2] / down_us[3]}});
    }
  }
  return rows;
}

}  // namespace lowbit::bench
