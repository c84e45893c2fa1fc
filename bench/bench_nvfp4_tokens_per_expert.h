// `lowbit bench nvfp4`'s tokens-per-expert rows (bench_nvfp4_tokens_per_expert.cu).
#pragma once

#include <nlohmann/json.hpp>

#include "bench.h"

namespace lowbit::bench {

// Prints and returns the rows selected by options.filter ("<model> <proj> shared M=<m> ").
nlohmann::json run_nvfp4_tokens_per_expert_rows(const BenchOptions& options, double copy_gbps,
                                                int samples);

}  // namespace lowbit::bench
