// lowbit._lowbit: the nanobind extension. It converts DLPack arrays to TensorView and strings to
// enums, and nothing else: every check lives in the C++ op layer, whose lowbit::Error surfaces
// in Python as ValueError with the same message. The package python/lowbit wraps these raw
// entry points with allocation, dtype adaptation and stream selection.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <cstdint>
#include <optional>
#include <string>

#include "lowbit/lowbit.h"

namespace nb = nanobind;
using lowbit::DType;
using lowbit::TensorView;

namespace {

using Array = nb::ndarray<>;  // any dtype, device, shape and strides

DType dtype_from_name(const std::string& name) {
  static const std::pair<const char*, DType> kNames[] = {
      {"bf16", DType::kBF16},        {"bfloat16", DType::kBF16},
      {"fp16", DType::kFP16},        {"float16", DType::kFP16},
      {"fp32", DType::kFP32},        {"float32", DType::kFP32},
      {"fp8_e4m3fn", DType::kFP8E4M3}, {"float8_e4m3fn", DType::kFP8E4M3},
      {"fp8_e5m2", DType::kFP8E5M2}, {"float8_e5m2", DType::kFP8E5M2},
      {"int8", DType::kInt8},        {"uint8", DType::kUInt8},
      {"int32", DType::kInt32}};
  for (const auto& [text, dtype] : kNames) {
    if (name == text) return dtype;
  }
  throw lowbit::Error("python", "dtype", "one of bf16, fp16, fp32, fp8_e4m3fn, fp8_e5m2, int8, "
                      "uint8, int32", "'" + name + "'");
}

DType dtype_from_dlpack(const Array& a, const char* name) {
  const nb::dlpack::dtype t = a.dtype();
  using Code = nb::dlpack::dtype_code;
  if (t.lanes == 1) {
    if (t.code == static_cast<std::uint8_t>(Code::Float) && t.bits == 32) return DType::kFP32;
    if (t.code == static_cast<std::uint8_t>(Code::Float) && t.bits == 16) return DType::kFP16;
    if (t.code == static_cast<std::uint8_t>(Code::Bfloat) && t.bits == 16) return DType::kBF16;
    if (t.code == static_cast<std::uint8_t>(Code::Int) && t.bits == 8) return DType::kInt8;
    if (t.code == static_cast<std::uint8_t>(Code::Int) && t.bits == 32) return DType::kInt32;
    if (t.code == static_cast<std::uint8_t>(Code::UInt) && t.bits == 8) return DType::kUInt8;
  }
  throw lowbit::Error("python", name, "a float32/float16/bfloat16/int8/uint8/int32 array, or "
                      "an explicit dtype", "DLPack code " + std::to_string(t.code) + " with " +
                      std::to_string(t.bits) + " bits");
}

// dtype: "" takes the array's own dtype; otherwise the array holds raw codes of that dtype (a
// uint8 / uint16 view of fp8 / bf16 data, for frameworks without those dtypes in DLPack).
TensorView view_of(const Array& a, const char* name, const std::string& dtype) {
  TensorView v;
  v.data = a.data();
  v.rank = static_cast<int>(a.ndim());
  if (v.rank > lowbit::kMaxRank) {
    throw lowbit::Error("python", name, "rank <= 4", "rank " + std::to_string(v.rank));
  }
  for (int d = 0; d < v.rank; ++d) {
    v.shape[d] = static_cast<std::int64_t>(a.shape(d));
    v.strides[d] = static_cast<std::int64_t>(a.stride(d));
  }
  if (a.device_type() == nb::device::cuda::value) {
    v.device = lowbit::Device::kCUDA;
  } else if (a.device_type() == nb::device::cpu::value) {
    v.device = lowbit::Device::kCPU;
  } else {
    throw lowbit::Error("python", name, "a CPU or CUDA array", "DLPack device type " +
                        std::to_string(a.device_type()));
  }
  v.dtype = dtype.empty() ? dtype_from_dlpack(a, name) : dtype_from_name(dtype);
  return v;
}

cudaStream_t stream_of(std::uintptr_t stream) { return reinterpret_cast<cudaStream_t>(stream); }

lowbit::ScaleLayout layout_from_name(const std::string& name) {
  if (name == "row_major") return lowbit::ScaleLayout::kRowMajor;
  if (name == "column_major") return lowbit::ScaleLayout::kColumnMajor;
  if (name == "column_major_tma_aligned") return lowbit::ScaleLayout::kColumnMajorTmaAligned;
  throw lowbit::Error("python", "scale_layout",
                      "row_major, column_major or column_major_tma_aligned", "'" + name + "'");
}

// The options per_token_group_quant and silu_and_mul_quant share.
template <typename GroupQuantArgs>
void set_group_options(GroupQuantArgs& args, int group_size, const std::string& layout, float eps,
                       std::optional<float> scale_ub, bool power_of_two_scale) {
  args.group_size = group_size;
  args.scale_layout = layout_from_name(layout);
  args.eps = eps;
  args.scale_ub = scale_ub;
  args.power_of_two_scale = power_of_two_scale;
}

}  // namespace

NB_MODULE(_lowbit, m) {
  m.doc() = "lowbit raw entry points (use the lowbit package, not this module)";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const lowbit::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  m.def("scale_storage_shape", [](const std::string& layout, std::int64_t m_rows,
                                  std::int64_t k, int group) {
    const lowbit::ScaleShape s = lowbit::scale_storage_shape(layout_from_name(layout), m_rows, k, group);
    return std::make_tuple(s.rows, s.cols);
  });
  m.def("per_tensor_quant_workspace_bytes", &lowbit::per_tensor_quant_workspace_bytes);

  m.def("per_token_group_quant",
        [](Array input, Array output, Array scales, int group_size, const std::string& layout,
           float eps, std::optional<float> scale_ub, bool power_of_two_scale,
           std::uintptr_t stream, const std::string& input_dtype, const std::string& output_dtype) {
          lowbit::PerTokenGroupQuantArgs args;
          args.input = view_of(input, "input", input_dtype);
          args.output = view_of(output, "output", output_dtype);
          args.scales = view_of(scales, "scales", "");
          set_group_options(args, group_size, layout, eps, scale_ub, power_of_two_scale);
          lowbit::per_token_group_quant(args, stream_of(stream));
        });

  m.def("silu_and_mul",
        [](Array input, Array output, std::optional<float> limit, std::uintptr_t stream,
           const std::string& input_dtype, const std::string& output_dtype) {
          lowbit::SiluAndMulArgs args;
          args.input = view_of(input, "input", input_dtype);
          args.output = view_of(output, "output", output_dtype);
          args.limit = limit;
          lowbit::silu_and_mul(args, stream_of(stream));
        });

  m.def("silu_and_mul_quant",
        [](Array input, Array output, Array scales, int group_size, const std::string& layout,
           float eps, std::optional<float> scale_ub, bool power_of_two_scale,
           std::optional<float> limit, std::uintptr_t stream, const std::string& input_dtype,
           const std::string& output_dtype) {
          lowbit::SiluAndMulQuantArgs args;
          args.input = view_of(input, "input", input_dtype);
          args.output = view_of(output, "output", output_dtype);
          args.scales = view_of(scales, "scales", "");
          set_group_options(args, group_size, layout, eps, scale_ub, power_of_two_scale);
          args.limit = limit;
          lowbit::silu_and_mul_quant(args, stream_of(stream));
        });

  m.def("per_token_quant",
        [](Array input, Array output, Array scales, float eps, std::optional<float> scale_ub,
           std::uintptr_t stream, const std::string& input_dtype, const std::string& output_dtype) {
          lowbit::PerTokenQuantArgs args;
          args.input = view_of(input, "input", input_dtype);
          args.output = view_of(output, "output", output_dtype);
          args.scales = view_of(scales, "scales", "");
          args.eps = eps;
          args.scale_ub = scale_ub;
          lowbit::per_token_quant(args, stream_of(stream));
        });

  m.def("per_token_asymmetric_int8_quant",
        [](Array input, Array output, Array scales, Array zero_points, float eps,
           std::uintptr_t stream, const std::string& input_dtype) {
          lowbit::PerTokenAsymmetricInt8QuantArgs args;
          args.input = view_of(input, "input", input_dtype);
          args.output = view_of(output, "output", "");
          args.scales = view_of(scales, "scales", "");
          args.zero_points = view_of(zero_points, "zero_points", "");
          args.eps = eps;
          lowbit::per_token_asymmetric_int8_quant(args, stream_of(stream));
        });

  m.def("per_tensor_quant",
        [](Array input, Array output, Array scale, bool dynamic, float eps,
           std::optional<float> scale_ub, std::optional<Array> workspace, std::uintptr_t stream,
           const std::string& input_dtype, const std::string& output_dtype) {
          lowbit::PerTensorQuantArgs args;
          args.input = view_of(input, "input", input_dtype);
          args.output = view_of(output, "output", output_dtype);
          args.scale = view_of(scale, "scale", "");
          args.dynamic = dynamic;
          args.eps = eps;
          args.scale_ub = scale_ub;
          if (workspace) args.workspace = view_of(*workspace, "workspace", "");
          lowbit::per_tensor_quant(args, stream_of(stream));
        });
}
