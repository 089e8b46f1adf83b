// squared_l2_norm: Out[1] = sum of X^2, accumulated in double (the per
// gradient term of GradientClipByGlobalNorm). dX = 2 * dOut[0] * X. X may
// be a sparse gradient with each row listed once (ops/sparse_values.h): the
// sum is over its values (the forward only; a sparse X is a gradient, which
// is not differentiated again).
#include "ops/op_helpers.h"
#include "ops/sparse_values.h"

namespace fluid {
namespace ops {
namespace {

// The sum of the squares in double, in eight running sums: the element at
// (dense) index i goes into sum i % 8, and the sums are added pairwise at
// the end. The order depends on the indices alone, never on where the
// values lie in memory or on the thread count; sparse rows listed in
// increasing order give the dense tensor's bits (its zeros add nothing);
// and the dense loop vectorises (one dependent addition per element ran
// at 1.6 ns an element).
constexpr int kLanes = 8;

double AddLanes(const double* acc) {
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

template <typename T>
double DenseSumOfSquares(const T* in, int64_t n) {
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const double v = static_cast<double>(in[i + j]);
      acc[j] += v * v;
    }
  }
  for (int j = 0; i < n; ++i, ++j) {
    const double v = static_cast<double>(in[i]);
    acc[j] += v * v;
  }
  return AddLanes(acc);
}

template <typename T>
double SparseSumOfSquares(const SelectedRows& x) {
  double acc[kLanes] = {};
  const int64_t rows = static_cast<int64_t>(x.rows().size());
  const int64_t width = rows == 0 ? 0 : x.value().numel() / rows;
  const T* in = x.value().data<T>();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = x.rows()[r] * width;
    for (int64_t j = 0; j < width; ++j) {
      const double v = static_cast<double>(in[r * width + j]);
      acc[(base + j) % kLanes] += v * v;
    }
  }
  return AddLanes(acc);
}

template <typename T>
void SquaredL2NormKernel(const ExecutionContext& ctx) {
  const Tensor& x = DistinctRowsOrTensor(ctx, "X");  // checks sparse rows
  const double acc =
      IsSparseInput(ctx, "X")
          ? SparseSumOfSquares<T>(ctx.InputVar("X")->Get<SelectedRows>())
          : DenseSumOfSquares(x.data<T>(), x.numel());
  ctx.Output("Out")->mutable_data<T>(Shape{1})[0] = static_cast<T>(acc);
}

template <typename T>
void SquaredL2NormGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.numel() == 1, ctx.type(), ": Out@GRAD '",
                ctx.InputName(GradSlot("Out")),
                "' must hold one element, has shape ", dout.shape());
  const T two_g = T(2) * dout.data<T>()[0];
  const T* in = x.data<T>();
  T* d = dx->mutable_data<T>(x.shape());
  ParallelFor(ctx.device(), x.numel(), 1.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) d[i] = two_g * in[i];
  });
}

}  // namespace

REGISTER_OP(squared_l2_norm)
    .Doc("Out = sum of X^2, one element.")
    .Input("X", "input, or sparse rows listed once each")
    .Output("Out", "shape [1]")
    .SetInferShape([](InferShapeContext* ctx) {
      ctx->SetOutputShape("Out", Shape{1});
      ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
    })
    .SetGrad(GradSpec("squared_l2_norm_grad")
                 .Inputs({"X"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(SquaredL2NormKernel<float>)
    .CPUKernel<double>(SquaredL2NormKernel<double>);

REGISTER_GRAD_OP(squared_l2_norm_grad)
    .Doc("dX = 2 * dOut[0] * X.")
    .SetInferShape([](InferShapeContext* ctx) {
      ctx->ShareShape("X", GradSlot("X"));
    })
    .CPUKernel<float>(SquaredL2NormGradKernel<float>)
    .CPUKernel<double>(SquaredL2NormGradKernel<double>);

}  // namespace ops
}  // namespace fluid
