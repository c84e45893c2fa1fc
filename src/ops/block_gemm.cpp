// Host layer of the block-scaled FP8 ops: block_fp8_quantize_weight, block_fp8_dequantize_weight
// and block_fp8_mm. Validate, then the CPU reference for host tensors or the sm_90a kernels for
// CUDA tensors.
#include <cmath>
#include <string>
#include <utility>

#include "../reference/block_gemm.h"
#include "arg_check.h"
#include "lowbit/block_gemm.h"
#include "scale_layout.h"

#if LOWBIT_WITH_CUDA
#include "../cuda/block_gemm/block_gemm_launch.h"
#include "../cuda/block_gemm/block_fp8_weight_launch.h"
#include "../cuda/common/device_properties.cuh"
#endif

namespace lowbit {

namespace {

std::int64_t blocks_of(std::int64_t extent) { return (extent + kBlockFp8Block - 1) / kBlockFp8Block; }

std::string shape_text(std::int64_t rows, std::int64_t cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

#if !LOWBIT_WITH_CUDA
[[noreturn]] void fail_without_cuda(const detail::ArgCheck& check, const char* argument) {
  check.fail(argument, "a CPU tensor (this lowbit was built without CUDA)", "a CUDA tensor");
}
#endif

// Rows of bytes [rows, cols] of `dtype` on the device of `ref`.
void check_rows(const detail::ArgCheck& check, const char* name, const TensorView& t,
                std::initializer_list<DType> dtypes, std::int64_t rows, std::int64_t cols,
                const char* ref_name, const TensorView& ref) {
  check.row_major_rows(name, t);
  check.dtype_in(name, t, dtypes);
  if (t.shape[0] != rows || t.shape[1] != cols) {
    check.fail(name, "shape " + shape_text(rows, cols), t.describe());
  }
  if (&t != &ref) check.same_device(name, t, ref_name, ref);
  if (t.numel() > 0) check.not_null(name, t);
}

// The [ceil(N/128), ceil(K/128)] fp32 block scales of an [N, K] weight.
void check_block_scales(const detail::ArgCheck& check, const char* name, const TensorView& scales,
                        std::int64_t rows, std::int64_t cols, const char* ref_name,
                        const TensorView& ref) {
  check.rank(name, scales, 2);
  check.dtype_in(name, scales, {DType::kFP32});
  if (scales.shape[0] != blocks_of(rows) || scales.shape[1] != blocks_of(cols)) {
    check.fail(name, "shape " + shape_text(blocks_of(rows), blocks_of(cols)) +
                         " (ceil(N / 128), ceil(K / 128))", scales.describe());
  }
  check.contiguous(name, scales);
  check.same_device(name, scales, ref_name, ref);
  if (scales.numel() > 0) check.not_null(name, scales);
}

}  // namespace

void block_fp8_quantize_weight(const BlockFp8QuantizeWeightArgs& args, cudaStream_t stream) {
  const detail::ArgCheck check("block_fp8_quantize_weight");
  check.row_major_rows("weight", args.weight);
  check.dtype_in("weight", args.weight, {DType::kBF16, DType::kFP16, DType::kFP32});
  const std::int64_t rows = args.weight.shape[0], cols = args.weight.shape[1];
  if (args.weight.numel() > 0) check.not_null("weight", args.weight);
  check_rows(check, "output", args.output, {DType::kFP8E4M3}, rows, cols, "weight", args.weight);
  check_block_scales(check, "scales", args.scales, rows, cols, "weight", args.weight);
  if (!(args.eps > 0.0f) || !std::isfinite(args.eps)) {
    check.fail("eps", "a finite value > 0", std::to_string(args.eps));
  }
  if (rows == 0 || cols == 0) return;
  if (args.weight.device == Device::kCPU) return reference::block_fp8_quantize_weight(args);
#if LOWBIT_WITH_CUDA
  cuda::launch_block_fp8_quantize_weight(args, stream);
#else
  (void)stream;
  fail_without_cuda(check, "weight");
#endif
}

void block_fp8_dequantize_weight(const BlockFp8DequantizeWeightArgs& args, cudaStream_t stream) {
  const detail::ArgCheck check("block_fp8_dequantize_weight");
  check.row_major_rows("weight", args.weight);
  check.dtype_in("weight", args.weight, {DType::kFP8E4M3});
  const std::int64_t rows = args.weight.shape[0], cols = args.weight.shape[1];
  if (args.weight.numel() > 0) check.not_null("weight", args.weight);
  check_block_scales(check, "scales", args.scales, rows, cols, "weight", args.weight);
  check_rows(check, "output", args.output, {DType::kBF16, DType::kFP16, DType::kFP32}, rows, cols,
             "weight", args.weight);
  if (rows == 0 || cols == 0) return;
  if (args.weight.device == Device::kCPU) return reference::block_fp8_dequantize_weight(args);
#if LOWBIT_WITH_CUDA
  cuda::launch_block_fp8_dequantize_weight(args, stream);
#else
  (void)stream;
  fail_without_cuda(check, "weight");
#endif
}

namespace {

struct MmShape {
  std::int64_t m, n, k;
};

MmShape check_block_fp8_mm(const detail::ArgCheck& check, const BlockFp8MmArgs& args) {
  check.row_major_rows("a", args.a);
  check.dtype_in("a", args.a, {DType::kFP8E4M3});
  check.row_major_rows("b", args.b);
  check.dtype_in("b", args.b, {DType::kFP8E4M3});
  const std::int64_t m = args.a.shape[0], k = args.a.shape[1], n = args.b.shape[0];
  if (args.b.shape[1] != k) {
    check.fail("b", "[N, K] with K = " + std::to_string(k) + " (from a)", args.b.describe());
  }
  check.same_device("b", args.b, "a", args.a);
  const std::int64_t k_blocks = blocks_of(k);
  const ScaleShape scale_shape = scale_storage_shape(args.a_scale_layout, m, k_blocks * 128, 128);
  check.rank("a_scales", args.a_scales, 2);
  check.dtype_in("a_scales", args.a_scales, {DType::kFP32});
  if (args.a_scales.shape[0] != scale_shape.rows || args.a_scales.shape[1] != scale_shape.cols) {
    check.fail("a_scales",
               "shape " + shape_text(scale_shape.rows, scale_shape.cols) + " (" +
                   scale_layout_name(args.a_scale_layout) + " layout of [M, ceil(K / 128)])",
               args.a_scales.describe());
  }
  check.contiguous("a_scales", args.a_scales);
  check.same_device("a_scales", args.a_scales, "a", args.a);
  check_block_scales(check, "b_scales", args.b_scales, n, k, "a", args.a);
  check_rows(check, "output", args.output, {DType::kBF16, DType::kFP32}, m, n, "a", args.a);
  if (args.a.device == Device::kCUDA && m > 0 && n > 0) {
    check.not_null("a", args.a);
    check.not_null("b", args.b);
    check.not_null("a_scales", args.a_scales);
    // NOTE: TMA needs 16-byte aligned bases and row strides.
    if (k % 16 != 0) check.fail("a", "K a multiple of 16 (16-byte TMA rows)", args.a.describe());
    check.tma_rows("a", args.a);
    check.tma_rows("b", args.b);
    check.tma_rows("output", args.output);
    const int per_16_bytes = args.output.dtype == DType::kBF16 ? 8 : 4;
    if (n % per_16_bytes != 0) {
      check.fail("output", "N a multiple of " + std::to_string(per_16_bytes) +
                               " (16-byte TMA rows)", args.output.describe());
    }
    check.aligned("a_scales", args.a_scales, 16);
  }
  return {m, n, k};
}

#if LOWBIT_WITH_CUDA
cuda::BlockFp8GemmProblem problem_of(const BlockFp8MmArgs& args, const MmShape& s) {
  cuda::BlockFp8GemmProblem p;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.a = args.a.data;
  p.lda = s.m > 1 ? args.a.strides[0] : s.k;
  const detail::ScaleStrides strides = detail::scale_strides(args.a_scale_layout, s.m, blocks_of(s.k));
  p.a_scales = static_cast<const float*>(args.a_scales.data);
  p.a_scale_stride_m = strides.per_row;
  p.a_scale_stride_k = strides.per_group;
  p.b = args.b.data;
  p.ldb = s.n > 1 ? args.b.strides[0] : s.k;
  p.b_scales = static_cast<const float*>(args.b_scales.data);
  p.d = args.output.data;
  p.ldd = s.m > 1 ? args.output.strides[0] : s.n;
  p.d_dtype = args.output.dtype;
  p.sm_count = cuda::current_device_sm_count("block_fp8_mm");
  p.dependent_launch = args.enable_pdl;
  return p;
}

cuda::BlockFp8GemmConfig config_of(const cuda::BlockFp8GemmProblem& p, ScaleLayout layout) {
  const bool m_major = layout != ScaleLayout::kRowMajor;
  return cuda::choose_block_fp8_gemm_config(p.m, p.n, p.k, m_major, p.a_scale_stride_k,
                                            p.d_dtype == DType::kFP32);
}
#endif

}  // namespace

std::int64_t block_fp8_mm_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k,
                                          ScaleLayout a_scale_layout, DType output_dtype) {
  const detail::ArgCheck check("block_fp8_mm_workspace_bytes");
  if (m < 0 || n < 0 || k < 0) check.fail("m, n, k", "non-negative", shape_text(m, n) + " k=" + std::to_string(k));
  if (output_dtype != DType::kBF16 && output_dtype != DType::kFP32) {
    check.fail("output_dtype", "bf16 or fp32", dtype_name(output_dtype));
  }
  if (m == 0 || n == 0 || k == 0) return 0;
#if LOWBIT_WITH_CUDA
  cuda::BlockFp8GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.lda = p.ldb = k;
  p.ldd = n;
  const detail::ScaleStrides strides = detail::scale_strides(a_scale_layout, m, blocks_of(k));
  p.a_scale_stride_m = strides.per_row;
  p.a_scale_stride_k = strides.per_group;
  p.d_dtype = output_dtype;
  p.sm_count = cuda::current_device_sm_count("block_fp8_mm_workspace_bytes");
  return static_cast<std::int64_t>(cuda::block_fp8_gemm_workspace_bytes(p, config_of(p, a_scale_layout)));
#else
  (void)a_scale_layout;
  return 0;
#endif
}

void block_fp8_mm(const BlockFp8MmArgs& args, cudaStream_t stream) {
  const detail::ArgCheck check("block_fp8_mm");
  const MmShape shape = check_block_fp8_mm(check, args);
  if (shape.m == 0 || shape.n == 0) return;
  if (args.a.device == Device::kCPU) return reference::block_fp8_mm(args);
#if LOWBIT_WITH_CUDA
  const cuda::BlockFp8GemmProblem problem = problem_of(args, shape);
  const cuda::BlockFp8GemmConfig config = config_of(problem, args.a_scale_layout);
  const std::size_t needed = cuda::block_fp8_gemm_workspace_bytes(problem, config);
  check.workspace("workspace", args.workspace, needed, "block_fp8_mm_workspace_bytes");
  cuda::launch_block_fp8_gemm(problem, config, args.workspace.data, needed, stream);
#else
  (void)stream;
  fail_without_cuda(check, "a");
#endif
}

}  // namespace lowbit
