// Device memory and host <-> device copies. Every test here skips, saying
// so, when no CUDA device is visible (or the build has no CUDA).
#include <gtest/gtest.h>

#include "src/framework/device.h"
#include "src/framework/tensor.h"
#include "tests/testing/require_gpu.h"

namespace fluid {
namespace {

TEST(CudaMemory, DeviceCountIsSaneEverywhere) {
  EXPECT_GE(CudaDeviceCount(), 0);
  if (!BuiltWithCuda()) {
    EXPECT_EQ(CudaDeviceCount(), 0);
    Tensor t(DataType::kFloat32, Shape{4});
    EXPECT_THROW(t.raw_mutable_data(Place::CUDA(0)), Error);
  }
}

TEST(CudaMemory, HostDeviceRoundTripIsExact) {
  REQUIRE_GPU();
  Tensor host;
  double* h = host.mutable_data<double>(Shape{3, 1000});
  for (int i = 0; i < 3000; ++i) h[i] = i * 0.25 - 7;
  Tensor dev;
  dev.CopyFrom(host, Place::CUDA(0));
  EXPECT_EQ(dev.place(), Place::CUDA(0));
  Tensor dev2;
  dev2.CopyFrom(dev, Place::CUDA(0));
  Tensor back;
  back.CopyFrom(dev2, Place::CPU());
  ASSERT_EQ(back.shape(), host.shape());
  for (int i = 0; i < 3000; ++i) ASSERT_EQ(back.data<double>()[i], h[i]);
}

TEST(CudaMemory, BuffersAreReusedAcrossSteps) {
  REQUIRE_GPU();
  const void* first = nullptr;
  for (int step = 0; step < 10; ++step) {
    Tensor t(DataType::kFloat32, Shape{1 << 20});
    void* p = t.raw_mutable_data(Place::CUDA(0));
    if (step == 0) first = p;
    EXPECT_EQ(p, first) << "the freed block is handed out again";
  }
}

}  // namespace
}  // namespace fluid
