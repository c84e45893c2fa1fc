// `lowbit bench`'s --shape and --tokens parsing: what it accepts, and the error naming the flag
// for what it does not; the nvfp4 rows' routing seeds.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench_shapes.h"
#include "lowbit/error.h"

namespace {

using lowbit::bench::parse_gemm_shape;
using lowbit::bench::parse_token_counts;
using lowbit::bench::row_seed;

TEST(BenchShapes, ParsesNByK) {
  const lowbit::bench::GemmShape shape = parse_gemm_shape("28672x8192");
  EXPECT_EQ(shape.n, 28672);
  EXPECT_EQ(shape.k, 8192);
  EXPECT_EQ(shape.name, "28672x8192");
}

TEST(BenchShapes, RejectsMalformedShapes) {
  for (const char* text : {"", "28672", "x8192", "28672x", "0x8192", "28672x-8", "28672x8192x2",
                           "28672 x 8192", "+5x8", "abcxdef"}) {
    try {
      parse_gemm_shape(text);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const lowbit::Error& error) {
      EXPECT_EQ(error.argument(), "--shape") << text;
    }
  }
}

TEST(BenchShapes, ParsesTokenLists) {
  EXPECT_EQ(parse_token_counts("1,16,64"), (std::vector<std::int64_t>{1, 16, 64}));
  EXPECT_EQ(parse_token_counts("4096"), (std::vector<std::int64_t>{4096}));
}

TEST(BenchShapes, RejectsMalformedTokenLists) {
  for (const char* text : {"", ",", "1,", ",1", "1,,2", "0", "1,-4", "16 ", "1.5"}) {
    try {
      parse_token_counts(text);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const lowbit::Error& error) {
      EXPECT_EQ(error.argument(), "--tokens") << text;
    }
  }
}

// A row's seed depends on --seed and on its own label only, so --filter does not change a row's
// routing; different rows and seeds draw differently.
TEST(BenchShapes, RowSeedsDependOnSeedAndLabel) {
  EXPECT_EQ(row_seed(2026, "deepseek-v3 down M=1"), row_seed(2026, "deepseek-v3 down M=1"));
  EXPECT_NE(row_seed(2026, "deepseek-v3 down M=1"), row_seed(2026, "deepseek-v3 down M=4"));
  EXPECT_NE(row_seed(2026, "deepseek-v3 down M=1"), row_seed(2027, "deepseek-v3 down M=1"));
}

}  // namespace
