// DeepSeek-V3 block-scaled FP8: 128 x 128 block weight quantization and the GEMM that consumes
// 1 x 128 activation groups (per_token_group_quant) and 128 x 128 weight blocks, promoting every
// 128-deep partial sum into FP32. Recipes, layouts and accuracy: docs/block_gemm.md.
#pragma once

#include <cstdint>

#include "lowbit/quant.h"  // ScaleLayout
#include "lowbit/tensor.h"

namespace lowbit {

inline constexpr int kBlockFp8Block = 128;

// ---- 128 x 128 block weight quantization -------------------------------------------------------
// For every block b of rows [128 i, 128 i + 128) x columns [128 j, 128 j + 128) (edge blocks hold
// the elements present):
//   amax = max |w| over the block      (NaN elements do not take part)
//   s    = max(amax, eps) / 448        scales[i, j], fp32 (checkpoints call it weight_scale_inv)
//   q    = saturate(round_half_even(w / s))   one float32 division, one rounding to e4m3fn
struct BlockFp8QuantizeWeightArgs {
  TensorView weight;  // [N, K] bf16 | fp16 | fp32, unit column stride, row stride >= K
  TensorView output;  // [N, K] fp8_e4m3fn, unit column stride, row stride >= K
  TensorView scales;  // [ceil(N / 128), ceil(K / 128)] fp32, contiguous
  float eps = 1e-10f;  // floor on amax, > 0: an all-zero block gets a finite scale
};
void block_fp8_quantize_weight(const BlockFp8QuantizeWeightArgs& args,
                               cudaStream_t stream = nullptr);

// w = e4m3(q) * s, the product in float32, then one rounding to the output dtype.
struct BlockFp8DequantizeWeightArgs {
  TensorView weight;  // [N, K] fp8_e4m3fn, unit column stride, row stride >= K
  TensorView scales;  // [ceil(N / 128), ceil(K / 128)] fp32, contiguous
  TensorView output;  // [N, K] bf16 | fp16 | fp32, unit column stride, row stride >= K
};
void block_fp8_dequantize_weight(const BlockFp8DequantizeWeightArgs& args,
                                 cudaStream_t stream = nullptr);

// ---- block-scaled GEMM ------------------------------------------------------------------------
// out[m, n] = sum over kb of As[m, kb] * Bs[n / 128, kb] * sum_{k in block kb} A[m, k] * B[n, k]
// Each block's product sum is formed in the tensor cores and added to an FP32 total (promotion).
// M >= 0 is free; K % 16 == 0 and N % 8 (bf16 out) or N % 4 (fp32 out) for 16-byte rows.
struct BlockFp8MmArgs {
  TensorView a;         // [M, K] fp8_e4m3fn, unit column stride, row stride >= K (% 16)
  TensorView a_scales;  // fp32, contiguous, scale_storage_shape(a_scale_layout, M, K, 128)
  ScaleLayout a_scale_layout = ScaleLayout::kRowMajor;
  TensorView b;         // [N, K] fp8_e4m3fn, unit column stride, row stride >= K (% 16)
  TensorView b_scales;  // [ceil(N / 128), ceil(K / 128)] fp32, contiguous
  TensorView output;    // [M, N] bf16 | fp32, unit column stride, row stride >= N
  // CUDA only: device memory of at least block_fp8_mm_workspace_bytes(...) bytes when that is
  // non-zero (stream-K partial sums for shapes with few output tiles). Host: unused.
  TensorView workspace;
  // Programmatic dependent launch (sm_90): the decode kernels may start while the stream's
  // previous kernel finishes, reading only the weight b before it has (docs/pdl.md).
  // That kernel must not write b. Other kernels launch normally.
  bool enable_pdl = false;
};
// Workspace bytes the CUDA path needs for this problem on the current device (0 for many
// shapes). Depends on M, N, K, the scale layout and the output dtype only.
std::int64_t block_fp8_mm_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k,
                                          ScaleLayout a_scale_layout,
                                          DType output_dtype = DType::kBF16);
void block_fp8_mm(const BlockFp8MmArgs& args, cudaStream_t stream = nullptr);

}  // namespace lowbit
