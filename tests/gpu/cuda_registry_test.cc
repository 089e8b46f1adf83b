// Runs everywhere (no device needed): in a build with CUDA, every op that
// has a CPU kernel for a dtype has a CUDA kernel for it too, so no program
// that runs on the CPU is refused on a GPU for want of a kernel.
#include <gtest/gtest.h>

#include "src/framework/device.h"
#include "src/framework/op_registry.h"

namespace fluid {
namespace {

bool HasKernel(const std::string& type, const Place& place, DataType dtype) {
  try {
    OpRegistry::Global().GetKernel(type, place, dtype);
    return true;
  } catch (const Error&) {
    return false;
  }
}

TEST(CudaRegistry, EveryCpuKernelHasACudaKernel) {
  if (!BuiltWithCuda()) GTEST_SKIP() << "built without CUDA (WITH_CUDA=OFF)";
  int checked = 0;
  for (const std::string& type : OpRegistry::Global().Types()) {
    // Ops this test binary registers itself (the gradient checker's
    // self-test) are CPU-only by design.
    if (type.rfind("test_", 0) == 0) continue;
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat64,
                           DataType::kInt32, DataType::kInt64}) {
      if (!HasKernel(type, Place::CPU(), dtype)) continue;
      ++checked;
      EXPECT_TRUE(HasKernel(type, Place::CUDA(0), dtype))
          << "op '" << type << "' has a CPU kernel for " << DataTypeName(dtype)
          << " but no CUDA kernel";
    }
  }
  EXPECT_GT(checked, 80);
}

}  // namespace
}  // namespace fluid
