// One DeepSeek-V3-style FP8 SwiGLU FFN layer as four lowbit ops:
//   x [T, H] bf16 --per_token_group_quant--> xq [T, H] e4m3 + 1x128 scales
//   --block_fp8_mm(W_gate_up [2I, H])--> h [T, 2I] bf16 = [gate | up]
//   --silu_and_mul_quant--> a [T, I] e4m3 + 1x128 scales
//   --block_fp8_mm(W_down [H, I])--> y [T, H] bf16
// Activation scales use the TMA-aligned column-major layout (what DeepSeek's kernels consume).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ffn_memory.h"
#include "ffn_weights.h"
#include "lowbit/tensor.h"

namespace lowbit::tools {

struct FfnStage {
  std::string name;
  double bytes = 0;  // the fewest HBM bytes the stage can move
  double flops = 0;  // 2 M N K for a GEMM, 0 for the memory-bound stages
  // Launches the stage on the stream; enable_pdl: with programmatic dependent launch (docs/pdl.md).
  std::function<void(cudaStream_t, bool enable_pdl)> run;
};

class FfnLayer {
 public:
  // Copies the weights to `memory`'s device; random weights are block-quantized there.
  FfnLayer(const FfnWeights& weights, std::int64_t tokens, FfnMemory& memory);
  void set_input(const std::vector<std::uint16_t>& x);  // [T, H] bf16
  const std::vector<FfnStage>& stages() const { return stages_; }
  void run(cudaStream_t stream = nullptr, bool enable_pdl = false) const;
  std::vector<std::uint16_t> output() const;  // y [T, H] bf16
  TensorView input() const { return x_; }

 private:
  TensorView allocate(DType dtype, std::int64_t rows, std::int64_t cols);
  TensorView upload_fp8(const std::vector<float>& weight, const std::vector<std::uint8_t>& codes,
                        const std::vector<float>& scales, std::int64_t rows, std::int64_t cols,
                        TensorView& block_scales);
  void build_stages();

  FfnMemory& memory_;
  std::int64_t tokens_, hidden_, intermediate_;
  TensorView x_, xq_, xs_, h_, aq_, as_, y_;
  TensorView w_gate_up_, w_gate_up_scales_, w_down_, w_down_scales_;
  TensorView workspace_;
  std::vector<FfnStage> stages_;
};

}  // namespace lowbit::tools
