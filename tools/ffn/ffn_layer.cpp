// FfnLayer: buffers and the four op calls of an FP8 SwiGLU FFN (see ffn_layer.h). Device-agnostic:
// with host buffers the ops run their CPU references, with device buffers their CUDA kernels.
#include "ffn_layer.h"

#include <algorithm>

#include "lowbit/activation.h"
#include "lowbit/block_gemm.h"
#include "lowbit/quant.h"

namespace lowbit::tools {
namespace {

constexpr int kGroup = 128;
constexpr ScaleLayout kActivationScales = ScaleLayout::kColumnMajorTmaAligned;

std::int64_t blocks(std::int64_t extent) { return (extent + 127) / 128; }

}  // namespace

FfnLayer::FfnLayer(const FfnWeights& weights, std::int64_t tokens, FfnMemory& memory)
    : memory_(memory),
      tokens_(tokens),
      hidden_(weights.shape.hidden),
      intermediate_(weights.shape.intermediate) {
  const std::int64_t t = tokens_, h = hidden_, i = intermediate_;
  w_gate_up_ = upload_fp8(weights.gate_up, weights.gate_up_fp8, weights.gate_up_scales, 2 * i, h,
                          w_gate_up_scales_);
  w_down_ = upload_fp8(weights.down, weights.down_fp8, weights.down_scales, h, i, w_down_scales_);
  x_ = allocate(DType::kBF16, t, h);
  xq_ = allocate(DType::kFP8E4M3, t, h);
  const ScaleShape xs = scale_storage_shape(kActivationScales, t, h, kGroup);
  xs_ = allocate(DType::kFP32, xs.rows, xs.cols);
  h_ = allocate(DType::kBF16, t, 2 * i);
  aq_ = allocate(DType::kFP8E4M3, t, i);
  const ScaleShape as = scale_storage_shape(kActivationScales, t, i, kGroup);
  as_ = allocate(DType::kFP32, as.rows, as.cols);
  y_ = allocate(DType::kBF16, t, h);
  if (memory_.device() == Device::kCUDA) {
    const std::int64_t bytes =
        std::max(block_fp8_mm_workspace_bytes(t, 2 * i, h, kActivationScales),
                 block_fp8_mm_workspace_bytes(t, h, i, kActivationScales));
    if (bytes > 0) workspace_ = allocate(DType::kUInt8, 1, bytes);
  }
  build_stages();
}

TensorView FfnLayer::allocate(DType dtype, std::int64_t rows, std::int64_t cols) {
  void* data = memory_.allocate(static_cast<std::size_t>(rows * cols) * dtype_size(dtype));
  return TensorView::contiguous(data, dtype, {rows, cols}, memory_.device());
}

// Checkpoint weights are copied as they are; random ones are quantized on the layer's device.
TensorView FfnLayer::upload_fp8(const std::vector<float>& weight,
                                const std::vector<std::uint8_t>& codes,
                                const std::vector<float>& scales, std::int64_t rows,
                                std::int64_t cols, TensorView& block_scales) {
  TensorView fp8 = allocate(DType::kFP8E4M3, rows, cols);
  block_scales = allocate(DType::kFP32, blocks(rows), blocks(cols));
  if (!codes.empty()) {
    memory_.copy_in(fp8.data, codes.data(), codes.size());
    memory_.copy_in(block_scales.data, scales.data(), scales.size() * sizeof(float));
    return fp8;
  }
  TensorView full = allocate(DType::kFP32, rows, cols);
  memory_.copy_in(full.data, weight.data(), weight.size() * sizeof(float));
  BlockFp8QuantizeWeightArgs args;
  args.weight = full;
  args.output = fp8;
  args.scales = block_scales;
  block_fp8_quantize_weight(args);
  memory_.synchronize();
  return fp8;
}

void FfnLayer::set_input(const std::vector<std::uint16_t>& x) {
  memory_.copy_in(x_.data, x.data(), x.size() * sizeof(std::uint16_t));
}

std::vector<std::uint16_t> FfnLayer::output() const {
  std::vector<std::uint16_t> y(tokens_ * hidden_);
  memory_.synchronize();
  memory_.copy_out(y.data(), y_.data, y.size() * sizeof(std::uint16_t));
  return y;
}

void FfnLayer::run(cudaStream_t stream, bool enable_pdl) const {
  for (const FfnStage& stage : stages_) stage.run(stream, enable_pdl);
}

void FfnLayer::build_stages() {
  const double t = tokens_, h = hidden_, i = intermediate_;
  const double scale_bytes_x = t * (h / kGroup) * 4, scale_bytes_a = t * (i / kGroup) * 4;
  const double weight_scale_bytes_gu = blocks(2 * intermediate_) * blocks(hidden_) * 4.0;
  const double weight_scale_bytes_d = blocks(hidden_) * blocks(intermediate_) * 4.0;

  stages_.push_back({"per_token_group_quant", t * h * 2 + t * h + scale_bytes_x, 0,
                     [this](cudaStream_t stream, bool pdl) {
                       PerTokenGroupQuantArgs args;
                       args.input = x_;
                       args.output = xq_;
                       args.scales = xs_;
                       args.group_size = kGroup;
                       args.scale_layout = kActivationScales;
                       args.enable_pdl = pdl;
                       per_token_group_quant(args, stream);
                     }});
  auto gemm = [this](TensorView a, TensorView a_scales, TensorView b, TensorView b_scales,
                     TensorView out, cudaStream_t stream, bool pdl) {
    BlockFp8MmArgs args;
    args.a = a;
    args.a_scales = a_scales;
    args.a_scale_layout = kActivationScales;
    args.b = b;
    args.b_scales = b_scales;
    args.output = out;
    args.workspace = workspace_;
    args.enable_pdl = pdl;
    block_fp8_mm(args, stream);
  };
  stages_.push_back({"gate_up block_fp8_mm",
                     2 * i * h + weight_scale_bytes_gu + t * h + scale_bytes_x + t * 2 * i * 2,
                     2 * t * (2 * i) * h, [this, gemm](cudaStream_t stream, bool pdl) {
                       gemm(xq_, xs_, w_gate_up_, w_gate_up_scales_, h_, stream, pdl);
                     }});
  stages_.push_back({"silu_and_mul_quant", t * 2 * i * 2 + t * i + scale_bytes_a, 0,
                     [this](cudaStream_t stream, bool pdl) {
                       SiluAndMulQuantArgs args;
                       args.input = h_;
                       args.output = aq_;
                       args.scales = as_;
                       args.group_size = kGroup;
                       args.scale_layout = kActivationScales;
                       args.enable_pdl = pdl;
                       silu_and_mul_quant(args, stream);
                     }});
  stages_.push_back({"down block_fp8_mm",
                     h * i + weight_scale_bytes_d + t * i + scale_bytes_a + t * h * 2,
                     2 * t * h * i, [this, gemm](cudaStream_t stream, bool pdl) {
                       gemm(aq_, as_, w_down_, w_down_scales_, y_, stream, pdl);
                     }});
}

}  // namespace lowbit::tools
