// squeeze2 and unsqueeze2, as Fluid 1.x's layers emit them: Out holds X's
// elements under X's shape with dims of size 1 removed (squeeze2) or
// inserted (unsqueeze2) at `axes`. XShape ([0] + X's shape, no elements)
// carries X's shape to the gradient, which is Out@GRAD's elements under that
// shape; X itself is not kept for the backward pass. Any dtype; the kernels
// copy (reshape_op.cc says why a copy rather than a shared buffer).
//
// squeeze2: axes empty removes every dim of size 1; a dim named in axes
// whose size is not 1 is kept (Fluid 1.8 and torch.squeeze do the same).
// At compile time a named dim of unknown size (-1) is taken to be 1.
// unsqueeze2: the axes are inserted one after another, each into the shape
// the ones before it made, in [-(rank + 1), rank] of that shape.
#include <cstring>
#include <string>
#include <vector>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

std::string AxesText(const std::vector<int32_t>& axes) {
  return Shape(axes.begin(), axes.end()).ToString();
}

Shape SqueezeShape(const std::string& x_name, const Shape& x,
                   const std::vector<int32_t>& axes) {
  const int rank = x.rank();
  bool drop[Shape::kMaxRank] = {false};
  for (int d = 0; axes.empty() && d < rank; ++d) drop[d] = x[d] == 1;
  for (int32_t a : axes) {
    FLUID_ENFORCE(a >= -rank && a < rank, "squeeze2: attr axes ",
                  AxesText(axes), " holds ", a, ", out of range for X '",
                  x_name, "' ", x, " (allowed: [", -rank, ", ", rank, "))");
    const int d = a < 0 ? a + rank : a;
    drop[d] = x[d] == 1 || x[d] < 0;
  }
  Shape out;
  for (int d = 0; d < rank; ++d)
    if (!drop[d]) out.push_back(x[d]);
  return out;
}

Shape UnsqueezeShape(const std::string& x_name, const Shape& x,
                     const std::vector<int32_t>& axes) {
  FLUID_ENFORCE(!axes.empty(),
                "unsqueeze2: attr axes is empty; name where "
                "to insert dims of size 1 into X '",
                x_name, "' ", x);
  FLUID_ENFORCE(x.rank() + static_cast<int>(axes.size()) <= Shape::kMaxRank,
                "unsqueeze2: X '", x_name, "' ", x, " with ", axes.size(),
                " more dims (attr axes ", AxesText(axes), ") exceeds ",
                Shape::kMaxRank, " dims");
  std::vector<int64_t> dims(x.begin(), x.end());
  for (int32_t a : axes) {
    const int rank = static_cast<int>(dims.size());
    FLUID_ENFORCE(a >= -(rank + 1) && a <= rank, "unsqueeze2: attr axes ",
                  AxesText(axes), " holds ", a, ", out of range for a shape ",
                  "of ", rank, " dims made from X '", x_name, "' ", x,
                  " (allowed: [", -(rank + 1), ", ", rank, "])");
    const int d = a < 0 ? a + rank + 1 : a;
    dims.insert(dims.begin() + d, 1);
  }
  return Shape(dims);
}

// Out by the op's rule, and XShape.
void SqueezeInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  const auto& axes = ctx->Attr<std::vector<int32_t>>("axes");
  const bool squeeze = ctx->op_type() == "squeeze2";
  const Shape out = squeeze ? SqueezeShape(ctx->InputName("X"), x, axes)
                            : UnsqueezeShape(ctx->InputName("X"), x, axes);
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  FLUID_ENFORCE(x.rank() < Shape::kMaxRank, ctx->op_type(), ": X '",
                ctx->InputName("X"), "' ", x, " has too many dims for ",
                "XShape (at most ", Shape::kMaxRank - 1, ")");
  Shape xshape({0});
  for (int64_t d : x) xshape.push_back(d);
  ctx->SetOutputShape("XShape", xshape);
  ctx->SetOutputDtype("XShape", ctx->GetInputDtype("X"));
}

// X@GRAD takes the shape XShape carries.
void SqueezeGradInferShape(InferShapeContext* ctx) {
  if (!ctx->HasOutput(GradSlot("X"))) return;
  const Shape xshape = ctx->GetInputShape("XShape");
  FLUID_ENFORCE(xshape.rank() >= 1 && xshape[0] == 0, ctx->op_type(),
                ": XShape '", ctx->InputName("XShape"), "' ", xshape,
                " is not an XShape ([0] followed by X's shape)");
  ctx->SetOutputShape(GradSlot("X"), Shape(xshape.begin() + 1, xshape.end()));
  ctx->SetOutputDtype(GradSlot("X"), ctx->GetInputDtype(GradSlot("Out")));
}

// dst (already shaped) = src's elements.
void CopyElements(const ExecutionContext& ctx, const Tensor& src, Tensor* dst,
                  const char* what) {
  FLUID_ENFORCE(src.numel() == dst->numel(), ctx.type(), ": ", what, " ",
                src.shape(), " does not fit ", dst->shape());
  void* d = dst->raw_mutable_data();
  if (d != src.raw_data()) std::memcpy(d, src.raw_data(), src.bytes());
}

void SqueezeKernel(const ExecutionContext& ctx) {
  CopyElements(ctx, ctx.Input("X"), ctx.Output("Out"), "X");
  if (Tensor* xshape = ctx.Output("XShape")) xshape->raw_mutable_data();
}

void SqueezeGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx != nullptr)
    CopyElements(ctx, ctx.Input(GradSlot("Out")), dx, "Out@GRAD");
}

}  // namespace

REGISTER_OP(squeeze2)
    .Doc("Out = X without dims of size 1 (those in axes, or all).")
    .Input("X", "input, any dtype")
    .Output("Out", "X squeezed")
    .Output("XShape", "[0] + X's shape, for the gradient")
    .Attr<std::vector<int32_t>>("axes", {},
                                "dims to remove, each in [-rank, rank); "
                                "empty: every dim of size 1")
    .SetInferShape(SqueezeInferShape)
    .SetGrad(GradSpec("squeeze2_grad")
                 .Outputs({"XShape"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .KernelDtypeFrom("X")
    .AnyDtypeKernel(SqueezeKernel);

REGISTER_GRAD_OP(squeeze2_grad)
    .Doc("X@GRAD = Out@GRAD's elements under the shape XShape carries.")
    .SetInferShape(SqueezeGradInferShape)
    .AnyDtypeKernel(SqueezeGradKernel);

REGISTER_OP(unsqueeze2)
    .Doc("Out = X with dims of size 1 inserted at axes, one after another.")
    .Input("X", "input, any dtype")
    .Output("Out", "X unsqueezed")
    .Output("XShape", "[0] + X's shape, for the gradient")
    .Attr<std::vector<int32_t>>("axes", {},
                                "where to insert each dim of size 1, in "
                                "[-(rank + 1), rank] of the shape so far")
    .SetInferShape(SqueezeInferShape)
    .SetGrad(GradSpec("unsqueeze2_grad")
                 .Outputs({"XShape"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .KernelDtypeFrom("X")
    .AnyDtypeKernel(SqueezeKernel);

REGISTER_GRAD_OP(unsqueeze2_grad)
    .Doc("X@GRAD = Out@GRAD's elements under the shape XShape carries.")
    .SetInferShape(SqueezeGradInferShape)
    .AnyDtypeKernel(SqueezeGradKernel);

}  // namespace ops
}  // namespace fluid
