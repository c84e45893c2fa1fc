// Host layer of per_token_quant, per_token_asymmetric_int8_quant and per_tensor_quant:
// validate, then the CPU reference for host tensors or the sm_90a kernels for CUDA tensors.
#include <cmath>
#include <limits>
#include <string>

#include "../reference/quant.h"
#include "arg_check.h"
#include "group_quant_check.h"
#include "lowbit/quant.h"

#if LOWBIT_WITH_CUDA
#include "../cuda/quant/token_quant_launch.h"
#endif

namespace lowbit {

namespace {

// Input [M, K] float rows and a 1-byte output of the same shape; CUDA alignment for 16-byte
// loads and 8-byte stores (K a multiple of 8).
void check_rows(const detail::ArgCheck& check, const TensorView& input, const TensorView& output,
                std::initializer_list<DType> output_dtypes) {
  detail::check_float_rows_input(check, input, {DType::kBF16, DType::kFP16, DType::kFP32});
  check.row_major_rows("output", output);
  check.dtype_in("output", output, output_dtypes);
  if (output.shape[0] != input.shape[0] || output.shape[1] != input.shape[1]) {
    check.fail("output", "shape " + detail::shape_text(input.shape[0], input.shape[1]) +
                             " (input's)", output.describe());
  }
  check.same_device("output", output, "input", input);
  if (input.numel() == 0) return;
  check.not_null("output", output);
  if (input.device == Device::kCUDA) {
    if (input.shape[1] % 8 != 0) {
      check.fail("input", "K a multiple of 8 (CUDA kernel: 8 elements per access)",
                 input.describe());
    }
    check.aligned("output", output, 8);
    if (output.shape[0] > 1 && output.strides[0] % 8 != 0) {
      check.fail("output", "row stride a multiple of 8 bytes (CUDA kernel)", output.describe());
    }
  }
}

void check_eps(const detail::ArgCheck& check, float eps) {
  if (!(std::isfinite(eps) && eps > 0.0f)) check.fail("eps", "a finite value > 0", std::to_string(eps));
}

void check_scale_ub(const detail::ArgCheck& check, const std::optional<float>& scale_ub) {
  if (scale_ub && !(std::isfinite(*scale_ub) && *scale_ub > 0.0f)) {
    check.fail("scale_ub", "a finite value > 0", std::to_string(*scale_ub));
  }
}

#if LOWBIT_WITH_CUDA
float amax_bound(const std::optional<float>& scale_ub) {
  return scale_ub ? *scale_ub : std::numeric_limits<float>::infinity();
}

cuda::RowQuantParams row_params(const TensorView& input, const TensorView& output, float eps,
                                bool enable_pdl) {
  return {input.data,        output.data,        input.shape[0], input.shape[1],
          input.strides[0],  output.strides[0],  input.dtype,    output.dtype,
          eps,               enable_pdl};
}
#endif

#if !LOWBIT_WITH_CUDA
[[noreturn]] void fail_without_cuda(const detail::ArgCheck& check) {
  check.fail("input", "a CPU tensor (this lowbit was built without CUDA)", "a CUDA tensor");
}
#endif

}  // namespace

void per_token_quant(const PerTokenQuantArgs& args, cudaStream_t stream) {
  const detail::ArgCheck check("per_token_quant");
  check_rows(check, args.input, args.output, {DType::kFP8E4M3, DType::kInt8});
  check.vector("scales", args.scales, DType::kFP32, args.input.shape[0], "input", args.input);
  check_eps(check, args.eps);
  check_scale_ub(check, args.scale_ub);
  if (args.input.numel() == 0) return;
  if (args.input.device == Device::kCPU) return reference::per_token_quant(args);
#if LOWBIT_WITH_CUDA
  cuda::launch_per_token_quant(check.op(), row_params(args.input, args.output, args.eps, args.enable_pdl),
                               static_cast<float*>(args.scales.data), nullptr,
                               amax_bound(args.scale_ub), stream);
#else
  (void)stream;
  fail_without_cuda(check);
#endif
}

void per_token_asymmetric_int8_quant(const PerTokenAsymmetricInt8QuantArgs& args,
                                     cudaStream_t stream) {
  const detail::ArgCheck check("per_token_asymmetric_int8_quant");
  check_rows(check, args.input, args.output, {DType::kInt8});
  const std::int64_t rows = args.input.shape[0];
  check.vector("scales", args.scales, DType::kFP32, rows, "input", args.input);
  check.vector("zero_points", args.zero_points, DType::kInt32, rows, "input", args.input);
  check_eps(check, args.eps);
  if (args.input.numel() == 0) return;
  if (args.input.device == Device::kCPU) return reference::per_token_asymmetric_int8_quant(args);
#if LOWBIT_WITH_CUDA
  cuda::launch_per_token_quant(check.op(), row_params(args.input, args.output, args.eps, args.enable_pdl),
                               static_cast<float*>(args.scales.data),
                               static_cast<std::int32_t*>(args.zero_points.data),
                               std::numeric_limits<float>::infinity(), stream);
#else
  (void)stream;
  fail_without_cuda(check);
#endif
}

std::int64_t per_tensor_quant_workspace_bytes() { return 4; }

void per_tensor_quant(const PerTensorQuantArgs& args, cudaStream_t stream) {
  const detail::ArgCheck check("per_tensor_quant");
  check_rows(check, args.input, args.output, {DType::kFP8E4M3, DType::kInt8});
  check.vector("scale", args.scale, DType::kFP32, 1, "input", args.input);
  check_eps(check, args.eps);
  check_scale_ub(check, args.scale_ub);
  if (args.scale_ub && !args.dynamic) {
    check.fail("scale_ub", "no value for a static scale (it bounds the dynamic amax)", "a value");
  }
  const bool on_cuda = args.input.device == Device::kCUDA;
  if (args.dynamic && on_cuda) {
    const TensorView& w = args.workspace;
    if (w.data == nullptr || w.device != Device::kCUDA ||
        w.numel() * static_cast<std::int64_t>(dtype_size(w.dtype)) < per_tensor_quant_workspace_bytes()) {
      check.fail("workspace", "a CUDA buffer of >= " + std::to_string(per_tensor_quant_workspace_bytes()) +
                                  " bytes (per_tensor_quant_workspace_bytes())",
                 w.data == nullptr ? std::string("none") : w.describe());
    }
    check.aligned("workspace", w, 4);
  }
  if (!args.dynamic && !on_cuda) {
    const float s = *static_cast<const float*>(args.scale.data);
    if (!(std::isfinite(s) && s > 0.0f)) check.fail("scale", "a finite value > 0", std::to_string(s));
  }
  if (args.input.numel() == 0) return;
  if (!on_cuda) return reference::per_tensor_quant(args);
#if LOWBIT_WITH_CUDA
  cuda::launch_per_tensor_quant(check.op(), row_params(args.input, args.output, args.eps, args.enable_pdl),
                                static_cast<float*>(args.scale.data), args.dynamic,
                                amax_bound(args.scale_ub),
                                static_cast<std::uint32_t*>(args.workspace.data), stream);
#else
  (void)stream;
  fail_without_cuda(check);
#endif
}

}  // namespace lowbit
