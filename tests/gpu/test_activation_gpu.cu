// silu_and_mul and silu_and_mul_quant on device tensors against the CPU reference, bit for bit,
// on fresh random data with outputs poisoned before each run: model widths, T from 1 to 16384,
// every dtype/group/layout/option (SwiGLU clamp included), strided rows, > 2^31 input elements;
// silu_and_mul under programmatic dependent launch with its input written late.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/device_buffer.cuh"
#include "common/group_quant_compare.cuh"
#include "common/slow_producer.cuh"
#include "common/test_data.h"
#include "lowbit/activation.h"
#include "lowbit/formats.h"

namespace lowbit {
namespace {

using testing::DeviceBuffer;

struct Case {
  std::int64_t tokens = 1;
  std::int64_t hidden = 2048;  // H: the input is [T, 2H]
  DType input_dtype = DType::kBF16;
  DType output_dtype = DType::kFP8E4M3;
  int group = 128;
  ScaleLayout layout = ScaleLayout::kRowMajor;
  std::int64_t input_pad = 0;
  std::int64_t output_pad = 0;
  std::optional<float> scale_ub;
  bool power_of_two = false;
  std::optional<float> limit;
  // Launched with enable_pdl behind a held producer that writes the input late, over another
  // draw (testing::run_behind_late_input).
  bool late_input = false;

  std::string describe() const {
    std::ostringstream out;
    out << (late_input ? "late input, PDL: " : "") << "T=" << tokens << " H=" << hidden << " " << dtype_name(input_dtype) << "->"
        << dtype_name(output_dtype) << " g=" << group << " " << scale_layout_name(layout)
        << " pads " << input_pad << "/" << output_pad
        << " ub=" << (scale_ub ? std::to_string(*scale_ub) : "none") << " pow2=" << power_of_two
        << " limit=" << (limit ? std::to_string(*limit) : "none");
    return out.str();
  }
};

std::uint64_t salt = 1000;

void run_quant_case(const Case& c) {
  SCOPED_TRACE(c.describe());
  const std::int64_t in_stride = 2 * c.hidden + c.input_pad;
  const std::int64_t out_stride = c.hidden + c.output_pad;
  const std::int64_t groups = c.hidden / c.group;
  const auto input =
      testing::random_activations(c.input_dtype, c.tokens, in_stride, 2 * c.hidden, salt++);

  std::vector<std::uint8_t> ref_out(c.tokens * c.hidden);
  std::vector<float> ref_scales(c.tokens * groups);
  testing::parallel_for(c.tokens, [&](std::int64_t begin, std::int64_t end) {
    SiluAndMulQuantArgs args;
    args.input = TensorView::strided(const_cast<std::uint8_t*>(input.data()) + begin * in_stride * 2,
                                     c.input_dtype, {end - begin, 2 * c.hidden}, {in_stride, 1});
    args.output = TensorView::contiguous(ref_out.data() + begin * c.hidden, c.output_dtype,
                                         {end - begin, c.hidden});
    args.scales = TensorView::contiguous(ref_scales.data() + begin * groups, DType::kFP32,
                                         {end - begin, groups});
    args.group_size = c.group;
    args.scale_ub = c.scale_ub;
    args.power_of_two_scale = c.power_of_two;
    args.limit = c.limit;
    silu_and_mul_quant(args);
  }, /*min_per_worker=*/16);

  const ScaleShape shape = scale_storage_shape(c.layout, c.tokens, c.hidden, c.group);
  DeviceBuffer d_input(input.size()), d_output(c.tokens * out_stride),
      d_scales(shape.rows * shape.cols * 4);
  d_input.upload(input);
  SiluAndMulQuantArgs args;
  args.input = TensorView::strided(d_input.data(), c.input_dtype, {c.tokens, 2 * c.hidden},
                                   {in_stride, 1}, Device::kCUDA);
  args.output = TensorView::strided(d_output.data(), c.output_dtype, {c.tokens, c.hidden},
                                    {out_stride, 1}, Device::kCUDA);
  args.scales = TensorView::contiguous(d_scales.data(), DType::kFP32, {shape.rows, shape.cols},
                                       Device::kCUDA);
  args.group_size = c.group;
  args.scale_layout = c.layout;
  args.scale_ub = c.scale_ub;
  args.power_of_two_scale = c.power_of_two;
  args.limit = c.limit;
  if (!c.late_input) {
    testing::expect_group_quant_matches({c.tokens, c.hidden, out_stride, c.group, c.layout},
                                        d_output, d_scales, [&] { silu_and_mul_quant(args); },
                                        ref_out, ref_scales);
    return;
  }
  args.enable_pdl = true;
  testing::expect_group_quant_matches_behind_late_input(
      {c.tokens, c.hidden, out_stride, c.group, c.layout}, d_output, d_scales, d_input, input,
      testing::random_activations(c.input_dtype, c.tokens, in_stride, 2 * c.hidden, salt++),
      [&](cudaStream_t stream) { silu_and_mul_quant(args, stream); }, ref_out, ref_scales);
}

TEST(SiluAndMulQuantGpu, ModelWidthsAndTokenCounts) {
  for (std::int64_t h : {2048, 7168, 18432}) {
    for (std::int64_t t : {1, 16, 129, 4096, 16384}) {
      Case c;
      c.tokens = t;
      c.hidden = h;
      run_quant_case(c);
    }
  }
}

TEST(SiluAndMulQuantGpu, EveryDtypeGroupLayoutAndOption) {
  for (DType in : {DType::kBF16, DType::kFP16}) {
    for (DType out : {DType::kFP8E4M3, DType::kInt8}) {
      for (int g : {32, 64, 128}) {
        for (ScaleLayout layout : {ScaleLayout::kRowMajor, ScaleLayout::kColumnMajor,
                                   ScaleLayout::kColumnMajorTmaAligned}) {
          for (int option = 0; option < 8; ++option) {
            Case c;
            c.tokens = 37;
            c.hidden = 1024 + 3 * g;
            c.input_dtype = in;
            c.output_dtype = out;
            c.group = g;
            c.layout = layout;
            if (option & 1) c.scale_ub = 2.5f;
            c.power_of_two = (option & 2) != 0;
            if (option & 4) c.limit = 7.0f;  // clips the 10^3-magnitude stretches
            run_quant_case(c);
          }
        }
      }
    }
  }
}

TEST(SiluAndMulQuantGpu, ProgrammaticDependentLaunchWaitsForTheInput) {
  // A DeepSeek-V3 expert's activations at decode (the direct kernel, TMA-aligned scales for
  // block_fp8_mm) and a prefill block of the dense FFN (the pipelined kernel).
  for (const auto& [tokens, hidden, layout] :
       {std::tuple<std::int64_t, std::int64_t, ScaleLayout>{4, 2048, ScaleLayout::kColumnMajorTmaAligned},
        {4096, 18432, ScaleLayout::kRowMajor}}) {
    Case c;
    c.tokens = tokens;
    c.hidden = hidden;
    c.layout = layout;
    c.late_input = true;
    run_quant_case(c);
  }
}

TEST(SiluAndMulQuantGpu, StridedRowsAndClamp) {
  Case c;
  c.tokens = 300;
  c.hidden = 7168;
  c.input_pad = 64;
  c.output_pad = 40;
  c.limit = 10.0f;
  c.layout = ScaleLayout::kColumnMajorTmaAligned;
  run_quant_case(c);
}

TEST(SiluAndMulQuantGpu, MoreThan2To31InputElements) {
  Case c;
  c.hidden = 7168;
  c.tokens = (std::int64_t{1} << 31) / (2 * c.hidden) + 500;
  ASSERT_GT(c.tokens * 2 * c.hidden, std::int64_t{1} << 31);
  run_quant_case(c);
}

void run_silu_and_mul_case(std::int64_t tokens, std::int64_t hidden, DType in_dtype,
                           DType out_dtype, std::optional<float> limit, std::int64_t pad) {
  SCOPED_TRACE(::testing::Message() << "T=" << tokens << " H=" << hidden << " "
                                    << dtype_name(in_dtype) << "->" << dtype_name(out_dtype)
                                    << " limit=" << limit.value_or(0.0f) << " pad=" << pad);
  const std::int64_t in_stride = 2 * hidden + pad;
  const std::int64_t out_stride = hidden + pad;
  const auto input = testing::random_activations(in_dtype, tokens, in_stride, 2 * hidden, salt++);
  std::vector<std::uint16_t> ref(tokens * out_stride, 0x7FFF);
  testing::parallel_for(tokens, [&](std::int64_t begin, std::int64_t end) {  // rows independent
    SiluAndMulArgs slice;
    slice.input = TensorView::strided(
        const_cast<std::uint8_t*>(input.data()) + begin * in_stride * dtype_size(in_dtype),
        in_dtype, {end - begin, 2 * hidden}, {in_stride, 1});
    slice.output = TensorView::strided(ref.data() + begin * out_stride, out_dtype,
                                       {end - begin, hidden}, {out_stride, 1});
    slice.limit = limit;
    silu_and_mul(slice);
  }, /*min_per_worker=*/16);
  SiluAndMulArgs args;
  args.limit = limit;

  DeviceBuffer d_input(input.size()), d_output(tokens * out_stride * 2);
  d_input.upload(input);
  d_output.fill_byte(0x7F);  // 0x7F7F: bf16 3.4e38 / fp16 NaN; SiLU of the test data never gives it
  args.input = TensorView::strided(d_input.data(), in_dtype, {tokens, 2 * hidden}, {in_stride, 1},
                                   Device::kCUDA);
  args.output = TensorView::strided(d_output.data(), out_dtype, {tokens, hidden}, {out_stride, 1},
                                    Device::kCUDA);
  silu_and_mul(args);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto got = d_output.download<std::uint16_t>();
  std::int64_t bad = 0;
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t h = 0; h < out_stride; ++h) {
      const std::uint16_t want = h < hidden ? ref[t * out_stride + h] : 0x7F7F;
      if (got[t * out_stride + h] != want && ++bad <= 5) {
        ADD_FAILURE() << "out[" << t << ", " << h << "] gpu 0x" << std::hex
                      << got[t * out_stride + h] << " want 0x" << want;
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(SiluAndMulGpu, MatchesReference) {
  for (DType dtype : {DType::kBF16, DType::kFP16}) {
    for (std::optional<float> limit : {std::optional<float>{}, std::optional<float>{7.0f}}) {
      run_silu_and_mul_case(1, 2048, dtype, dtype, limit, 0);
      run_silu_and_mul_case(129, 7168, dtype, dtype, limit, 24);
      run_silu_and_mul_case(4096, 18432, dtype, dtype, limit, 0);
    }
  }
  run_silu_and_mul_case(33, 4096, DType::kBF16, DType::kFP16, std::nullopt, 0);
}

TEST(SiluAndMulGpu, ProgrammaticDependentLaunchWaitsForTheInput) {
  // The input holds another draw until a kernel that lets silu_and_mul start at once (enable_pdl)
  // writes the real one 50 us after silu_and_mul is enqueued: a read before the wait would
  // give the other draw's products. Decode rows (a MoE down projection's input) and a
  // prefill-sized grid of many waves.
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (const auto& [tokens, hidden] : {std::pair<std::int64_t, std::int64_t>{8, 2048}, {4096, 7168}}) {
    SCOPED_TRACE(::testing::Message() << "T=" << tokens << " H=" << hidden);
    const auto input = testing::random_activations(DType::kBF16, tokens, 2 * hidden, 2 * hidden, salt++);
    const auto early = testing::random_activations(DType::kBF16, tokens, 2 * hidden, 2 * hidden, salt++);
    std::vector<std::uint16_t> want(tokens * hidden);
    SiluAndMulArgs ref;
    ref.input = TensorView::contiguous(const_cast<std::uint8_t*>(input.data()), DType::kBF16,
                                       {tokens, 2 * hidden});
    ref.output = TensorView::contiguous(want.data(), DType::kBF16, {tokens, hidden});
    silu_and_mul(ref);
    DeviceBuffer d_input(input.size()), d_late(input.size()), d_output(tokens * hidden * 2);
    d_input.upload(early);
    d_late.upload(input);
    d_output.fill_byte(0x7F);
    SiluAndMulArgs args;
    args.input = TensorView::contiguous(d_input.data(), DType::kBF16, {tokens, 2 * hidden},
                                        Device::kCUDA);
    args.output = TensorView::contiguous(d_output.data(), DType::kBF16, {tokens, hidden},
                                         Device::kCUDA);
    silu_and_mul(args, stream);  // loads the module: a first launch waits for an idle device
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    d_output.fill_byte(0x7F);
    args.enable_pdl = true;
    ASSERT_EQ(testing::run_behind_late_input(d_input.data(), d_late.data(),
                                             static_cast<std::int64_t>(input.size()), stream,
                                             [&] { silu_and_mul(args, stream); }),
              cudaSuccess);
    const auto got = d_output.download<std::uint16_t>();
    std::int64_t bad = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (got[i] != want[i] && ++bad <= 5) {
        ADD_FAILURE() << "out[" << i / hidden << ", " << i % hidden << "] gpu 0x" << std::hex
                      << got[i] << " want 0x" << want[i];
      }
    }
    EXPECT_EQ(bad, 0);
  }
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace lowbit
