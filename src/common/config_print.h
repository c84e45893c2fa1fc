// LOWBIT_PRINT_CONFIG=1: the heuristics print each configuration they choose to stderr, once
// per distinct line. A decode loop calls one op with one shape thousands of times; a line per
// call cost the small kernels 30-40% of their time in a bench (docs/perf/scaled_gemm.md).
#pragma once

namespace lowbit::detail {

// Whether a LOWBIT_PRINT_CONFIG value asks for printing: set, and not "0".
bool print_config_requested(const char* value);

// print_config_requested(LOWBIT_PRINT_CONFIG), read once per process.
bool print_config_enabled();

// printf-style; prints "[lowbit] <text>\n" to stderr the first time this text is seen in the
// process (thread-safe). Does nothing unless print_config_enabled().
void print_config_once(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace lowbit::detail
