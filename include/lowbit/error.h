// lowbit::Error: the one exception type lowbit throws. Its message names the op, the argument,
// what was expected and what was given, e.g.
//   lowbit::per_token_group_quant: argument 'input': expected dtype bf16, fp16 or fp32, got int8
#pragma once

#include <stdexcept>
#include <string>

namespace lowbit {

class Error : public std::runtime_error {
 public:
  Error(std::string op, std::string argument, std::string expected, std::string got);
  const std::string& op() const { return op_; }
  const std::string& argument() const { return argument_; }

 private:
  std::string op_;
  std::string argument_;
};

}  // namespace lowbit
