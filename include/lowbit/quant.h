// Activation quantization ops. Recipes and layouts: docs/quant.md.
#pragma once

#include <cstdint>
#include <optional>

#include "lowbit/tensor.h"

namespace lowbit {

// Where the fp32 scales of a [M, K] input quantized in 1 x group chunks live.
enum class ScaleLayout : std::uint8_t {
  kRowMajor,               // storage [M, K / group]: scale(m, g) at m * (K / group) + g
  kColumnMajor,            // storage [K / group, M]: scale(m, g) at g * M + m
  kColumnMajorTmaAligned,  // storage [K / group, round_up(M, 4)]: the rows are 16-byte aligned
                           // for TMA (DeepGEMM-style GEMMs); the padding is never written
};

const char* scale_layout_name(ScaleLayout layout);

// Shape of the scale tensor a caller allocates for `layout` (contiguous, fp32).
struct ScaleShape {
  std::int64_t rows;
  std::int64_t cols;
};
ScaleShape scale_storage_shape(ScaleLayout layout, std::int64_t m, std::int64_t k,
                               int group_size);

// Per-token-group quantization (DeepSeek-V3 activations: 1 x 128 groups along K).
// For every row m and group g of `group_size` consecutive elements:
//   amax = max |x|                     (NaN elements do not take part)
//   s    = max(min(amax, scale_ub), eps) / qmax      qmax = 448 (fp8 e4m3fn) or 127 (int8)
//   s    = 2^ceil(log2 s)              if power_of_two_scale (UE8M0 scales)
//   q    = saturate(round_half_even(x / s))          one float32 division, one rounding
struct PerTokenGroupQuantArgs {
  TensorView input;   // [M, K] bf16 | fp16 | fp32, unit column stride, row stride >= K
  TensorView output;  // [M, K] fp8_e4m3fn | int8, unit column stride, row stride >= K
  TensorView scales;  // fp32, contiguous, scale_storage_shape(scale_layout, M, K, group_size)
  int group_size = 128;  // 32, 64 or 128; K must be a multiple
  ScaleLayout scale_layout = ScaleLayout::kRowMajor;
  float eps = 1e-10f;              // floor on amax, > 0, so an all-zero group gives a finite scale
  std::optional<float> scale_ub;   // upper bound on amax (vLLM's scale_ub), finite and > 0
  bool power_of_two_scale = false; // UE8M0: round each scale up to a power of two
  // Programmatic dependent launch (sm_90): the kernel's blocks may start while the stream's
  // previous kernel finishes; they read nothing before it has (docs/pdl.md). Either way the
  // kernel lets a next kernel launched with PDL (the GEMM) start as its blocks do.
  bool enable_pdl = false;
};

// Host tensors run the CPU reference; CUDA tensors run the sm_90a kernel on `stream`.
void per_token_group_quant(const PerTokenGroupQuantArgs& args, cudaStream_t stream = nullptr);

// Per-token (per-row) dynamic quantization: the group recipe above with one group per row
// (group = K): s = max(min(amax_row, scale_ub), eps) / qmax, q = saturate(round_half_even(x / s)).
struct PerTokenQuantArgs {
  TensorView input;   // [M, K] bf16 | fp16 | fp32, unit column stride, row stride >= K
  TensorView output;  // [M, K] fp8_e4m3fn | int8, unit column stride, row stride >= K
  TensorView scales;  // [M] fp32, contiguous
  float eps = 1e-10f;
  std::optional<float> scale_ub;
  bool enable_pdl = false;  // as for per_token_group_quant (docs/pdl.md)
};
void per_token_quant(const PerTokenQuantArgs& args, cudaStream_t stream = nullptr);

// Asymmetric int8 per token (the activation side of the scaled GEMM's azp epilogues):
//   lo, hi = min(0, row min), max(0, row max) (NaN excluded)   s = max((hi - lo) / 255, eps)
//   zp = round_half_even(-128 - lo / s)            q = clamp(round_half_even(x / s) + zp, -128, 127)
// so that x ~= (q - zp) * s. docs/quant.md spells out each float32 step.
struct PerTokenAsymmetricInt8QuantArgs {
  TensorView input;        // [M, K] bf16 | fp16 | fp32
  TensorView output;       // [M, K] int8
  TensorView scales;       // [M] fp32
  TensorView zero_points;  // [M] int32
  float eps = 1e-10f;
  bool enable_pdl = false;  // as for per_token_group_quant (docs/pdl.md)
};
void per_token_asymmetric_int8_quant(const PerTokenAsymmetricInt8QuantArgs& args,
                                     cudaStream_t stream = nullptr);

// Per-tensor quantization, one scale for the whole tensor.
//   static  (dynamic = false): `scale` holds s (written by the caller; > 0 and finite).
//   dynamic (dynamic = true):  s = max(min(amax, scale_ub), eps) / qmax over the tensor, written
//                              to `scale`. On CUDA it runs as two passes (amax, then quantize)
//                              with no host synchronization and needs per_tensor_quant_workspace_bytes()
//                              bytes of device `workspace`.
// Then q = saturate(round_half_even(x / s)).
struct PerTensorQuantArgs {
  TensorView input;      // [M, K] bf16 | fp16 | fp32, unit column stride, row stride >= K
  TensorView output;     // [M, K] fp8_e4m3fn | int8
  TensorView scale;      // [1] fp32 (an input when static, an output when dynamic)
  bool dynamic = false;
  float eps = 1e-10f;
  std::optional<float> scale_ub;  // dynamic only
  TensorView workspace;  // dynamic on CUDA: >= per_tensor_quant_workspace_bytes() bytes (uint8)
  // As for per_token_group_quant (docs/pdl.md). The dynamic passes also start each other early;
  // the workspace reset of the two-pass path (a memset) is not a kernel and does not.
  bool enable_pdl = false;
};
std::int64_t per_tensor_quant_workspace_bytes();
void per_tensor_quant(const PerTensorQuantArgs& args, cudaStream_t stream = nullptr);

}  // namespace lowbit
