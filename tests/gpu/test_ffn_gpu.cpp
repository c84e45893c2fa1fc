// `lowbit ffn` on the GPU: the same FP8 layer (same weights, same input) run with the CUDA
// kernels and with the CPU reference ops must agree, meet the accuracy bar against the
// double-precision reference, and load a checkpoint written here.
#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <unistd.h>

#include <cmath>
#include <string>
#include <vector>

#include "ffn_layer.h"
#include "ffn_memory.h"
#include "ffn_reference.h"
#include "ffn_run.h"
#include "ffn_weights.h"
#include "lowbit/block_gemm.h"
#include "lowbit/formats.h"
#include "lowbit/safetensors.h"

namespace lowbit::tools {
namespace {

std::vector<std::uint16_t> run_layer(const FfnWeights& weights, const std::vector<std::uint16_t>& x,
                                     std::int64_t tokens, FfnMemory& memory) {
  FfnLayer layer(weights, tokens, memory);
  layer.set_input(x);
  layer.run();
  return layer.output();
}

// ||a - b|| / ||b|| over bf16 tensors; NaN anywhere gives NaN.
double relative_difference(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = bf16_to_float(a[i]), y = bf16_to_float(b[i]);
    diff += (x - y) * (x - y);
    norm += y * y;
  }
  return std::sqrt(diff / norm);
}

TEST(FfnGpu, CudaLayerAgreesWithCpuLayerAndReference) {
  const FfnShape shape{"deepseek-v3 / 8", 896, 2304};
  const FfnWeights weights = random_ffn_weights(shape, 7);
  for (std::int64_t tokens : {1, 37, 256}) {
    const std::vector<std::uint16_t> x = ffn_activations(tokens, shape.hidden, 7);
    auto host = make_host_memory();
    auto device = make_cuda_memory();
    const std::vector<std::uint16_t> y_cpu = run_layer(weights, x, tokens, *host);
    const std::vector<std::uint16_t> y_gpu = run_layer(weights, x, tokens, *device);
    // Quantizers are bit-exact, but the GEMMs sum in another order, which moves some bf16
    // roundings of h by an ulp; about 1 in 16 of those crosses an fp8 rounding boundary of the
    // activation and changes it by one fp8 ulp (up to 12.5%). That predicts ~0.5-1% relative
    // difference in y (an H200 measured 0.2-0.6%); a layout or scale bug gives O(1).
    EXPECT_LT(relative_difference(y_gpu, y_cpu), 1.5e-2) << "T = " << tokens;
    const auto rows = reference_row_indices(tokens, 8);
    const FfnAccuracy accuracy =
        compare_with_reference(y_gpu, shape.hidden, rows, reference_rows(weights, x, rows));
    EXPECT_TRUE(accuracy_ok(accuracy)) << "T = " << tokens << ": " << accuracy.relative_error;
  }
}

TEST(FfnGpu, LayerUnderPdlMatchesTheLayerOnAStream) {
  // The four kernels launched back to back with programmatic dependent launch on each (what
  // `lowbit ffn`'s "graph + PDL" time replays): each waits for the one before, so y is the same
  // bits as the plain launches give. Decode rows and a prefill block.
  const FfnShape shape{"deepseek-v3 / 8", 896, 2304};
  const FfnWeights weights = random_ffn_weights(shape, 11);
  auto device = make_cuda_memory();
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (std::int64_t tokens : {1, 16, 512}) {
    FfnLayer layer(weights, tokens, *device);
    layer.set_input(ffn_activations(tokens, shape.hidden, 11));
    layer.run();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<std::uint16_t> plain = layer.output();
    for (int repeat = 0; repeat < 3; ++repeat) {
      layer.run(stream, true);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      EXPECT_EQ(layer.output(), plain) << "T = " << tokens;
    }
  }
  cudaStreamDestroy(stream);
}

TEST(FfnGpu, CheckpointWeightsRunOnTheGpu) {
  const FfnWeights drawn = random_ffn_weights({"small", 256, 384}, 3);
  // Quantize on the CPU, write a DeepSeek-V3-format file, load it back, run it on the GPU.
  const std::vector<std::uint16_t> x = ffn_activations(9, 256, 3);
  FfnWeights quantized = drawn;
  std::vector<std::uint8_t> gate_up(2 * 384 * 256), down(256 * 384);
  std::vector<float> gate_up_scales(6 * 2), down_scales(2 * 3);
  {
    BlockFp8QuantizeWeightArgs args;
    args.weight = TensorView::contiguous(quantized.gate_up.data(), DType::kFP32, {768, 256});
    args.output = TensorView::contiguous(gate_up.data(), DType::kFP8E4M3, {768, 256});
    args.scales = TensorView::contiguous(gate_up_scales.data(), DType::kFP32, {6, 2});
    block_fp8_quantize_weight(args);
    args.weight = TensorView::contiguous(quantized.down.data(), DType::kFP32, {256, 384});
    args.output = TensorView::contiguous(down.data(), DType::kFP8E4M3, {256, 384});
    args.scales = TensorView::contiguous(down_scales.data(), DType::kFP32, {2, 3});
    block_fp8_quantize_weight(args);
  }
  const std::string path = ::testing::TempDir() + "lowbit_ffn_gpu_" + std::to_string(::getpid()) + ".safetensors";
  write_safetensors(path, {{"l.gate_proj.weight", DType::kFP8E4M3, {384, 256}, gate_up.data()},
                           {"l.gate_proj.weight_scale_inv", DType::kFP32, {3, 2}, gate_up_scales.data()},
                           {"l.up_proj.weight", DType::kFP8E4M3, {384, 256}, gate_up.data() + 384 * 256},
                           {"l.up_proj.weight_scale_inv", DType::kFP32, {3, 2}, gate_up_scales.data() + 6},
                           {"l.down_proj.weight", DType::kFP8E4M3, {256, 384}, down.data()},
                           {"l.down_proj.weight_scale_inv", DType::kFP32, {2, 3}, down_scales.data()}});
  const FfnWeights loaded = load_ffn_checkpoint(path, "l");
  auto device = make_cuda_memory();
  // The checkpoint's codes are what the layer quantizes the draw to: same output, bit for bit.
  EXPECT_EQ(run_layer(loaded, x, 9, *device), run_layer(drawn, x, 9, *device));
  const auto rows = reference_row_indices(9, 8);
  EXPECT_TRUE(accuracy_ok(compare_with_reference(run_layer(loaded, x, 9, *device), 256, rows,
                                                 reference_rows(loaded, x, rows))));
}

}  // namespace
}  // namespace lowbit::tools
