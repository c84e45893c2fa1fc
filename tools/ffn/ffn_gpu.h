// The GPU half of `lowbit ffn`: stage and layer timings, the ceilings measured in the same run
// (device copy bandwidth, cuBLASLt FP8 matrix rate) and the bf16 baseline layer through cuBLASLt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ffn_layer.h"
#include "ffn_weights.h"

namespace lowbit::tools {

struct FfnGpuMeasurement {
  std::string device;
  double copy_gbps = 0;        // device-to-device copy, read + write bytes
  double fp8_tflops = 0;       // cuBLASLt FP8 per-tensor GEMM at 8192^3
  std::vector<double> stage_us;  // median per stage, each launched back to back on its own
  double total_us = 0;         // the four stages in sequence
  // Sampled in turn, each sample held behind an L2 sweep (bench/stream_hold.cu): the four
  // launched on a stream, replayed from a CUDA graph, and from a graph with PDL on each.
  double held_stream_us = 0, graph_us = 0, graph_pdl_us = 0;
  double bf16_total_us = 0;    // cuBLASLt bf16 GEMM + silu_and_mul (bf16) + cuBLASLt bf16 GEMM
  std::vector<std::uint16_t> bf16_output;  // y [T, H] of that bf16 layer
};

FfnGpuMeasurement measure_ffn_on_gpu(const FfnLayer& layer, const FfnWeights& weights,
                                     std::int64_t tokens, int samples);

}  // namespace lowbit::tools
