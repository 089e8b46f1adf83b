// REQUIRE_GPU(), the first statement of every test that needs a CUDA
// device: it skips the test, saying why, when the build has no CUDA or no
// device is visible.
#pragma once

#include <gtest/gtest.h>

#include "src/framework/device.h"

#define REQUIRE_GPU()                                       \
  do {                                                      \
    if (!::fluid::BuiltWithCuda())                          \
      GTEST_SKIP() << "built without CUDA (WITH_CUDA=OFF)"; \
    if (::fluid::CudaDeviceCount() == 0)                    \
      GTEST_SKIP() << "no CUDA device visible";             \
  } while (0)
