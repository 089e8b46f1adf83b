#include "src/framework/device_context.h"

#include <unsupported/Eigen/CXX11/Tensor>

#include "src/framework/enforce.h"

namespace fluid {

struct CPUDeviceContext::Impl {
  // No spinning: workers that spin after a parallel kernel steal the core
  // from the thread running the next (serial) op.
  explicit Impl(int n) : pool(n, /*allow_spinning=*/false), device(&pool, n) {}
  Eigen::ThreadPool pool;
  Eigen::ThreadPoolDevice device;
};

CPUDeviceContext::CPUDeviceContext(int num_threads)
    : num_threads_(num_threads) {
  FLUID_ENFORCE(num_threads >= 1 && num_threads <= 1024,
                "thread count must be in [1, 1024], got ", num_threads);
  if (num_threads > 1) impl_ = std::make_unique<Impl>(num_threads);
}

CPUDeviceContext::~CPUDeviceContext() = default;

Eigen::ThreadPoolDevice* CPUDeviceContext::eigen_device() const {
  return impl_ ? &impl_->device : nullptr;
}

}  // namespace fluid
