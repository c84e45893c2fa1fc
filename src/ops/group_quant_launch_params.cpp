// Translation of validated group-quantizer arguments into kernel parameters.
#include "group_quant_launch_params.h"

#include <limits>

#include "scale_layout.h"

#if LOWBIT_WITH_CUDA
#include "../cuda/quant/group_quant_launch.h"
#endif

namespace lowbit::detail {

void launch_group_quant_kernel(const ArgCheck& check, const GroupQuantLaunch& launch,
                               const std::optional<float>& limit, bool silu_mul,
                               cudaStream_t stream) {
#if LOWBIT_WITH_CUDA
  const ScaleStrides strides =
      scale_strides(launch.scale_layout, launch.rows, launch.cols / launch.group_size);
  cuda::GroupQuantParams params;
  params.input = launch.input.data;
  params.output = launch.output.data;
  params.scales = static_cast<float*>(launch.scales.data);
  params.rows = launch.rows;
  params.cols = launch.cols;
  params.input_row_stride = launch.input.strides[0];
  params.output_row_stride = launch.output.strides[0];
  params.scale_stride_row = strides.per_row;
  params.scale_stride_group = strides.per_group;
  params.input_dtype = launch.input.dtype;
  params.output_dtype = launch.output.dtype;
  params.group_size = launch.group_size;
  params.eps = launch.eps;
  params.amax_bound =
      launch.scale_ub ? *launch.scale_ub : std::numeric_limits<float>::infinity();
  params.power_of_two_scale = launch.power_of_two_scale;
  params.silu_mul = silu_mul;
  params.clamp = limit.has_value();
  params.limit = limit.value_or(0.0f);
  params.dependent_launch = launch.enable_pdl;
  cuda::launch_group_quant(check.op(), params, stream);
#else
  (void)launch;
  (void)limit;
  (void)silu_mul;
  (void)stream;
  check.fail("input", "a CPU tensor (this lowbit was built without CUDA)", "a CUDA tensor");
#endif
}

}  // namespace lowbit::detail
