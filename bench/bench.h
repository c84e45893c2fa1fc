// `lowbit bench [family]`: the kernel benchmarks of every family with in-run baselines. Each
// family returns its JSON report (and prints a table as it goes); run_benchmarks writes the JSON
// and the PNG roofline. No CUDA header here: the CLI compiles without CUDA.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_shapes.h"

namespace lowbit::bench {

struct BenchOptions {
  std::string json_path;  // empty: lowbit-bench-<family>.json in the current directory
  std::string png_path;   // empty: lowbit-bench-<family>.png
  bool quick = false;     // fewer shapes and repetitions (smoke runs)
  std::string filter;     // only rows whose label contains this text (quant, gemm, block-gemm, nvfp4)
  // gemm and block-gemm: these weights in place of the model shapes, these token counts in place
  // of the default ones (empty: the defaults).
  std::vector<GemmShape> shapes;
  std::vector<std::int64_t> tokens;
  // gemm: also replay every forced fp8 configuration from a graph, without and with programmatic
  // dependent launch (which tiles gain from PDL), at every token count.
  bool graph_configs = false;
  // nvfp4: the routing draws. Each row seeds its own generator from this and its label, so a
  // row draws the same routing under any --filter.
  std::uint64_t seed = 2026;
};

// Whether the GEMM row "<shape> M=<m> " matches --filter (empty: every row); e.g. "M=16 " or
// "dsv3 dense up".
inline bool row_selected(const std::string& filter, const char* shape, long long m) {
  const std::string label = std::string(shape) + " M=" + std::to_string(m) + " ";
  return label.find(filter) != std::string::npos;
}

// Runs one family, or every family for "all"; writes the JSON report and the PNG roofline.
// Returns the process exit status.
int run_benchmarks(const std::string& family, const BenchOptions& options);

// Re-plots saved JSON reports (from run_benchmarks or one family) into a PNG; needs no GPU.
int plot_reports(const std::vector<std::string>& json_paths, const std::string& png_path);

// Number of CUDA devices usable by this build (0 without CUDA or without a GPU).
int cuda_device_count();

}  // namespace lowbit::bench
