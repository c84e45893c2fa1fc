// per_token_quant, per_token_asymmetric_int8_quant and per_tensor_quant (static and dynamic) on
// device tensors against the CPU reference, bit for bit, on fresh random data with outputs
// poisoned twice; model widths, dtypes, strided rows, > 2^31 elements, CUDA-graph capture.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "common/device_buffer.cuh"
#include "common/slow_producer.cuh"
#include "common/test_data.h"
#include "lowbit/formats.h"
#include "lowbit/quant.h"

namespace lowbit {
namespace {

using testing::DeviceBuffer;

enum class Op { kPerToken, kAsymmetric, kPerTensorStatic, kPerTensorDynamic };

struct Case {
  Op op = Op::kPerToken;
  std::int64_t rows = 1, cols = 2048;
  DType input_dtype = DType::kBF16;
  DType output_dtype = DType::kFP8E4M3;
  std::int64_t input_pad = 0, output_pad = 0;
  std::optional<float> scale_ub;
  // Launched with enable_pdl behind a held producer that writes the input late, over another
  // draw (testing::run_behind_late_input).
  bool late_input = false;

  std::string describe() const {
    std::ostringstream out;
    out << (late_input ? "late input, PDL: " : "") << "op " << static_cast<int>(op) << " M=" << rows << " K=" << cols << " "
        << dtype_name(input_dtype) << "->" << dtype_name(output_dtype) << " pads " << input_pad
        << "/" << output_pad << " ub=" << scale_ub.value_or(0.0f);
    return out.str();
  }
};

std::uint64_t salt = 5000;

// Runs the op with views over `input`, `output`, `scales` (and zero points), host or device.
void run_op(const Case& c, Device device, void* input, void* output, void* scales, void* zero_points,
            void* workspace, cudaStream_t stream = nullptr) {
  const std::int64_t in_stride = c.cols + c.input_pad, out_stride = c.cols + c.output_pad;
  const TensorView in = TensorView::strided(input, c.input_dtype, {c.rows, c.cols}, {in_stride, 1}, device);
  const TensorView out = TensorView::strided(output, c.output_dtype, {c.rows, c.cols}, {out_stride, 1}, device);
  switch (c.op) {
    case Op::kPerToken: {
      PerTokenQuantArgs a{in, out, TensorView::contiguous(scales, DType::kFP32, {c.rows}, device)};
      a.scale_ub = c.scale_ub;
      a.enable_pdl = c.late_input;
      return per_token_quant(a, stream);
    }
    case Op::kAsymmetric: {
      PerTokenAsymmetricInt8QuantArgs a{in, out,
                                        TensorView::contiguous(scales, DType::kFP32, {c.rows}, device),
                                        TensorView::contiguous(zero_points, DType::kInt32, {c.rows}, device)};
      a.enable_pdl = c.late_input;
      return per_token_asymmetric_int8_quant(a, stream);
    }
    default: {
      PerTensorQuantArgs a;
      a.input = in;
      a.output = out;
      a.scale = TensorView::contiguous(scales, DType::kFP32, {1}, device);
      a.dynamic = c.op == Op::kPerTensorDynamic;
      a.scale_ub = c.scale_ub;
      a.workspace = TensorView::contiguous(workspace, DType::kUInt8, {4}, device);
      a.enable_pdl = c.late_input;
      return per_tensor_quant(a, stream);
    }
  }
}

void run_case(const Case& c) {
  SCOPED_TRACE(c.describe());
  const std::int64_t in_stride = c.cols + c.input_pad, out_stride = c.cols + c.output_pad;
  const bool per_tensor = c.op == Op::kPerTensorStatic || c.op == Op::kPerTensorDynamic;
  const std::int64_t scale_count = per_tensor ? 1 : c.rows;
  const auto input = testing::random_activations(c.input_dtype, c.rows, in_stride, c.cols, salt++);
  std::vector<std::uint8_t> ref_out(c.rows * out_stride, 0);
  std::vector<float> ref_scales(scale_count, 0.37f);  // the static scale
  std::vector<std::int32_t> ref_zp(c.rows, 0);
  if (per_tensor) {
    run_op(c, Device::kCPU, const_cast<std::uint8_t*>(input.data()), ref_out.data(), ref_scales.data(),
           nullptr, nullptr);
  } else {
    testing::parallel_for(c.rows, [&](std::int64_t begin, std::int64_t end) {
      Case slice = c;
      slice.rows = end - begin;
      run_op(slice, Device::kCPU,
             const_cast<std::uint8_t*>(input.data()) + begin * in_stride * dtype_size(c.input_dtype),
             ref_out.data() + begin * out_stride, ref_scales.data() + begin, ref_zp.data() + begin,
             nullptr);
    }, /*min_per_worker=*/16);
  }

  DeviceBuffer d_in(input.size()), d_out(c.rows * out_stride), d_scales(scale_count * 4),
      d_zp(c.rows * 4), d_ws(4), d_late(c.late_input ? input.size() : 0);
  d_in.upload(input);
  cudaStream_t stream = nullptr;
  std::vector<std::uint8_t> early;
  if (c.late_input) {
    early = testing::random_activations(c.input_dtype, c.rows, in_stride, c.cols, salt++);
    d_late.upload(input);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    if (c.op == Op::kPerTensorStatic) d_scales.upload(std::vector<float>{0.37f});
    // Loads the module: a first launch waits for an idle device.
    run_op(c, Device::kCUDA, d_in.data(), d_out.data(), d_scales.data(), d_zp.data(), d_ws.data(),
           stream);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  }
  for (std::uint8_t poison : {std::uint8_t{0x7F}, std::uint8_t{0xA5}}) {
    d_out.fill_byte(poison);
    if (c.op == Op::kPerTensorStatic) {
      d_scales.upload(std::vector<float>{0.37f});
    } else {
      d_scales.fill_byte(poison);
    }
    d_zp.fill_byte(poison);
    d_ws.fill_byte(poison);  // the dynamic path must zero its workspace itself
    if (c.late_input) {
      d_in.upload(early);
      ASSERT_EQ(testing::run_behind_late_input(d_in.data(), d_late.data(),
                                               static_cast<std::int64_t>(input.size()), stream,
                                               [&] {
                                                 run_op(c, Device::kCUDA, d_in.data(), d_out.data(),
                                                        d_scales.data(), d_zp.data(), d_ws.data(),
                                                        stream);
                                               }),
                cudaSuccess);
    } else {
      run_op(c, Device::kCUDA, d_in.data(), d_out.data(), d_scales.data(), d_zp.data(), d_ws.data());
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto out = d_out.download<std::uint8_t>();
    std::int64_t bad = 0;
    for (std::int64_t m = 0; m < c.rows; ++m) {
      for (std::int64_t k = 0; k < out_stride; ++k) {
        const std::uint8_t got = out[m * out_stride + k];
        const std::uint8_t want = k < c.cols ? ref_out[m * out_stride + k] : poison;
        if (got != want && ++bad <= 5) {
          ADD_FAILURE() << "q[" << m << ", " << k << "] gpu 0x" << std::hex << int(got) << " ref 0x"
                        << int(want);
        }
      }
    }
    ASSERT_EQ(bad, 0);
    const auto scales = d_scales.download<std::uint32_t>();
    for (std::int64_t i = 0; i < scale_count; ++i) {
      ASSERT_EQ(scales[i], float_bits(ref_scales[i])) << "scale " << i;
    }
    if (c.op == Op::kAsymmetric) EXPECT_EQ(d_zp.download<std::int32_t>(), ref_zp);
  }
  if (stream != nullptr) cudaStreamDestroy(stream);
}

TEST(TokenTensorQuantGpu, ModelWidthsAndTokenCounts) {
  for (Op op : {Op::kPerToken, Op::kAsymmetric, Op::kPerTensorStatic, Op::kPerTensorDynamic}) {
    for (std::int64_t k : {2048, 7168, 18432}) {
      for (std::int64_t m : {1, 16, 129, 4096, 16384}) {
        Case c;
        c.op = op;
        c.rows = m;
        c.cols = k;
        if (op == Op::kAsymmetric) c.output_dtype = DType::kInt8;
        run_case(c);
      }
    }
  }
}

// Row lengths on both sides of every per-token kernel boundary: the register-resident kernel
// holds up to 512 threads x 1, 2, 4 or 8 pieces of 8 elements (4 for fp32); longer rows take
// the two-pass kernel.
TEST(TokenTensorQuantGpu, RowLengthsAcrossPerTokenKernels) {
  for (Op op : {Op::kPerToken, Op::kAsymmetric}) {
    for (DType in : {DType::kBF16, DType::kFP32}) {
      for (std::int64_t k : {8, 4088, 4096, 4104, 8200, 16384, 16392, 32768, 32776, 65536}) {
        Case c;
        c.op = op;
        c.rows = 37;
        c.cols = k;
        c.input_dtype = in;
        c.output_dtype = op == Op::kAsymmetric ? DType::kInt8 : DType::kFP8E4M3;
        run_case(c);
      }
    }
  }
}

TEST(TokenTensorQuantGpu, DtypesOptionsAndStrides) {
  for (Op op : {Op::kPerToken, Op::kAsymmetric, Op::kPerTensorStatic, Op::kPerTensorDynamic}) {
    for (DType in : {DType::kBF16, DType::kFP16, DType::kFP32}) {
      for (DType out : {DType::kFP8E4M3, DType::kInt8}) {
        if (op == Op::kAsymmetric && out != DType::kInt8) continue;
        for (int option = 0; option < 4; ++option) {
          Case c;
          c.op = op;
          c.rows = 77;
          c.cols = 1000;  // a multiple of 8, not of 128
          c.input_dtype = in;
          c.output_dtype = out;
          if (option & 1) {
            c.input_pad = 24;
            c.output_pad = 8;
          }
          if ((option & 2) && (op == Op::kPerToken || op == Op::kPerTensorDynamic)) c.scale_ub = 2.5f;
          run_case(c);
        }
      }
    }
  }
}

// NaN, Inf, -0, subnormals, ties and degenerate rows through both per-token ops, bf16 in. Rows
// of 2304 elements take the register-resident kernel; the special values sit among normal ones
// so that most rows keep a finite scale and the fast division path (for the asymmetric op, the
// saturating-pack code path) meets NaN and -0 dividends.
TEST(TokenTensorQuantGpu, SpecialValuesStayInTheirRows) {
  const std::int64_t m = 12, k = 2304;
  std::vector<std::uint16_t> input(m * k);
  for (std::int64_t i = 0; i < m * k; ++i) input[i] = float_to_bf16(std::sin(0.37f * i) * 2.5f);
  input[0 * k + 5] = float_to_bf16(NAN);                                   // NaN among values
  input[1 * k + 77] = float_to_bf16(INFINITY);                             // +Inf: Inf scale
  input[2 * k + 300] = float_to_bf16(-INFINITY);
  input[3 * k + 10] = float_to_bf16(NAN);                                  // NaN and Inf
  input[3 * k + 11] = float_to_bf16(INFINITY);
  for (std::int64_t c = 0; c < k; ++c) input[4 * k + c] = float_to_bf16(NAN);  // all NaN
  for (std::int64_t c = 0; c < k; ++c) input[5 * k + c] = 0;                   // all zero
  for (std::int64_t c = 0; c < k; ++c) input[6 * k + c] = 0x8000;              // all -0
  for (std::int64_t c = 0; c < k; ++c) input[7 * k + c] = float_to_bf16(3.0f);  // constant
  for (std::int64_t c = 0; c < k; ++c) {                                   // all negative
    input[8 * k + c] = float_to_bf16(-1.0f - std::fabs(std::sin(0.11f * c)));
  }
  input[9 * k + 1] = 0x8000;   // -0 among values
  input[9 * k + 2] = 0x0001;   // bf16 subnormals
  input[9 * k + 3] = 0x8003;
  for (std::int64_t c = 0; c < k; ++c) {  // range 255, so scale 1: every quotient is a .5 tie
    input[10 * k + c] = float_to_bf16(static_cast<float>(c % 256) - 127.5f);
  }
  input[11 * k + 400] = float_to_bf16(1e30f);  // one huge value: a huge scale
  input[11 * k + 401] = float_to_bf16(-1e-38f);
  for (Op op : {Op::kPerToken, Op::kAsymmetric}) {
    SCOPED_TRACE(op == Op::kPerToken ? "per_token_quant" : "per_token_asymmetric_int8_quant");
    Case c;
    c.op = op;
    c.rows = m;
    c.cols = k;
    c.output_dtype = op == Op::kAsymmetric ? DType::kInt8 : DType::kFP8E4M3;
    std::vector<std::uint8_t> ref_out(m * k);
    std::vector<float> ref_scales(m);
    std::vector<std::int32_t> ref_zp(m);
    run_op(c, Device::kCPU, input.data(), ref_out.data(), ref_scales.data(), ref_zp.data(), nullptr);

    DeviceBuffer d_in(m * k * 2), d_out(m * k), d_scales(m * 4), d_zp(m * 4);
    d_in.upload(input);
    d_out.fill_byte(0xA5);
    d_zp.fill_byte(0xA5);
    run_op(c, Device::kCUDA, d_in.data(), d_out.data(), d_scales.data(), d_zp.data(), nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto out = d_out.download<std::uint8_t>();
    for (std::int64_t i = 0; i < m * k; ++i) {
      ASSERT_EQ(out[i], ref_out[i]) << "q[" << i / k << ", " << i % k << "]";
    }
    const auto scales = d_scales.download<float>();
    for (std::int64_t r = 0; r < m; ++r) {
      EXPECT_EQ(float_bits(scales[r]), float_bits(ref_scales[r])) << "scale " << r;
    }
    if (op == Op::kAsymmetric) EXPECT_EQ(d_zp.download<std::int32_t>(), ref_zp);
  }
}

// Dynamic per-tensor takes one cluster launch up to 1 MB of input (2^19 16-bit or 2^18 fp32
// elements, src/cuda/quant/sm90_tensor_quant.cu) and the amax + quantize kernels above it:
// exactly at the capacity, one vector past it, strided rows on both sides, and a NaN and an
// Inf (the amax skips NaN; Inf makes an Inf scale) in the one-launch kernel.
TEST(TokenTensorQuantGpu, DynamicPerTensorAcrossTheOneLaunchCapacity) {
  for (DType in : {DType::kBF16, DType::kFP32}) {
    const std::int64_t capacity = in == DType::kFP32 ? (1 << 18) : (1 << 19);
    for (DType out : {DType::kFP8E4M3, DType::kInt8}) {
      Case c;
      c.op = Op::kPerTensorDynamic;
      c.input_dtype = in;
      c.output_dtype = out;
      c.cols = 4096;
      c.rows = capacity / 4096;
      run_case(c);  // exactly at capacity
      c.cols = 4104;
      run_case(c);  // 8 * rows elements past it
      c.cols = 1000;
      c.input_pad = 24;
      c.output_pad = 8;
      c.rows = capacity / 1000;
      run_case(c);  // strided, just below
      c.rows += 1;
      run_case(c);  // strided, just above
    }
  }
  const std::int64_t m = 16, k = 7168;
  for (const float special : {NAN, INFINITY}) {
    SCOPED_TRACE(special);
    std::vector<std::uint16_t> input(m * k);
    for (std::int64_t i = 0; i < m * k; ++i) input[i] = float_to_bf16(std::sin(0.37f * i) * 2.5f);
    input[5 * k + 77] = float_to_bf16(special);
    Case c;
    c.op = Op::kPerTensorDynamic;
    c.rows = m;
    c.cols = k;
    std::vector<std::uint8_t> ref_out(m * k);
    std::vector<float> ref_scale(1);
    run_op(c, Device::kCPU, input.data(), ref_out.data(), ref_scale.data(), nullptr, nullptr);
    DeviceBuffer d_in(m * k * 2), d_out(m * k), d_scale(4), d_ws(4);
    d_in.upload(input);
    d_out.fill_byte(0xA5);
    run_op(c, Device::kCUDA, d_in.data(), d_out.data(), d_scale.data(), nullptr, d_ws.data());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(d_out.download<std::uint8_t>(), ref_out);
    EXPECT_EQ(float_bits(d_scale.download<float>()[0]), float_bits(ref_scale[0]));
  }
}

TEST(TokenTensorQuantGpu, ProgrammaticDependentLaunchWaitsForTheInput) {
  // Every kernel: per-token resident (decode and prefill rows) and two-pass (a row longer than
  // 32K), per-tensor static, dynamic in one cluster launch (up to 1 MB) and in two passes.
  for (Op op : {Op::kPerToken, Op::kAsymmetric, Op::kPerTensorStatic, Op::kPerTensorDynamic}) {
    for (const auto& [rows, cols] : {std::pair<std::int64_t, std::int64_t>{4, 7168}, {4096, 7168},
                                     {3, 40960}}) {
      Case c;
      c.op = op;
      c.rows = rows;
      c.cols = cols;
      if (op == Op::kAsymmetric) c.output_dtype = DType::kInt8;
      c.late_input = true;
      run_case(c);
    }
  }
}

TEST(TokenTensorQuantGpu, MoreThan2To31Elements) {
  for (Op op : {Op::kPerToken, Op::kPerTensorDynamic}) {
    Case c;
    c.op = op;
    c.cols = 7168;
    c.rows = (std::int64_t{1} << 31) / c.cols + 300;
    run_case(c);
  }
}

// Both dynamic paths captured: 16 x 4096 (one cluster launch) and 256 x 4096 (memset, amax and
// quantize kernels).
TEST(TokenTensorQuantGpu, DynamicPerTensorInACudaGraph) {
  for (const std::int64_t m : {16, 256}) {
    SCOPED_TRACE(m);
    const std::int64_t k = 4096;
    DeviceBuffer d_in(m * k * 2), d_out(m * k), d_scale(4), d_ws(4);
    PerTensorQuantArgs args;
    args.input = TensorView::contiguous(d_in.data(), DType::kBF16, {m, k}, Device::kCUDA);
    args.output = TensorView::contiguous(d_out.data(), DType::kFP8E4M3, {m, k}, Device::kCUDA);
    args.scale = TensorView::contiguous(d_scale.data(), DType::kFP32, {1}, Device::kCUDA);
    args.workspace = TensorView::contiguous(d_ws.data(), DType::kUInt8, {4}, Device::kCUDA);
    args.dynamic = true;
    cudaStream_t stream;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    cudaGraph_t graph;
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    per_tensor_quant(args, stream);
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    cudaGraphExec_t exec;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int replay = 0; replay < 2; ++replay) {  // new data each replay: a new scale each time
      const auto input = testing::random_activations(DType::kBF16, m, k, k, 9000 + replay);
      d_in.upload(input);
      ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      std::vector<std::uint8_t> ref(m * k);
      std::vector<float> ref_scale(1);
      PerTensorQuantArgs host = args;
      host.input = TensorView::contiguous(const_cast<std::uint8_t*>(input.data()), DType::kBF16, {m, k});
      host.output = TensorView::contiguous(ref.data(), DType::kFP8E4M3, {m, k});
      host.scale = TensorView::contiguous(ref_scale.data(), DType::kFP32, {1});
      per_tensor_quant(host);
      EXPECT_EQ(d_out.download<std::uint8_t>(), ref);
      EXPECT_EQ(d_scale.download<float>()[0], ref_scale[0]);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
  }
}

}  // namespace
}  // namespace lowbit
