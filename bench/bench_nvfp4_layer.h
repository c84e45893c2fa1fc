// `lowbit bench nvfp4`'s layer rows (bench_nvfp4_layer.cu).
#pragma once

#include <nlohmann/json.hpp>

#include "bench.h"

namespace lowbit::bench {

// Prints and returns the MoE-layer rows selected by options.filter ("<model> layer M=<m> ").
nlohmann::json run_nvfp4_layer_rows(const BenchOptions& options, double copy_gbps, int samples);

}  // namespace lowbit::bench
