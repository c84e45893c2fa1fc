// Holds a stream until the host has queued a whole batch behind it, so that the events around
// the batch time GPU work only, not the host's launch calls (nvbench's blocking kernel). Also
// reads a buffer twice the size of L2 before the hold, so that a sample finds none of the
// previous variant's data in L2.
//   StreamHold hold(l2_bytes);
//   hold.arm(stream);  record start; launches...; record stop;  hold.release();  synchronize;
//   hold.throw_if_timed_out();  // if the hold gave up waiting (a launch that synchronized)
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "harness.cuh"

namespace lowbit::bench {

class StreamHold {
 public:
  explicit StreamHold(std::int64_t l2_bytes);
  ~StreamHold();
  StreamHold(const StreamHold&) = delete;
  StreamHold& operator=(const StreamHold&) = delete;

  // Queues the L2 sweep and the hold on `stream`.
  void arm(cudaStream_t stream);
  // Lets the held stream go on.
  void release();
  // After the stream synchronized: throws if the hold timed out instead of being released.
  void throw_if_timed_out() const;

 private:
  volatile int* release_host_ = nullptr;  // mapped pinned memory
  int* release_device_ = nullptr;
  volatile int* timed_out_host_ = nullptr;
  int* timed_out_device_ = nullptr;
  std::int64_t sweep_bytes_;
  DeviceMemory sweep_;
};

}  // namespace lowbit::bench
