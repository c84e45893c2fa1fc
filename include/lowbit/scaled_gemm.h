// W8A8 scaled GEMM with the dequantization fused into the epilogue (vLLM's four CUTLASS
// epilogues), for FP8 e4m3fn or INT8 operands:
//   Scaled            D = s_a * (s_b * acc)
//   ScaledBias        D = s_a * (s_b * acc) + bias
//   ScaledAzp         D = s_a * (s_b * (acc - azp_adj)) + bias          (int8 only)
//   ScaledAzpPerToken D = s_a * (s_b * (acc - azp * azp_adj)) + bias    (int8 only)
// where acc = A^ . B^ (int32 for int8, fp32 for fp8), s_a is per-tensor or per-token, s_b
// per-tensor or per-channel. Recipe, evaluation order and tolerances: docs/scaled_gemm.md.
#pragma once

#include <cstdint>

#include "lowbit/tensor.h"

namespace lowbit {

enum class ScaledMmEpilogue : std::uint8_t { kScaled, kScaledBias, kScaledAzp, kScaledAzpPerToken };
const char* scaled_mm_epilogue_name(ScaledMmEpilogue epilogue);

// The epilogue is chosen by which optional tensors are given: bias alone -> ScaledBias,
// azp_adj -> ScaledAzp, azp_adj + azp -> ScaledAzpPerToken (bias optional in both).
struct ScaledMmArgs {
  TensorView a;         // [M, K] fp8_e4m3fn | int8, unit column stride, row stride >= K
  TensorView b;         // [N, K] same dtype as a (weights K-major: B is K x N column-major)
  TensorView a_scales;  // fp32, contiguous: 1 element (per-tensor) or M (per-token)
  TensorView b_scales;  // fp32, contiguous: 1 element (per-tensor) or N (per-channel)
  TensorView bias;      // optional [N], the output dtype
  TensorView azp_adj;   // optional [N] int32: z_a * colsum(B^) (ScaledAzp) or colsum(B^) (PerToken)
  TensorView azp;       // optional [M] int32 per-token zero points; needs azp_adj = colsum(B^)
  TensorView output;    // [M, N] bf16 | fp16, unit column stride, row stride >= N
  // CUDA only: device memory of at least scaled_mm_workspace_bytes(...) bytes when that is
  // non-zero (no configuration needs any today; callers that size it stay correct if one
  // does). Host: unused.
  TensorView workspace;
  // Programmatic dependent launch (sm_90): the kernels (all but the forced-only gemv_wgmma)
  // may start while the stream's previous kernel finishes, reading only the weight b before it
  // has (docs/pdl.md). That kernel must not write b. It also moves a few decode configuration
  // choices (fp8 at 9-16 tokens).
  bool enable_pdl = false;
};

ScaledMmEpilogue scaled_mm_epilogue(const ScaledMmArgs& args);

// Workspace bytes the CUDA path needs for this problem on the current device.
std::int64_t scaled_mm_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k,
                                       DType input_dtype, DType output_dtype = DType::kBF16);

void scaled_mm(const ScaledMmArgs& args, cudaStream_t stream = nullptr);

// azp_adj[n] = zero_point * sum_k B^[n, k] in int32, for an int8 weight [N, K]. zero_point = 1
// gives the column sums ScaledAzpPerToken takes; the static per-tensor activation zero point
// gives ScaledAzp's azp_adj.
struct ScaledMmAzpAdjustmentArgs {
  TensorView b;        // [N, K] int8, unit column stride, row stride >= K
  TensorView output;   // [N] int32, contiguous
  std::int32_t zero_point = 1;
};
void scaled_mm_azp_adjustment(const ScaledMmAzpAdjustmentArgs& args,
                              cudaStream_t stream = nullptr);

}  // namespace lowbit
