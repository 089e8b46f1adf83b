// expand: Out = X tiled expand_times[d] times along each dim d (Out's dim
// d is X's times expand_times[d]). Its gradient sums Out@GRAD over the
// copies of each element of X (expand_op.h).
#include "ops/expand_op.h"

#include <string>
#include <vector>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

Shape ExpandShape(const std::string& x_name, const Shape& x,
                  const std::vector<int32_t>& times) {
  FLUID_ENFORCE(static_cast<int>(times.size()) == x.rank(),
                "expand: attr expand_times ", Shape(times.begin(), times.end()),
                " must hold one count per ", "dim of X '", x_name, "' ", x);
  Shape out;
  for (int d = 0; d < x.rank(); ++d) {
    FLUID_ENFORCE(times[d] >= 1, "expand: attr expand_times ",
                  Shape(times.begin(), times.end()), " holds ", times[d],
                  " for dim ", d, " of X '", x_name, "'; each count must ",
                  "be at least 1");
    out.push_back(x[d] < 0 ? -1 : x[d] * times[d]);
  }
  return out;
}

void ExpandInferShape(InferShapeContext* ctx) {
  ctx->SetOutputShape(
      "Out", ExpandShape(ctx->InputName("X"), ctx->GetInputShape("X"),
                         ctx->Attr<std::vector<int32_t>>("expand_times")));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
}

template <typename T>
void ExpandKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const ExpandIndex index = MakeExpandIndex(ctx, x);
  const T* xd = x.data<T>();
  Tensor* out = ctx.Output("Out");
  T* od = out->mutable_data<T>();
  ParallelFor(ctx.device(), out->numel(), 2.0 * index.rank,
              [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i) od[i] = xd[index.Source(i)];
              });
}

void ExpandGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", GradSlot("X"));
}

template <typename T>
void ExpandGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const ExpandIndex index = MakeExpandIndex(ctx, ctx.Input("X"));
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.numel() == dx->numel() * index.copies,
                "expand_grad: Out@GRAD '", ctx.InputName(GradSlot("Out")), "' ",
                dout.shape(), " does not fit X '", ctx.InputName("X"), "' ",
                dx->shape(), " expanded");
  const T* g = dout.data<T>();
  T* d = dx->mutable_data<T>();
  ParallelFor(ctx.device(), dx->numel(),
              2.0 * index.rank * static_cast<double>(index.copies),
              [&](int64_t b, int64_t e) {
                for (int64_t j = b; j < e; ++j)
                  d[j] = ExpandGradAt(index, g, j);
              });
}

}  // namespace

ExpandIndex MakeExpandIndex(const ExecutionContext& ctx, const Tensor& x) {
  const auto& times = ctx.Attr<std::vector<int32_t>>("expand_times");
  const Shape out = ExpandShape(ctx.InputName("X"), x.shape(), times);
  ExpandIndex index;
  index.rank = x.shape().rank();
  for (int d = 0; d < index.rank; ++d) {
    index.x_dims[d] = x.shape()[d];
    index.times[d] = times[d];
    index.out_dims[d] = out[d];
    index.copies *= times[d];
  }
  return index;
}

REGISTER_OP(expand)
    .Doc("Out = X tiled expand_times[d] times along each dim d.")
    .Input("X", "input")
    .Output("Out", "X expanded")
    .Attr<std::vector<int32_t>>("expand_times", {},
                                "copies along each dim of X, each >= 1")
    .SetInferShape(ExpandInferShape)
    .SetGrad(
        GradSpec("expand_grad").Inputs({"X"}).OutGrads({"Out"}).InGrads({"X"}))
    .CPUKernel<float>(ExpandKernel<float>)
    .CPUKernel<double>(ExpandKernel<double>)
    .CPUKernel<int32_t>(ExpandKernel<int32_t>)
    .CPUKernel<int64_t>(ExpandKernel<int64_t>);

REGISTER_GRAD_OP(expand_grad)
    .Doc("dX = Out@GRAD summed over the copies of each element of X.")
    .SetInferShape(ExpandGradInferShape)
    .CPUKernel<float>(ExpandGradKernel<float>)
    .CPUKernel<double>(ExpandGradKernel<double>);

}  // namespace ops
}  // namespace fluid
