// Canvas drawing (see png_canvas.h). Shapes are rasterized by testing pixel centres, which is
// plenty for plots; text comes from stb_easy_font's quads, PNG encoding from stb_image_write.
#include "png_canvas.h"

#include <algorithm>
#include <cmath>

#include "lowbit/error.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <stb/stb_easy_font.h>
#include <stb/stb_image_write.h>

namespace lowbit::bench {

Canvas::Canvas(int width, int height, Color background)
    : width_(width), height_(height), rgb_(static_cast<std::size_t>(width) * height * 3) {
  fill_rect(0, 0, width, height, background);
}

Color Canvas::pixel(int x, int y) const {
  const std::uint8_t* p = &rgb_[(static_cast<std::size_t>(y) * width_ + x) * 3];
  return {p[0], p[1], p[2]};
}

void Canvas::put(int x, int y, Color color) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  std::uint8_t* p = &rgb_[(static_cast<std::size_t>(y) * width_ + x) * 3];
  p[0] = color.r;
  p[1] = color.g;
  p[2] = color.b;
}

void Canvas::fill_rect(int x0, int y0, int x1, int y1, Color color) {
  for (int y = std::max(0, y0); y < std::min(height_, y1); ++y) {
    for (int x = std::max(0, x0); x < std::min(width_, x1); ++x) put(x, y, color);
  }
}

void Canvas::line(double x0, double y0, double x1, double y1, Color color, int thickness,
                  int dash) {
  const double length = std::hypot(x1 - x0, y1 - y0);
  const int steps = std::max(1, static_cast<int>(std::ceil(length * 2)));
  const int half = thickness / 2;
  for (int s = 0; s <= steps; ++s) {
    const double along = length * s / steps;
    if (dash > 0 && static_cast<int>(along / dash) % 2 == 1) continue;
    const double x = x0 + (x1 - x0) * s / steps, y = y0 + (y1 - y0) * s / steps;
    const int px = static_cast<int>(std::lround(x)), py = static_cast<int>(std::lround(y));
    fill_rect(px - half, py - half, px - half + thickness, py - half + thickness, color);
  }
}

void Canvas::marker(double cx, double cy, Marker shape, int radius, Color color, bool filled) {
  const double r = radius, inner = radius - 1.6;
  auto inside = [&](double dx, double dy, double size) {
    switch (shape) {
      case Marker::kCircle: return dx * dx + dy * dy <= size * size;
      case Marker::kSquare: return std::fabs(dx) <= size * 0.85 && std::fabs(dy) <= size * 0.85;
      case Marker::kDiamond: return std::fabs(dx) + std::fabs(dy) <= size * 1.15;
      case Marker::kTriangle:  // pointing up
        return dy <= size * 0.8 && dy >= -size && std::fabs(dx) <= (dy + size) * 0.6;
    }
    return false;
  };
  for (int y = static_cast<int>(cy - r - 2); y <= static_cast<int>(cy + r + 2); ++y) {
    for (int x = static_cast<int>(cx - r - 2); x <= static_cast<int>(cx + r + 2); ++x) {
      const double dx = x + 0.5 - cx, dy = y + 0.5 - cy;
      if (inside(dx, dy, r) && (filled || !inside(dx, dy, inner))) put(x, y, color);
    }
  }
}

void Canvas::text(int x, int y, const std::string& text, Color color, int scale) {
  // stb_easy_font writes 4 vertices of 16 bytes per quad; ~300 quads cover 60 characters.
  std::vector<char> buffer(std::max<std::size_t>(4096, text.size() * 16 * 4 * 24));
  std::string copy = text;
  const int quads = stb_easy_font_print(0, 0, copy.data(), nullptr, buffer.data(),
                                        static_cast<int>(buffer.size()));
  for (int q = 0; q < quads; ++q) {
    const float* v0 = reinterpret_cast<const float*>(buffer.data() + q * 64);
    const float* v2 = reinterpret_cast<const float*>(buffer.data() + q * 64 + 32);
    fill_rect(x + static_cast<int>(v0[0] * scale), y + static_cast<int>(v0[1] * scale),
              x + static_cast<int>(v2[0] * scale), y + static_cast<int>(v2[1] * scale), color);
  }
}

int Canvas::text_width(const std::string& text, int scale) {
  std::string copy = text;
  return stb_easy_font_width(copy.data()) * scale;
}

void Canvas::write_png(const std::string& path) const {
  if (stbi_write_png(path.c_str(), width_, height_, 3, rgb_.data(), width_ * 3) == 0) {
    throw Error("bench", "png path", "a writable file", "'" + path + "'");
  }
}

}  // namespace lowbit::bench
