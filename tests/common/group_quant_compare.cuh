// Runs a group-quantizing op on the device twice, with outputs poisoned by two different byte
// patterns, and compares quantized bytes and scale bits with a CPU reference (row-major
// reference scales; each device layout is read back through its own index formula). Row padding
// of the output and TMA padding of the scales must keep their poison.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "common/device_buffer.cuh"
#include "common/slow_producer.cuh"
#include "lowbit/formats.h"
#include "lowbit/quant.h"

namespace lowbit::testing {

struct GroupQuantLayout {
  std::int64_t rows, cols;  // quantized [rows, cols]
  std::int64_t output_row_stride;
  int group;
  ScaleLayout layout;
};

inline void expect_group_quant_matches(const GroupQuantLayout& g, const DeviceBuffer& d_output,
                                       const DeviceBuffer& d_scales,
                                       const std::function<void()>& run_op,
                                       const std::vector<std::uint8_t>& ref_out,
                                       const std::vector<float>& ref_scales) {
  const std::int64_t groups = g.cols / g.group;
  const ScaleShape shape = scale_storage_shape(g.layout, g.rows, g.cols, g.group);
  const auto at = [&](std::int64_t m, std::int64_t k) {
    return g.layout == ScaleLayout::kRowMajor ? m * groups + k : k * shape.cols + m;
  };
  for (std::uint8_t poison : {std::uint8_t{0x7F}, std::uint8_t{0xA5}}) {
    d_output.fill_byte(poison);
    d_scales.fill_byte(poison);  // 0x7F7F7F7F (3.4e38) and 0xA5A5A5A5 (negative): never scales
    run_op();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto out = d_output.download<std::uint8_t>();
    const auto scales = d_scales.download<std::uint32_t>();
    const std::uint32_t poison_word = poison * 0x01010101u;
    std::int64_t bad_q = 0, bad_s = 0, bad_pad = 0;
    for (std::int64_t m = 0; m < g.rows; ++m) {
      for (std::int64_t k = 0; k < g.output_row_stride; ++k) {
        const std::uint8_t got = out[m * g.output_row_stride + k];
        if (k >= g.cols) {
          bad_pad += got != poison;
          continue;
        }
        const std::uint8_t want = ref_out[m * g.cols + k];
        if (got != want && ++bad_q <= 5) {
          ADD_FAILURE() << "q[" << m << ", " << k << "] gpu 0x" << std::hex << int(got) << " ref 0x"
                        << int(want) << std::dec << " scale ref "
                        << ref_scales[m * groups + k / g.group];
        }
      }
      for (std::int64_t k = 0; k < groups; ++k) {
        const std::uint32_t got = scales[at(m, k)];
        const std::uint32_t want = float_bits(ref_scales[m * groups + k]);
        if (got != want && ++bad_s <= 5) {
          ADD_FAILURE() << "scale[" << m << ", " << k << "] gpu " << bits_float(got) << " ref "
                        << bits_float(want);
        }
      }
    }
    for (std::int64_t k = 0; k < shape.rows && g.layout != ScaleLayout::kRowMajor; ++k) {
      for (std::int64_t m = g.rows; m < shape.cols; ++m) {
        bad_pad += scales[k * shape.cols + m] != poison_word;  // TMA padding untouched
      }
    }
    ASSERT_EQ(bad_q, 0) << "quantized bytes differ";
    ASSERT_EQ(bad_s, 0) << "scales differ";
    ASSERT_EQ(bad_pad, 0) << "padding was written";
  }
}

// The same check for an op launched with enable_pdl behind a held producer that writes `input`
// (the device input's bytes) late over `early` (run_behind_late_input). `run_on(stream)`
// launches the op on `stream`.
inline void expect_group_quant_matches_behind_late_input(
    const GroupQuantLayout& g, const DeviceBuffer& d_output, const DeviceBuffer& d_scales,
    const DeviceBuffer& d_input, const std::vector<std::uint8_t>& input,
    const std::vector<std::uint8_t>& early, const std::function<void(cudaStream_t)>& run_on,
    const std::vector<std::uint8_t>& ref_out, const std::vector<float>& ref_scales) {
  DeviceBuffer d_late(input.size());
  d_late.upload(input);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  run_on(stream);  // loads the module: a first launch waits for an idle device
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  expect_group_quant_matches(
      g, d_output, d_scales,
      [&] {
        d_input.upload(early);
        ASSERT_EQ(run_behind_late_input(d_input.data(), d_late.data(),
                                        static_cast<std::int64_t>(input.size()), stream,
                                        [&] { run_on(stream); }),
                  cudaSuccess);
      },
      ref_out, ref_scales);
  cudaStreamDestroy(stream);
}

}  // namespace lowbit::testing
