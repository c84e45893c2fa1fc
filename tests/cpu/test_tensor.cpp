// TensorView construction, contiguity, descriptions and the Error message format.
#include <gtest/gtest.h>

#include "lowbit/error.h"
#include "lowbit/tensor.h"

namespace lowbit {
namespace {

TEST(TensorView, ContiguousStrides) {
  const TensorView t = TensorView::contiguous(nullptr, DType::kBF16, {3, 4, 5});
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.stride(0), 20);
  EXPECT_EQ(t.stride(1), 5);
  EXPECT_EQ(t.stride(2), 1);
  EXPECT_EQ(t.numel(), 60);
  EXPECT_TRUE(t.is_contiguous());
}

TEST(TensorView, StridedIsNotContiguous) {
  const TensorView t = TensorView::strided(nullptr, DType::kFP32, {3, 4}, {8, 1});
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.describe(), "[3, 4] fp32 cpu strides [8, 1]");
}

TEST(TensorView, RankAboveMaxThrows) {
  EXPECT_THROW(TensorView::contiguous(nullptr, DType::kFP32, {1, 2, 3, 4, 5}), Error);
  EXPECT_THROW(TensorView::strided(nullptr, DType::kFP32, {1, 2}, {1}), Error);
}

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kFP8E4M3), 1u);
  EXPECT_EQ(dtype_size(DType::kInt32), 4u);
  EXPECT_STREQ(dtype_name(DType::kFP8E5M2), "fp8_e5m2");
  EXPECT_STREQ(dtype_name(DType::kUInt8), "uint8");
}

TEST(Error, MessageNamesOpArgumentExpectationAndValue) {
  const Error error("some_op", "weight", "dtype fp8_e4m3fn", "bf16");
  EXPECT_STREQ(error.what(),
               "lowbit::some_op: argument 'weight': expected dtype fp8_e4m3fn, got bf16");
  EXPECT_EQ(error.op(), "some_op");
  EXPECT_EQ(error.argument(), "weight");
}

}  // namespace
}  // namespace lowbit
