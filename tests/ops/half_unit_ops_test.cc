// The bfloat16 and float16 CPU kernels of elementwise_max, elementwise_min,
// clip, lstm_unit and gru_unit, forward and gradient, against their
// float32 kernels on the same rounded inputs (the cases and their
// tolerances: tests/testing/half_unit_cases.h); and the dtypes the
// recurrent steps require of their state.
#include <gtest/gtest.h>

#include <string>

#include "src/framework/math/dnnl_context.h"
#include "tests/testing/half_unit_cases.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::MakeHalfFeeds;
using testing::RandomTensor;
using testing::TensorMap;
using testing::ToHalf;

// Restores the oneDNN switch when a test ends.
class DnnlSwitch {
 public:
  explicit DnnlSwitch(bool on) : was_(math::DnnlEnabled()) {
    math::SetDnnlEnabled(on);
  }
  ~DnnlSwitch() { math::SetDnnlEnabled(was_); }

 private:
  bool was_;
};

TEST(HalfUnitOps, ElementwiseMaxMinMatchFloat32) {
  testing::CheckMaxMin(Place::CPU());
}

TEST(HalfUnitOps, MaxMinTiesSendTheGradientToY) {
  testing::CheckMaxMinTies(Place::CPU());
}

TEST(HalfUnitOps, ClipMatchesFloat32) { testing::CheckClip(Place::CPU()); }

TEST(HalfUnitOps, LstmUnitMatchesFloat32) {
  testing::CheckLstmUnit(Place::CPU());
}

// oneDNN's 16-bit GEMMs (bfloat16), and the float32 GEMMs on converted
// operands that float16 and a build without oneDNN take; one thread and
// two.
TEST(HalfUnitOps, GruUnitMatchesFloat32) {
  for (bool dnnl : {true, false}) {
    DnnlSwitch on(dnnl);
    SCOPED_TRACE(dnnl ? "oneDNN" : "float32 GEMMs");
    testing::CheckGruUnit(Place::CPU(), 1);
    testing::CheckGruUnit(Place::CPU(), 2);
  }
}

// A 16-bit X or Input with a 16-bit cell or hidden state (which must be
// float32), or with a Weight of another type, is refused naming the slot,
// its variable and both types.
TEST(HalfUnitOps, RefuseStateOfTheWrongType) {
  const DataType bf = DataType::kBFloat16;
  TensorMap lstm{{"x", RandomTensor<float>({2, 12}, -1, 1, 1)},
                 {"c_prev", RandomTensor<float>({2, 3}, -1, 1, 2)}};
  TensorMap in = MakeHalfFeeds(lstm, bf).half;
  std::string err = ErrorOf(testing::LstmUnitOp(0.0f), in);
  EXPECT_NE(err.find("lstm_unit: C_prev 'c_prev' is bfloat16 but must be "
                     "float32 for X 'x' of bfloat16"),
            std::string::npos)
      << err;
  in = MakeHalfFeeds(lstm, bf, {"x", "c_prev"}).half;
  in["c_prev"] = RandomTensor<double>({2, 3}, -1, 1, 3);
  err = ErrorOf(testing::LstmUnitOp(0.0f), in);
  EXPECT_NE(err.find("C_prev 'c_prev' is float64 but must be float32"),
            std::string::npos)
      << err;

  const TensorMap gru = testing::GruUnitInputs(2, true, 5);
  in = MakeHalfFeeds(gru, bf, {"b"}).half;
  err = ErrorOf(testing::GruUnitOp(true, false), in);
  EXPECT_NE(err.find("gru_unit: HiddenPrev 'h_prev' is bfloat16 but must be "
                     "float32"),
            std::string::npos)
      << err;
  in = MakeHalfFeeds(gru, bf, {"h_prev"}).half;
  err = ErrorOf(testing::GruUnitOp(true, false), in);
  EXPECT_NE(err.find("gru_unit: Bias 'b' is bfloat16 but must be float32"),
            std::string::npos)
      << err;
  in = MakeHalfFeeds(gru, bf, {"h_prev", "b", "w"}).half;
  err = ErrorOf(testing::GruUnitOp(true, false), in);
  EXPECT_NE(err.find("gru_unit: Weight 'w' is float32 but must be bfloat16"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace fluid
