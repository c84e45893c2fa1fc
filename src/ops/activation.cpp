// Host layer of silu_and_mul and silu_and_mul_quant: validate, then the CPU reference for host
// tensors or the sm_90a kernels for CUDA tensors.
#include "lowbit/activation.h"

#include <cmath>
#include <string>

#include "../reference/quant.h"
#include "arg_check.h"
#include "group_quant_check.h"
#include "group_quant_launch_params.h"

#if LOWBIT_WITH_CUDA
#include "../cuda/activation/silu_and_mul_launch.h"
#endif

namespace lowbit {

namespace {

// Input [T, 2H] bf16/fp16; returns H.
std::int64_t check_gate_up_input(const detail::ArgCheck& check, const TensorView& input,
                                 const std::optional<float>& limit) {
  detail::check_float_rows_input(check, input, {DType::kBF16, DType::kFP16});
  if (input.shape[1] % 2 != 0) {
    check.fail("input", "an even width [T, 2H] holding [gate | up]", input.describe());
  }
  if (limit && !(std::isfinite(*limit) && *limit > 0.0f)) {
    check.fail("limit", "a finite value > 0", std::to_string(*limit));
  }
  return input.shape[1] / 2;
}

}  // namespace

void silu_and_mul(const SiluAndMulArgs& args, cudaStream_t stream) {
  const detail::ArgCheck check("silu_and_mul");
  const std::int64_t h = check_gate_up_input(check, args.input, args.limit);
  const std::int64_t rows = args.input.shape[0];
  check.row_major_rows("output", args.output);
  check.dtype_in("output", args.output, {DType::kBF16, DType::kFP16});
  if (args.output.shape[0] != rows || args.output.shape[1] != h) {
    check.fail("output", "shape " + detail::shape_text(rows, h), args.output.describe());
  }
  check.same_device("output", args.output, "input", args.input);
  if (rows * h == 0) return;
  check.not_null("output", args.output);
  if (args.input.device == Device::kCPU) {
    reference::silu_and_mul(args);
    return;
  }
#if LOWBIT_WITH_CUDA
  // 8 elements per access: H and the output rows must keep 16-byte alignment.
  if (h % 8 != 0) check.fail("input", "H a multiple of 8 (CUDA kernel)", args.input.describe());
  check.aligned("output", args.output, 16);
  if (rows > 1 && args.output.strides[0] % 8 != 0) {
    check.fail("output", "row stride a multiple of 16 bytes (CUDA kernel)", args.output.describe());
  }
  cuda::SiluAndMulParams params{args.input.data,        args.output.data, rows, h,
                                args.input.strides[0],  args.output.strides[0],
                                args.input.dtype,       args.output.dtype,
                                args.limit.has_value(), args.limit.value_or(0.0f),
                                args.enable_pdl};
  cuda::launch_silu_and_mul(check.op(), params, stream);
#else
  (void)stream;
  check.fail("input", "a CPU tensor (this lowbit was built without CUDA)", "a CUDA tensor");
#endif
}

void silu_and_mul_quant(const SiluAndMulQuantArgs& args, cudaStream_t stream) {
  const detail::ArgCheck check("silu_and_mul_quant");
  const std::int64_t h = check_gate_up_input(check, args.input, args.limit);
  const std::int64_t rows = args.input.shape[0];
  detail::check_group_quant_outputs(check, args.input, args.output, args.scales, rows, h,
                                    args.group_size, args.scale_layout, args.eps, args.scale_ub);
  if (rows * h == 0) return;
  if (args.input.device == Device::kCPU) {
    reference::silu_and_mul_quant(args);
    return;
  }
  detail::GroupQuantLaunch launch{args.input, args.output, args.scales, rows, h,
                                  args.group_size, args.scale_layout, args.eps, args.scale_ub,
                                  args.power_of_two_scale, args.enable_pdl};
  detail::launch_group_quant_kernel(check, launch, args.limit, true, stream);
}

}  // namespace lowbit
