// LOWBIT_PRINT_CONFIG's printer: each distinct line once per process, nothing when unset or "0".
// The variable is read once per process: the printing test sets it before any other use.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "../../src/common/config_print.h"

namespace {

TEST(ConfigPrint, EachDistinctLineOnce) {
  setenv("LOWBIT_PRINT_CONFIG", "1", 1);
  testing::internal::CaptureStderr();
  for (int call = 0; call < 3; ++call) {
    lowbit::detail::print_config_once("scaled_mm m=%d: %s", 16, "swap64x16");
    lowbit::detail::print_config_once("scaled_mm m=%d: %s", 64, "swap64x64");
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "[lowbit] scaled_mm m=16: swap64x16\n[lowbit] scaled_mm m=64: swap64x64\n");
}

TEST(ConfigPrint, RequestedUnlessUnsetOrZero) {
  EXPECT_TRUE(lowbit::detail::print_config_requested("1"));
  EXPECT_TRUE(lowbit::detail::print_config_requested("yes"));
  EXPECT_TRUE(lowbit::detail::print_config_requested("00"));
  EXPECT_FALSE(lowbit::detail::print_config_requested("0"));
  EXPECT_FALSE(lowbit::detail::print_config_requested(nullptr));
}

}  // namespace
