// Host and CUDA implementations of FfnMemory. Buffers live until the FfnMemory is destroyed.
#include "ffn_memory.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "lowbit/error.h"

#if LOWBIT_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace lowbit::tools {
namespace {

class HostMemory final : public FfnMemory {
 public:
  Device device() const override { return Device::kCPU; }
  void* allocate(std::size_t bytes) override {
    buffers_.emplace_back(bytes, 0xFF);
    return buffers_.back().data();
  }
  void copy_in(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void copy_out(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void synchronize() override {}

 private:
  std::vector<std::vector<unsigned char>> buffers_;
};

#if LOWBIT_WITH_CUDA
void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw Error("ffn", what, "cudaSuccess", cudaGetErrorString(status));
}

class CudaMemory final : public FfnMemory {
 public:
  ~CudaMemory() override {
    for (void* buffer : buffers_) cudaFree(buffer);
  }
  Device device() const override { return Device::kCUDA; }
  void* allocate(std::size_t bytes) override {
    void* buffer = nullptr;
    check(cudaMalloc(&buffer, bytes == 0 ? 1 : bytes), "cudaMalloc");
    buffers_.push_back(buffer);
    check(cudaMemset(buffer, 0xFF, bytes), "cudaMemset");
    return buffer;
  }
  void copy_in(void* dst, const void* src, std::size_t bytes) override {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  void copy_out(void* dst, const void* src, std::size_t bytes) override {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  }
  void synchronize() override { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

 private:
  std::vector<void*> buffers_;
};
#endif

}  // namespace

std::unique_ptr<FfnMemory> make_host_memory() { return std::make_unique<HostMemory>(); }
#if LOWBIT_WITH_CUDA
std::unique_ptr<FfnMemory> make_cuda_memory() { return std::make_unique<CudaMemory>(); }
#endif

}  // namespace lowbit::tools
