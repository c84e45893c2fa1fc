// LOWBIT_PRINT_CONFIG's printer (src/common/config_print.h).
#include "../common/config_print.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_set>

namespace lowbit::detail {

bool print_config_requested(const char* value) {
  return value != nullptr && !(value[0] == '0' && value[1] == '\0');
}

bool print_config_enabled() {
  static const bool enabled = print_config_requested(std::getenv("LOWBIT_PRINT_CONFIG"));
  return enabled;
}

void print_config_once(const char* format, ...) {
  if (!print_config_enabled()) return;
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  static std::mutex mutex;
  static std::unordered_set<std::string> printed;
  const std::lock_guard<std::mutex> lock(mutex);
  if (printed.insert(line).second) std::fprintf(stderr, "[lowbit] %s\n", line);
}

}  // namespace lowbit::detail
