// The benchmark roofline: points extracted from each family's report, and the PNG itself
// (decoded again with stb_image to check its size and that points and ceilings were drawn).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <string>

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#include <stb/stb_image.h>

#include "png_canvas.h"
#include "roofline_plot.h"

namespace lowbit::bench {
namespace {

using nlohmann::json;

json quant_report() {
  return {{"benchmark", "quant"}, {"device", "test GPU"}, {"copy_gbps", 4000.0},
          {"results", {{{"op", "silu_and_mul_quant"}, {"m", 4096}, {"k", 18432}, {"gbps", 3000.0}},
                       {{"op", "per_token_quant"}, {"m", 16}, {"k", 7168}, {"gbps", 0.0}}}}};
}

json block_gemm_report() {
  return {{"benchmark", "block-gemm"}, {"copy_gbps", 4100.0}, {"fp8_tflops", 1200.0},
          {"results",
           {{{"shape", "down"}, {"m", 64}, {"n", 7168}, {"k", 2048}, {"weight_gbps", 2500.0},
             {"ours_tflops", 40.0}, {"cublaslt_block_tflops", 30.0}, {"cublaslt_per_tensor_tflops", 50.0}},
            {{"shape", "down"}, {"m", 4096}, {"n", 7168}, {"k", 2048}, {"weight_gbps", 10.0},
             {"ours_tflops", 900.0}, {"cublaslt_block_tflops", 0.0}, {"cublaslt_per_tensor_tflops", 1000.0}}}}};
}

TEST(RooflinePlot, PointsFromEachFamily) {
  const auto quant = plot_points(quant_report());
  ASSERT_EQ(quant.size(), 1u);  // a zero (not measured) value is left out
  EXPECT_EQ(quant[0].series, "lowbit");
  EXPECT_FALSE(quant[0].compute);
  EXPECT_EQ(quant[0].value, 3000.0);

  const auto gemm = plot_points(block_gemm_report());
  // M = 64: weight stream + three GEMM points; M = 4096: no stream point, no block baseline.
  ASSERT_EQ(gemm.size(), 6u);
  EXPECT_FALSE(gemm[0].compute);
  EXPECT_EQ(gemm[0].value, 2500.0);
  const double m = 64, n = 7168, k = 2048;
  EXPECT_DOUBLE_EQ(gemm[1].intensity, 2 * m * n * k / (m * k + n * k + 2 * m * n));
  EXPECT_EQ(gemm[2].series, "cuBLASLt FP8 block");

  const json nvfp4 = {{"benchmark", "nvfp4"},
                      {"results", {{{"model", "dsv3"}, {"projection", "down"}, {"tokens", 1},
                                    {"dense_gbps", 2000.0}, {"sparse24_gbps", 1500.0},
                                    {"cublaslt_bf16_gbps", 3500.0}}}}};
  EXPECT_EQ(plot_points(nvfp4).size(), 3u);
  EXPECT_TRUE(plot_points({{"benchmark", "unknown"}, {"results", json::array()}}).empty());
}

TEST(RooflinePlot, PngHasBothPanelsWithPointsAndCeilings) {
  std::vector<PlotPoint> points = plot_points(quant_report());
  const auto gemm = plot_points(block_gemm_report());
  points.insert(points.end(), gemm.begin(), gemm.end());
  const std::string path = ::testing::TempDir() + "lowbit_roofline_" + std::to_string(::getpid()) + ".png";
  write_roofline_png(points, {4100.0, 1200.0}, "test", path);

  int width = 0, height = 0, channels = 0;
  unsigned char* rgb = stbi_load(path.c_str(), &width, &height, &channels, 3);
  ASSERT_NE(rgb, nullptr);
  EXPECT_EQ(width, 1800);
  EXPECT_EQ(height, 840);
  int ours_left = 0, ours_right = 0, peers = 0, black = 0;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const unsigned char* p = rgb + (y * width + x) * 3;
      const bool ours = p[0] == 31 && p[1] == 119 && p[2] == 180;
      if (ours && y < 720) (x < 900 ? ours_left : ours_right) += 1;
      if (p[0] == 255 && p[1] == 127 && p[2] == 14) ++peers;
      if (p[0] == 0 && p[1] == 0 && p[2] == 0) ++black;
    }
  }
  stbi_image_free(rgb);
  std::remove(path.c_str());
  EXPECT_GT(ours_left, 30);   // markers of our bandwidth-bound points
  EXPECT_GT(ours_right, 30);  // and of our GEMM points
  EXPECT_GT(peers, 10);       // the cuBLASLt block-scaled point
  EXPECT_GT(black, 2000);     // ceilings, roof and text
}

TEST(RooflinePlot, UnwritablePathIsAnError) {
  EXPECT_THROW(write_roofline_png({}, {1.0, 1.0}, "t", "/nonexistent-dir/x.png"), std::exception);
}

TEST(Canvas, TextAndMarkersDrawPixels) {
  Canvas canvas(64, 32, {255, 255, 255});
  canvas.text(2, 2, "A1", {0, 0, 0}, 2);
  canvas.marker(50, 16, Marker::kCircle, 5, {255, 0, 0}, false);
  int dark = 0, red = 0;
  for (int y = 0; y < 32; ++y) {
    for (int x = 0; x < 64; ++x) {
      const Color c = canvas.pixel(x, y);
      dark += c.r == 0 && c.g == 0;
      red += c.r == 255 && c.g == 0;
    }
  }
  EXPECT_GT(dark, 20);
  EXPECT_GT(red, 10);
  EXPECT_EQ(canvas.pixel(50, 16).g, 255);  // a hollow marker leaves its centre alone
}

}  // namespace
}  // namespace lowbit::bench
