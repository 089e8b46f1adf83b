// stack: Y = the inputs X[0..n) (one shape) joined along a new dim `axis`
// of size n; unstack: the inverse, X cut along `axis` into its `num`
// slices, that dim removed. Each is the other's gradient (unstack's
// missing output gradients are zero-filled by the autodiff). Viewed as
// [rows, n * width] (rows = the product of the dims before `axis`), piece
// i owns the columns [i * width, (i + 1) * width): the copies of concat and
// split (concat_split.h).
#include "ops/stack_op.h"

#include <string>
#include <vector>

#include "ops/op_helpers.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace ops {

int StackAxis(int axis, const Shape& piece, const std::string& name) {
  const int rank = piece.rank();
  FLUID_ENFORCE(axis >= -(rank + 1) && axis <= rank, "stack: attr axis ", axis,
                " is out of range for X '", name, "' ", piece, " (allowed: [",
                -(rank + 1), ", ", rank, "])");
  return axis < 0 ? axis + rank + 1 : axis;
}

PieceColumns StackPiece(const Shape& piece, int axis, size_t n, size_t i) {
  const int64_t width = piece.Product(axis, piece.rank());
  return {piece.Product(0, axis), static_cast<int64_t>(n) * width,
          static_cast<int64_t>(i) * width, width};
}

Shape UnstackPiece(const std::string& x_name, const Shape& x, int axis_attr,
                   int num, size_t outs, int* axis) {
  const int rank = x.rank();
  FLUID_ENFORCE(axis_attr >= -rank && axis_attr < rank, "unstack: attr axis ",
                axis_attr, " is out of range for X '", x_name, "' ", x,
                " (allowed: [", -rank, ", ", rank, "))");
  *axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  FLUID_ENFORCE(num >= 0 && static_cast<size_t>(num) == outs,
                "unstack: attr num ", num, " differs from the ", outs,
                " variables Y names");
  FLUID_ENFORCE(x[*axis] < 0 || x[*axis] == num, "unstack: X '", x_name, "' ",
                x, " has ", x[*axis], " slices along axis ", *axis,
                ", attr num is ", num);
  std::vector<int64_t> dims(x.begin(), x.end());
  dims.erase(dims.begin() + *axis);
  return Shape(dims);
}

namespace {

void StackInferShape(InferShapeContext* ctx) {
  const size_t n = ctx->InputSize("X");
  FLUID_ENFORCE(n >= 1, "stack: X names no variable");
  const Shape first = ctx->GetInputShape("X", 0);
  const DataType dtype = ctx->GetInputDtype("X", 0);
  for (size_t i = 1; i < n; ++i) {
    const Shape s = ctx->GetInputShape("X", i);
    FLUID_ENFORCE(ShapesCompatible(first, s), "stack: X '",
                  ctx->InputName("X", i), "' ", s, " differs in shape from X '",
                  ctx->InputName("X", 0), "' ", first);
    FLUID_ENFORCE(ctx->GetInputDtype("X", i) == dtype, "stack: X '",
                  ctx->InputName("X", i), "' is ",
                  DataTypeName(ctx->GetInputDtype("X", i)), " but X '",
                  ctx->InputName("X", 0), "' is ", DataTypeName(dtype));
  }
  FLUID_ENFORCE(first.rank() < Shape::kMaxRank, "stack: X '",
                ctx->InputName("X", 0), "' ", first, " has too many dims (at ",
                "most ", Shape::kMaxRank - 1, ")");
  const int axis =
      StackAxis(ctx->Attr<int32_t>("axis"), first, ctx->InputName("X", 0));
  std::vector<int64_t> dims(first.begin(), first.end());
  dims.insert(dims.begin() + axis, static_cast<int64_t>(n));
  ctx->SetOutputShape("Y", Shape(dims));
  ctx->SetOutputDtype("Y", dtype);
}

template <typename T>
void StackKernel(const ExecutionContext& ctx) {
  const size_t n = ctx.InputSize("X");
  const Shape piece = ctx.Input("X", 0).shape();
  const int axis =
      StackAxis(ctx.Attr<int32_t>("axis"), piece, ctx.InputName("X", 0));
  T* y = ctx.Output("Y")->mutable_data<T>();
  for (size_t i = 0; i < n; ++i) {
    const Tensor& x = ctx.Input("X", i);
    FLUID_ENFORCE(x.shape() == piece, "stack: X '", ctx.InputName("X", i), "' ",
                  x.shape(), " differs in shape from X '",
                  ctx.InputName("X", 0), "' ", piece);
    CopyPieceColumns(StackPiece(piece, axis, n, i), x.data<T>(), y, true);
  }
}

// X@GRAD = unstack(Y@GRAD).
std::vector<proto::OpDesc> StackGradMaker(const proto::OpDesc& fwd) {
  std::vector<std::string> dxs;
  for (const std::string& x : OpInput(fwd, "X")) dxs.push_back(GradVarName(x));
  const int32_t axis =
      HasOpAttr(fwd, "axis") ? GetOpAttrAs<int32_t>(fwd, "axis") : 0;
  return {MakeOp("unstack", {{"X", {GradVarName(OpOutput(fwd, "Y").at(0))}}},
                 {{"Y", dxs}},
                 {{"axis", axis},
                  {"num", static_cast<int32_t>(dxs.size())},
                  {kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward)}})};
}

void UnstackInferShape(InferShapeContext* ctx) {
  int axis = 0;
  const Shape piece = UnstackPiece(
      ctx->InputName("X"), ctx->GetInputShape("X"), ctx->Attr<int32_t>("axis"),
      ctx->Attr<int32_t>("num"), ctx->OutputSize("Y"), &axis);
  for (size_t i = 0; i < ctx->OutputSize("Y"); ++i) {
    if (ctx->OutputName("Y", i).empty()) continue;  // an unneeded gradient
    ctx->SetOutputShape("Y", piece, i);
    ctx->SetOutputDtype("Y", ctx->GetInputDtype("X"), i);
  }
}

template <typename T>
void UnstackKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  int axis = 0;
  const Shape piece =
      UnstackPiece(ctx.InputName("X"), x.shape(), ctx.Attr<int32_t>("axis"),
                   ctx.Attr<int32_t>("num"), ctx.OutputSize("Y"), &axis);
  const size_t n = ctx.OutputSize("Y");
  for (size_t i = 0; i < n; ++i) {
    Tensor* y = ctx.Output("Y", i);
    if (y == nullptr) continue;
    CopyPieceColumns(StackPiece(piece, axis, n, i), x.data<T>(),
                     y->mutable_data<T>(), false);
  }
}

// X@GRAD = stack(Y@GRAD).
std::vector<proto::OpDesc> UnstackGradMaker(const proto::OpDesc& fwd) {
  std::vector<std::string> dys;
  for (const std::string& y : OpOutput(fwd, "Y")) dys.push_back(GradVarName(y));
  const int32_t axis =
      HasOpAttr(fwd, "axis") ? GetOpAttrAs<int32_t>(fwd, "axis") : 0;
  return {MakeOp("stack", {{"X", dys}},
                 {{"Y", {GradVarName(OpInput(fwd, "X").at(0))}}},
                 {{"axis", axis},
                  {kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward)}})};
}

}  // namespace

REGISTER_OP(stack)
    .Doc("Y = the inputs joined along a new dim axis of size len(X).")
    .DuplicableInput("X", "tensors of one shape and dtype")
    .Output("Y", "X stacked")
    .Attr<int32_t>("axis", 0, "the new dim's position, in [-(rank+1), rank]")
    .SetInferShape(StackInferShape)
    .SetGradMaker(StackGradMaker)
    .CPUKernel<float>(StackKernel<float>)
    .CPUKernel<double>(StackKernel<double>)
    .CPUKernel<bfloat16>(StackKernel<bfloat16>)
    .CPUKernel<float16>(StackKernel<float16>)
    .CPUKernel<int32_t>(StackKernel<int32_t>)
    .CPUKernel<int64_t>(StackKernel<int64_t>);

REGISTER_OP(unstack)
    .Doc("Y[i] = X's slice i along axis, that dim removed.")
    .Input("X", "input")
    .DuplicableOutput("Y", "num slices of X")
    .Attr<int32_t>("axis", 0, "the dim to cut, in [-rank, rank)")
    .Attr<int32_t>("num", 0, "X's size along axis (the number of Y)")
    .SetInferShape(UnstackInferShape)
    .SetGradMaker(UnstackGradMaker)
    .CPUKernel<float>(UnstackKernel<float>)
    .CPUKernel<double>(UnstackKernel<double>)
    .CPUKernel<bfloat16>(UnstackKernel<bfloat16>)
    .CPUKernel<float16>(UnstackKernel<float16>)
    .CPUKernel<int32_t>(UnstackKernel<int32_t>)
    .CPUKernel<int64_t>(UnstackKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
