// Test-only RAII device buffers and CUDA checks.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#define LOWBIT_TEST_CUDA(call)                                                      \
  do {                                                                              \
    const cudaError_t lowbit_status = (call);                                       \
    ASSERT_EQ(lowbit_status, cudaSuccess) << #call << ": " << cudaGetErrorString(lowbit_status); \
  } while (0)

namespace lowbit::testing {

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0 && cudaMalloc(&data_, bytes_) != cudaSuccess) {
      data_ = nullptr;
      ADD_FAILURE() << "cudaMalloc of " << bytes_ << " bytes failed";
    }
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

  // upload and fill_byte wait for the device: a copy from pageable memory and a memset may
  // still be running when they return, and a kernel launched next on a non-blocking stream
  // (the graph tests) does not wait for the legacy stream they ran on. Without the wait,
  // TokenTensorQuantGpu.DynamicPerTensorInACudaGraph failed once on an H200 (output bytes
  // differed, scale equal), as if its kernels had read input still being copied.
  template <typename T>
  void upload(const std::vector<T>& host) const {
    EXPECT_EQ(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
              cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  template <typename T>
  std::vector<T> download() const {
    std::vector<T> host(bytes_ / sizeof(T));
    EXPECT_EQ(cudaMemcpy(host.data(), data_, host.size() * sizeof(T), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return host;
  }
  void fill_byte(std::uint8_t value) const {
    EXPECT_EQ(cudaMemset(data_, value, bytes_), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_;
};

}  // namespace lowbit::testing
