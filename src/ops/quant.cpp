// Host layer of per_token_group_quant: validate every argument, then run the CPU reference for
// host tensors or launch the sm_90a kernel for CUDA tensors.
#include "lowbit/quant.h"

#include <string>

#include "../reference/quant.h"
#include "arg_check.h"
#include "group_quant_check.h"
#include "group_quant_launch_params.h"

namespace lowbit {

void per_token_group_quant(const PerTokenGroupQuantArgs& args, cudaStream_t stream) {
  const detail::ArgCheck check("per_token_group_quant");
  detail::check_float_rows_input(check, args.input, {DType::kBF16, DType::kFP16, DType::kFP32});
  const std::int64_t rows = args.input.shape[0];
  const std::int64_t cols = args.input.shape[1];
  detail::check_group_quant_outputs(check, args.input, args.output, args.scales, rows, cols,
                                    args.group_size, args.scale_layout, args.eps, args.scale_ub);
  if (rows * cols == 0) return;

  if (args.input.device == Device::kCPU) {
    reference::per_token_group_quant(args);
    return;
  }
  detail::GroupQuantLaunch launch{args.input, args.output, args.scales, rows, cols,
                                  args.group_size, args.scale_layout, args.eps, args.scale_ub,
                                  args.power_of_two_scale, args.enable_pdl};
  detail::launch_group_quant_kernel(check, launch, std::nullopt, false, stream);
}

}  // namespace lowbit
