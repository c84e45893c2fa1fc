// `lowbit ffn`: one FP8 SwiGLU FFN layer end to end (see ffn_layer.h) with its accuracy against a
// double-precision reference, each stage's time against its roofline floor, and (on a GPU) the
// speedup over the same layer in bf16 through cuBLASLt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ffn_options.h"
#include "ffn_reference.h"

namespace lowbit::tools {

struct FfnStageResult {
  std::string name;
  double us = 0;
  double bytes = 0;
  double flops = 0;
  double floor_us = 0;  // max(bytes / copy bandwidth, flops / FP8 matrix rate); GPU only
};

struct FfnResult {
  FfnShape shape;
  std::string source;
  std::int64_t tokens = 0;
  bool on_gpu = false;
  std::string device;
  std::vector<std::int64_t> reference_rows;
  FfnAccuracy accuracy;
  std::vector<FfnStageResult> stages;
  double total_us = 0;
  // GPU only:
  double copy_gbps = 0, fp8_tflops = 0;
  // The layer sampled in turn (held): on a stream, from a CUDA graph, from a graph with PDL.
  double held_stream_us = 0, graph_us = 0, graph_pdl_us = 0;
  double bf16_total_us = 0;
  FfnAccuracy bf16_accuracy;  // the bf16 cuBLASLt layer against the same reference
};

// Runs the layer (GPU if present and not force_cpu) and measures it; prints progress only.
FfnResult run_ffn_layer(const FfnOptions& options);
// run_ffn_layer, then the report (and JSON); exit status 1 if the accuracy bar is missed.
int run_ffn(const FfnOptions& options);

}  // namespace lowbit::tools
