// Benchmark report files: the JSON reports and their PNG roofline (host code, any build).
#include "report_files.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "bench.h"
#include "lowbit/error.h"
#include "roofline_plot.h"

namespace lowbit::bench {

void plot_family_reports(const std::vector<nlohmann::json>& reports, const std::string& png_path) {
  std::vector<PlotPoint> points;
  Ceilings ceilings;
  std::string device;
  for (const nlohmann::json& report : reports) {
    const std::vector<PlotPoint> family = plot_points(report);
    points.insert(points.end(), family.begin(), family.end());
    ceilings.copy_gbps = std::max(ceilings.copy_gbps, report.value("copy_gbps", 0.0));
    ceilings.fp8_tflops = std::max(ceilings.fp8_tflops, report.value("fp8_tflops", 0.0));
    if (device.empty()) device = report.value("device", "");
  }
  write_roofline_png(points, ceilings, "lowbit kernels on " + device, png_path);
  std::printf("wrote %s (%zu points)\n", png_path.c_str(), points.size());
}

void write_report_files(const std::vector<nlohmann::json>& reports, const std::string& json_path,
                        const std::string& png_path) {
  const nlohmann::json combined = reports.size() == 1
                                      ? reports.front()
                                      : nlohmann::json{{"benchmark", "all"}, {"families", reports}};
  std::ofstream file(json_path);
  if (!(file << combined.dump(2) << "\n")) {
    throw Error("bench", "json path", "a writable file", "'" + json_path + "'");
  }
  std::printf("wrote %s\n", json_path.c_str());
  plot_family_reports(reports, png_path);
}

int plot_reports(const std::vector<std::string>& json_paths, const std::string& png_path) {
  std::vector<nlohmann::json> reports;
  for (const std::string& path : json_paths) {
    std::ifstream file(path);
    if (!file) throw Error("plot", "report", "a readable JSON file", "'" + path + "'");
    nlohmann::json report;
    try {
      report = nlohmann::json::parse(file);
    } catch (const nlohmann::json::exception& error) {
      throw Error("plot", path, "a JSON benchmark report", error.what());
    }
    if (report.contains("families")) {
      for (const nlohmann::json& family : report["families"]) reports.push_back(family);
    } else {
      reports.push_back(report);
    }
  }
  plot_family_reports(reports, png_path);
  return 0;
}

}  // namespace lowbit::bench
