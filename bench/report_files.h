// JSON report and PNG roofline files of `lowbit bench` and `lowbit plot` (host code, any build).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lowbit::bench {

// Writes the reports as one JSON file (a family's report, or {"benchmark": "all",
// "families": [...]}) and plots them into one PNG.
void write_report_files(const std::vector<nlohmann::json>& reports, const std::string& json_path,
                        const std::string& png_path);

// Plots family reports: the copy ceiling is the highest copy bandwidth any report measured,
// the matrix ceiling the cuBLASLt FP8 rate the block-gemm report measured.
void plot_family_reports(const std::vector<nlohmann::json>& reports, const std::string& png_path);

}  // namespace lowbit::bench
