// The PNG roofline of `lowbit bench`: one point per kernel and shape from the families' JSON
// reports, ours beside the in-run peers, against the ceilings measured in the same run.
//   left panel:  bandwidth-bound kernels (quantization, NVFP4 GEMVs, block-FP8 GEMM at M <= 128
//                as a weight stream), achieved GB/s against the device copy bandwidth;
//   right panel: GEMMs on a log-log roofline, TFLOP/s against arithmetic intensity, under
//                min(copy bandwidth x intensity, cuBLASLt FP8 matrix rate).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lowbit::bench {

struct PlotPoint {
  std::string family;  // the report's "benchmark": quant, nvfp4, block-gemm
  std::string label;   // kernel and shape, e.g. "silu_and_mul_quant 4096x18432"
  std::string series;  // "lowbit", "lowbit 2:4 sparse", "cuBLASLt bf16", ...
  bool compute = false;    // right panel (TFLOP/s) instead of the left (GB/s)
  double intensity = 0;    // FLOP per byte, right panel only
  double value = 0;        // GB/s (left) or TFLOP/s (right)
};

struct Ceilings {
  double copy_gbps = 0;
  double fp8_tflops = 0;
};

// Points of one family's report (unknown families give none).
std::vector<PlotPoint> plot_points(const nlohmann::json& report);

// Draws the two panels; throws lowbit::Error if the file cannot be written.
void write_roofline_png(const std::vector<PlotPoint>& points, const Ceilings& ceilings,
                        const std::string& title, const std::string& path);

}  // namespace lowbit::bench
