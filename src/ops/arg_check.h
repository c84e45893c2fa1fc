// Argument validation shared by every op's host layer: each failed check throws lowbit::Error
// naming the op, the argument, the expectation and what was given.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "lowbit/error.h"
#include "lowbit/tensor.h"

namespace lowbit::detail {

class ArgCheck {
 public:
  explicit ArgCheck(const char* op) : op_(op) {}
  const char* op() const { return op_; }

  [[noreturn]] void fail(const std::string& argument, const std::string& expected,
                         const std::string& got) const {
    throw Error(op_, argument, expected, got);
  }

  void dtype_in(const char* name, const TensorView& t, std::initializer_list<DType> allowed) const;
  void rank(const char* name, const TensorView& t, int rank) const;
  void dim(const char* name, const TensorView& t, int dim, std::int64_t extent) const;
  void not_null(const char* name, const TensorView& t) const;
  void same_device(const char* name, const TensorView& t, const char* ref_name,
                   const TensorView& ref) const;
  void contiguous(const char* name, const TensorView& t) const;
  // Rank 2, unit column stride, row stride >= columns (rows may be padded).
  void row_major_rows(const char* name, const TensorView& t) const;
  void aligned(const char* name, const TensorView& t, std::size_t bytes) const;
  // Rows a TMA descriptor can read: 16-byte aligned base and a row stride of 16-byte multiples.
  void tma_rows(const char* name, const TensorView& t) const;
  // A CUDA buffer of at least `needed` bytes, 256-byte aligned (nothing checked when needed is 0);
  // `size_query` names the function that tells callers the size.
  void workspace(const char* name, const TensorView& t, std::size_t needed,
                 const char* size_query) const;
  // A contiguous [length] (or [length, 1]) tensor of `dtype` on the device of `ref`.
  void vector(const char* name, const TensorView& t, DType dtype, std::int64_t length,
              const char* ref_name, const TensorView& ref) const;

 private:
  const char* op_;
};

}  // namespace lowbit::detail
