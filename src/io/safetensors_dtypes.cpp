// The safetensors dtype table (names as the format's reference implementation writes them).
#include "safetensors_dtypes.h"

#include <iterator>

#include "lowbit/error.h"
#include "lowbit/safetensors.h"

namespace lowbit {
namespace {

const SafetensorsDTypeInfo kDTypes[] = {
    {"BOOL", 1, std::nullopt},      {"U8", 1, DType::kUInt8},
    {"I8", 1, DType::kInt8},        {"F8_E4M3", 1, DType::kFP8E4M3},
    {"F8_E5M2", 1, DType::kFP8E5M2}, {"F8_E8M0", 1, std::nullopt},
    {"I16", 2, std::nullopt},       {"U16", 2, std::nullopt},
    {"F16", 2, DType::kFP16},       {"BF16", 2, DType::kBF16},
    {"I32", 4, DType::kInt32},      {"U32", 4, std::nullopt},
    {"F32", 4, DType::kFP32},       {"I64", 8, std::nullopt},
    {"U64", 8, std::nullopt},       {"F64", 8, std::nullopt},
};

}  // namespace

const SafetensorsDTypeInfo* find_safetensors_dtype(const std::string& name) {
  for (const SafetensorsDTypeInfo& info : kDTypes) {
    if (name == info.name) return &info;
  }
  return nullptr;
}

std::string safetensors_dtype_list() {
  std::string list;
  for (const SafetensorsDTypeInfo& info : kDTypes) {
    if (!list.empty()) list += ", ";
    list += info.name;
  }
  return list;
}

const char* safetensors_dtype_name(DType dtype) {
  for (const SafetensorsDTypeInfo& info : kDTypes) {
    if (info.dtype == dtype) return info.name;
  }
  throw Error("write_safetensors", "dtype", "a dtype safetensors can store", dtype_name(dtype));
}

}  // namespace lowbit
