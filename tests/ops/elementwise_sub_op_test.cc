// elementwise_sub (Out = X - Y) on the CPU: forward and gradient against
// a naive loop, numeric gradients, float32 against float64
// (tests/testing/elementwise_checks.h).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "src/framework/shape_only_inputs.h"
#include "tests/testing/elementwise_checks.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::BinaryMath;
using testing::OperandRanges;

const char kType[] = "elementwise_sub";
const OperandRanges kRanges{-1, 1, -1, 1};

BinaryMath Math() {
  return {[](double x, double y) { return x - y; },
          [](double, double) { return 1.0; },
          [](double, double) { return -1.0; }};
}

TEST(ElementwiseSubOp, MatchesNaive) {
  testing::ExpectMatchesNaive(kType, Math(), kRanges, 1);
}

TEST(ElementwiseSubOp, ThreadedMatchesNaive) {
  testing::ExpectMatchesNaive(kType, Math(), kRanges, 4);
}

TEST(ElementwiseSubOp, Gradient) {
  testing::ExpectGradientsCheck(kType, kRanges);
}

TEST(ElementwiseSubOp, FloatMatchesDouble) {
  testing::ExpectFloatMatchesDouble(kType, kRanges);
}

// The gradient reads X's and Y's shapes only (so a difference's operands
// are freed after the forward op): with their buffers released it gives
// dX = dOut and dY = -(dOut summed over Y's broadcast dims).
TEST(ElementwiseSubOp, GradientReadsTheOperandsShapesOnly) {
  EXPECT_TRUE(IsShapeOnlyInput("elementwise_sub_grad", "X"));
  EXPECT_TRUE(IsShapeOnlyInput("elementwise_sub_grad", "Y"));
  for (const testing::BroadcastCase& c :
       std::vector<testing::BroadcastCase>{{{300, 200}, {200}, -1},
                                           {{8, 16, 4, 4}, {16}, 1},
                                           {{30, 20}, {30, 1}, 0},
                                           {{7, 2}, {7, 2}, -1},
                                           {{70, 2}, {1}, -1}}) {
    Tensor x = testing::RandomTensor<double>(c.x, -1, 1, 21);
    Tensor y = testing::RandomTensor<double>(c.y, -1, 1, 22);
    Tensor g = testing::RandomTensor<double>(c.x, -1, 1, 23);
    auto grad =
        MakeOp("elementwise_sub_grad",
               {{"X", {"x"}}, {"Y", {"y"}}, {"Out@GRAD", {"g"}}},
               {{"X@GRAD", {"dx"}}, {"Y@GRAD", {"dy"}}}, {{"axis", c.axis}});
    // X and Y in the scope as the executor leaves them after their last
    // reader of values: dtype and shape, no buffer.
    proto::ProgramDesc program = NewProgram();
    proto::BlockDesc* block = program.mutable_blocks(0);
    AddVarDesc(block, "x", DataType::kFloat64, c.x, true);
    AddVarDesc(block, "y", DataType::kFloat64, c.y, true);
    AddVarDesc(block, "g", DataType::kFloat64, c.x);
    *block->add_ops() = grad;
    InferShapeAtCompileTime(grad, block);
    Scope scope;
    for (auto [name, t] : {std::pair<const char*, Tensor>{"x", x}, {"y", y}}) {
      Tensor* held = scope.Var(name)->GetMutableTensor();
      held->CopyFrom(t, Place::CPU());
      held->ReleaseBuffer();
    }
    Executor exe(Place::CPU(), 4);
    std::vector<Tensor> fetched;
    exe.RunOnce(program, &scope, {{"g", g}}, {"dx", "dy"}, &fetched);
    std::map<std::string, Tensor> res{{"dx", fetched[0]}, {"dy", fetched[1]}};
    const auto gv = testing::ToVector<double>(g);
    const auto yi = testing::BroadcastIndex(c.x, c.y, c.axis);
    std::vector<double> want(c.y.numel(), 0.0);
    for (size_t i = 0; i < gv.size(); ++i) want[yi[i]] -= gv[i];
    EXPECT_EQ(testing::ToVector<double>(res["dx"]), gv) << c.x;
    ASSERT_EQ(res["dy"].shape(), c.y);
    const auto dy = testing::ToVector<double>(res["dy"]);
    for (size_t j = 0; j < dy.size(); ++j)
      ASSERT_NEAR(dy[j], want[j], 1e-9) << c.x << " dy at " << j;
  }
}

}  // namespace
}  // namespace fluid
