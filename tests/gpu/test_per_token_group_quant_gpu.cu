// per_token_group_quant on device tensors (the sm_90a kernel) against the CPU reference, bit for
// bit: quantized bytes and scale bits, on fresh random data, with outputs poisoned twice with
// different patterns so an unwritten element cannot match by accident. Covers real model widths,
// M from 1 to 16384, every dtype/group/layout/option, strided rows, specials, and > 2^31
// elements.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/device_buffer.cuh"
#include "common/group_quant_compare.cuh"
#include "common/test_data.h"
#include "lowbit/formats.h"
#include "lowbit/error.h"
#include "lowbit/quant.h"

namespace lowbit {
namespace {

using testing::DeviceBuffer;

struct Case {
  std::int64_t rows = 1;
  std::int64_t cols = 128;
  DType input_dtype = DType::kBF16;
  DType output_dtype = DType::kFP8E4M3;
  int group = 128;
  ScaleLayout layout = ScaleLayout::kRowMajor;
  std::int64_t input_pad = 0;   // extra elements per input row
  std::int64_t output_pad = 0;  // extra bytes per output row
  std::optional<float> scale_ub;
  bool power_of_two = false;
  // Launched with enable_pdl behind a held producer that writes the input late, over another
  // draw (testing::run_behind_late_input).
  bool late_input = false;

  std::string describe() const {
    std::ostringstream out;
    out << (late_input ? "late input, PDL: " : "") << "M=" << rows << " K=" << cols << " " << dtype_name(input_dtype) << "->"
        << dtype_name(output_dtype) << " g=" << group << " " << scale_layout_name(layout)
        << " in_pad=" << input_pad << " out_pad=" << output_pad
        << " ub=" << (scale_ub ? std::to_string(*scale_ub) : "none") << " pow2=" << power_of_two;
    return out.str();
  }
};

std::uint64_t case_salt = 1;

// Runs the CPU reference in parallel row slices with row-major scales. The scale layouts are
// checked separately on the CPU; here each GPU layout is read back through its own index math.
void reference_quant(const Case& c, const std::vector<std::uint8_t>& input,
                     std::vector<std::uint8_t>& output, std::vector<float>& scales) {
  const std::int64_t in_stride = c.cols + c.input_pad;
  const std::int64_t groups = c.cols / c.group;
  output.assign(static_cast<std::size_t>(c.rows * c.cols), 0);
  scales.assign(static_cast<std::size_t>(c.rows * groups), 0.0f);
  testing::parallel_for(c.rows, [&](std::int64_t begin, std::int64_t end) {
    PerTokenGroupQuantArgs args;
    const std::size_t elem = dtype_size(c.input_dtype);
    args.input = TensorView::strided(
        const_cast<std::uint8_t*>(input.data()) + begin * in_stride * elem, c.input_dtype,
        {end - begin, c.cols}, {in_stride, 1});
    args.output = TensorView::contiguous(output.data() + begin * c.cols, c.output_dtype,
                                         {end - begin, c.cols});
    args.scales = TensorView::contiguous(scales.data() + begin * groups, DType::kFP32,
                                         {end - begin, groups});
    args.group_size = c.group;
    args.scale_ub = c.scale_ub;
    args.power_of_two_scale = c.power_of_two;
    per_token_group_quant(args);
  }, /*min_per_worker=*/16);
}

void run_case(const Case& c) {
  SCOPED_TRACE(c.describe());
  const std::int64_t in_stride = c.cols + c.input_pad;
  const std::int64_t out_stride = c.cols + c.output_pad;
  const std::vector<std::uint8_t> input =
      testing::random_activations(c.input_dtype, c.rows, in_stride, c.cols, case_salt++);
  std::vector<std::uint8_t> ref_out;
  std::vector<float> ref_scales;
  reference_quant(c, input, ref_out, ref_scales);

  const ScaleShape scale_shape = scale_storage_shape(c.layout, c.rows, c.cols, c.group);
  DeviceBuffer d_input(input.size());
  DeviceBuffer d_output(static_cast<std::size_t>(c.rows * out_stride));
  DeviceBuffer d_scales(static_cast<std::size_t>(scale_shape.rows * scale_shape.cols) * 4);
  d_input.upload(input);

  PerTokenGroupQuantArgs args;
  args.input = TensorView::strided(d_input.data(), c.input_dtype, {c.rows, c.cols},
                                   {in_stride, 1}, Device::kCUDA);
  args.output = TensorView::strided(d_output.data(), c.output_dtype, {c.rows, c.cols},
                                    {out_stride, 1}, Device::kCUDA);
  args.scales = TensorView::contiguous(d_scales.data(), DType::kFP32,
                                       {scale_shape.rows, scale_shape.cols}, Device::kCUDA);
  args.group_size = c.group;
  args.scale_layout = c.layout;
  args.scale_ub = c.scale_ub;
  args.power_of_two_scale = c.power_of_two;
  if (!c.late_input) {
    testing::expect_group_quant_matches({c.rows, c.cols, out_stride, c.group, c.layout}, d_output,
                                        d_scales, [&] { per_token_group_quant(args); }, ref_out,
                                        ref_scales);
    return;
  }
  args.enable_pdl = true;
  testing::expect_group_quant_matches_behind_late_input(
      {c.rows, c.cols, out_stride, c.group, c.layout}, d_output, d_scales, d_input, input,
      testing::random_activations(c.input_dtype, c.rows, in_stride, c.cols, case_salt++),
      [&](cudaStream_t stream) { per_token_group_quant(args, stream); }, ref_out, ref_scales);
}

TEST(PerTokenGroupQuantGpu, ModelWidthsAndTokenCounts) {
  for (std::int64_t k : {2048, 4096, 7168, 18432}) {
    for (std::int64_t m : {1, 2, 16, 129, 1024, 4096, 16384}) {
      Case c;
      c.rows = m;
      c.cols = k;
      run_case(c);
    }
  }
}

TEST(PerTokenGroupQuantGpu, EveryDtypeGroupLayoutAndOption) {
  for (DType in : {DType::kBF16, DType::kFP16, DType::kFP32}) {
    for (DType out : {DType::kFP8E4M3, DType::kInt8}) {
      for (int g : {32, 64, 128}) {
        for (ScaleLayout layout : {ScaleLayout::kRowMajor, ScaleLayout::kColumnMajor,
                                   ScaleLayout::kColumnMajorTmaAligned}) {
          for (int option = 0; option < 4; ++option) {
            Case c;
            c.rows = 37;  // not a multiple of 4: TMA padding exists
            c.cols = 1536 + 3 * g;
            c.input_dtype = in;
            c.output_dtype = out;
            c.group = g;
            c.layout = layout;
            if (option & 1) c.scale_ub = 2.5f;  // clips many groups of the random data
            c.power_of_two = (option & 2) != 0;
            run_case(c);
          }
        }
      }
    }
  }
}

TEST(PerTokenGroupQuantGpu, StridedRows) {
  for (ScaleLayout layout : {ScaleLayout::kRowMajor, ScaleLayout::kColumnMajorTmaAligned}) {
    Case c;
    c.rows = 301;
    c.cols = 7168;
    c.input_pad = 64;   // a padded activation buffer
    c.output_pad = 40;
    c.layout = layout;
    run_case(c);
  }
}

TEST(PerTokenGroupQuantGpu, LargeColumnMajorScales) {
  Case c;
  c.rows = 16384;
  c.cols = 7168;
  c.layout = ScaleLayout::kColumnMajorTmaAligned;
  c.power_of_two = true;
  run_case(c);
}

TEST(PerTokenGroupQuantGpu, NanAndInfStayInTheirGroups) {
  const std::int64_t m = 8, k = 512;
  std::vector<std::uint16_t> input(m * k);
  for (std::int64_t i = 0; i < m * k; ++i) input[i] = float_to_bf16(std::sin(0.1f * i) * 3.0f);
  input[5] = float_to_bf16(NAN);
  input[128 + 7] = float_to_bf16(INFINITY);
  input[3 * k + 300] = float_to_bf16(-INFINITY);
  input[4 * k + 10] = float_to_bf16(NAN);
  input[4 * k + 11] = float_to_bf16(INFINITY);
  for (int g = 0; g < 128; ++g) input[6 * k + g] = float_to_bf16(NAN);  // all-NaN group
  for (int g = 0; g < 128; ++g) input[7 * k + 128 + g] = 0;              // all-zero group
  for (int g = 0; g < 128; ++g) input[7 * k + 256 + g] = 0x8000;         // all -0 group
  input[2 * k + 1] = 0x8000;                                             // -0 among values
  input[2 * k + 2] = 0x0001;                                             // bf16 subnormals
  input[2 * k + 3] = 0x8003;
  input[5 * k + 400] = float_to_bf16(1e-30f);                            // tiny quotients
  input[5 * k + 401] = float_to_bf16(-1e-38f);
  for (bool pow2 : {false, true}) {
    std::vector<std::uint8_t> ref_out(m * k);
    std::vector<float> ref_scales(m * 4);
    PerTokenGroupQuantArgs args;
    args.input = TensorView::contiguous(input.data(), DType::kBF16, {m, k});
    args.output = TensorView::contiguous(ref_out.data(), DType::kFP8E4M3, {m, k});
    args.scales = TensorView::contiguous(ref_scales.data(), DType::kFP32, {m, 4});
    args.power_of_two_scale = pow2;
    per_token_group_quant(args);

    DeviceBuffer d_in(m * k * 2), d_out(m * k), d_scales(m * 4 * 4);
    d_in.upload(input);
    d_out.fill_byte(0xA5);
    args.input = TensorView::contiguous(d_in.data(), DType::kBF16, {m, k}, Device::kCUDA);
    args.output = TensorView::contiguous(d_out.data(), DType::kFP8E4M3, {m, k}, Device::kCUDA);
    args.scales = TensorView::contiguous(d_scales.data(), DType::kFP32, {m, 4}, Device::kCUDA);
    per_token_group_quant(args);
    LOWBIT_TEST_CUDA(cudaDeviceSynchronize());
    EXPECT_EQ(d_out.download<std::uint8_t>(), ref_out);
    const auto scales = d_scales.download<float>();
    for (std::size_t i = 0; i < scales.size(); ++i) {
      EXPECT_EQ(float_bits(scales[i]), float_bits(ref_scales[i])) << "scale " << i;
    }
    EXPECT_TRUE(std::isinf(ref_scales[1]) || pow2);  // the Inf group's scale
    const float eps_scale = 1e-10f / 448.0f;  // the all-NaN group falls to eps
    EXPECT_EQ(ref_scales[6 * 4], pow2 ? round_scale_up_to_power_of_two(eps_scale) : eps_scale);
  }
}

TEST(PerTokenGroupQuantGpu, ProgrammaticDependentLaunchWaitsForTheInput) {
  // Decode rows (the direct kernel) and prefill rows (the pipelined one), with scale layouts a
  // GEMM reads directly; under LOWBIT_QUANT_KERNEL both run through either kernel.
  for (const auto& [rows, layout] :
       {std::pair<std::int64_t, ScaleLayout>{4, ScaleLayout::kColumnMajorTmaAligned},
        {4096, ScaleLayout::kRowMajor}}) {
    Case c;
    c.rows = rows;
    c.cols = 7168;
    c.layout = layout;
    c.late_input = true;
    run_case(c);
  }
}

TEST(PerTokenGroupQuantGpu, MoreThan2To31Elements) {
  Case c;
  c.cols = 7168;
  c.rows = (std::int64_t{1} << 31) / c.cols + 1000;  // 2.155e9 elements
  ASSERT_GT(c.rows * c.cols, std::int64_t{1} << 31);
  run_case(c);
}

TEST(PerTokenGroupQuantGpu, RunsOnTheCallersStream) {
  cudaStream_t stream;
  LOWBIT_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::int64_t m = 64, k = 4096;
  const auto input = testing::random_activations(DType::kBF16, m, k, k, 99);
  DeviceBuffer d_in(input.size()), d_out(m * k), d_scales(m * 32 * 4);
  d_in.upload(input);
  PerTokenGroupQuantArgs args;
  args.input = TensorView::contiguous(d_in.data(), DType::kBF16, {m, k}, Device::kCUDA);
  args.output = TensorView::contiguous(d_out.data(), DType::kFP8E4M3, {m, k}, Device::kCUDA);
  args.scales = TensorView::contiguous(d_scales.data(), DType::kFP32, {m, 32}, Device::kCUDA);
  // Captured into a graph: proves no host sync or default-stream work inside the op.
  cudaGraph_t graph;
  LOWBIT_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  per_token_group_quant(args, stream);
  LOWBIT_TEST_CUDA(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  LOWBIT_TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  d_out.fill_byte(0x7F);
  LOWBIT_TEST_CUDA(cudaGraphLaunch(exec, stream));
  LOWBIT_TEST_CUDA(cudaStreamSynchronize(stream));
  std::vector<std::uint8_t> ref_out(m * k);
  std::vector<float> ref_scales(m * 32);
  args.input = TensorView::contiguous(const_cast<std::uint8_t*>(input.data()), DType::kBF16, {m, k});
  args.output = TensorView::contiguous(ref_out.data(), DType::kFP8E4M3, {m, k});
  args.scales = TensorView::contiguous(ref_scales.data(), DType::kFP32, {m, 32});
  per_token_group_quant(args);
  EXPECT_EQ(d_out.download<std::uint8_t>(), ref_out);
  EXPECT_EQ(d_scales.download<float>(), ref_scales);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(PerTokenGroupQuantGpu, KernelAlignmentErrors) {
  DeviceBuffer d_in(2 * 4096 * 2 + 64), d_out(2 * 4096 + 64), d_scales(2 * 32 * 4);
  PerTokenGroupQuantArgs args;
  args.input = TensorView::contiguous(static_cast<char*>(d_in.data()) + 2, DType::kBF16,
                                      {2, 4096}, Device::kCUDA);
  args.output = TensorView::contiguous(d_out.data(), DType::kFP8E4M3, {2, 4096}, Device::kCUDA);
  args.scales = TensorView::contiguous(d_scales.data(), DType::kFP32, {2, 32}, Device::kCUDA);
  try {
    per_token_group_quant(args);
    ADD_FAILURE() << "misaligned input accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.argument(), "input") << error.what();
  }
  args.input = TensorView::strided(d_in.data(), DType::kBF16, {2, 4096}, {4100, 1}, Device::kCUDA);
  EXPECT_THROW(per_token_group_quant(args), Error);
}

}  // namespace
}  // namespace lowbit
