// Parsing of `lowbit bench`'s --shape and --tokens; the rows' routing seeds (bench_shapes.h).
#include "bench_shapes.h"

#include <cerrno>
#include <cstdlib>

#include "lowbit/error.h"

namespace lowbit::bench {

namespace {

// The positive integer that is all of `text`, or 0.
std::int64_t positive_or_zero(const std::string& text) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return 0;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || value <= 0) return 0;
  return value;
}

}  // namespace

GemmShape parse_gemm_shape(const std::string& text) {
  const std::size_t cross = text.find('x');
  GemmShape shape;
  if (cross != std::string::npos) {
    shape.n = positive_or_zero(text.substr(0, cross));
    shape.k = positive_or_zero(text.substr(cross + 1));
  }
  if (shape.n == 0 || shape.k == 0) {
    throw Error("bench", "--shape", "N x K as two positive integers, e.g. 28672x8192",
                "'" + text + "'");
  }
  shape.name = std::to_string(shape.n) + "x" + std::to_string(shape.k);
  return shape;
}

std::vector<std::int64_t> parse_token_counts(const std::string& text) {
  std::vector<std::int64_t> counts;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::int64_t count = positive_or_zero(text.substr(start, comma - start));
    if (count == 0) {
      throw Error("bench", "--tokens", "a comma-separated list of positive integers, e.g. 1,16,64",
                  "'" + text + "'");
    }
    counts.push_back(count);
    if (comma == std::string::npos) return counts;
    start = comma + 1;
  }
}

std::uint64_t row_seed(std::uint64_t seed, const std::string& label) {
  std::uint64_t hash = 1469598103934665603ull ^ seed;
  for (const char c : label) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return hash;
}

}  // namespace lowbit::bench
