// run_benchmarks (CUDA builds): one family or all of them, then the JSON and PNG report files.
#include <cstdio>

#include "bench.h"
#include "families.h"
#include "lowbit/error.h"
#include "report_files.h"

namespace lowbit::bench {

int run_benchmarks(const std::string& family, const BenchOptions& options) {
  std::vector<std::string> families;
  if (family == "all") {
    families = bench_families();
  } else {
    for (const std::string& known : bench_families()) {
      if (known == family) families.push_back(known);
    }
  }
  if (families.empty()) {
    std::fprintf(stderr, "lowbit bench: unknown family '%s' (known: all, quant, nvfp4, block-gemm)\n",
                 family.c_str());
    return 2;
  }
  std::vector<nlohmann::json> reports;
  for (std::size_t i = 0; i < families.size(); ++i) {
    std::printf("=== [%zu/%zu] lowbit bench %s\n", i + 1, families.size(), families[i].c_str());
    std::fflush(stdout);
    if (families[i] == "quant") reports.push_back(run_quant_bench(options));
    if (families[i] == "nvfp4") reports.push_back(run_nvfp4_bench(options));
    if (families[i] == "block-gemm") reports.push_back(run_block_gemm_bench(options));
  }
  const std::string stem = "lowbit-bench-" + family;
  write_report_files(reports, options.json_path.empty() ? stem + ".json" : options.json_path,
                     options.png_path.empty() ? stem + ".png" : options.png_path);
  return 0;
}

}  // namespace lowbit::bench
