// split: X cut along `axis` into the outputs Out, either into `num` equal
// pieces or into pieces of the sizes in `sections` (one of which may be -1,
// inferred). Its gradient joins the output gradients back with a concat;
// an output the loss does not use gets a zero gradient from the autodiff.
#include <string>
#include <vector>

#include "ops/concat_split.h"
#include "src/framework/grad_op_maker.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace ops {
namespace {

// The size on the axis of every output by `sections`: -1 stays -1 when the
// axis dim is unknown.
int64_t SectionDim(const InferShapeContext& ctx, const Shape& x, int axis,
                   size_t i) {
  const auto& sections = ctx.Attr<std::vector<int32_t>>("sections");
  int64_t known = 0;
  int unknown = 0;
  for (int32_t s : sections) {
    FLUID_ENFORCE(s >= -1, "split: sections has invalid size ", s, " for X '",
                  ctx.InputName("X"), "'");
    if (s < 0)
      ++unknown;
    else
      known += s;
  }
  FLUID_ENFORCE(unknown <= 1, "split: sections for X '", ctx.InputName("X"),
                "' may hold at most one -1");
  const int64_t dim = x[axis];
  FLUID_ENFORCE(dim < 0 || (unknown == 0 ? known == dim : known <= dim),
                "split: sections of X '", ctx.InputName("X"), "' ", x,
                " add up to ", known, " but its dim ", axis, " is ", dim);
  if (sections[i] >= 0) return sections[i];
  return dim < 0 ? -1 : dim - known;
}

void SplitInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  const std::string& xn = ctx->InputName("X");
  const int axis =
      NormalizeAxis(ctx->Attr<int32_t>("axis"), x.rank(), "split", xn);
  const size_t n = ctx->OutputSize("Out");
  const auto& sections = ctx->Attr<std::vector<int32_t>>("sections");
  const int num = ctx->Attr<int32_t>("num");
  if (sections.empty()) {
    FLUID_ENFORCE(num > 0 && static_cast<size_t>(num) == n, "split: num ", num,
                  " for X '", xn, "' must be positive and match the ", n,
                  " outputs Out");
    FLUID_ENFORCE(x[axis] < 0 || x[axis] % num == 0, "split: X '", xn, "' ", x,
                  " cannot be split into ", num, " equal pieces on axis ",
                  axis);
  } else {
    FLUID_ENFORCE(sections.size() == n, "split: ", sections.size(),
                  " sections for X '", xn, "' but ", n, " outputs Out");
  }
  for (size_t i = 0; i < n; ++i) {
    Shape s = x;
    if (sections.empty()) {
      s[axis] = x[axis] < 0 ? -1 : x[axis] / num;
    } else {
      s[axis] = SectionDim(*ctx, x, axis, i);
    }
    ctx->SetOutputShape("Out", s, i);
    ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"), i);
  }
}

template <typename T>
void SplitKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  ForEachPiece(
      x.shape(), AxisAttr(ctx, x.shape(), ctx.InputName("X")),
      ctx.OutputSize("Out"),
      [&](size_t i) { return ctx.Output("Out", i)->shape(); },
      [&](size_t i, const PieceColumns& c) {
        CopyPieceColumns(c, x.data<T>(),
                         ctx.Output("Out", i)->mutable_data<T>(), false);
      });
}

// X@GRAD = the output gradients joined along the axis.
std::vector<proto::OpDesc> SplitGradMaker(const proto::OpDesc& fwd) {
  std::vector<std::string> douts;
  for (const std::string& out : OpOutput(fwd, "Out"))
    douts.push_back(GradVarName(out));
  const int32_t axis =
      HasOpAttr(fwd, "axis") ? GetOpAttrAs<int32_t>(fwd, "axis") : 0;
  return {MakeOp("concat", {{"X", douts}},
                 {{"Out", {GradVarName(OpInput(fwd, "X").at(0))}}},
                 {{"axis", axis},
                  {kOpRoleAttr, static_cast<int32_t>(OpRole::kBackward)}})};
}

}  // namespace

REGISTER_OP(split)
    .Doc(
        "The outputs Out = X cut along axis, into num equal pieces or by "
        "sections.")
    .Input("X", "the tensor to cut")
    .DuplicableOutput("Out", "the pieces, in order along the axis")
    .Attr<int32_t>("axis", 0, "the dim to cut; negative counts from the end")
    .Attr<int32_t>("num", 0, "equal pieces (when sections is empty)")
    .Attr<std::vector<int32_t>>(
        "sections", {}, "sizes of the pieces on the axis; one may be -1")
    .SetInferShape(SplitInferShape)
    .SetGradMaker(SplitGradMaker)
    .CPUKernel<float>(SplitKernel<float>)
    .CPUKernel<double>(SplitKernel<double>)
    .CPUKernel<bfloat16>(SplitKernel<bfloat16>)
    .CPUKernel<float16>(SplitKernel<float16>)
    .CPUKernel<int32_t>(SplitKernel<int32_t>)
    .CPUKernel<int64_t>(SplitKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
