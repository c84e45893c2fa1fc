// run_benchmarks (CUDA builds): one family or all of them, then the JSON and PNG report files.
#include <cstdio>
#include <string>

#include "bench.h"
#include "families.h"
#include "report_files.h"

namespace lowbit::bench {
namespace {

struct Family {
  const char* name;
  nlohmann::json (*run)(const BenchOptions&);
};
// The order `lowbit bench all` runs them in.
constexpr Family kFamilies[] = {{"quant", run_quant_bench},
                                {"nvfp4", run_nvfp4_bench},
                                {"block-gemm", run_block_gemm_bench},
                                {"gemm", run_gemm_bench}};

}  // namespace

int run_benchmarks(const std::string& family, const BenchOptions& options) {
  std::vector<const Family*> chosen;
  for (const Family& known : kFamilies) {
    if (family == "all" || family == known.name) chosen.push_back(&known);
  }
  if (chosen.empty()) {
    std::fprintf(stderr, "lowbit bench: unknown family '%s' (known: all", family.c_str());
    for (const Family& known : kFamilies) std::fprintf(stderr, ", %s", known.name);
    std::fprintf(stderr, ")\n");
    return 2;
  }
  std::vector<nlohmann::json> reports;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    std::printf("=== [%zu/%zu] lowbit bench %s\n", i + 1, chosen.size(), chosen[i]->name);
    std::fflush(stdout);
    reports.push_back(chosen[i]->run(options));
  }
  const std::string stem = "lowbit-bench-" + family;
  write_report_files(reports, options.json_path.empty() ? stem + ".json" : options.json_path,
                     options.png_path.empty() ? stem + ".png" : options.png_path);
  return 0;
}

}  // namespace lowbit::bench
