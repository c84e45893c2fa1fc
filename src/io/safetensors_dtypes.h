// The safetensors dtype strings: element sizes and the lowbit DType each maps to (if any).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "lowbit/tensor.h"

namespace lowbit {

struct SafetensorsDTypeInfo {
  const char* name;
  std::size_t element_size;
  std::optional<DType> dtype;
};

// nullptr for a string the format does not define (or a sub-byte type such as F4, which lowbit
// reads only as packed U8).
const SafetensorsDTypeInfo* find_safetensors_dtype(const std::string& name);
// "BOOL, U8, I8, ..." for error messages.
std::string safetensors_dtype_list();

}  // namespace lowbit
