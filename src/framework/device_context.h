// Per-place execution resources. The CPU context owns the Eigen thread pool
// that kernels parallelise over; with one thread there is no pool and
// kernels run inline. Owned by an Executor; shared read-only by its kernels.
#pragma once

#include <memory>

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace fluid {

class Communicator;

class CPUDeviceContext {
 public:
  explicit CPUDeviceContext(int num_threads = 1);
  ~CPUDeviceContext();
  CPUDeviceContext(const CPUDeviceContext&) = delete;
  CPUDeviceContext& operator=(const CPUDeviceContext&) = delete;

  int num_threads() const { return num_threads_; }
  // Null when num_threads() == 1.
  Eigen::ThreadPoolDevice* eigen_device() const;
  // The communicator collective ops use; null outside a distributed run.
  // Not owned.
  Communicator* communicator() const { return communicator_; }
  void set_communicator(Communicator* comm) { communicator_ = comm; }

 private:
  struct Impl;
  int num_threads_;
  std::unique_ptr<Impl> impl_;
  Communicator* communicator_ = nullptr;
};

}  // namespace fluid
