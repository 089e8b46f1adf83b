// top_k: for every row of X [..., D] (its last dim), the k largest values
// in descending order (Out [..., k]) and their indices (Indices [..., k],
// int64); equal values come in index order. The gradient sends Out@GRAD to
// the positions the values came from.
#include "ops/topk_op.h"

#include <algorithm>
#include <string>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

void TopKInferShape(InferShapeContext* ctx) {
  Shape x = ctx->GetInputShape("X");
  const int k = ctx->Attr<int32_t>("k");
  const std::string& xn = ctx->InputName("X");
  FLUID_ENFORCE(x.rank() >= 1, "top_k: X '", xn, "' must have a dim");
  const int64_t d = x[x.rank() - 1];
  FLUID_ENFORCE(k >= 1 && (d < 0 || k <= d), "top_k: k ", k, " must be in [1, ",
                d, "] for X '", xn, "' ", x);
  x[x.rank() - 1] = k;
  ctx->SetOutputShape("Out", x);
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  ctx->SetOutputShape("Indices", x);
  ctx->SetOutputDtype("Indices", DataType::kInt64);
  // A row of each output per row of X: X's LoD, every level (beam search
  // reads the beams' grouping from the scores' LoD).
  if (x.rank() > 1) {
    ctx->ShareLoD("X", "Out");
    ctx->ShareLoD("X", "Indices");
  }
}

template <typename T>
void TopKKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const int64_t d = x.shape()[x.shape().rank() - 1];
  const int64_t k = ctx.Attr<int32_t>("k");
  const int64_t rows = d > 0 ? x.numel() / d : 0;
  const T* xd = x.data<T>();
  T* vals = ctx.Output("Out")->mutable_data<T>();
  int64_t* idx = ctx.Output("Indices")->mutable_data<int64_t>();
  ParallelFor(ctx.device(), rows, double(k * d), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      TopKRow(xd + r * d, d, k, vals + r * k, idx + r * k);
  });
}

void TopKGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", GradSlot("X"));
}

template <typename T>
void TopKGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const int64_t d = x.shape()[x.shape().rank() - 1];
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  const int64_t k = dout.shape()[dout.shape().rank() - 1];
  const int64_t rows = d > 0 ? x.numel() / d : 0;
  const T* dy = dout.data<T>();
  const int64_t* idx = ctx.Input("Indices").data<int64_t>();
  T* g = dx->mutable_data<T>();
  std::fill_n(g, x.numel(), T(0));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) g[r * d + idx[r * k + j]] += dy[r * k + j];
}

}  // namespace

REGISTER_OP(top_k)
    .Doc("The k largest values of each row of X and their indices.")
    .Input("X", "input [..., D]; rows along the last dim")
    .Output("Out", "[..., k], the largest values in descending order")
    .Output("Indices", "[..., k] int64, their positions in the row")
    .Attr<int32_t>("k", 1, "how many values per row, in [1, D]")
    .SetInferShape(TopKInferShape)
    .SetGrad(GradSpec("top_k_grad")
                 .Inputs({"X"})
                 .Outputs({"Indices"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(TopKKernel<float>)
    .CPUKernel<double>(TopKKernel<double>);

REGISTER_GRAD_OP(top_k_grad)
    .Doc("X@GRAD = Out@GRAD at the positions Indices names, 0 elsewhere.")
    .SetInferShape(TopKGradInferShape)
    .CPUKernel<float>(TopKGradKernel<float>)
    .CPUKernel<double>(TopKGradKernel<double>);

}  // namespace ops
}  // namespace fluid
