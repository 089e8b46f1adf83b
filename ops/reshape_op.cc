// reshape: Out holds X's elements under the shape given by the `shape`
// attr, where 0 copies X's dim at that position and one -1 is inferred.
//
// The kernels copy rather than share X's buffer. Sharing would save one
// memcpy, but the output would then alias its input for the rest of the
// step: an op later writing one in place (an optimizer updating a param, a
// memory-reuse pass) would silently change the other, and for reshape_grad
// X@GRAD would stop being a view into a gradient bucket that the collective
// reduces in place. A copy into Out's own reused buffer has none of these
// hazards and costs one pass over memory.
#include "ops/reshape_op.h"

#include <cstring>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

ReshapeCopy GetReshapeCopy(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  // Shape inference ran just before and sized Out.
  FLUID_ENFORCE(out->numel() == x.numel(), "reshape: Out '",
                ctx.OutputName("Out"), "' ", out->shape(), " and X '",
                ctx.InputName("X"), "' ", x.shape(), " differ in size");
  return {&x, out};
}

ReshapeCopy GetReshapeGradCopy(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return {};
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.numel() == dx->numel(), "reshape_grad: Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                " does not fit X '", ctx.InputName("X"), "' ", dx->shape());
  return {&dout, dx};
}

namespace {

// The output shape for X under `spec`. At compile time X may hold -1 dims:
// a -1 in `spec` is inferred whenever X's dims that are not copied by a 0
// are all known (an unknown batch dim copied by 0 cancels out); otherwise
// it stays -1.
Shape ReshapeOutputShape(const std::string& x_name, const Shape& x,
                         const std::vector<int64_t>& spec) {
  FLUID_ENFORCE(
      !spec.empty() && static_cast<int>(spec.size()) <= Shape::kMaxRank,
      "reshape: attr shape ", Shape(spec), " for X '", x_name,
      "' must have 1 to ", Shape::kMaxRank, " dims");
  Shape out;
  int infer_at = -1;
  int64_t known = 1;  // product of the explicit positive dims
  int64_t rest = 1;   // product of X's dims not copied by a 0; -1: unknown
  bool copied[Shape::kMaxRank] = {false};
  for (size_t i = 0; i < spec.size(); ++i) {
    const int64_t d = spec[i];
    const int pos = static_cast<int>(i);
    if (d == -1) {
      FLUID_ENFORCE(infer_at < 0, "reshape: attr shape ", Shape(spec),
                    " for X '", x_name, "' has more than one -1");
      infer_at = pos;
      out.push_back(-1);
    } else if (d == 0) {
      FLUID_ENFORCE(pos < x.rank(), "reshape: attr shape ", Shape(spec),
                    " has 0 at position ", pos, " but X '", x_name, "' ", x,
                    " has only ", x.rank(), " dims");
      copied[pos] = true;
      out.push_back(x[pos]);
    } else {
      FLUID_ENFORCE(d > 0, "reshape: attr shape ", Shape(spec), " for X '",
                    x_name, "' has invalid dim ", d);
      known *= d;
      out.push_back(d);
    }
  }
  for (int i = 0; i < x.rank(); ++i) {
    if (copied[i]) continue;
    if (x[i] < 0) {
      rest = -1;
      break;
    }
    rest *= x[i];
  }
  if (rest < 0) return out;  // compile time, cannot check or infer
  if (infer_at >= 0) {
    FLUID_ENFORCE(rest % known == 0, "reshape: cannot reshape X '", x_name,
                  "' ", x, " to ", Shape(spec), ": ", rest,
                  " elements do not divide by ", known);
    out[infer_at] = rest / known;
  } else {
    FLUID_ENFORCE(rest == known, "reshape: cannot reshape X '", x_name, "' ", x,
                  " to ", Shape(spec), ": ", rest, " elements vs ", known);
  }
  return out;
}

void ReshapeInferShape(InferShapeContext* ctx) {
  ctx->SetOutputShape(
      "Out", ReshapeOutputShape(ctx->InputName("X"), ctx->GetInputShape("X"),
                                ctx->Attr<std::vector<int64_t>>("shape")));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
}

// dst (already shaped) = src's elements, in dst's own buffer.
template <typename T>
void CopyInto(const CPUDeviceContext& dev, const Tensor& src, Tensor* dst) {
  const T* s = src.data<T>();
  T* d = dst->mutable_data<T>();
  if (s == d) return;  // in place: the elements are already there
  ParallelFor(dev, src.numel(), 1.0, [&](int64_t b, int64_t e) {
    std::memcpy(d + b, s + b, static_cast<size_t>(e - b) * sizeof(T));
  });
}

template <typename T>
void ReshapeKernel(const ExecutionContext& ctx) {
  const ReshapeCopy c = GetReshapeCopy(ctx);
  CopyInto<T>(ctx.device(), *c.src, c.dst);
}

void ReshapeGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", GradSlot("X"));
}

template <typename T>
void ReshapeGradKernel(const ExecutionContext& ctx) {
  const ReshapeCopy c = GetReshapeGradCopy(ctx);
  if (c.dst != nullptr) CopyInto<T>(ctx.device(), *c.src, c.dst);
}

}  // namespace

REGISTER_OP(reshape)
    .Doc("Out = X's elements under a new shape (a copy).")
    .Input("X", "input")
    .Output("Out", "X reshaped")
    .Attr<std::vector<int64_t>>(
        "shape", {},
        "new shape; 0 copies X's dim at that position, one -1 is inferred")
    .SetInferShape(ReshapeInferShape)
    .SetGrad(
        GradSpec("reshape_grad").Inputs({"X"}).OutGrads({"Out"}).InGrads({"X"}))
    .CPUKernel<float>(ReshapeKernel<float>)
    .CPUKernel<double>(ReshapeKernel<double>)
    .CPUKernel<bfloat16>(ReshapeKernel<bfloat16>)
    .CPUKernel<float16>(ReshapeKernel<float16>)
    // Ids too (fluid.embedding and fluid.one_hot reshape them).
    .CPUKernel<int32_t>(ReshapeKernel<int32_t>)
    .CPUKernel<int64_t>(ReshapeKernel<int64_t>);

REGISTER_GRAD_OP(reshape_grad)
    .Doc("dX = dOut under X's shape (only the shape of X is read).")
    .SetInferShape(ReshapeGradInferShape)
    .CPUKernel<float>(ReshapeGradKernel<float>)
    .CPUKernel<double>(ReshapeGradKernel<double>)
    .CPUKernel<bfloat16>(ReshapeGradKernel<bfloat16>)
    .CPUKernel<float16>(ReshapeGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
