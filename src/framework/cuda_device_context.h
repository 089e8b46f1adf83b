// The CUDA device context: one stream per executor, a cuBLAS handle bound to
// it, and scratch memory. Kernels enqueue their work on stream() and return;
// the stream is a blocking one, so the synchronous host<->device copies of
// feeds and fetches (on the legacy default stream) are ordered after the
// kernels issued before them without explicit events. Built only with
// WITH_CUDA.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <memory>

#include "src/framework/device_context.h"
#include "src/framework/tensor.h"

namespace fluid {

class CUDADeviceContext final : public DeviceContext {
 public:
  // Makes `device` current on the calling thread and creates the stream and
  // handles on it.
  explicit CUDADeviceContext(int device);
  ~CUDADeviceContext() override;
  CUDADeviceContext(const CUDADeviceContext&) = delete;
  CUDADeviceContext& operator=(const CUDADeviceContext&) = delete;

  Place place() const override { return Place::CUDA(device_); }
  void Wait() const override;
  void MakeCurrent() const override;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  int multiprocessors() const { return multiprocessors_; }

  // Device scratch of at least `bytes`, valid until the next call. It grows
  // to the largest request and is then reused: no allocation per step.
  // Work using it must be on stream() (which orders reuse).
  void* Workspace(size_t bytes) const;

  // Records an event on stream() after everything issued so far and returns
  // a function that blocks until the event has fired. The communicator
  // calls it on its own thread before touching the memory the kernels
  // produced, so collectives overlap the kernels issued later.
  std::function<void()> ReadyFence() const override;

 private:
  int device_;
  int multiprocessors_ = 1;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  mutable Tensor workspace_;
};

}  // namespace fluid
