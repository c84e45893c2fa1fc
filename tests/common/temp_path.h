// Paths for the tests' temporary files: under gtest's TempDir, unique to the process, and
// removed when the test process exits, so that repeated runs leave nothing behind.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

namespace lowbit::testing {

class TempFiles {
 public:
  std::string path(const std::string& prefix, const std::string& name) {
    const std::string path = ::testing::TempDir() + prefix + std::to_string(::getpid()) + "_" + name;
    const std::lock_guard<std::mutex> lock(mutex_);
    paths_.push_back(path);
    return path;
  }
  ~TempFiles() {
    for (const std::string& p : paths_) std::remove(p.c_str());  // absent files: ignored
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> paths_;
};

// A path for the file `name` of a test family (`prefix`, e.g. "lowbit_ckpt_").
inline std::string temp_path(const std::string& prefix, const std::string& name) {
  static TempFiles files;
  return files.path(prefix, name);
}

}  // namespace lowbit::testing
