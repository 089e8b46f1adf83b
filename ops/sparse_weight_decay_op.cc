// sparse_weight_decay: Fluid's L2Decay / L1Decay for a sparse gradient.
// For each row r that Grad lists (once: merge_selected_rows first),
//
//   GradOut[r] = Grad[r] + regularization_coeff * Param[r]        (l2)
//   GradOut[r] = Grad[r] + regularization_coeff * sign(Param[r])  (l1)
//
// and GradOut keeps Grad's rows: the dense decay (scale + sum, see
// src/builder/regularizer.cc) restricted to the rows the gradient touches,
// each decayed once whatever the number of its lookups. A row the
// gradient misses gets no decay, as in Fluid. GradOut is normally Grad
// itself. Not differentiable: it runs between the backward pass and the
// optimizer.
#include "ops/sparse_weight_decay_op.h"

#include "ops/clip_functors.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

SparseDecayArgs ReadSparseDecayArgs(const ExecutionContext& ctx) {
  const Tensor& param = ctx.Input("Param");
  FLUID_ENFORCE(IsSparseInput(ctx, "Grad"), "sparse_weight_decay: Grad '",
                ctx.InputName("Grad"),
                "' is a dense tensor; its decay is a scale and a sum");
  const SelectedRows& sr = ctx.InputVar("Grad")->Get<SelectedRows>();
  FLUID_ENFORCE(sr.dense_shape() == param.shape(), SparseInputWhat(ctx, "Grad"),
                " stands for shape ", sr.dense_shape(), " but Param '",
                ctx.InputName("Param"), "' has shape ", param.shape());
  FLUID_ENFORCE(sr.value().dtype() == param.dtype(),
                SparseInputWhat(ctx, "Grad"), " is ",
                DataTypeName(sr.value().dtype()), " but Param '",
                ctx.InputName("Param"), "' is ", DataTypeName(param.dtype()));
  const bool l1 = ctx.Attr<std::string>("regularizer") == "l1";
  return {param, SparseValues(ctx, "Grad", "GradOut", true), sr.rows(),
          sr.row_width(), l1};
}

namespace {

void SparseDecayInferShape(InferShapeContext* ctx) {
  FLUID_ENFORCE(ctx->IsSelectedRowsInput("Grad"), "sparse_weight_decay: Grad '",
                ctx->InputName("Grad"),
                "' is a dense tensor; it takes sparse rows (SELECTED_ROWS), "
                "a dense gradient's decay being a scale and a sum");
  const Shape p = ctx->GetInputShape("Param");
  const Shape g = ctx->GetInputShape("Grad");
  FLUID_ENFORCE(ShapesCompatible(p, g), "sparse_weight_decay: Grad '",
                ctx->InputName("Grad"), "' stands for shape ", g,
                " but Param '", ctx->InputName("Param"), "' has shape ", p);
  FLUID_ENFORCE(ctx->GetInputDtype("Grad") == ctx->GetInputDtype("Param"),
                "sparse_weight_decay: Grad '", ctx->InputName("Grad"), "' is ",
                DataTypeName(ctx->GetInputDtype("Grad")), " but Param '",
                ctx->InputName("Param"), "' is ",
                DataTypeName(ctx->GetInputDtype("Param")));
  ctx->SetOutputSelectedRows("GradOut");
  ctx->ShareShape("Grad", "GradOut");
}

template <typename T>
void SparseDecayKernel(const ExecutionContext& ctx) {
  const SparseDecayArgs a = ReadSparseDecayArgs(ctx);
  const T coeff = static_cast<T>(ctx.Attr<float>("regularization_coeff"));
  const T* p = a.param.data<T>();
  const T* g = a.grad.x.data<T>();
  T* out = a.grad.out->mutable_data<T>(a.grad.x.shape());
  const int64_t w = a.width;
  for (size_t k = 0; k < a.rows.size(); ++k) {
    const T* pr = p + a.rows[k] * w;
    const int64_t base = static_cast<int64_t>(k) * w;
    for (int64_t j = 0; j < w; ++j) {
      const T decay = (a.l1 ? SignOf(pr[j]) : pr[j]) * coeff;
      out[base + j] = g[base + j] + decay;
    }
  }
}

}  // namespace

REGISTER_OP(sparse_weight_decay)
    .Doc(
        "GradOut = Grad + coeff * Param (l2) or coeff * sign(Param) (l1), "
        "on the rows the sparse Grad lists.")
    .Input("Param", "the parameter")
    .Input("Grad", "its sparse gradient (SELECTED_ROWS), each row once")
    .Output("GradOut", "Grad's rows, decayed; normally Grad itself")
    .Attr<std::string>("regularizer", "l2",
                       "l2: add coeff * Param; l1: add coeff * sign(Param)")
    .OneOf({"l2", "l1"})
    .Attr<float>("regularization_coeff", 0.0f, "the decay's coefficient")
    .InRange(0.0, kNoUpperBound)
    .SetInferShape(SparseDecayInferShape)
    .CPUKernel<float>(SparseDecayKernel<float>)
    .CPUKernel<double>(SparseDecayKernel<double>);

}  // namespace ops
}  // namespace fluid
