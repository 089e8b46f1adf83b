// The bfloat16 and float16 CUDA kernels of elementwise_max,
// elementwise_min, clip, lstm_unit and gru_unit, forward and gradient,
// against the float32 CPU kernels on the same rounded inputs, with the
// CPU tests' cases and tolerances (tests/testing/half_unit_cases.h says
// why each): the CUDA kernels compute in float32 as the CPU's do, their
// GEMMs through cublasGemmEx on the same 16-bit operands with float32
// sums, and round each 16-bit output once.
// Every test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/half_unit_cases.h"

namespace fluid {
namespace {

TEST(HalfUnitOpsCuda, ElementwiseMaxMinMatchFloat32) {
  REQUIRE_GPU();
  testing::CheckMaxMin(Place::CUDA(0));
}

TEST(HalfUnitOpsCuda, MaxMinTiesSendTheGradientToY) {
  REQUIRE_GPU();
  testing::CheckMaxMinTies(Place::CUDA(0));
}

TEST(HalfUnitOpsCuda, ClipMatchesFloat32) {
  REQUIRE_GPU();
  testing::CheckClip(Place::CUDA(0));
}

TEST(HalfUnitOpsCuda, LstmUnitMatchesFloat32) {
  REQUIRE_GPU();
  testing::CheckLstmUnit(Place::CUDA(0));
}

TEST(HalfUnitOpsCuda, GruUnitMatchesFloat32) {
  REQUIRE_GPU();
  testing::CheckGruUnit(Place::CUDA(0));
}

}  // namespace
}  // namespace fluid
