// one_hot: Out[..., j] = 1 where j == X[..., 0], else 0, for int64 indices
// X [..., 1]; Out is [..., depth] of the dtype attr (float32 by default).
// An index outside [0, depth) is an error naming X, or with
// allow_out_of_range (Fluid's attr) a row of zeros. Not differentiable.
#include <algorithm>
#include <string>

#include "ops/dtype_visit.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

void OneHotInferShape(InferShapeContext* ctx) {
  Shape x = ctx->GetInputShape("X");
  const std::string& xn = ctx->InputName("X");
  const int depth = ctx->Attr<int32_t>("depth");
  FLUID_ENFORCE(ctx->GetInputDtype("X") == DataType::kInt64, "one_hot: X '", xn,
                "' must be int64, got ", ctx->GetInputDtype("X"));
  FLUID_ENFORCE(x.rank() >= 2 && (x[x.rank() - 1] == 1 || x[x.rank() - 1] < 0),
                "one_hot: X '", xn, "' must be [..., 1], got ", x);
  FLUID_ENFORCE(depth >= 1, "one_hot: depth ", depth, " for X '", xn,
                "' must be positive");
  x[x.rank() - 1] = depth;
  ctx->SetOutputShape("Out", x);
  ctx->SetOutputDtype(
      "Out", DtypeAttr(ctx->Attr<int32_t>("dtype"), "one_hot", "dtype"));
}

void OneHotKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const int64_t* xd = x.data<int64_t>();
  const int64_t depth = ctx.Attr<int32_t>("depth");
  const int64_t rows = x.numel();
  const bool allow_out_of_range = ctx.Attr<bool>("allow_out_of_range");
  for (int64_t r = 0; r < rows && !allow_out_of_range; ++r)
    FLUID_ENFORCE(xd[r] >= 0 && xd[r] < depth, "one_hot: X '",
                  ctx.InputName("X"), "' holds ", xd[r], " at row ", r,
                  ", outside [0, ", depth,
                  ") (allow_out_of_range=True gives such an id a row of "
                  "zeros)");
  Tensor* out = ctx.Output("Out");
  VisitDtype(out->dtype(), [&](auto v) {
    using T = decltype(v);
    T* od = out->mutable_data<T>();
    std::fill_n(od, rows * depth, T(0));
    for (int64_t r = 0; r < rows; ++r)
      if (xd[r] >= 0 && xd[r] < depth) od[r * depth + xd[r]] = T(1);
  });
}

}  // namespace

REGISTER_OP(one_hot)
    .Doc("Out = the one-hot rows of the int64 indices X.")
    .Input("X", "int64 indices [..., 1], each in [0, depth)")
    .Output("Out", "[..., depth], 1 at the index and 0 elsewhere")
    .Attr<int32_t>("depth", 1, "the number of classes")
    .Attr<int32_t>("dtype", static_cast<int32_t>(DataType::kFloat32),
                   "Out's dtype (0 float32, 1 float64, 2 int32, 3 int64)")
    .Attr<bool>("allow_out_of_range", false,
                "an index outside [0, depth) gives a row of zeros instead "
                "of an error")
    .SetInferShape(OneHotInferShape)
    .CPUKernel<int64_t>(OneHotKernel);

}  // namespace ops
}  // namespace fluid
