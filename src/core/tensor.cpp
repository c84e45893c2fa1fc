// TensorView helpers and dtype names.
#include "lowbit/tensor.h"

#include <string>

#include "lowbit/error.h"

namespace lowbit {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
    case DType::kFP16:
      return 2;
    case DType::kFP32:
    case DType::kInt32:
      return 4;
    case DType::kFP8E4M3:
    case DType::kFP8E5M2:
    case DType::kInt8:
    case DType::kUInt8:
      return 1;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kBF16: return "bf16";
    case DType::kFP16: return "fp16";
    case DType::kFP32: return "fp32";
    case DType::kFP8E4M3: return "fp8_e4m3fn";
    case DType::kFP8E5M2: return "fp8_e5m2";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kInt32: return "int32";
  }
  return "unknown";
}

const char* device_name(Device device) { return device == Device::kCUDA ? "cuda" : "cpu"; }

static TensorView make_view(void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                            Device device) {
  if (shape.size() > static_cast<std::size_t>(kMaxRank)) {
    throw Error("TensorView", "shape", "rank <= " + std::to_string(kMaxRank),
                "rank " + std::to_string(shape.size()));
  }
  TensorView view;
  view.data = data;
  view.dtype = dtype;
  view.device = device;
  view.rank = static_cast<int>(shape.size());
  int dim = 0;
  for (std::int64_t extent : shape) view.shape[dim++] = extent;
  return view;
}

TensorView TensorView::contiguous(void* data, DType dtype,
                                  std::initializer_list<std::int64_t> shape, Device device) {
  TensorView view = make_view(data, dtype, shape, device);
  std::int64_t stride = 1;
  for (int dim = view.rank - 1; dim >= 0; --dim) {
    view.strides[dim] = stride;
    stride *= view.shape[dim];
  }
  return view;
}

TensorView TensorView::strided(void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                               std::initializer_list<std::int64_t> strides, Device device) {
  if (strides.size() != shape.size()) {
    throw Error("TensorView", "strides", std::to_string(shape.size()) + " strides (one per dim)",
                std::to_string(strides.size()));
  }
  TensorView view = make_view(data, dtype, shape, device);
  int dim = 0;
  for (std::int64_t stride : strides) view.strides[dim++] = stride;
  return view;
}

std::int64_t TensorView::numel() const {
  std::int64_t count = 1;
  for (int dim = 0; dim < rank; ++dim) count *= shape[dim];
  return count;
}

bool TensorView::is_contiguous() const {
  std::int64_t expected = 1;
  for (int dim = rank - 1; dim >= 0; --dim) {
    if (shape[dim] != 1 && strides[dim] != expected) return false;
    expected *= shape[dim];
  }
  return true;
}

// Plain string building, no iostreams: this runs inside Python extensions too, next to other
// libraries' C++ runtimes.
std::string TensorView::describe() const {
  std::string text = "[";
  for (int dim = 0; dim < rank; ++dim) text += (dim ? ", " : "") + std::to_string(shape[dim]);
  text += std::string("] ") + dtype_name(dtype) + " " + device_name(device) + " strides [";
  for (int dim = 0; dim < rank; ++dim) text += (dim ? ", " : "") + std::to_string(strides[dim]);
  return text + "]";
}

}  // namespace lowbit
