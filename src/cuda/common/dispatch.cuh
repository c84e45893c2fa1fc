// Turns runtime values (dtype, group size) into template parameters. The op layer validates
// first; an unsupported value reaching here is a bug and says which values exist.
#pragma once

#include <string>

#include "lowbit/error.h"
#include "lowbit/tensor.h"
#include "vector_io.cuh"

namespace lowbit::cuda {

template <typename Fn>
void dispatch_float_input(const char* op, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kBF16: return fn(Bf16Tag{});
    case DType::kFP16: return fn(Fp16Tag{});
    case DType::kFP32: return fn(Fp32Tag{});
    default: throw Error(op, "input", "dtype bf16, fp16 or fp32", dtype_name(dtype));
  }
}

template <typename Fn>
void dispatch_half_input(const char* op, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kBF16: return fn(Bf16Tag{});
    case DType::kFP16: return fn(Fp16Tag{});
    default: throw Error(op, "input", "dtype bf16 or fp16", dtype_name(dtype));
  }
}

template <typename Fn>
void dispatch_quantized_output(const char* op, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFP8E4M3: return fn(Fp8E4M3Tag{});
    case DType::kInt8: return fn(Int8Tag{});
    default: throw Error(op, "output", "dtype fp8_e4m3fn or int8", dtype_name(dtype));
  }
}

template <int kValue>
struct IntConstant {
  static constexpr int value = kValue;
};

template <typename Fn>
void dispatch_group_size(const char* op, int group_size, Fn&& fn) {
  switch (group_size) {
    case 32: return fn(IntConstant<32>{});
    case 64: return fn(IntConstant<64>{});
    case 128: return fn(IntConstant<128>{});
    default: throw Error(op, "group_size", "32, 64 or 128", std::to_string(group_size));
  }
}

}  // namespace lowbit::cuda

