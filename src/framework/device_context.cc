#include "src/framework/device_context.h"

#include <string>
#include <unsupported/Eigen/CXX11/Tensor>

#include "src/framework/cpu_team.h"
#include "src/framework/device.h"
#include "src/framework/enforce.h"

#ifdef FLUID_WITH_CUDA
#include "src/framework/cuda_device_context.h"
#endif

namespace fluid {

DeviceContext::~DeviceContext() = default;

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
  // With OpenMP the parallel loops run on its team (cpu_team.h): no pool.
  if (num_threads > 1 && std::string(CpuTeamKind()) == "eigen")
    impl_ = std::make_unique<Impl>(num_threads);
}

CPUDeviceContext::~CPUDeviceContext() = default;

Eigen::ThreadPoolDevice* CPUDeviceContext::eigen_device() const {
  return impl_ ? &impl_->device : nullptr;
}

std::unique_ptr<DeviceContext> MakeDeviceContext(const Place& place,
                                                 int num_threads) {
  if (place.is_cpu()) return std::make_unique<CPUDeviceContext>(num_threads);
  FLUID_ENFORCE_CODE(BuiltWithCuda(), ErrorCode::kUnimplemented,
                     "cannot run on ", place.ToString(),
                     ": this build has no CUDA (configure with WITH_CUDA=ON)");
  int count = CudaDeviceCount();
  FLUID_ENFORCE_CODE(count > 0, ErrorCode::kUnimplemented, "cannot run on ",
                     place.ToString(), ": no CUDA device is visible");
  FLUID_ENFORCE(place.device >= 0 && place.device < count, "cannot run on ",
                place.ToString(), ": ", count, " CUDA device",
                count == 1 ? " is" : "s are", " visible (0..", count - 1, ")");
#ifdef FLUID_WITH_CUDA
  return std::make_unique<CUDADeviceContext>(place.device);
#else
  return nullptr;
#endif
}

}  // namespace fluid
