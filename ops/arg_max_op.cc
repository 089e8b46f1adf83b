// arg_max: Out = the index of the largest element of X along `axis` (the
// first among equals), int64, with that dim removed ([1] for 1-D X). Not
// differentiable.
#include <string>

#include "ops/concat_split.h"
#include "ops/op_helpers.h"
#include "ops/topk_op.h"

namespace fluid {
namespace ops {
namespace {

void ArgMaxInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  const int axis = NormalizeAxis(static_cast<int>(ctx->Attr<int64_t>("axis")),
                                 x.rank(), "arg_max", ctx->InputName("X"));
  Shape out;
  for (int d = 0; d < x.rank(); ++d)
    if (d != axis) out.push_back(x[d]);
  if (out.rank() == 0) out.push_back(1);
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputDtype("Out", DataType::kInt64);
}

template <typename T>
void ArgMaxKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Shape& s = x.shape();
  const int axis = NormalizeAxis(static_cast<int>(ctx.Attr<int64_t>("axis")),
                                 s.rank(), "arg_max", ctx.InputName("X"));
  const int64_t dim = s[axis], inner = s.Product(axis + 1, s.rank());
  FLUID_ENFORCE(dim > 0, "arg_max: X '", ctx.InputName("X"), "' ", s,
                " has no elements along axis ", axis);
  const T* xd = x.data<T>();
  int64_t* od = ctx.Output("Out")->mutable_data<int64_t>();
  ParallelFor(ctx.device(), s.Product(0, axis) * inner, double(dim),
              [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i) {
                  const int64_t o = i / inner, in = i % inner;
                  od[i] = ArgMaxAlong(xd + o * dim * inner + in, dim, inner);
                }
              });
}

}  // namespace

REGISTER_OP(arg_max)
    .Doc("Out = the index of the largest element of X along axis.")
    .Input("X", "input")
    .Output("Out", "int64 indices, X's shape without axis ([1] for 1-D X)")
    .Attr<int64_t>("axis", 0, "the dim searched; negative counts from the end")
    .InRange(-Shape::kMaxRank, Shape::kMaxRank - 1)
    .SetInferShape(ArgMaxInferShape)
    .CPUKernel<float>(ArgMaxKernel<float>)
    .CPUKernel<double>(ArgMaxKernel<double>);

}  // namespace ops
}  // namespace fluid
