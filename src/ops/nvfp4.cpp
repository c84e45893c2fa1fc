// Host layer of the NVFP4 ops that run on both backends: nvfp4_quantize_weight,
// nvfp4_dequantize_weight, nvfp4_gemv and nvfp4_sparse24_gemv. Validate, then the CPU reference
// for host tensors or the sm_90a kernels for CUDA tensors.
#include <string>

#include "../reference/nvfp4.h"
#include "arg_check.h"
#include "group_quant_check.h"  // check_float_rows_input
#include "lowbit/nvfp4.h"
#include "nvfp4_check.h"

#if LOWBIT_WITH_CUDA
#include "../cuda/nvfp4/nvfp4_launch.h"
#endif

namespace lowbit {

namespace {

#if !LOWBIT_WITH_CUDA
[[noreturn]] void fail_without_cuda(const detail::ArgCheck& check, const char* argument) {
  check.fail(argument, "a CPU tensor (this lowbit was built without CUDA)", "a CUDA tensor");
}
#endif

// One expert's logical width K from a weight tensor's last dim (bytes per row).
struct GemvShape {
  std::int64_t experts, rows, cols;
};

// x, per-expert tensors, global scales, output and routing of both GEMVs; returns E, N, K.
GemvShape check_gemv(const detail::ArgCheck& check, const TensorView& x, const TensorView& first,
                     const char* first_name, int elements_per_byte, const TensorView& scales,
                     const TensorView& global_scales, const TensorView& output,
                     const std::optional<Nvfp4MoeRouting>& routing) {
  check.row_major_rows("x", x);
  check.dtype_in("x", x, {DType::kBF16});
  const std::int64_t cols = x.shape[1];
  if (cols <= 0 || cols % 64 != 0) {
    check.fail("x", "K a positive multiple of 64 (GEMV layout: 64-wide K chunks)", x.describe());
  }
  if (first.rank != 2 && first.rank != 3) check.fail(first_name, "rank 2 or 3", first.describe());
  const std::int64_t experts = first.rank == 3 ? first.shape[0] : 1;
  const std::int64_t rows = first.shape[first.rank - 2];
  if (rows % 16 != 0) {
    check.fail(first_name, "N a multiple of 16 (GEMV layout: 16-row tiles)", first.describe());
  }
  detail::check_expert_bytes(check, first_name, first, experts, rows, cols / elements_per_byte,
                             DType::kUInt8, x);
  detail::check_expert_bytes(check, "block_scales", scales, experts, rows, cols / 16,
                             DType::kFP8E4M3, x);
  check.vector("global_scales", global_scales, DType::kFP32, experts, "x", x);
  check.row_major_rows("output", output);
  check.dtype_in("output", output, {DType::kBF16});
  check.dim("output", output, 1, rows);
  check.same_device("output", output, "x", x);
  if (routing) {
    const std::int64_t slots = routing->expert_ids.numel();
    check.vector("routing.expert_ids", routing->expert_ids, DType::kInt32, slots, "x", x);
    check.vector("routing.slot_offsets", routing->slot_offsets, DType::kInt32, slots + 1, "x", x);
    check.vector("routing.token_ids", routing->token_ids, DType::kInt32, output.shape[0], "x", x);
  } else {
    if (experts != 1) {
      check.fail("routing", "token lists when the weight holds several experts",
                 "none for " + std::to_string(experts) + " experts");
    }
    check.dim("output", output, 0, x.shape[0]);
  }
  if (x.device == Device::kCUDA && output.shape[0] > 0) {
    check.not_null("x", x);
    check.aligned("x", x, 16);
    if (x.shape[0] > 1 && x.strides[0] % 8 != 0) {
      check.fail("x", "row stride a multiple of 8 elements (16-byte loads)", x.describe());
    }
    check.aligned(first_name, first, 16);
    check.aligned("block_scales", scales, 4);
  }
  return {experts, rows, cols};
}

}  // namespace

std::int64_t nvfp4_quantize_weight_workspace_bytes() { return 4; }

void nvfp4_quantize_weight(const Nvfp4QuantizeWeightArgs& args, cudaStream_t stream) {
  const detail::ArgCheck check("nvfp4_quantize_weight");
  detail::check_float_rows_input(check, args.weight, {DType::kBF16, DType::kFP16, DType::kFP32});
  const TensorView& w = args.weight;
  const std::int64_t rows = w.shape[0], cols = w.shape[1];
  if (cols % 16 != 0) check.fail("weight", "K a multiple of 16 (NVFP4 blocks)", w.describe());
  detail::check_expert_bytes(check, "packed", args.packed, 1, rows, cols / 2, DType::kUInt8, w);
  detail::check_expert_bytes(check, "block_scales", args.block_scales, 1, rows, cols / 16,
                             DType::kFP8E4M3, w);
  check.vector("global_scale", args.global_scale, DType::kFP32, 1, "weight", w);
  const bool needs_workspace = w.device == Device::kCUDA && !args.global_scale_is_input;
  if (needs_workspace) detail::check_workspace(check, args.workspace, 4);
  if (args.global_scale_is_input && w.device == Device::kCPU) {
    const float g = *static_cast<const float*>(args.global_scale.data);
    if (!(g > 0.0f && g < 3.0e38f)) check.fail("global_scale", "a finite value > 0", std::to_string(g));
  }
  if (w.numel() == 0) return;
  if (w.device == Device::kCPU) return reference::nvfp4_quantize_weight(args);
  check.aligned("packed", args.packed, 8);  // one 8-byte store per 16-element block
#if LOWBIT_WITH_CUDA
  cuda::launch_nvfp4_quantize_weight(
      {w.data, w.dtype, rows, cols, w.strides[0], static_cast<std::uint8_t*>(args.packed.data),
       static_cast<std::uint8_t*>(args.block_scales.data), static_cast<float*>(args.global_scale.data),
       args.global_scale_is_input,
       needs_workspace ? static_cast<std::uint32_t*>(args.workspace.data) : nullptr},
      stream);
#else
  (void)stream;
  fail_without_cuda(check, "weight");
#endif
}

void nvfp4_dequantize_weight(const Nvfp4DequantizeWeightArgs& args, cudaStream_t stream) {
  const detail::ArgCheck check("nvfp4_dequantize_weight");
  const TensorView& out = args.output;
  check.rank("output", out, 2);
  check.dtype_in("output", out, {DType::kBF16, DType::kFP16, DType::kFP32});
  check.contiguous("output", out);
  const std::int64_t rows = out.shape[0], cols = out.shape[1];
  if (cols % 16 != 0) check.fail("output", "K a multiple of 16 (NVFP4 blocks)", out.describe());
  detail::check_expert_bytes(check, "packed", args.packed, 1, rows, cols / 2, DType::kUInt8, out);
  detail::check_expert_bytes(check, "block_scales", args.block_scales, 1, rows, cols / 16,
                             DType::kFP8E4M3, out);
  check.vector("global_scale", args.global_scale, DType::kFP32, 1, "output", out);
  if (out.numel() == 0) return;
  check.not_null("output", out);
  if (out.device == Device::kCPU) return reference::nvfp4_dequantize_weight(args);
  check.aligned("packed", args.packed, 8);  // one 8-byte load per 16-element block
#if LOWBIT_WITH_CUDA
  cuda::launch_nvfp4_dequantize_weight(
      {static_cast<const std::uint8_t*>(args.packed.data),
       static_cast<const std::uint8_t*>(args.block_scales.data),
       static_cast<const float*>(args.global_scale.data), out.data, out.dtype, rows, cols},
      stream);
#else
  (void)stream;
  fail_without_cuda(check, "output");
#endif
}

#if LOWBIT_WITH_CUDA
namespace {
cuda::Nvfp4GemvParams gemv_params(const GemvShape& shape, const TensorView& x,
                                  const TensorView& weights, const TensorView& indices,
                                  const TensorView& scales, const TensorView& global_scales,
                                  const TensorView& output,
                                  const std::optional<Nvfp4MoeRouting>& routing,
                                  bool enable_pdl, bool prefetch_before_wait) {
  return {static_cast<const std::uint16_t*>(x.data),
          x.shape[0],
          x.strides[0],
          shape.rows,
          shape.cols,
          shape.experts,
          static_cast<const std::uint8_t*>(weights.data),
          static_cast<const std::uint8_t*>(indices.data),
          static_cast<const std::uint8_t*>(scales.data),
          static_cast<const float*>(global_scales.data),
          static_cast<std::uint16_t*>(output.data),
          output.shape[0],
          output.strides[0],
          routing ? static_cast<const std::int32_t*>(routing->expert_ids.data) : nullptr,
          routing ? static_cast<const std::int32_t*>(routing->slot_offsets.data) : nullptr,
          routing ? static_cast<const std::int32_t*>(routing->token_ids.data) : nullptr,
          routing ? routing->expert_ids.numel() : 1,
          enable_pdl,
          prefetch_before_wait};
}
}  // namespace
#endif

void nvfp4_gemv(const Nvfp4GemvArgs& args, cudaStream_t stream) {
  const detail::ArgCheck check("nvfp4_gemv");
  const GemvShape shape = check_gemv(check, args.x, args.packed, "packed", 2, args.block_scales,
                                     args.global_scales, args.output, args.routing);
  if (args.output.shape[0] == 0) return;
  if (args.x.device == Device::kCPU) return reference::nvfp4_gemv(args);
#if LOWBIT_WITH_CUDA
  cuda::launch_nvfp4_gemv(gemv_params(shape, args.x, args.packed, TensorView{}, args.block_scales,
                                      args.global_scales, args.output, args.routing,
                                      args.enable_pdl, args.prefetch_before_wait),
                          stream);
#else
  (void)stream;
  (void)shape;
  fail_without_cuda(check, "x");
#endif
}

void nvfp4_sparse24_gemv(const Nvfp4Sparse24GemvArgs& args, cudaStream_t stream) {
  const detail::ArgCheck check("nvfp4_sparse24_gemv");
  const GemvShape shape = check_gemv(check, args.x, args.values, "values", 4, args.block_scales,
                                     args.global_scales, args.output, args.routing);
  detail::check_expert_bytes(check, "indices", args.indices, shape.experts, shape.rows,
                             shape.cols / 8, DType::kUInt8, args.x);
  if (args.output.shape[0] == 0) return;
  if (args.x.device == Device::kCPU) return reference::nvfp4_sparse24_gemv(args);
#if LOWBIT_WITH_CUDA
  check.aligned("indices", args.indices, 16);
  cuda::launch_nvfp4_gemv(gemv_params(shape, args.x, args.values, args.indices, args.block_scales,
                                      args.global_scales, args.output, args.routing,
                                      args.enable_pdl, args.prefetch_before_wait),
                          stream);
#else
  (void)stream;
  fail_without_cuda(check, "x");
#endif
}

}  // namespace lowbit
