// Gated activations of FFN and MoE layers, alone and fused with group quantization.
// Recipes: docs/activation.md.
#pragma once

#include <optional>

#include "lowbit/quant.h"
#include "lowbit/tensor.h"

namespace lowbit {

// out = silu(gate) * up for input [T, 2H] laid out as [gate | up] along each row.
// silu(g) = g / (1 + e^-g) in float32; with `limit` (SwiGLU clamp, gpt-oss style) the gate is
// first clamped to <= limit and up to [-limit, limit].
struct SiluAndMulArgs {
  TensorView input;            // [T, 2H] bf16 | fp16, unit column stride, row stride >= 2H
  TensorView output;           // [T, H] bf16 | fp16, unit column stride, row stride >= H
  std::optional<float> limit;  // finite, > 0
  // Programmatic dependent launch (sm_90): the kernel's blocks may start while the stream's
  // previous kernel finishes; they read nothing before it has (docs/pdl.md). Either way the
  // kernel lets a next kernel launched with PDL (the down projection) start as its blocks do.
  bool enable_pdl = false;
};
void silu_and_mul(const SiluAndMulArgs& args, cudaStream_t stream = nullptr);

// q = group_quant(silu(gate) * up): the product stays in float32 (never rounded to 16 bits) and
// is quantized with per_token_group_quant's recipe and options (docs/quant.md).
struct SiluAndMulQuantArgs {
  TensorView input;   // [T, 2H] bf16 | fp16 as for silu_and_mul
  TensorView output;  // [T, H] fp8_e4m3fn | int8, unit column stride, row stride >= H
  TensorView scales;  // fp32, contiguous, scale_storage_shape(scale_layout, T, H, group_size)
  int group_size = 128;  // 32, 64 or 128; H must be a multiple
  ScaleLayout scale_layout = ScaleLayout::kRowMajor;
  float eps = 1e-10f;
  std::optional<float> scale_ub;
  bool power_of_two_scale = false;
  std::optional<float> limit;
  bool enable_pdl = false;  // as for silu_and_mul and per_token_group_quant (docs/pdl.md)
};
void silu_and_mul_quant(const SiluAndMulQuantArgs& args, cudaStream_t stream = nullptr);

}  // namespace lowbit
