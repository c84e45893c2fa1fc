// The GEMM benches' weight shapes and token counts: their built-in model shapes, or the caller's
// own (`lowbit bench gemm --shape 28672x8192 --tokens 1,16,64`); the nvfp4 bench rows' routing
// seeds. No CUDA: the CLI parses them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::bench {

struct GemmShape {
  std::string name;    // the row label's first part, e.g. "llama3-8b up 14336x4096"
  std::int64_t n = 0;  // output channels (weight rows)
  std::int64_t k = 0;  // reduction depth
};

// "28672x8192" -> {"28672x8192", 28672, 8192}; throws lowbit::Error naming --shape otherwise.
GemmShape parse_gemm_shape(const std::string& text);

// "1,16,64" -> {1, 16, 64}; throws lowbit::Error naming --tokens unless every entry is a
// positive integer.
std::vector<std::int64_t> parse_token_counts(const std::string& text);

// The generator seed of one bench row, from --seed and the row's label (FNV-1a), so that a row
// draws the same routing whichever rows --filter runs before it.
std::uint64_t row_seed(std::uint64_t seed, const std::string& label);

}  // namespace lowbit::bench
