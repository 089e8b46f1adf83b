// The checker itself must catch a wrong gradient, or every op test that
// relies on it proves nothing.
#include "tests/testing/gradient_checker.h"

#include <gtest/gtest.h>

#include "src/framework/grad_op_maker.h"
#include "src/framework/operator.h"

namespace fluid {
namespace {

void SquareInfer(InferShapeContext* ctx) { ctx->ShareShape("X", "Out"); }

void SquareKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  double* o = out->mutable_data<double>();
  for (int64_t i = 0; i < x.numel(); ++i)
    o[i] = x.data<double>()[i] * x.data<double>()[i];
}

// Correct: dX = 2 x dOut.
void SquareGradKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  double* dx = ctx.Output(GradSlot("X"))->mutable_data<double>();
  for (int64_t i = 0; i < x.numel(); ++i)
    dx[i] = 2 * x.data<double>()[i] * dout.data<double>()[i];
}

// Wrong in one element only: the checker must still notice.
void SquareBadGradKernel(const ExecutionContext& ctx) {
  SquareGradKernel(ctx);
  ctx.Output(GradSlot("X"))->data<double>()[2] *= 1.001;
}

REGISTER_OP(test_square)
    .Input("X")
    .Output("Out")
    .SetInferShape(SquareInfer)
    .SetGrad(GradSpec("test_square_grad")
                 .Inputs({"X"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<double>(SquareKernel);
REGISTER_GRAD_OP(test_square_grad)
    .SetInferShape([](InferShapeContext* c) {
      c->ShareShape("X", GradSlot("X"));
    })
    .CPUKernel<double>(SquareGradKernel);

REGISTER_OP(test_square_bad)
    .Input("X")
    .Output("Out")
    .SetInferShape(SquareInfer)
    .SetGrad(GradSpec("test_square_bad_grad")
                 .Inputs({"X"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<double>(SquareKernel);
REGISTER_GRAD_OP(test_square_bad_grad)
    .SetInferShape([](InferShapeContext* c) {
      c->ShareShape("X", GradSlot("X"));
    })
    .CPUKernel<double>(SquareBadGradKernel);

TEST(GradientChecker, AcceptsACorrectGradient) {
  auto op = MakeOp("test_square", {{"X", {"x"}}}, {{"Out", {"y"}}});
  EXPECT_TRUE(testing::CheckGradient(
      op, {{"x", testing::RandomTensor<double>({3, 4}, -2, 2, 1)}}));
}

TEST(GradientChecker, RejectsAWrongGradientAndNamesTheElement) {
  auto op = MakeOp("test_square_bad", {{"X", {"x"}}}, {{"Out", {"y"}}});
  auto result = testing::CheckGradient(
      op, {{"x", testing::MakeTensor<double>({4}, {1.0, -2.0, 3.0, 4.0})}});
  EXPECT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("x[2]"), std::string::npos)
      << result.message();
}

}  // namespace
}  // namespace fluid
