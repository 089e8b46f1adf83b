// gather: Out[i] = X[Index[i]], rows of X picked along dim 0 (Out's shape
// is [len(Index)] + X's other dims). Index is int32 or int64, of shape [N]
// or [N, 1]; on the CPU an index outside [0, X's rows) is an error naming
// it, on CUDA it gives a row of zeros (the device does not stop to check).
// The gradient scatters Out@GRAD back into rows of zeros: with
// overwrite=false the rows an index repeats receive the sum, with
// overwrite=true (Fluid's default) the last of them (Fluid's CPU rule).
#include "ops/gather_op.h"

#include <cstring>
#include <string>
#include <vector>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

// Checks Index's dtype and shape; its length (-1 when unknown).
int64_t IndexLength(const std::string& op, const std::string& name,
                    const Shape& index, DataType dtype) {
  FLUID_ENFORCE(dtype == DataType::kInt32 || dtype == DataType::kInt64, op,
                ": Index '", name, "' is ", DataTypeName(dtype),
                "; it must be int32 or int64");
  FLUID_ENFORCE(index.rank() == 1 || (index.rank() == 2 && index[1] == 1), op,
                ": Index '", name, "' ", index,
                " must have shape [N] or "
                "[N, 1]");
  return index[0];
}

void GatherInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  FLUID_ENFORCE(x.rank() >= 1, "gather: X '", ctx->InputName("X"),
                "' has no dims");
  Shape out(
      {IndexLength("gather", ctx->InputName("Index"),
                   ctx->GetInputShape("Index"), ctx->GetInputDtype("Index"))});
  for (int d = 1; d < x.rank(); ++d) out.push_back(x[d]);
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
}

template <typename I>
int64_t IndexAt(const Tensor& index, int64_t i) {
  return static_cast<int64_t>(index.data<I>()[i]);
}

// Index's i-th row number, checked.
int64_t Row(const ExecutionContext& ctx, const GatherArgs& a, int64_t i) {
  const int64_t r = a.index.dtype() == DataType::kInt32
                        ? IndexAt<int32_t>(a.index, i)
                        : IndexAt<int64_t>(a.index, i);
  FLUID_ENFORCE(r >= 0 && r < a.rows, ctx.type(), ": Index '",
                ctx.InputName("Index"), "' holds ", r, " at position ", i,
                ", out of range for X '", ctx.InputName("X"), "' ", a.x.shape(),
                " (allowed: [0, ", a.rows, "))");
  return r;
}

template <typename T>
void GatherKernel(const ExecutionContext& ctx) {
  const GatherArgs a = ReadGatherArgs(ctx);
  const T* x = a.x.data<T>();
  T* out = ctx.Output("Out")->mutable_data<T>();
  const size_t bytes = static_cast<size_t>(a.width) * sizeof(T);
  for (int64_t i = 0; i < a.count; ++i) {
    const int64_t r = Row(ctx, a, i);
    if (bytes > 0) std::memcpy(out + i * a.width, x + r * a.width, bytes);
  }
}

void GatherGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", GradSlot("X"));
}

template <typename T>
void GatherGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const GatherArgs a = ReadGatherArgs(ctx);
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.numel() == a.count * a.width, "gather_grad: Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                " does not hold one row of X per index");
  const bool overwrite = ctx.Attr<bool>("overwrite");
  const T* g = dout.data<T>();
  T* d = dx->mutable_data<T>();
  std::memset(static_cast<void*>(d), 0, dx->bytes());
  for (int64_t i = 0; i < a.count; ++i) {
    T* row = d + Row(ctx, a, i) * a.width;
    const T* src = g + i * a.width;
    for (int64_t c = 0; c < a.width; ++c)
      row[c] = overwrite ? src[c] : row[c] + src[c];
  }
}

}  // namespace

GatherArgs ReadGatherArgs(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& index = ctx.Input("Index");
  FLUID_ENFORCE(x.shape().rank() >= 1, ctx.type(), ": X '", ctx.InputName("X"),
                "' has no dims");
  const int64_t count = IndexLength(ctx.type(), ctx.InputName("Index"),
                                    index.shape(), index.dtype());
  return {x, index, x.shape()[0], x.shape().Product(1, x.shape().rank()),
          count};
}

REGISTER_OP(gather)
    .Doc("Out[i] = X[Index[i]]: rows of X picked along dim 0.")
    .Input("X", "input, [rows, ...]")
    .Input("Index", "int32 or int64 row numbers, [N] or [N, 1]")
    .Output("Out", "[N, ...]")
    .Attr<bool>("overwrite", true,
                "gradient of a repeated row: the last (true) or the sum")
    .SetInferShape(GatherInferShape)
    .SetGrad(GradSpec("gather_grad")
                 .Inputs({"X", "Index"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .KernelDtypeFrom("X")
    .CPUKernel<float>(GatherKernel<float>)
    .CPUKernel<double>(GatherKernel<double>)
    .CPUKernel<int32_t>(GatherKernel<int32_t>)
    .CPUKernel<int64_t>(GatherKernel<int64_t>);

REGISTER_GRAD_OP(gather_grad)
    .Doc("X@GRAD = zeros with Out@GRAD's rows scattered to Index's rows.")
    .SetInferShape(GatherGradInferShape)
    .KernelDtypeFrom("X")
    .CPUKernel<float>(GatherGradKernel<float>)
    .CPUKernel<double>(GatherGradKernel<double>);

}  // namespace ops
}  // namespace fluid
