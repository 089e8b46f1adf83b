// slice: Out = Input[starts[k]:ends[k]] along each dim axes[k], the other
// dims whole. As in Fluid 1.x a negative start or end counts from the end
// of its dim, and both are then clamped to [0, dim] (an end past the dim,
// e.g. INT_MAX, means "to the end"); the clamped slice must not be empty.
// Its gradient is Out@GRAD in its place in zeros of Input's shape.
#include "ops/slice_op.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

std::string List(const std::vector<int32_t>& v) {
  return Shape(v.begin(), v.end()).ToString();
}

// For each dim of `in`: the first element taken (`start`) and how many
// (`out`, -1 for an unknown dim).
void SliceBounds(const std::string& op, const std::string& name,
                 const Shape& in, const AttributeMap& attrs, int64_t* start,
                 int64_t* out) {
  const auto& axes = GetAttr<std::vector<int32_t>>(attrs, "axes", op);
  const auto& starts = GetAttr<std::vector<int32_t>>(attrs, "starts", op);
  const auto& ends = GetAttr<std::vector<int32_t>>(attrs, "ends", op);
  FLUID_ENFORCE(starts.size() == axes.size() && ends.size() == axes.size(), op,
                ": attrs axes ", List(axes), ", starts ", List(starts),
                " and ends ", List(ends), " must have one entry each per axis");
  const int rank = in.rank();
  bool seen[Shape::kMaxRank] = {false};
  for (int d = 0; d < rank; ++d) {
    start[d] = 0;
    out[d] = in[d];
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    const int a = axes[k];
    FLUID_ENFORCE(a >= 0 && a < rank && !seen[a], op, ": attr axes ",
                  List(axes), " holds ", a, ", not a new dim of Input '", name,
                  "' ", in, " (allowed: [0, ", rank, "), each once)");
    seen[a] = true;
    const int64_t dim = in[a];
    if (dim < 0) {  // compile time: the size is unknown
      out[a] = -1;
      continue;
    }
    int64_t s = starts[k] < 0 ? starts[k] + dim : starts[k];
    int64_t e = ends[k] < 0 ? ends[k] + dim : ends[k];
    s = std::min<int64_t>(std::max<int64_t>(s, 0), dim);
    e = std::min<int64_t>(std::max<int64_t>(e, 0), dim);
    FLUID_ENFORCE(e > s, op, ": the slice of dim ", a, " of Input '", name,
                  "' ", in, " from ", starts[k], " to ", ends[k],
                  " is empty (clamped to [", s, ", ", e, "))");
    start[a] = s;
    out[a] = e - s;
  }
}

void SliceInferShape(InferShapeContext* ctx) {
  const Shape in = ctx->GetInputShape("Input");
  int64_t start[Shape::kMaxRank], out[Shape::kMaxRank];
  SliceBounds("slice", ctx->InputName("Input"), in, ctx->attrs(), start, out);
  ctx->SetOutputShape("Out", Shape(out, out + in.rank()));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("Input"));
}

template <typename T>
void SliceKernel(const ExecutionContext& ctx) {
  const Tensor& in = ctx.Input("Input");
  const SliceIndex index = MakeSliceIndex(ctx, in);
  const T* src = in.data<T>();
  Tensor* out = ctx.Output("Out");
  T* dst = out->mutable_data<T>();
  ParallelFor(ctx.device(), out->numel(), 2.0 * index.rank,
              [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i) dst[i] = src[index.Source(i)];
              });
}

void SliceGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("Input", GradSlot("Input"));
}

template <typename T>
void SliceGradKernel(const ExecutionContext& ctx) {
  Tensor* din = ctx.Output(GradSlot("Input"));
  if (din == nullptr) return;
  const SliceIndex index = MakeSliceIndex(ctx, ctx.Input("Input"));
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  const T* g = dout.data<T>();
  T* d = din->mutable_data<T>();
  std::memset(static_cast<void*>(d), 0, din->bytes());
  ParallelFor(ctx.device(), dout.numel(), 2.0 * index.rank,
              [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i) d[index.Source(i)] = g[i];
              });
}

}  // namespace

SliceIndex MakeSliceIndex(const ExecutionContext& ctx, const Tensor& input) {
  const Shape& s = input.shape();
  int64_t start[Shape::kMaxRank], out[Shape::kMaxRank];
  SliceBounds(ctx.type(), ctx.InputName("Input"), s, ctx.op().attrs(), start,
              out);
  SliceIndex index;
  index.rank = s.rank();
  int64_t stride = 1;
  for (int d = s.rank() - 1; d >= 0; --d) {
    index.out_dims[d] = out[d];
    index.in_strides[d] = stride;
    index.base += start[d] * stride;
    stride *= s[d];
  }
  return index;
}

REGISTER_OP(slice)
    .Doc("Out = Input[starts[k]:ends[k]] along each dim axes[k].")
    .Input("Input", "input")
    .Output("Out", "the slice")
    .Attr<std::vector<int32_t>>("axes", {}, "dims to slice, each once")
    .Attr<std::vector<int32_t>>("starts", {},
                                "first index per axis; negative: from the end")
    .Attr<std::vector<int32_t>>(
        "ends", {}, "end (excluded) per axis; negative: from the end; clamped")
    .SetInferShape(SliceInferShape)
    .SetGrad(GradSpec("slice_grad")
                 .Inputs({"Input"})
                 .OutGrads({"Out"})
                 .InGrads({"Input"}))
    .CPUKernel<float>(SliceKernel<float>)
    .CPUKernel<double>(SliceKernel<double>)
    .CPUKernel<bfloat16>(SliceKernel<bfloat16>)
    .CPUKernel<float16>(SliceKernel<float16>)
    .CPUKernel<int32_t>(SliceKernel<int32_t>)
    .CPUKernel<int64_t>(SliceKernel<int64_t>);

REGISTER_GRAD_OP(slice_grad)
    .Doc("Input@GRAD = zeros of Input's shape with Out@GRAD in the slice.")
    .SetInferShape(SliceGradInferShape)
    .CPUKernel<float>(SliceGradKernel<float>)
    .CPUKernel<double>(SliceGradKernel<double>)
    .CPUKernel<bfloat16>(SliceGradKernel<bfloat16>)
    .CPUKernel<float16>(SliceGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
