// Host layer of the quantization ops: validate every argument, then run the CPU reference for
// host tensors or launch the sm_90a kernel for CUDA tensors.
#include "lowbit/quant.h"

#include <cmath>
#include <limits>
#include <string>

#include "../reference/quant.h"
#include "arg_check.h"
#include "scale_layout.h"

#if LOWBIT_WITH_CUDA
#include "../cuda/quant/per_token_group_quant_launch.h"
#endif

namespace lowbit {

namespace {

std::string shape_text(std::int64_t rows, std::int64_t cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

void validate(const PerTokenGroupQuantArgs& args, const detail::ArgCheck& check) {
  const int g = args.group_size;
  if (g != 32 && g != 64 && g != 128) check.fail("group_size", "32, 64 or 128", std::to_string(g));

  const TensorView& in = args.input;
  check.row_major_rows("input", in);
  check.dtype_in("input", in, {DType::kBF16, DType::kFP16, DType::kFP32});
  const std::int64_t rows = in.shape[0];
  const std::int64_t cols = in.shape[1];
  if (cols % g != 0) {
    check.fail("input", "K (dim 1) a multiple of group_size " + std::to_string(g), in.describe());
  }

  const TensorView& out = args.output;
  check.row_major_rows("output", out);
  check.dtype_in("output", out, {DType::kFP8E4M3, DType::kInt8});
  if (out.shape[0] != rows || out.shape[1] != cols) {
    check.fail("output", "shape " + shape_text(rows, cols) + " (input's)", out.describe());
  }

  const TensorView& sc = args.scales;
  const ScaleShape want = scale_storage_shape(args.scale_layout, rows, cols, g);
  check.dtype_in("scales", sc, {DType::kFP32});
  if (sc.rank != 2 || sc.shape[0] != want.rows || sc.shape[1] != want.cols) {
    check.fail("scales",
               "shape " + shape_text(want.rows, want.cols) + " for layout " +
                   scale_layout_name(args.scale_layout),
               sc.describe());
  }
  check.contiguous("scales", sc);

  if (!(std::isfinite(args.eps) && args.eps > 0.0f)) {
    check.fail("eps", "a finite value > 0", std::to_string(args.eps));
  }
  if (args.scale_ub && !(std::isfinite(*args.scale_ub) && *args.scale_ub > 0.0f)) {
    check.fail("scale_ub", "a finite value > 0", std::to_string(*args.scale_ub));
  }

  check.same_device("output", out, "input", in);
  check.same_device("scales", sc, "input", in);
  if (rows * cols == 0) return;
  check.not_null("input", in);
  check.not_null("output", out);
  check.not_null("scales", sc);
  if (in.device == Device::kCUDA) {
    // The kernel moves 8 elements per access: 16-byte loads, 8-byte stores.
    check.aligned("input", in, 16);
    if (rows > 1 && (in.strides[0] * dtype_size(in.dtype)) % 16 != 0) {
      check.fail("input", "row stride a multiple of 16 bytes (CUDA kernel)", in.describe());
    }
    check.aligned("output", out, 8);
    if (rows > 1 && out.strides[0] % 8 != 0) {
      check.fail("output", "row stride a multiple of 8 bytes (CUDA kernel)", out.describe());
    }
    check.aligned("scales", sc, 4);
    if (rows * (cols / g) >= (std::int64_t{1} << 32)) {
      check.fail("input", "fewer than 2^32 groups (CUDA kernel)", in.describe());
    }
  }
}

}  // namespace

void per_token_group_quant(const PerTokenGroupQuantArgs& args, cudaStream_t stream) {
  const detail::ArgCheck check("per_token_group_quant");
  validate(args, check);
  const std::int64_t rows = args.input.shape[0];
  const std::int64_t cols = args.input.shape[1];
  if (rows * cols == 0) return;

  if (args.input.device == Device::kCPU) {
    reference::per_token_group_quant(args);
    return;
  }
#if LOWBIT_WITH_CUDA
  const detail::ScaleStrides strides =
      detail::scale_strides(args.scale_layout, rows, cols / args.group_size);
  cuda::PerTokenGroupQuantParams params;
  params.input = args.input.data;
  params.output = args.output.data;
  params.scales = static_cast<float*>(args.scales.data);
  params.rows = rows;
  params.cols = cols;
  params.input_row_stride = args.input.strides[0];
  params.output_row_stride = args.output.strides[0];
  params.scale_stride_row = strides.per_row;
  params.scale_stride_group = strides.per_group;
  params.input_dtype = args.input.dtype;
  params.output_dtype = args.output.dtype;
  params.group_size = args.group_size;
  params.eps = args.eps;
  params.amax_bound = args.scale_ub ? *args.scale_ub : std::numeric_limits<float>::infinity();
  params.power_of_two_scale = args.power_of_two_scale;
  cuda::launch_per_token_group_quant(params, stream);
#else
  (void)stream;
  check.fail("input", "a CPU tensor (this lowbit was built without CUDA)", "a CUDA tensor");
#endif
}

}  // namespace lowbit
