// Per-place execution resources, owned by an Executor and shared read-only
// by the kernels it runs.
//
// The CPU context owns the Eigen thread pool that kernels parallelise over
// (with one thread there is no pool and kernels run inline). The CUDA
// context (src/framework/cuda_device_context.h) owns one stream, a cuBLAS
// handle and scratch memory on its device; kernels enqueue work on that
// stream and return without waiting.
#pragma once

#include <functional>
#include <memory>

#include "src/framework/types.h"

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace fluid {

class Communicator;

class DeviceContext {
 public:
  virtual ~DeviceContext();
  virtual Place place() const = 0;
  // Blocks until every kernel issued through this context has finished and
  // reports an asynchronous failure as an error. A no-op on the CPU, whose
  // kernels finish before they return.
  virtual void Wait() const {}
  // Makes this context's device current on the calling thread (kernels are
  // launched on the current device); a no-op on the CPU.
  virtual void MakeCurrent() const {}
  // For collectives on this context's memory: a function the communicator
  // calls (on its own thread) to wait until the kernels issued so far have
  // produced their outputs. Null on the CPU, whose kernels are done when
  // they return.
  virtual std::function<void()> ReadyFence() const { return nullptr; }

  // The communicator collective ops use; null outside a distributed run.
  // Not owned.
  Communicator* communicator() const { return communicator_; }
  void set_communicator(Communicator* comm) { communicator_ = comm; }

 private:
  Communicator* communicator_ = nullptr;
};

class CPUDeviceContext final : public DeviceContext {
 public:
  explicit CPUDeviceContext(int num_threads = 1);
  ~CPUDeviceContext() override;
  CPUDeviceContext(const CPUDeviceContext&) = delete;
  CPUDeviceContext& operator=(const CPUDeviceContext&) = delete;

  Place place() const override { return Place::CPU(); }
  int num_threads() const { return num_threads_; }
  // The pool RunOnTeam (cpu_team.h) runs on in a build without OpenMP;
  // null when num_threads() == 1 or with OpenMP.
  Eigen::ThreadPoolDevice* eigen_device() const;

 private:
  struct Impl;
  int num_threads_;
  std::unique_ptr<Impl> impl_;
};

// The context for `place`: a CPU context with `num_threads` threads, or a
// CUDA context on place.device (an error naming the cause when this build
// has no CUDA or the device is not visible).
std::unique_ptr<DeviceContext> MakeDeviceContext(const Place& place,
                                                 int num_threads);

}  // namespace fluid
