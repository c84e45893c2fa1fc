// TensorView: a non-owning view of a strided tensor (host or CUDA memory) and the dtypes lowbit
// understands. Plain C++17; no CUDA header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

// The CUDA runtime spells the stream type this way too, so both declarations agree.
struct CUstream_st;
using cudaStream_t = CUstream_st*;

namespace lowbit {

enum class DType : std::uint8_t {
  kBF16,
  kFP16,
  kFP32,
  kFP8E4M3,  // fp8 e4m3fn: no infinities, one NaN pattern per sign, max 448
  kFP8E5M2,  // fp8 e5m2: IEEE-like, max 57344
  kInt8,
  kUInt8,  // raw bytes, e.g. two packed e2m1 (fp4) values: element 0 in the low nibble
  kInt32,
};

enum class Device : std::uint8_t { kCPU, kCUDA };

std::size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);
const char* device_name(Device device);

inline constexpr int kMaxRank = 4;

// Strides are in elements, not bytes. The view never owns or frees `data`.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kFP32;
  Device device = Device::kCPU;
  int rank = 0;
  std::int64_t shape[kMaxRank] = {};
  std::int64_t strides[kMaxRank] = {};

  // Row-major (C-contiguous) view.
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                               Device device = Device::kCPU);
  // Explicit strides (elements), one per dimension.
  static TensorView strided(void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                            std::initializer_list<std::int64_t> strides,
                            Device device = Device::kCPU);

  std::int64_t size(int dim) const { return shape[dim]; }
  std::int64_t stride(int dim) const { return strides[dim]; }
  std::int64_t numel() const;
  bool is_contiguous() const;
  // "[4, 128] bf16 cuda strides [256, 1]", used in error messages.
  std::string describe() const;
};

}  // namespace lowbit
