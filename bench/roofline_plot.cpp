// Roofline PNG of the benchmark reports (see roofline_plot.h).
#include "roofline_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "png_canvas.h"

namespace lowbit::bench {
namespace {

using nlohmann::json;

const Color kWhite{255, 255, 255}, kBlack{0, 0, 0}, kGrid{225, 225, 225}, kAxis{60, 60, 60};

struct Series {
  const char* name;
  Color color;
  bool filled;
};
const Series kSeries[] = {{"lowbit", {31, 119, 180}, true},
                          {"lowbit 2:4 sparse", {44, 160, 44}, true},
                          {"cuBLASLt bf16", {214, 39, 40}, false},
                          {"cuBLASLt FP8 block", {255, 127, 14}, false},
                          {"cuBLASLt FP8 per-tensor", {127, 127, 127}, false}};

const Series& series_of(const std::string& name) {
  for (const Series& s : kSeries) {
    if (name == s.name) return s;
  }
  return kSeries[0];
}

Marker marker_of(const std::string& family) {
  if (family == "quant") return Marker::kCircle;
  if (family == "nvfp4") return Marker::kSquare;
  if (family == "gemm") return Marker::kTriangle;
  return Marker::kDiamond;
}

std::string shape_label(const json& r, const char* a, const char* b) {
  return std::to_string(r.value(a, 0LL)) + "x" + std::to_string(r.value(b, 0LL));
}

double number(const json& r, const char* key) {
  const auto it = r.find(key);
  return it != r.end() && it->is_number() ? it->get<double>() : 0.0;
}

void add(std::vector<PlotPoint>& points, PlotPoint point) {
  if (point.value > 0) points.push_back(std::move(point));
}

// Plot area of a panel and its value -> pixel maps.
struct Frame {
  int left, top, right, bottom;
};

void draw_frame(Canvas& canvas, const Frame& f, const std::string& title) {
  canvas.line(f.left, f.bottom, f.right, f.bottom, kAxis, 2);
  canvas.line(f.left, f.top, f.left, f.bottom, kAxis, 2);
  canvas.text(f.left, f.top - 34, title, kBlack, 2);
}

// One row under the panel: each series present (colour, filled = ours), then the family markers.
void draw_legend(Canvas& canvas, const Frame& f, const std::vector<PlotPoint>& points) {
  int x = f.left - 90;
  const int y = f.bottom + 64;
  for (const Series& s : kSeries) {
    const bool present = std::any_of(points.begin(), points.end(),
                                     [&](const PlotPoint& p) { return p.series == s.name; });
    if (!present) continue;
    canvas.marker(x + 6, y + 7, Marker::kCircle, 6, s.color, s.filled);
    canvas.text(x + 18, y, s.name, kBlack, 2);
    x += 18 + Canvas::text_width(s.name, 2) + 16;
  }
  for (const char* family : {"quant", "nvfp4", "block-gemm", "gemm"}) {
    const bool present = std::any_of(points.begin(), points.end(),
                                     [&](const PlotPoint& p) { return p.family == family; });
    if (!present) continue;
    canvas.marker(x + 6, y + 7, marker_of(family), 6, kAxis, true);
    canvas.text(x + 18, y, family, kAxis, 2);
    x += 18 + Canvas::text_width(family, 2) + 16;
  }
}

void draw_bandwidth_panel(Canvas& canvas, const Frame& f, const std::vector<PlotPoint>& all,
                          double copy_gbps) {
  std::vector<PlotPoint> points;
  for (const PlotPoint& p : all) {
    if (!p.compute) points.push_back(p);
  }
  draw_frame(canvas, f, "bandwidth-bound kernels: achieved GB/s vs the copy ceiling");
  double top = copy_gbps * 1.15;
  for (const PlotPoint& p : points) top = std::max(top, p.value * 1.05);
  const double step = top > 4000 ? 1000 : top > 1000 ? 500 : 100;
  auto y_of = [&](double v) { return f.bottom - (f.bottom - f.top) * v / top; };
  for (double v = step; v < top; v += step) {
    canvas.line(f.left + 1, y_of(v), f.right, y_of(v), kGrid);
    char text[32];
    std::snprintf(text, sizeof(text), "%.0f", v);
    canvas.text(f.left - 8 - Canvas::text_width(text, 2), static_cast<int>(y_of(v)) - 7, text, kAxis, 2);
  }
  // One x slot per (family, label); the peers of a slot sit on the same x as ours.
  std::vector<std::pair<std::string, std::string>> slots;
  for (const PlotPoint& p : points) {
    const auto key = std::make_pair(p.family, p.label);
    if (std::find(slots.begin(), slots.end(), key) == slots.end()) slots.push_back(key);
  }
  const double width = static_cast<double>(f.right - f.left - 20) / std::max<std::size_t>(1, slots.size());
  auto x_of = [&](const PlotPoint& p) {
    const auto index = std::find(slots.begin(), slots.end(), std::make_pair(p.family, p.label)) - slots.begin();
    return f.left + 10 + width * (index + 0.5);
  };
  // Family names under their run of slots, on alternating rows so short runs do not collide.
  for (std::size_t i = 0, row = 0; i < slots.size(); ++row) {
    std::size_t j = i;
    while (j < slots.size() && slots[j].first == slots[i].first) ++j;
    const double x0 = f.left + 10 + width * i, x1 = f.left + 10 + width * j;
    canvas.line(x0 + 2, f.bottom + 8, x1 - 2, f.bottom + 8, kAxis, 2);
    const std::string name = slots[i].first + " (" + std::to_string(j - i) + ")";
    canvas.text(static_cast<int>((x0 + x1) / 2) - Canvas::text_width(name, 2) / 2,
                f.bottom + 16 + static_cast<int>(row % 2) * 18, name, kBlack, 2);
    i = j;
  }
  canvas.line(f.left, y_of(copy_gbps), f.right, y_of(copy_gbps), kBlack, 2, 8);
  char ceiling[64];
  std::snprintf(ceiling, sizeof(ceiling), "device copy %.0f GB/s", copy_gbps);
  canvas.text(f.left + 10, static_cast<int>(y_of(copy_gbps)) - 20, ceiling, kBlack, 2);
  for (const PlotPoint& p : points) {
    const Series& s = series_of(p.series);
    canvas.marker(x_of(p), y_of(p.value), marker_of(p.family), 5, s.color, s.filled);
  }
  draw_legend(canvas, f, points);
}

void draw_compute_panel(Canvas& canvas, const Frame& f, const std::vector<PlotPoint>& all,
                        const Ceilings& ceilings) {
  std::vector<PlotPoint> points;
  for (const PlotPoint& p : all) {
    if (p.compute && p.intensity > 0) points.push_back(p);
  }
  draw_frame(canvas, f, "GEMM roofline: TFLOP/s vs FLOP per byte (log-log)");
  if (points.empty() || ceilings.fp8_tflops <= 0) {
    canvas.text(f.left + 20, (f.top + f.bottom) / 2, "no GEMM results in these reports", kAxis, 2);
    return;
  }
  double x_lo = 1e300, x_hi = 0;
  for (const PlotPoint& p : points) {
    x_lo = std::min(x_lo, p.intensity);
    x_hi = std::max(x_hi, p.intensity);
  }
  const double lx0 = std::floor(std::log10(x_lo)), lx1 = std::ceil(std::log10(x_hi * 1.01));
  double y_min = ceilings.fp8_tflops;
  for (const PlotPoint& p : points) y_min = std::min(y_min, p.value);
  const double ly0 = std::floor(std::log10(std::max(y_min, 1e-3))), ly1 = std::ceil(std::log10(ceilings.fp8_tflops * 1.5));
  auto x_of = [&](double v) { return f.left + (f.right - f.left) * (std::log10(v) - lx0) / (lx1 - lx0); };
  auto y_of = [&](double v) { return f.bottom - (f.bottom - f.top) * (std::log10(v) - ly0) / (ly1 - ly0); };
  for (double e = lx0; e <= lx1; e += 1) {
    canvas.line(x_of(std::pow(10, e)), f.top, x_of(std::pow(10, e)), f.bottom - 1, kGrid);
    char text[32];
    std::snprintf(text, sizeof(text), "%g", std::pow(10, e));
    canvas.text(static_cast<int>(x_of(std::pow(10, e))) - Canvas::text_width(text, 2) / 2, f.bottom + 10, text, kAxis, 2);
  }
  for (double e = ly0; e <= ly1; e += 1) {
    canvas.line(f.left + 1, y_of(std::pow(10, e)), f.right, y_of(std::pow(10, e)), kGrid);
    char text[32];
    std::snprintf(text, sizeof(text), "%g", std::pow(10, e));
    canvas.text(f.left - 8 - Canvas::text_width(text, 2), static_cast<int>(y_of(std::pow(10, e))) - 7, text, kAxis, 2);
  }
  canvas.text(f.right - Canvas::text_width("FLOP per byte", 2), f.bottom + 30, "FLOP per byte", kAxis, 2);
  // The roof: bandwidth slope up to the ridge, then the matrix rate.
  const double ridge = ceilings.fp8_tflops * 1e3 / ceilings.copy_gbps;
  const double x_start = std::pow(10, lx0), x_end = std::pow(10, lx1);
  const double roof_start = std::min(ceilings.fp8_tflops, ceilings.copy_gbps * x_start / 1e3);
  if (ridge > x_start) {
    canvas.line(x_of(x_start), y_of(roof_start), x_of(std::min(ridge, x_end)),
                y_of(std::min(ceilings.fp8_tflops, ceilings.copy_gbps * std::min(ridge, x_end) / 1e3)), kBlack, 2);
  }
  if (ridge < x_end) {
    canvas.line(x_of(std::max(ridge, x_start)), y_of(ceilings.fp8_tflops), x_of(x_end), y_of(ceilings.fp8_tflops), kBlack, 2);
  }
  for (const PlotPoint& p : points) {
    const Series& s = series_of(p.series);
    canvas.marker(x_of(p.intensity), y_of(p.value), marker_of(p.family), 5, s.color, s.filled);
  }
  char roof[96];
  std::snprintf(roof, sizeof(roof), "roof: copy %.0f GB/s, FP8 %.0f TFLOP/s", ceilings.copy_gbps, ceilings.fp8_tflops);
  draw_legend(canvas, f, points);
  canvas.text(f.left + 10, f.bottom - 24, roof, kBlack, 2);
}

}  // namespace

std::vector<PlotPoint> plot_points(const json& report) {
  std::vector<PlotPoint> points;
  const std::string family = report.value("benchmark", "");
  if (!report.contains("results")) return points;
  for (const json& r : report["results"]) {
    if (family == "quant") {
      add(points, {family, r.value("op", "") + " " + shape_label(r, "m", "k") + " " +
                               r.value("output", "") + " " + r.value("scale_layout", ""),
                   "lowbit", false, 0, number(r, "gbps")});
    } else if (family == "nvfp4") {
      const std::string label = r.value("model", "") + " " + r.value("projection", "") + " M=" +
                                std::to_string(r.value("tokens", 0LL));
      add(points, {family, label, "lowbit", false, 0, number(r, "dense_gbps")});
      add(points, {family, label, "lowbit 2:4 sparse", false, 0, number(r, "sparse24_gbps")});
      add(points, {family, label, "cuBLASLt bf16", false, 0, number(r, "cublaslt_bf16_gbps")});
    } else if (family == "block-gemm") {
      const double m = number(r, "m"), n = number(r, "n"), k = number(r, "k");
      const std::string label = r.value("shape", "") + " M=" + std::to_string(static_cast<long long>(m));
      const double intensity = 2 * m * n * k / (m * k + n * k + 2 * m * n);
      if (m <= 128) add(points, {family, label, "lowbit", false, 0, number(r, "weight_gbps")});
      add(points, {family, label, "lowbit", true, intensity, number(r, "ours_tflops")});
      add(points, {family, label, "cuBLASLt FP8 block", true, intensity, number(r, "cublaslt_block_tflops")});
      add(points, {family, label, "cuBLASLt FP8 per-tensor", true, intensity,
                   number(r, "cublaslt_per_tensor_tflops")});
    } else if (family == "gemm") {
      const double m = number(r, "m"), n = number(r, "n"), k = number(r, "k");
      const std::string label = r.value("shape", "") + " M=" + std::to_string(static_cast<long long>(m));
      const double intensity = 2 * m * n * k / (m * k + n * k + 2 * m * n);
      const double flop = 2 * m * n * k;
      const double lt_us = number(r, "cublaslt_fp8_us");
      if (m <= 64) add(points, {family, label, "lowbit", false, 0, number(r, "weight_gbps")});
      add(points, {family, label, "lowbit", true, intensity, number(r, "fp8_per_tensor_tflops")});
      if (lt_us > 0) {
        add(points, {family, label, "cuBLASLt FP8 per-tensor", true, intensity, flop / (lt_us * 1e-6) / 1e12});
      }
    }
  }
  return points;
}

void write_roofline_png(const std::vector<PlotPoint>& points, const Ceilings& ceilings,
                        const std::string& title, const std::string& path) {
  Canvas canvas(1800, 840, kWhite);
  canvas.text(40, 14, title, kBlack, 3);
  draw_bandwidth_panel(canvas, {110, 110, 880, 720}, points, ceilings.copy_gbps);
  draw_compute_panel(canvas, {1010, 110, 1770, 720}, points, ceilings);
  canvas.write_png(path);
}

}  // namespace lowbit::bench
