// clip, sign, squared_l2_norm and clip_by_norm against naive loops, and the
// numeric gradients of clip and squared_l2_norm.
#include <gtest/gtest.h>

#include <cmath>

#include "src/framework/op_registry.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/state_optimizer_ops.h"

namespace fluid {
namespace {

using testing::AllNear;
using testing::CheckGradient;
using testing::ErrorOf;
using testing::GradCheckOptions;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc Clip(float lo, float hi) {
  return MakeOp("clip", {{"X", {"x"}}}, {{"Out", {"y"}}},
                {{"min", lo}, {"max", hi}});
}

TEST(ClipOp, MatchesNaiveLoop) {
  Tensor x = RandomTensor<double>({4, 5}, -2, 2, 11);
  auto out = RunOp(Clip(-0.5f, 1.0f), {{"x", x}});
  std::vector<double> want = ToVector<double>(x);
  for (double& v : want) v = std::min(1.0, std::max(-0.5, v));
  EXPECT_TRUE(AllNear(ToVector<double>(out["y"]), want, 0));
}

TEST(ClipOp, GradientIsZeroOutsideAndOnBounds) {
  GradCheckOptions o;
  EXPECT_TRUE(CheckGradient(
      Clip(-0.5f, 0.5f), {{"x", RandomTensor<double>({3, 7}, -1, 1, 12)}}, o));
  // On a bound itself the gradient is 0, as in Fluid.
  auto out =
      RunOp(MakeOp("clip_grad", {{"X", {"x"}}, {"Out@GRAD", {"dy"}}},
                   {{"X@GRAD", {"dx"}}}, {{"min", -0.5f}, {"max", 0.5f}}),
            {{"x", MakeTensor<double>({4}, {-0.5, 0.5, 0.2, 0.7})},
             {"dy", MakeTensor<double>({4}, {1, 1, 1, 1})}});
  EXPECT_EQ(ToVector<double>(out["dx"]), (std::vector<double>{0, 0, 1, 0}));
}

TEST(ClipOp, MinAboveMaxNamesVar) {
  std::string msg =
      ErrorOf(Clip(1.0f, -1.0f), {{"x", RandomTensor<double>({2}, -1, 1, 1)}});
  EXPECT_NE(msg.find("clip of 'x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("min"), std::string::npos) << msg;
}

TEST(SignOp, MatchesNaiveLoop) {
  auto out = RunOp(MakeOp("sign", {{"X", {"x"}}}, {{"Out", {"y"}}}),
                   {{"x", MakeTensor<float>({4}, {-2.5f, 0.0f, 3.0f, -0.0f})}});
  EXPECT_EQ(ToVector<float>(out["y"]),
            (std::vector<float>{-1.0f, 0.0f, 1.0f, 0.0f}));
}

TEST(SquaredL2NormOp, MatchesNaiveLoopAndGradient) {
  Tensor x = RandomTensor<double>({3, 4}, -1, 1, 13);
  auto op = MakeOp("squared_l2_norm", {{"X", {"x"}}}, {{"Out", {"y"}}});
  double want = 0;
  for (double v : ToVector<double>(x)) want += v * v;
  EXPECT_NEAR(ToVector<double>(RunOp(op, {{"x", x}})["y"])[0], want, 1e-14);
  EXPECT_TRUE(CheckGradient(op, {{"x", x}}));
}

TEST(ClipByNormOp, ScalesOnlyAboveTheBound) {
  Tensor x = RandomTensor<double>({10}, -1, 1, 14);
  double sq = 0;
  for (double v : ToVector<double>(x)) sq += v * v;
  const double norm = std::sqrt(sq);
  for (double bound : {norm / 2, norm * 2}) {
    auto out = RunOp(MakeOp("clip_by_norm", {{"X", {"x"}}}, {{"Out", {"y"}}},
                            {{"max_norm", static_cast<float>(bound)}}),
                     {{"x", x}});
    const double b = static_cast<float>(bound);
    std::vector<double> want = ToVector<double>(x);
    if (norm > b)
      for (double& v : want) v = v * (b / norm);
    EXPECT_TRUE(AllNear(ToVector<double>(out["y"]), want, 1e-15));
  }
}

}  // namespace
}  // namespace fluid
