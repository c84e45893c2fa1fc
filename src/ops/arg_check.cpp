// lowbit::detail::ArgCheck: the validation vocabulary of the op layer. Messages are built only
// on failure: validation runs on every launch and must stay far below launch latency.
#include "arg_check.h"

#include <cstdint>
#include <cstdio>

namespace lowbit::detail {

void ArgCheck::dtype_in(const char* name, const TensorView& t,
                        std::initializer_list<DType> allowed) const {
  for (DType dtype : allowed) {
    if (dtype == t.dtype) return;
  }
  std::string names;
  std::size_t index = 0;
  for (DType dtype : allowed) {
    if (index > 0) names += (index + 1 == allowed.size()) ? " or " : ", ";
    names += dtype_name(dtype);
    ++index;
  }
  fail(name, "dtype " + names, dtype_name(t.dtype));
}

void ArgCheck::rank(const char* name, const TensorView& t, int rank) const {
  if (t.rank != rank) fail(name, "rank " + std::to_string(rank), t.describe());
}

void ArgCheck::dim(const char* name, const TensorView& t, int dim, std::int64_t extent) const {
  if (t.shape[dim] != extent) {
    fail(name, "size " + std::to_string(extent) + " in dim " + std::to_string(dim), t.describe());
  }
}

void ArgCheck::not_null(const char* name, const TensorView& t) const {
  if (t.data == nullptr) fail(name, "non-null data", "null");
}

void ArgCheck::same_device(const char* name, const TensorView& t, const char* ref_name,
                           const TensorView& ref) const {
  if (t.device != ref.device) {
    fail(name, std::string("device ") + device_name(ref.device) + " (the device of '" + ref_name +
                   "')",
         device_name(t.device));
  }
}

void ArgCheck::contiguous(const char* name, const TensorView& t) const {
  if (!t.is_contiguous()) fail(name, "a contiguous tensor", t.describe());
}

void ArgCheck::row_major_rows(const char* name, const TensorView& t) const {
  rank(name, t, 2);
  if (t.shape[0] < 0 || t.shape[1] < 0) fail(name, "non-negative sizes", t.describe());
  if (t.shape[1] > 1 && t.strides[1] != 1) fail(name, "unit stride along dim 1", t.describe());
  if (t.shape[0] > 1 && t.strides[0] < t.shape[1]) {
    fail(name, "row stride >= number of columns", t.describe());
  }
}

void ArgCheck::aligned(const char* name, const TensorView& t, std::size_t bytes) const {
  const auto address = reinterpret_cast<std::uintptr_t>(t.data);
  if (address % bytes == 0) return;
  char low_bits[16];
  std::snprintf(low_bits, sizeof(low_bits), "0x%x", static_cast<unsigned>(address % 256));
  fail(name, "data aligned to " + std::to_string(bytes) + " bytes",
       std::string("an address ending in ") + low_bits);
}

void ArgCheck::tma_rows(const char* name, const TensorView& t) const {
  aligned(name, t, 16);
  if (t.shape[0] > 1 && (t.strides[0] * static_cast<std::int64_t>(dtype_size(t.dtype))) % 16 != 0) {
    fail(name, "row stride a multiple of 16 bytes (TMA)", t.describe());
  }
}

void ArgCheck::workspace(const char* name, const TensorView& t, std::size_t needed,
                         const char* size_query) const {
  if (needed == 0) return;
  const std::size_t bytes = static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype);
  if (t.data == nullptr || t.device != Device::kCUDA || bytes < needed) {
    fail(name, "a CUDA buffer of at least " + std::to_string(needed) + " bytes (" + size_query + ")",
         t.data == nullptr ? "none" : t.describe());
  }
  aligned(name, t, 256);
}

void ArgCheck::vector(const char* name, const TensorView& t, DType dtype, std::int64_t length,
                      const char* ref_name, const TensorView& ref) const {
  dtype_in(name, t, {dtype});
  const bool shape_ok = (t.rank == 1 && t.shape[0] == length) ||
                        (t.rank == 2 && t.shape[0] == length && t.shape[1] == 1);
  if (!shape_ok) {
    fail(name, "shape [" + std::to_string(length) + "] (or [" + std::to_string(length) + ", 1])",
         t.describe());
  }
  contiguous(name, t);
  same_device(name, t, ref_name, ref);
  if (length > 0) not_null(name, t);
}

}  // namespace lowbit::detail
