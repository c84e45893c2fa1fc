// NVFP4 weights for Hopper MoE decode: quantization (NVIDIA ModelOpt recipe), 2:4 structured
// pruning, the kernels' weight layouts, and the bandwidth-bound dense and 2:4-sparse GEMVs.
// Recipes, byte layouts and tolerances: docs/nvfp4.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "lowbit/tensor.h"

namespace lowbit {

// ---- quantization ------------------------------------------------------------------------------
// w ~= e2m1 * e4m3_block_scale * global_scale, one block scale per 16 consecutive K elements:
//   global = amax(W) / (6 * 448)                  (1 when amax is 0)
//   s_b    = e4m3(block_amax / (6 * global))      (1.0 for an all-zero block)
//   q      = e2m1(w / (s_b * global))             round half to even, saturating at 6
struct Nvfp4QuantizeWeightArgs {
  TensorView weight;        // [N, K] bf16 | fp16 | fp32 rows (unit column stride); K % 16 == 0
  TensorView packed;        // [N, K / 2] uint8, contiguous: element 0 of a pair in the low nibble
  TensorView block_scales;  // [N, K / 16] fp8_e4m3fn, contiguous
  TensorView global_scale;  // [1] fp32: written, or read when global_scale_is_input
  // true: use the caller's global scale (e.g. one shared by fused gate and up projections).
  bool global_scale_is_input = false;
  // CUDA path with a computed global scale: a device buffer of at least
  // nvfp4_quantize_weight_workspace_bytes() bytes (the amax of the first pass). Host: unused.
  TensorView workspace;
};
std::int64_t nvfp4_quantize_weight_workspace_bytes();
void nvfp4_quantize_weight(const Nvfp4QuantizeWeightArgs& args, cudaStream_t stream = nullptr);

// w = (e2m1 * s_b) * global, the first product exact, one rounding to float32, then to output.
struct Nvfp4DequantizeWeightArgs {
  TensorView packed;        // [N, K / 2] uint8, contiguous
  TensorView block_scales;  // [N, K / 16] fp8_e4m3fn, contiguous
  TensorView global_scale;  // [1] fp32
  TensorView output;        // [N, K] bf16 | fp16 | fp32, contiguous
};
void nvfp4_dequantize_weight(const Nvfp4DequantizeWeightArgs& args, cudaStream_t stream = nullptr);

// ---- 2:4 pruning (weight preparation: host tensors) -------------------------------------------
// In every 4 consecutive K values keep the 2 of largest magnitude (the lower index wins a tie);
// block scales and the global scale are unchanged. Compressed format, per row:
//   values  [K / 4] uint8: the kept codes of group g in byte g, lower position in the low nibble
//   indices [K / 8] uint8: 2-bit positions (0..3) of the kept values, group g's pair in bits
//                          [4*(g%2) .. 4*(g%2)+3] of byte g/2, lower position in the lower bits
struct Nvfp4Sparsify24Args {
  TensorView packed;        // [N, K / 2] uint8 dense codes; K % 16 == 0
  TensorView block_scales;  // [N, K / 16] fp8_e4m3fn (for the error report)
  float global_scale = 1.0f;
  TensorView values;        // [N, K / 4] uint8 (output)
  TensorView indices;       // [N, K / 8] uint8 (output)
};
struct Nvfp4PruneReport {
  std::int64_t groups = 0;                // groups of 4 values
  std::int64_t groups_losing_nonzeros = 0;  // groups that had more than 2 nonzero values
  double relative_frobenius_error = 0.0;  // ||W - W_24||_F / ||W||_F on dequantized values
  double max_abs_error = 0.0;             // max |W - W_24| on dequantized values
};
Nvfp4PruneReport nvfp4_sparsify_24(const Nvfp4Sparsify24Args& args);

// The dense NVFP4 codes of a 2:4 compressed weight (zeros at the pruned positions).
void nvfp4_sparse24_to_dense(const TensorView& values, const TensorView& indices,
                             const TensorView& packed);

// ---- GEMV layouts (weight preparation: host tensors) ------------------------------------------
// The GEMV kernels read weights re-laid out so that one 16-byte load per thread feeds the tensor
// cores (docs/nvfp4.md). Shapes and sizes do not change: [N, ...] or [E, N, ...] stacked
// experts; N % 16 == 0 and K % 64 == 0.
void nvfp4_relayout_for_gemv(const TensorView& packed, const TensorView& block_scales,
                             const TensorView& gemv_packed, const TensorView& gemv_block_scales);
void nvfp4_sparse24_relayout_for_gemv(const TensorView& values, const TensorView& indices,
                                      const TensorView& block_scales,
                                      const TensorView& gemv_values,
                                      const TensorView& gemv_indices,
                                      const TensorView& gemv_block_scales);

// ---- GEMV (MoE decode) ------------------------------------------------------------------------
// Token lists per slot, all in one launch. Slot s multiplies the rows token_ids[slot_offsets[s]
// .. slot_offsets[s + 1]) of x by expert expert_ids[s] (a negative id leaves the slot idle) and
// writes output rows slot_offsets[s] .. slot_offsets[s + 1]. The lists live on the device and are
// never read by the host: one captured CUDA graph serves every routing. A slot may hold any
// number of tokens (the kernels are built for 1..16, more loop); token ids must lie in [0, T)
// and expert ids below E (ids out of range write NaN rows).
struct Nvfp4MoeRouting {
  TensorView expert_ids;    // [S] int32
  TensorView slot_offsets;  // [S + 1] int32, non-decreasing, slot_offsets[0] == 0
  TensorView token_ids;     // [P] int32, P = output rows
};

// output[p, n] = bf16(global[e] * sum_k x[t, k] * (e2m1[e, n, k] * s_b[e, n, k / 16])), fp32
// accumulation on the tensor cores. Without routing, E must be 1 and output row m = x row m.
struct Nvfp4GemvArgs {
  TensorView x;              // [T, K] bf16, unit column stride, row stride % 8 == 0
  TensorView packed;         // [E, N, K / 2] or [N, K / 2] uint8, GEMV layout
  TensorView block_scales;   // [E, N, K / 16] or [N, K / 16] fp8_e4m3fn, GEMV layout
  TensorView global_scales;  // [E] fp32
  TensorView output;         // [P, N] bf16, unit column stride
  std::optional<Nvfp4MoeRouting> routing;
  // Programmatic dependent launch (sm_90): the kernel's blocks may start while the stream's
  // previous kernel finishes; they read nothing before it has (docs/pdl.md).
  bool enable_pdl = false;
  // Under enable_pdl, each warp asks L2 for its first weights before the wait, aimed by the
  // expert id the routing holds then. Right when the routing was written before the previous
  // kernel (down behind gate_up); when that kernel writes it (a router right before gate_up) the
  // guess reads the old routing, and false saves the wasted bandwidth (docs/pdl.md).
  bool prefetch_before_wait = true;
};
void nvfp4_gemv(const Nvfp4GemvArgs& args, cudaStream_t stream = nullptr);

// The same product with 2:4 compressed weights (values, indices, block scales in GEMV layout).
struct Nvfp4Sparse24GemvArgs {
  TensorView x;              // [T, K] bf16
  TensorView values;         // [E, N, K / 4] or [N, K / 4] uint8, GEMV layout
  TensorView indices;        // [E, N, K / 8] or [N, K / 8] uint8, GEMV layout
  TensorView block_scales;   // [E, N, K / 16] or [N, K / 16] fp8_e4m3fn, GEMV layout
  TensorView global_scales;  // [E] fp32
  TensorView output;         // [P, N] bf16
  std::optional<Nvfp4MoeRouting> routing;
  // Programmatic dependent launch (sm_90): the kernel's blocks may start while the stream's
  // previous kernel finishes; they read nothing before it has (docs/pdl.md).
  bool enable_pdl = false;
  // Under enable_pdl, each warp asks L2 for its first weights before the wait, aimed by the
  // expert id the routing holds then. Right when the routing was written before the previous
  // kernel (down behind gate_up); when that kernel writes it (a router right before gate_up) the
  // guess reads the old routing, and false saves the wasted bandwidth (docs/pdl.md).
  bool prefetch_before_wait = true;
};
void nvfp4_sparse24_gemv(const Nvfp4Sparse24GemvArgs& args, cudaStream_t stream = nullptr);

}  // namespace lowbit
