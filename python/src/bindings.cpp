// lowbit._lowbit: the nanobind extension. It converts DLPack arrays to TensorView and strings to
// enums, and nothing else: every check lives in the C++ op layer, whose lowbit::Error surfaces
// in Python as ValueError with the same message. The package python/lowbit wraps these raw
// entry points with allocation, dtype adaptation and stream selection.
// Every op runs with the GIL released (after its arrays are viewed, before its result is
// converted), so a loader can quantize, prune and relayout experts on a Python thread pool.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

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
                       std::optional<float> scale_ub, bool power_of_two_scale, bool enable_pdl) {
  args.group_size = group_size;
  args.scale_layout = layout_from_name(layout);
  args.eps = eps;
  args.scale_ub = scale_ub;
  args.power_of_two_scale = power_of_two_scale;
  args.enable_pdl = enable_pdl;
}

// An argument array with the dtype name the Python side resolved for it ("" = its own).
using Typed = std::tuple<Array, std::string>;

TensorView view_of(const Typed& typed, const char* name) {
  return view_of(std::get<0>(typed), name, std::get<1>(typed));
}

std::optional<lowbit::Nvfp4MoeRouting> routing_of(const std::optional<std::vector<Array>>& lists) {
  if (!lists) return std::nullopt;
  if (lists->size() != 3) {
    throw lowbit::Error("python", "routing", "(expert_ids, slot_offsets, token_ids)",
                        std::to_string(lists->size()) + " arrays");
  }
  lowbit::Nvfp4MoeRouting routing;
  routing.expert_ids = view_of((*lists)[0], "routing.expert_ids", "");
  routing.slot_offsets = view_of((*lists)[1], "routing.slot_offsets", "");
  routing.token_ids = view_of((*lists)[2], "routing.token_ids", "");
  return routing;
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
           std::uintptr_t stream, const std::string& input_dtype, const std::string& output_dtype,
           bool enable_pdl) {
          lowbit::PerTokenGroupQuantArgs args;
          args.input = view_of(input, "input", input_dtype);
          args.output = view_of(output, "output", output_dtype);
          args.scales = view_of(scales, "scales", "");
          set_group_options(args, group_size, layout, eps, scale_ub, power_of_two_scale, enable_pdl);
          nb::gil_scoped_release nogil;
          lowbit::per_token_group_quant(args, stream_of(stream));
        });

  m.def("silu_and_mul",
        [](Array input, Array output, std::optional<float> limit, std::uintptr_t stream,
           const std::string& input_dtype, const std::string& output_dtype, bool enable_pdl) {
          lowbit::SiluAndMulArgs args;
          args.input = view_of(input, "input", input_dtype);
          args.output = view_of(output, "output", output_dtype);
          args.limit = limit;
          args.enable_pdl = enable_pdl;
          nb::gil_scoped_release nogil;
          lowbit::silu_and_mul(args, stream_of(stream));
        });

  m.def("silu_and_mul_quant",
        [](Array input, Array output, Array scales, int group_size, const std::string& layout,
           float eps, std::optional<float> scale_ub, bool power_of_two_scale,
           std::optional<float> limit, std::uintptr_t stream, const std::string& input_dtype,
           const std::string& output_dtype, bool enable_pdl) {
          lowbit::SiluAndMulQuantArgs args;
          args.input = view_of(input, "input", input_dtype);
          args.output = view_of(output, "output", output_dtype);
          args.scales = view_of(scales, "scales", "");
          set_group_options(args, group_size, layout, eps, scale_ub, power_of_two_scale, enable_pdl);
          args.limit = limit;
          nb::gil_scoped_release nogil;
          lowbit::silu_and_mul_quant(args, stream_of(stream));
        });

  m.def("per_token_quant",
        [](Array input, Array output, Array scales, float eps, std::optional<float> scale_ub,
           std::uintptr_t stream, const std::string& input_dtype, const std::string& output_dtype,
           bool enable_pdl) {
          lowbit::PerTokenQuantArgs args;
          args.input = view_of(input, "input", input_dtype);
          args.output = view_of(output, "output", output_dtype);
          args.scales = view_of(scales, "scales", "");
          args.eps = eps;
          args.scale_ub = scale_ub;
          args.enable_pdl = enable_pdl;
          nb::gil_scoped_release nogil;
          lowbit::per_token_quant(args, stream_of(stream));
        });

  m.def("per_token_asymmetric_int8_quant",
        [](Array input, Array output, Array scales, Array zero_points, float eps,
           std::uintptr_t stream, const std::string& input_dtype, bool enable_pdl) {
          lowbit::PerTokenAsymmetricInt8QuantArgs args;
          args.input = view_of(input, "input", input_dtype);
          args.output = view_of(output, "output", "");
          args.scales = view_of(scales, "scales", "");
          args.zero_points = view_of(zero_points, "zero_points", "");
          args.eps = eps;
          args.enable_pdl = enable_pdl;
          nb::gil_scoped_release nogil;
          lowbit::per_token_asymmetric_int8_quant(args, stream_of(stream));
        });

  m.def("per_tensor_quant",
        [](Array input, Array output, Array scale, bool dynamic, float eps,
           std::optional<float> scale_ub, std::optional<Array> workspace, std::uintptr_t stream,
           const std::string& input_dtype, const std::string& output_dtype, bool enable_pdl) {
          lowbit::PerTensorQuantArgs args;
          args.input = view_of(input, "input", input_dtype);
          args.output = view_of(output, "output", output_dtype);
          args.scale = view_of(scale, "scale", "");
          args.dynamic = dynamic;
          args.eps = eps;
          args.scale_ub = scale_ub;
          if (workspace) args.workspace = view_of(*workspace, "workspace", "");
          args.enable_pdl = enable_pdl;
          nb::gil_scoped_release nogil;
          lowbit::per_tensor_quant(args, stream_of(stream));
        });
  // ---- block FP8 (DeepSeek-V3 128 x 128 weight blocks) -----------------------------------------
  m.def("block_fp8_quantize_weight",
        [](Typed weight, Typed output, Array scales, float eps, std::uintptr_t stream) {
          lowbit::BlockFp8QuantizeWeightArgs args;
          args.weight = view_of(weight, "weight");
          args.output = view_of(output, "output");
          args.scales = view_of(scales, "scales", "");
          args.eps = eps;
          nb::gil_scoped_release nogil;
          lowbit::block_fp8_quantize_weight(args, stream_of(stream));
        });
  m.def("block_fp8_dequantize_weight",
        [](Typed weight, Array scales, Typed output, std::uintptr_t stream) {
          lowbit::BlockFp8DequantizeWeightArgs args;
          args.weight = view_of(weight, "weight");
          args.scales = view_of(scales, "scales", "");
          args.output = view_of(output, "output");
          nb::gil_scoped_release nogil;
          lowbit::block_fp8_dequantize_weight(args, stream_of(stream));
        });
  m.def("block_fp8_mm_workspace_bytes",
        [](std::int64_t m_rows, std::int64_t n, std::int64_t k, const std::string& layout,
           const std::string& output_dtype) {
          return lowbit::block_fp8_mm_workspace_bytes(m_rows, n, k, layout_from_name(layout),
                                                      dtype_from_name(output_dtype));
        });
  m.def("block_fp8_mm",
        [](Typed a, Array a_scales, const std::string& layout, Typed b, Array b_scales,
           Typed output, std::optional<Array> workspace, std::uintptr_t stream, bool enable_pdl) {
          lowbit::BlockFp8MmArgs args;
          args.enable_pdl = enable_pdl;
          args.a = view_of(a, "a");
          args.a_scales = view_of(a_scales, "a_scales", "");
          args.a_scale_layout = layout_from_name(layout);
          args.b = view_of(b, "b");
          args.b_scales = view_of(b_scales, "b_scales", "");
          args.output = view_of(output, "output");
          if (workspace) args.workspace = view_of(*workspace, "workspace", "");
          nb::gil_scoped_release nogil;
          lowbit::block_fp8_mm(args, stream_of(stream));
        });

  // ---- scaled GEMM (W8A8 FP8 / INT8 with dequantizing epilogues) ---------------------------------
  m.def("scaled_mm_workspace_bytes",
        [](std::int64_t m_rows, std::int64_t n, std::int64_t k, const std::string& input_dtype,
           const std::string& output_dtype) {
          return lowbit::scaled_mm_workspace_bytes(m_rows, n, k, dtype_from_name(input_dtype),
                                                   dtype_from_name(output_dtype));
        });
  m.def("scaled_mm",
        [](Typed a, Typed b, Array a_scales, Array b_scales, std::optional<Typed> bias,
           std::optional<Array> azp_adj, std::optional<Array> azp, Typed output,
           std::optional<Array> workspace, std::uintptr_t stream, bool enable_pdl) {
          lowbit::ScaledMmArgs args;
          args.enable_pdl = enable_pdl;
          args.a = view_of(a, "a");
          args.b = view_of(b, "b");
          args.a_scales = view_of(a_scales, "a_scales", "");
          args.b_scales = view_of(b_scales, "b_scales", "");
          if (bias) args.bias = view_of(*bias, "bias");
          if (azp_adj) args.azp_adj = view_of(*azp_adj, "azp_adj", "");
          if (azp) args.azp = view_of(*azp, "azp", "");
          args.output = view_of(output, "output");
          if (workspace) args.workspace = view_of(*workspace, "workspace", "");
          nb::gil_scoped_release nogil;
          lowbit::scaled_mm(args, stream_of(stream));
        });
  m.def("scaled_mm_azp_adjustment",
        [](Array b, Array output, std::int32_t zero_point, std::uintptr_t stream) {
          lowbit::ScaledMmAzpAdjustmentArgs args;
          args.b = view_of(b, "b", "");
          args.output = view_of(output, "output", "");
          args.zero_point = zero_point;
          nb::gil_scoped_release nogil;
          lowbit::scaled_mm_azp_adjustment(args, stream_of(stream));
        });

  // ---- NVFP4 weights and MoE-decode GEMV ---------------------------------------------------------
  m.def("nvfp4_quantize_weight_workspace_bytes", &lowbit::nvfp4_quantize_weight_workspace_bytes);
  m.def("nvfp4_quantize_weight",
        [](Typed weight, Array packed, Typed block_scales, Array global_scale,
           bool global_scale_is_input, std::optional<Array> workspace, std::uintptr_t stream) {
          lowbit::Nvfp4QuantizeWeightArgs args;
          args.weight = view_of(weight, "weight");
          args.packed = view_of(packed, "packed", "");
          args.block_scales = view_of(block_scales, "block_scales");
          args.global_scale = view_of(global_scale, "global_scale", "");
          args.global_scale_is_input = global_scale_is_input;
          if (workspace) args.workspace = view_of(*workspace, "workspace", "");
          nb::gil_scoped_release nogil;
          lowbit::nvfp4_quantize_weight(args, stream_of(stream));
        });
  m.def("nvfp4_dequantize_weight",
        [](Array packed, Typed block_scales, Array global_scale, Typed output,
           std::uintptr_t stream) {
          lowbit::Nvfp4DequantizeWeightArgs args;
          args.packed = view_of(packed, "packed", "");
          args.block_scales = view_of(block_scales, "block_scales");
          args.global_scale = view_of(global_scale, "global_scale", "");
          args.output = view_of(output, "output");
          nb::gil_scoped_release nogil;
          lowbit::nvfp4_dequantize_weight(args, stream_of(stream));
        });
  m.def("nvfp4_sparsify_24",
        [](Array packed, Typed block_scales, float global_scale, Array values, Array indices) {
          lowbit::Nvfp4Sparsify24Args args;
          args.packed = view_of(packed, "packed", "");
          args.block_scales = view_of(block_scales, "block_scales");
          args.global_scale = global_scale;
          args.values = view_of(values, "values", "");
          args.indices = view_of(indices, "indices", "");
          const lowbit::Nvfp4PruneReport r = [&] {
            nb::gil_scoped_release nogil;
            return lowbit::nvfp4_sparsify_24(args);
          }();
          nb::dict report;
          report["groups"] = r.groups;
          report["groups_losing_nonzeros"] = r.groups_losing_nonzeros;
          report["relative_frobenius_error"] = r.relative_frobenius_error;
          report["max_abs_error"] = r.max_abs_error;
          return report;
        });
  m.def("nvfp4_sparse24_to_dense", [](Array values, Array indices, Array packed) {
    const TensorView v = view_of(values, "values", ""), i = view_of(indices, "indices", ""),
                     d = view_of(packed, "packed", "");
    nb::gil_scoped_release nogil;
    lowbit::nvfp4_sparse24_to_dense(v, i, d);
  });
  m.def("nvfp4_relayout_for_gemv",
        [](Array packed, Typed block_scales, Array gemv_packed, Typed gemv_block_scales) {
          const TensorView from = view_of(packed, "packed", ""),
                           from_scales = view_of(block_scales, "block_scales"),
                           to = view_of(gemv_packed, "gemv_packed", ""),
                           to_scales = view_of(gemv_block_scales, "gemv_block_scales");
          nb::gil_scoped_release nogil;
          lowbit::nvfp4_relayout_for_gemv(from, from_scales, to, to_scales);
        });
  m.def("nvfp4_sparse24_relayout_for_gemv",
        [](Array values, Array indices, Typed block_scales, Array gemv_values, Array gemv_indices,
           Typed gemv_block_scales) {
          const TensorView from_values = view_of(values, "values", ""),
                           from_indices = view_of(indices, "indices", ""),
                           from_scales = view_of(block_scales, "block_scales"),
                           to_values = view_of(gemv_values, "gemv_values", ""),
                           to_indices = view_of(gemv_indices, "gemv_indices", ""),
                           to_scales = view_of(gemv_block_scales, "gemv_block_scales");
          nb::gil_scoped_release nogil;
          lowbit::nvfp4_sparse24_relayout_for_gemv(from_values, from_indices, from_scales,
                                                   to_values, to_indices, to_scales);
        });
  m.def("nvfp4_gemv",
        [](Typed x, Array packed, Typed block_scales, Array global_scales, Typed output,
           std::optional<std::vector<Array>> routing, std::uintptr_t stream, bool enable_pdl,
           bool prefetch_before_wait) {
          lowbit::Nvfp4GemvArgs args;
          args.enable_pdl = enable_pdl;
          args.prefetch_before_wait = prefetch_before_wait;
          args.x = view_of(x, "x");
          args.packed = view_of(packed, "packed", "");
          args.block_scales = view_of(block_scales, "block_scales");
          args.global_scales = view_of(global_scales, "global_scales", "");
          args.output = view_of(output, "output");
          args.routing = routing_of(routing);
          nb::gil_scoped_release nogil;
          lowbit::nvfp4_gemv(args, stream_of(stream));
        });
  m.def("nvfp4_sparse24_gemv",
        [](Typed x, Array values, Array indices, Typed block_scales, Array global_scales,
           Typed output, std::optional<std::vector<Array>> routing, std::uintptr_t stream,
           bool enable_pdl, bool prefetch_before_wait) {
          lowbit::Nvfp4Sparse24GemvArgs args;
          args.enable_pdl = enable_pdl;
          args.prefetch_before_wait = prefetch_before_wait;
          args.x = view_of(x, "x");
          args.values = view_of(values, "values", "");
          args.indices = view_of(indices, "indices", "");
          args.block_scales = view_of(block_scales, "block_scales");
          args.global_scales = view_of(global_scales, "global_scales", "");
          args.output = view_of(output, "output");
          args.routing = routing_of(routing);
          nb::gil_scoped_release nogil;
          lowbit::nvfp4_sparse24_gemv(args, stream_of(stream));
        });
}
