// Host layer of the scaled GEMM ops: scaled_mm and scaled_mm_azp_adjustment. Validate, then the
// CPU reference for host tensors or the sm_90a kernels for CUDA tensors.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "../reference/scaled_gemm.h"
#include "arg_check.h"
#include "lowbit/scaled_gemm.h"

#if LOWBIT_WITH_CUDA
#include "../cuda/common/device_properties.cuh"
#include "../cuda/scaled_gemm/scaled_gemm_launch.h"
#endif

namespace lowbit {

const char* scaled_mm_epilogue_name(ScaledMmEpilogue epilogue) {
  switch (epilogue) {
    case ScaledMmEpilogue::kScaled: return "Scaled";
    case ScaledMmEpilogue::kScaledBias: return "ScaledBias";
    case ScaledMmEpilogue::kScaledAzp: return "ScaledAzp";
    case ScaledMmEpilogue::kScaledAzpPerToken: return "ScaledAzpPerToken";
  }
  return "?";
}

namespace {

// A default TensorView (no data, rank 0) is an optional argument left out.
bool given(const TensorView& t) { return t.data != nullptr || t.rank != 0; }

// int8: |acc| <= 128 * 128 * K and |acc - azp * colsum| <= 255 * 128 * K stay below 2^31.
constexpr std::int64_t kMaxInt8K = 65536;
// CUTLASS problem extents are int.
constexpr std::int64_t kMaxExtent = (std::int64_t{1} << 31) - 1;

#if !LOWBIT_WITH_CUDA
[[noreturn]] void fail_without_cuda(const detail::ArgCheck& check, const char* argument) {
  check.fail(argument, "a CPU tensor (this lowbit was built without CUDA)", "a CUDA tensor");
}
#endif

// fp32 scales: one element (per-tensor) or `length` (per-token / per-channel), contiguous.
// Returns whether it is a vector.
bool check_scales(const detail::ArgCheck& check, const char* name, const TensorView& t,
                  std::int64_t length, const char* per_row_name, const TensorView& ref) {
  check.dtype_in(name, t, {DType::kFP32});
  const std::int64_t count = t.rank == 0 ? 0 : t.numel();
  const bool shape_ok = t.rank >= 1 && t.rank <= 2 && (count == 1 || count == length) &&
                        (t.rank == 1 || t.shape[1] == 1 || t.shape[0] == 1);
  if (!shape_ok) {
    check.fail(name,
               "fp32 [1] (per-tensor) or [" + std::to_string(length) + "] (" + per_row_name + ")",
               t.describe());
  }
  check.contiguous(name, t);
  check.same_device(name, t, "a", ref);
  if (count > 0) check.not_null(name, t);
  return count != 1 || length == 1;
}

struct MmShape {
  std::int64_t m, n, k;
};

MmShape check_scaled_mm(const detail::ArgCheck& check, const ScaledMmArgs& args) {
  check.row_major_rows("a", args.a);
  check.dtype_in("a", args.a, {DType::kFP8E4M3, DType::kInt8});
  check.row_major_rows("b", args.b);
  check.dtype_in("b", args.b, {args.a.dtype});
  const std::int64_t m = args.a.shape[0], k = args.a.shape[1], n = args.b.shape[0];
  if (args.b.shape[1] != k) {
    check.fail("b", "[N, K] with K = " + std::to_string(k) + " (from a)", args.b.describe());
  }
  check.same_device("b", args.b, "a", args.a);
  for (const auto& [name, extent] : {std::pair<const char*, std::int64_t>{"M", m}, {"N", n}, {"K", k}}) {
    if (extent > kMaxExtent) check.fail(name, "< 2^31", std::to_string(extent));
  }
  const bool int8 = args.a.dtype == DType::kInt8;
  if (int8 && k > kMaxInt8K) {
    check.fail("a", "K <= 65536 for int8 (the int32 accumulator must not overflow)",
               args.a.describe());
  }
  check_scales(check, "a_scales", args.a_scales, m, "per-token", args.a);
  check_scales(check, "b_scales", args.b_scales, n, "per-channel", args.a);

  check.row_major_rows("output", args.output);
  check.dtype_in("output", args.output, {DType::kBF16, DType::kFP16});
  if (args.output.shape[0] != m || args.output.shape[1] != n) {
    check.fail("output", "shape [" + std::to_string(m) + ", " + std::to_string(n) + "] ([M, N])",
               args.output.describe());
  }
  check.same_device("output", args.output, "a", args.a);

  if (given(args.bias)) {
    check.vector("bias", args.bias, args.output.dtype, n, "a", args.a);
    if (n > 0) check.not_null("bias", args.bias);
  }
  if (given(args.azp_adj)) {
    if (!int8) check.fail("azp_adj", "no azp_adj for fp8 inputs (zero points are int8 only)", "a tensor");
    check.vector("azp_adj", args.azp_adj, DType::kInt32, n, "a", args.a);
    if (n > 0) check.not_null("azp_adj", args.azp_adj);
  }
  if (given(args.azp)) {
    if (!int8) check.fail("azp", "no azp for fp8 inputs (zero points are int8 only)", "a tensor");
    if (!given(args.azp_adj)) {
      check.fail("azp_adj", "the column sums of b (scaled_mm_azp_adjustment with zero_point 1) "
                            "when azp is given", "none");
    }
    check.vector("azp", args.azp, DType::kInt32, m, "a", args.a);
    if (m > 0) check.not_null("azp", args.azp);
  }

  if (args.a.device == Device::kCUDA && m > 0 && n > 0) {
    check.not_null("a", args.a);
    check.not_null("b", args.b);
    check.not_null("output", args.output);
    // NOTE: TMA needs 16-byte aligned bases and row strides.
    if (k % 16 != 0) check.fail("a", "K a multiple of 16 (16-byte TMA rows)", args.a.describe());
    if (n % 8 != 0) check.fail("output", "N a multiple of 8 (16-byte TMA rows)", args.output.describe());
    check.tma_rows("a", args.a);
    check.tma_rows("b", args.b);
    check.tma_rows("output", args.output);
    // NOTE: the epilogue may load vectors in 16-byte pieces.
    for (const auto& [name, t] : {std::pair<const char*, const TensorView&>{"a_scales", args.a_scales},
                                  {"b_scales", args.b_scales}, {"bias", args.bias},
                                  {"azp_adj", args.azp_adj}, {"azp", args.azp}}) {
      if (given(t)) check.aligned(name, t, 16);
    }
  }
  return {m, n, k};
}

#if LOWBIT_WITH_CUDA
cuda::ScaledGemmProblem problem_of(const ScaledMmArgs& args, const MmShape& s) {
  cuda::ScaledGemmProblem p;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.ab_dtype = args.a.dtype;
  p.a = args.a.data;
  p.lda = s.m > 1 ? args.a.strides[0] : s.k;
  p.b = args.b.data;
  p.ldb = s.n > 1 ? args.b.strides[0] : s.k;
  p.a_scales = static_cast<const float*>(args.a_scales.data);
  p.a_per_token = args.a_scales.numel() != 1;
  p.b_scales = static_cast<const float*>(args.b_scales.data);
  p.b_per_channel = args.b_scales.numel() != 1;
  p.bias = given(args.bias) ? args.bias.data : nullptr;
  p.azp_adj = given(args.azp_adj) ? static_cast<const std::int32_t*>(args.azp_adj.data) : nullptr;
  p.azp = given(args.azp) ? static_cast<const std::int32_t*>(args.azp.data) : nullptr;
  p.d = args.output.data;
  p.ldd = s.m > 1 ? args.output.strides[0] : s.n;
  p.d_dtype = args.output.dtype;
  p.sm_count = cuda::current_device_sm_count("scaled_mm");
  p.dependent_launch = args.enable_pdl;
  return p;
}
#endif

}  // namespace

ScaledMmEpilogue scaled_mm_epilogue(const ScaledMmArgs& args) {
  if (given(args.azp)) return ScaledMmEpilogue::kScaledAzpPerToken;
  if (given(args.azp_adj)) return ScaledMmEpilogue::kScaledAzp;
  if (given(args.bias)) return ScaledMmEpilogue::kScaledBias;
  return ScaledMmEpilogue::kScaled;
}

std::int64_t scaled_mm_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k,
                                       DType input_dtype, DType output_dtype) {
  const detail::ArgCheck check("scaled_mm_workspace_bytes");
  if (m < 0 || n < 0 || k < 0) {
    check.fail("m, n, k", "non-negative",
               std::to_string(m) + ", " + std::to_string(n) + ", " + std::to_string(k));
  }
  if (input_dtype != DType::kFP8E4M3 && input_dtype != DType::kInt8) {
    check.fail("input_dtype", "fp8_e4m3fn or int8", dtype_name(input_dtype));
  }
  if (output_dtype != DType::kBF16 && output_dtype != DType::kFP16) {
    check.fail("output_dtype", "bf16 or fp16", dtype_name(output_dtype));
  }
  if (m == 0 || n == 0 || k == 0) return 0;
#if LOWBIT_WITH_CUDA
  cuda::ScaledGemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.lda = p.ldb = k;
  p.ldd = n;
  p.ab_dtype = input_dtype;
  p.d_dtype = output_dtype;
  p.sm_count = cuda::current_device_sm_count("scaled_mm_workspace_bytes");
  // Enough for the choice with and without enable_pdl, which may differ.
  std::size_t bytes = 0;
  for (bool programmatic : {false, true}) {
    const cuda::ScaledGemmConfig config =
        cuda::choose_scaled_gemm_config(m, n, k, input_dtype, p.sm_count, programmatic);
    bytes = std::max(bytes, cuda::scaled_gemm_workspace_bytes(p, config));
  }
  return static_cast<std::int64_t>(bytes);
#else
  return 0;
#endif
}

void scaled_mm(const ScaledMmArgs& args, cudaStream_t stream) {
  const detail::ArgCheck check("scaled_mm");
  const MmShape shape = check_scaled_mm(check, args);
  if (shape.m == 0 || shape.n == 0) return;
  if (args.a.device == Device::kCPU) return reference::scaled_mm(args);
#if LOWBIT_WITH_CUDA
  const cuda::ScaledGemmProblem problem = problem_of(args, shape);
  const cuda::ScaledGemmConfig config =
      cuda::choose_scaled_gemm_config(shape.m, shape.n, shape.k, problem.ab_dtype,
                                      problem.sm_count, problem.dependent_launch);
  const std::size_t needed = cuda::scaled_gemm_workspace_bytes(problem, config);
  check.workspace("workspace", args.workspace, needed, "scaled_mm_workspace_bytes");
  cuda::launch_scaled_gemm(problem, config, args.workspace.data, needed, stream);
#else
  (void)stream;
  fail_without_cuda(check, "a");
#endif
}

void scaled_mm_azp_adjustment(const ScaledMmAzpAdjustmentArgs& args, cudaStream_t stream) {
  const detail::ArgCheck check("scaled_mm_azp_adjustment");
  check.row_major_rows("b", args.b);
  check.dtype_in("b", args.b, {DType::kInt8});
  const std::int64_t n = args.b.shape[0], k = args.b.shape[1];
  if (k > kMaxInt8K) check.fail("b", "K <= 65536 (int32 sums)", args.b.describe());
  if (args.zero_point < -255 || args.zero_point > 255) {
    check.fail("zero_point", "in [-255, 255] (an int8 zero point; 1 for column sums)",
               std::to_string(args.zero_point));
  }
  check.vector("output", args.output, DType::kInt32, n, "b", args.b);
  if (n == 0) return;
  check.not_null("output", args.output);
  if (k > 0) check.not_null("b", args.b);
  if (args.b.device == Device::kCPU) return reference::scaled_mm_azp_adjustment(args);
#if LOWBIT_WITH_CUDA
  cuda::launch_scaled_gemm_azp_adjustment(static_cast<const std::int8_t*>(args.b.data), n, k,
                                          n > 1 ? args.b.strides[0] : k, args.zero_point,
                                          static_cast<std::int32_t*>(args.output.data), stream);
#else
  (void)stream;
  fail_without_cuda(check, "b");
#endif
}

}  // namespace lowbit
