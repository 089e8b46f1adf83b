// isinf, isnan, isfinite: one bool for the whole of X (Fluid's ops behind
// fluid.layers.has_inf, has_nan and isfinite): isinf whether any element
// is an infinity, isnan whether any is a NaN, isfinite whether every
// element is finite. Out is bool [1]; no gradient.
#include "ops/isfinite_op.h"

#include <string>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

namespace {

FiniteTest TestOf(const std::string& type) {
  if (type == "isinf") return FiniteTest::kInf;
  if (type == "isnan") return FiniteTest::kNan;
  return FiniteTest::kNonFinite;
}

void IsFiniteInferShape(InferShapeContext* ctx) {
  FLUID_ENFORCE(IsFloatDtype(ctx->GetInputDtype("X")), ctx->op_type(), ": X '",
                ctx->InputName("X"), "' is ",
                DataTypeName(ctx->GetInputDtype("X")),
                "; only float tensors hold infinities and NaNs");
  ctx->SetOutputShape("Out", Shape({1}));
  ctx->SetOutputDtype("Out", DataType::kBool);
}

template <typename T>
void IsFiniteKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const FiniteTest test = TestOf(ctx.type());
  const T* p = x.data<T>();
  bool found = false;
  for (int64_t i = 0, n = x.numel(); i < n && !found; ++i)
    found = FailsFiniteTest(p[i], test);
  // isfinite answers "all finite", the others "any found".
  ctx.Output("Out")->mutable_data<bool>(Shape({1}))[0] =
      test == FiniteTest::kNonFinite ? !found : found;
}

}  // namespace

REGISTER_OP(isinf)
    .Doc("Out = whether any element of X is an infinity (bool [1]).")
    .Input("X", "a float tensor")
    .Output("Out", "bool [1]")
    .SetInferShape(IsFiniteInferShape)
    .CPUKernel<float>(IsFiniteKernel<float>)
    .CPUKernel<double>(IsFiniteKernel<double>);

REGISTER_OP(isnan)
    .Doc("Out = whether any element of X is a NaN (bool [1]).")
    .Input("X", "a float tensor")
    .Output("Out", "bool [1]")
    .SetInferShape(IsFiniteInferShape)
    .CPUKernel<float>(IsFiniteKernel<float>)
    .CPUKernel<double>(IsFiniteKernel<double>);

REGISTER_OP(isfinite)
    .Doc("Out = whether every element of X is finite (bool [1]).")
    .Input("X", "a float tensor")
    .Output("Out", "bool [1]")
    .SetInferShape(IsFiniteInferShape)
    .CPUKernel<float>(IsFiniteKernel<float>)
    .CPUKernel<double>(IsFiniteKernel<double>);

}  // namespace ops
}  // namespace fluid
