// lowbit::detail::ArgCheck: the validation vocabulary of the op layer.
#include "arg_check.h"

#include <cstdint>

namespace lowbit::detail {

void ArgCheck::dtype_in(const char* name, const TensorView& t,
                        std::initializer_list<DType> allowed) const {
  std::string names;
  std::size_t index = 0;
  for (DType dtype : allowed) {
    if (dtype == t.dtype) return;
    if (index > 0) names += (index + 1 == allowed.size()) ? " or " : ", ";
    names += dtype_name(dtype);
    ++index;
  }
  fail(name, "dtype " + names, dtype_name(t.dtype));
}

void ArgCheck::rank(const char* name, const TensorView& t, int rank) const {
  expect(t.rank == rank, name, "rank " + std::to_string(rank), t.describe());
}

void ArgCheck::dim(const char* name, const TensorView& t, int dim, std::int64_t extent) const {
  expect(t.shape[dim] == extent, name,
         "size " + std::to_string(extent) + " in dim " + std::to_string(dim), t.describe());
}

void ArgCheck::not_null(const char* name, const TensorView& t) const {
  expect(t.data != nullptr, name, "non-null data", "null");
}

void ArgCheck::same_device(const char* name, const TensorView& t, const char* ref_name,
                           const TensorView& ref) const {
  expect(t.device == ref.device, name, std::string("device ") + device_name(ref.device) +
                                           " (the device of '" + ref_name + "')",
         device_name(t.device));
}

void ArgCheck::contiguous(const char* name, const TensorView& t) const {
  expect(t.is_contiguous(), name, "a contiguous tensor", t.describe());
}

void ArgCheck::row_major_rows(const char* name, const TensorView& t) const {
  rank(name, t, 2);
  expect(t.shape[0] >= 0 && t.shape[1] >= 0, name, "non-negative sizes", t.describe());
  expect(t.shape[1] <= 1 || t.strides[1] == 1, name, "unit stride along dim 1", t.describe());
  expect(t.shape[0] <= 1 || t.strides[0] >= t.shape[1], name, "row stride >= number of columns",
         t.describe());
}

void ArgCheck::aligned(const char* name, const TensorView& t, std::size_t bytes) const {
  const auto address = reinterpret_cast<std::uintptr_t>(t.data);
  expect(address % bytes == 0, name, "data aligned to " + std::to_string(bytes) + " bytes",
         "address ending in 0x" + [&] {
           char buffer[8];
           std::snprintf(buffer, sizeof(buffer), "%x", static_cast<unsigned>(address % 256));
           return std::string(buffer);
         }());
}

}  // namespace lowbit::detail
