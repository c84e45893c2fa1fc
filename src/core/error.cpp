// lowbit::Error message formatting.
#include "lowbit/error.h"

namespace lowbit {

static std::string format_message(const std::string& op, const std::string& argument,
                                  const std::string& expected, const std::string& got) {
  return "lowbit::" + op + ": argument '" + argument + "': expected " + expected + ", got " + got;
}

Error::Error(std::string op, std::string argument, std::string expected, std::string got)
    : std::runtime_error(format_message(op, argument, expected, got)),
      op_(std::move(op)),
      argument_(std::move(argument)) {}

}  // namespace lowbit
