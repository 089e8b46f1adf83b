// Tensor arrays (src/framework/tensor_array.h), Fluid's LoDTensorArray ops:
//
//   create_array      -> Out: an empty array (cleared at each run)
//   write_to_array    X, I -> Out: Out[I] = X, growing Out past its end
//   read_from_array   X, I -> Out: Out = X[I]
//   lod_array_length  X -> Out: int64 [1], the array's length
//
// I is an int64 (or int32) [1] tensor. The gradient of an array is an array
// of gradients: write_to_array_grad reads slot I of Out@GRAD (zeros where no
// gradient reached it); read_from_array_grad adds Out@GRAD into slot I of
// X@GRAD, so reads of one slot in several loop steps sum. Control ops: one
// kernel for every place and dtype (tensors are copied where they live).
#include "ops/control_flow_helpers.h"
#include "ops/op_helpers.h"
#include "src/framework/tensor_array.h"

namespace fluid {
namespace ops {
namespace {

// The index held by I, checked to be one non-negative int64 or int32.
int64_t ArrayIndex(const ExecutionContext& ctx) {
  const Tensor& i = ctx.Input("I");
  FLUID_ENFORCE(i.numel() == 1 && (i.dtype() == DataType::kInt64 ||
                                   i.dtype() == DataType::kInt32),
                ctx.type(), ": I '", ctx.InputName("I"),
                "' must be one int64 (or int32), is ", DataTypeName(i.dtype()),
                " ", i.shape());
  Tensor host;
  host.CopyFrom(i, Place::CPU());
  const int64_t v = host.dtype() == DataType::kInt64
                        ? host.data<int64_t>()[0]
                        : static_cast<int64_t>(host.data<int32_t>()[0]);
  FLUID_ENFORCE(v >= 0, ctx.type(), ": I '", ctx.InputName("I"), "' is ", v,
                "; an array index must be >= 0");
  return v;
}

const LoDTensorArray& InputArray(const ExecutionContext& ctx,
                                 const std::string& slot) {
  Variable* var = ctx.InputVar(slot);
  FLUID_ENFORCE(var != nullptr, ctx.type(), ": ", slot, " is unbound");
  return *MutableTensorArray(var);
}

void CheckIndexInferShape(InferShapeContext* ctx) {
  const DataType d = ctx->GetInputDtype("I");
  FLUID_ENFORCE(d == DataType::kInt64 || d == DataType::kInt32, ctx->op_type(),
                ": I '", ctx->InputName("I"), "' is ", DataTypeName(d),
                "; an array index is int64 (or int32) [1]");
  const int64_t n = ctx->GetInputShape("I").numel();
  FLUID_ENFORCE(n < 0 || n == 1, ctx->op_type(), ": I '", ctx->InputName("I"),
                "' must hold one element, has shape ", ctx->GetInputShape("I"));
}

void CreateArrayKernel(const ExecutionContext& ctx) {
  MutableTensorArray(ctx.OutputVar("Out"))->clear();
}

void WriteInferShape(InferShapeContext* ctx) {
  CheckIndexInferShape(ctx);
  if (ctx->IsRuntime()) return;  // Out holds an array, not a tensor
  ctx->SetOutputShape("Out", ctx->GetInputShape("X"));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  ctx->SetOutputLoDLevel("Out", ctx->InputLoDLevel("X"));
}

void WriteToArrayKernel(const ExecutionContext& ctx) {
  const int64_t i = ArrayIndex(ctx);
  LoDTensorArray* array = MutableTensorArray(ctx.OutputVar("Out"));
  if (static_cast<int64_t>(array->size()) <= i) array->resize(i + 1);
  // A fresh tensor: an earlier value of the slot may be shared by a saved
  // step of a loop.
  Tensor value;
  value.CopyFrom(ctx.Input("X"), ctx.place());
  (*array)[i] = std::move(value);
}

void ReadInferShape(InferShapeContext* ctx) {
  CheckIndexInferShape(ctx);
  if (ctx->IsRuntime()) return;  // X holds an array; Out is set by the kernel
  ctx->SetOutputShape("Out", ctx->GetInputShape("X"));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  ctx->SetOutputLoDLevel("Out", ctx->InputLoDLevel("X"));
}

void ReadFromArrayKernel(const ExecutionContext& ctx) {
  const int64_t i = ArrayIndex(ctx);
  const LoDTensorArray& array = InputArray(ctx, "X");
  FLUID_ENFORCE(i < static_cast<int64_t>(array.size()), ctx.type(), ": I is ",
                i, " but array X '", ctx.InputName("X"), "' holds ",
                array.size(), " tensors (indices 0 to ",
                static_cast<int64_t>(array.size()) - 1, ")");
  FLUID_ENFORCE(array[i].initialized(), ctx.type(), ": slot ", i,
                " of array X '", ctx.InputName("X"),
                "' was never written (write_to_array skipped over it)");
  ctx.Output("Out")->CopyFrom(array[i], ctx.place());
}

void LengthInferShape(InferShapeContext* ctx) {
  if (ctx->IsRuntime()) return;
  ctx->SetOutputShape("Out", Shape{1});
  ctx->SetOutputDtype("Out", DataType::kInt64);
}

void ArrayLengthKernel(const ExecutionContext& ctx) {
  const LoDTensorArray& array = InputArray(ctx, "X");
  Tensor host;
  host.mutable_data<int64_t>(Shape{1})[0] = static_cast<int64_t>(array.size());
  ctx.Output("Out")->CopyFrom(host, ctx.place());
}

// dX = slot I of the gradient array, or zeros shaped like X where no
// gradient reached the slot.
void WriteToArrayGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const int64_t i = ArrayIndex(ctx);
  const Tensor& x = ctx.Input("X");
  Tensor* dx = ctx.Output(GradSlot("X"));
  const Variable* dout_var = ctx.InputVar(GradSlot("Out"));
  const LoDTensorArray* dout =
      dout_var != nullptr && dout_var->HasValue() && !dout_var->IsTensor()
          ? &dout_var->Get<LoDTensorArray>()
          : nullptr;
  if (dout != nullptr && i < static_cast<int64_t>(dout->size()) &&
      (*dout)[i].initialized()) {
    dx->CopyFrom((*dout)[i], ctx.place());
    return;
  }
  dx->CopyFrom(ZerosAt(x.dtype(), x.shape(), ctx.place()), ctx.place());
}

// Slot I of X@GRAD += Out@GRAD (set where the slot holds nothing yet).
void ReadFromArrayGradKernel(const ExecutionContext& ctx);

}  // namespace

REGISTER_OP(create_array)
    .Doc("Out = an empty tensor array (emptied again at each run).")
    .Output("Out", "the array (a LOD_TENSOR_ARRAY var)")
    .Attr<int32_t>("dtype", 0, "the dtype of the array's tensors")
    .InRange(0, kMaxDataType)
    .AnyPlaceKernel(CreateArrayKernel);

REGISTER_OP(write_to_array)
    .Doc("Out[I] = X; the array grows to I + 1 tensors when shorter.")
    .Input("X", "the tensor written")
    .Input("I", "int64 [1]: the slot")
    .Output("Out", "the array (a LOD_TENSOR_ARRAY var)")
    .SetInferShape(WriteInferShape)
    .SetGrad(GradSpec("write_to_array_grad")
                 .Inputs({"X", "I"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .AnyPlaceKernel(WriteToArrayKernel);

REGISTER_GRAD_OP(write_to_array_grad)
    .Doc("dX = Out@GRAD[I], zeros where no gradient reached the slot.")
    .SetInferShape([](InferShapeContext* ctx) {
      ctx->ShareShape("X", GradSlot("X"));
    })
    .AnyPlaceKernel(WriteToArrayGradKernel);

REGISTER_OP(read_from_array)
    .Doc("Out = X[I]; an error names the index and the array's length.")
    .Input("X", "the array (a LOD_TENSOR_ARRAY var)")
    .Input("I", "int64 [1]: the slot")
    .Output("Out", "a copy of the slot's tensor")
    .SetInferShape(ReadInferShape)
    .SetGrad(GradSpec("read_from_array_grad")
                 .Inputs({"X", "I"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .AnyPlaceKernel(ReadFromArrayKernel);

REGISTER_GRAD_OP(read_from_array_grad)
    .Doc("X@GRAD[I] += Out@GRAD (the gradient of an array is an array).")
    .SetInferShape([](InferShapeContext* ctx) {
      if (ctx->IsRuntime()) return;
      ctx->SetOutputShape(GradSlot("X"), ctx->GetInputShape("X"));
      ctx->SetOutputDtype(GradSlot("X"), ctx->GetInputDtype("X"));
    })
    .AnyPlaceKernel(ReadFromArrayGradKernel);

REGISTER_OP(lod_array_length)
    .Doc("Out = the number of tensors in array X, int64 [1].")
    .Input("X", "the array (a LOD_TENSOR_ARRAY var)")
    .Output("Out", "int64 [1]")
    .SetInferShape(LengthInferShape)
    .AnyPlaceKernel(ArrayLengthKernel);

namespace {

void ReadFromArrayGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const int64_t i = ArrayIndex(ctx);
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  LoDTensorArray* dx = MutableTensorArray(ctx.OutputVar(GradSlot("X")));
  if (static_cast<int64_t>(dx->size()) <= i) dx->resize(i + 1);
  Tensor& slot = (*dx)[i];
  if (!slot.initialized()) {
    Tensor value;
    value.CopyFrom(dout, ctx.place());
    slot = std::move(value);
    return;
  }
  AccumulateInto(dout, &slot, ctx.type() + " into slot " + std::to_string(i));
}

}  // namespace

}  // namespace ops
}  // namespace fluid
