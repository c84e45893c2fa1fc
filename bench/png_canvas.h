// A small RGB raster for benchmark plots: lines, markers, rectangles and text (stb_easy_font's
// bitmap font, Debian libstb-dev), saved as PNG with stb_image_write. Host code only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::bench {

struct Color {
  std::uint8_t r, g, b;
};

enum class Marker { kCircle, kSquare, kDiamond, kTriangle };

class Canvas {
 public:
  Canvas(int width, int height, Color background);
  int width() const { return width_; }
  int height() const { return height_; }
  Color pixel(int x, int y) const;

  void fill_rect(int x0, int y0, int x1, int y1, Color color);
  // A line `thickness` pixels wide; dash > 0 draws dash-pixel segments with dash-pixel gaps.
  void line(double x0, double y0, double x1, double y1, Color color, int thickness = 1,
            int dash = 0);
  void marker(double x, double y, Marker shape, int radius, Color color, bool filled);
  // Text with its top-left corner at (x, y); scale 1 is about 6 x 7 pixels per character.
  void text(int x, int y, const std::string& text, Color color, int scale = 1);
  static int text_width(const std::string& text, int scale = 1);

  // Throws lowbit::Error naming the path if the file cannot be written.
  void write_png(const std::string& path) const;

 private:
  void put(int x, int y, Color color);
  int width_, height_;
  std::vector<std::uint8_t> rgb_;
};

}  // namespace lowbit::bench
