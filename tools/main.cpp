// The `lowbit` command: the main job (one FP8 SwiGLU FFN layer end to end on real model shapes,
// GPU if present, else CPU), the per_token_group_quant demo and the benchmarks.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench.h"
#include "demo.h"
#include "ffn_options.h"
#include "ffn_run.h"
#include "lowbit/error.h"

namespace {

void print_usage() {
  std::printf(
      "usage: lowbit [command] [options]\n"
      "  ffn [--model M] [--tokens T] [--weights FILE --layer NAME] [--seed S] [--rows R] [--cpu]\n"
      "      [--json FILE]                        (default command) one SwiGLU FFN layer in FP8 the\n"
      "                                           DeepSeek-V3 way: per_token_group_quant ->\n"
      "                                           block_fp8_mm -> silu_and_mul_quant -> block_fp8_mm;\n"
      "                                           accuracy vs a double-precision reference, time per\n"
      "                                           stage vs its roofline floor, speedup over bf16\n"
      "                                           cuBLASLt. Models: deepseek-v3 (default), llama3-8b,\n"
      "                                           qwen3-32b. --weights: DeepSeek-V3 FP8 safetensors,\n"
      "                                           NAME.{gate,up,down}_proj.weight[_scale_inv]\n"
      "  demo [--tokens T] [--hidden K] [--cpu]   quantize a DeepSeek-V3-shaped\n"
      "                                           activation with per_token_group_quant on the GPU\n"
      "                                           if one is present, else on the CPU, and report\n"
      "                                           accuracy, agreement with the CPU reference, time\n"
      "  bench [FAMILY] [--json FILE] [--png FILE] [--quick] [--filter TEXT]\n"
      "        [--shape NxK]... [--tokens M1,M2,...] [--graph-configs] [--seed N]\n"
      "                                           kernel benchmarks with in-run baselines and\n"
      "                                           ceilings; FAMILY: all (default), quant (activation\n"
      "                                           quantization vs copy bandwidth), nvfp4 (MoE GEMVs vs\n"
      "                                           copy and cuBLASLt bf16), block-gemm (vs cuBLASLt\n"
      "                                           block-scaled and per-tensor FP8), gemm (scaled_mm\n"
      "                                           FP8/INT8 vs cuBLASLt FP8 and int8). Writes JSON and a\n"
      "                                           PNG roofline (default lowbit-bench-FAMILY.*);\n"
      "                                           --filter: only quant rows whose label has TEXT,\n"
      "                                           GEMM rows \"<shape> M=<m> \" (gemm, block-gemm) or\n"
      "                                           nvfp4 rows \"<model> <proj> M=<m> \";\n"
      "                                           --shape (repeatable), --tokens: gemm and\n"
      "                                           block-gemm on these N x K weights and token\n"
      "                                           counts instead of the model shapes;\n"
      "                                           --graph-configs: gemm also replays each forced\n"
      "                                           fp8 configuration from a graph, with and without\n"
      "                                           programmatic dependent launch;\n"
      "                                           --seed: nvfp4's routing draws (default 2026;\n"
      "                                           a row draws the same under any --filter)\n"
      "  plot REPORT.json... [--png FILE]         re-plot saved reports (no GPU needed)\n"
      "  help                                     this text\n");
}

// Reads "--name value" into value; returns true if argv[i] was that flag.
bool take_value(int argc, char** argv, int& i, const char* name, std::string& value) {
  if (std::strcmp(argv[i], name) != 0) return false;
  if (i + 1 >= argc) {
    std::fprintf(stderr, "lowbit: %s needs a value\n", name);
    std::exit(2);
  }
  value = argv[++i];
  return true;
}

std::int64_t parse_positive(const std::string& text, const char* name) {
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || value <= 0) {
    std::fprintf(stderr, "lowbit: %s expects a positive integer, got '%s'\n", name, text.c_str());
    std::exit(2);
  }
  return value;
}

std::uint64_t parse_seed(const std::string& text) {
  return static_cast<std::uint64_t>(parse_positive(text, "--seed"));
}

int run_ffn_command(int argc, char** argv, int first) {
  lowbit::tools::FfnOptions options;
  for (int i = first; i < argc; ++i) {
    std::string value;
    if (take_value(argc, argv, i, "--model", value)) {
      options.model = value;
    } else if (take_value(argc, argv, i, "--tokens", value)) {
      options.tokens = parse_positive(value, "--tokens");
    } else if (take_value(argc, argv, i, "--weights", value)) {
      options.weights_path = value;
    } else if (take_value(argc, argv, i, "--layer", value)) {
      options.layer = value;
    } else if (take_value(argc, argv, i, "--seed", value)) {
      options.seed = parse_seed(value);
    } else if (take_value(argc, argv, i, "--rows", value)) {
      options.reference_rows = static_cast<int>(parse_positive(value, "--rows"));
    } else if (take_value(argc, argv, i, "--json", value)) {
      options.json_path = value;
    } else if (std::strcmp(argv[i], "--cpu") == 0) {
      options.force_cpu = true;
    } else {
      std::fprintf(stderr, "lowbit ffn: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  if (options.weights_path.empty() != options.layer.empty()) {
    std::fprintf(stderr, "lowbit ffn: --weights and --layer go together\n");
    return 2;
  }
  return lowbit::tools::run_ffn(options);
}

int run_demo_command(int argc, char** argv, int first) {
  lowbit::tools::DemoOptions options;
  for (int i = first; i < argc; ++i) {
    std::string value;
    if (take_value(argc, argv, i, "--tokens", value)) {
      options.tokens = parse_positive(value, "--tokens");
    } else if (take_value(argc, argv, i, "--hidden", value)) {
      options.hidden = parse_positive(value, "--hidden");
    } else if (std::strcmp(argv[i], "--cpu") == 0) {
      options.force_cpu = true;
    } else {
      std::fprintf(stderr, "lowbit demo: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  return lowbit::tools::run_demo(options);
}

int run_bench_command(int argc, char** argv) {
  std::string family = "all";
  int first = 2;
  if (argc > 2 && argv[2][0] != '-') {
    family = argv[2];
    first = 3;
  }
  lowbit::bench::BenchOptions options;
  for (int i = first; i < argc; ++i) {
    std::string value;
    if (take_value(argc, argv, i, "--json", value)) {
      options.json_path = value;
    } else if (take_value(argc, argv, i, "--png", value)) {
      options.png_path = value;
    } else if (take_value(argc, argv, i, "--filter", value)) {
      options.filter = value;
    } else if (take_value(argc, argv, i, "--shape", value)) {
      options.shapes.push_back(lowbit::bench::parse_gemm_shape(value));
    } else if (take_value(argc, argv, i, "--tokens", value)) {
      options.tokens = lowbit::bench::parse_token_counts(value);
    } else if (take_value(argc, argv, i, "--seed", value)) {
      options.seed = parse_seed(value);
    } else if (std::strcmp(argv[i], "--quick") == 0) {
      options.quick = true;
    } else if (std::strcmp(argv[i], "--graph-configs") == 0) {
      options.graph_configs = true;
    } else {
      std::fprintf(stderr, "lowbit bench: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  if (options.graph_configs && family != "gemm") {
    std::fprintf(stderr, "lowbit bench: --graph-configs applies to the gemm family, not '%s'\n",
                 family.c_str());
    return 2;
  }
  if ((!options.shapes.empty() || !options.tokens.empty()) && family != "gemm" &&
      family != "block-gemm") {
    std::fprintf(stderr, "lowbit bench: --shape and --tokens apply to the gemm and block-gemm "
                         "families, not '%s'\n", family.c_str());
    return 2;
  }
  return lowbit::bench::run_benchmarks(family, options);
}

int run_plot_command(int argc, char** argv) {
  std::vector<std::string> reports;
  std::string png = "lowbit-bench.png";
  for (int i = 2; i < argc; ++i) {
    std::string value;
    if (take_value(argc, argv, i, "--png", value)) {
      png = value;
    } else {
      reports.push_back(argv[i]);
    }
  }
  if (reports.empty()) {
    std::fprintf(stderr, "lowbit plot: name one or more JSON reports of lowbit bench\n");
    return 2;
  }
  return lowbit::bench::plot_reports(reports, png);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string command = argc > 1 ? argv[1] : "ffn";
    if (command == "help" || command == "--help" || command == "-h") {
      print_usage();
      return 0;
    }
    if (command == "bench") return run_bench_command(argc, argv);
    if (command == "plot") return run_plot_command(argc, argv);
    if (command == "ffn") return run_ffn_command(argc, argv, 2);
    if (command == "demo") return run_demo_command(argc, argv, 2);
    if (command.rfind("--", 0) == 0) return run_ffn_command(argc, argv, 1);
    std::fprintf(stderr, "lowbit: unknown command '%s'\n", command.c_str());
    print_usage();
    return 2;
  } catch (const lowbit::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
