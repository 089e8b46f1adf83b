// adam: torch.optim.Adam (decoupled_weight_decay = false) and torch.optim.AdamW
// (decoupled_weight_decay = true), without amsgrad, following torch's
// arithmetic:
//
//   Adam:  g = Grad + weight_decay * Param
//   AdamW: Param *= 1 - lr * weight_decay;  g = Grad
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   denom = sqrt(v) / sqrt(1 - beta2^t) + epsilon
//   ParamOut = Param - (lr / (1 - beta1^t)) * m / denom
//
// Beta1Pow and Beta2Pow hold beta1^t and beta2^t for the current step t (the
// startup program fills them with beta1 and beta2, i.e. t = 1); the op writes
// Beta1Pow * beta1 and Beta2Pow * beta2 for the next step. The step scalars
// (bias corrections, step size) are computed in double, as torch computes them
// in Python floats. Every *Out is normally bound to its input (in place); each
// element is read before it is written, so either binding gives the same
// result.
//
// A sparse Grad (SelectedRows, ops/sparse_grad.h): with lazy_mode (Fluid's
// attr) only the rows it touches are updated, their moments included, so a
// row's moments decay only on the steps that use it; without it every row
// is updated, with a zero gradient where the sparse one has no row, which
// is exactly the dense update (moments decay everywhere, and a row moves by
// its remaining momentum even on steps that do not use it).
#include "ops/adam_op.h"

#include <algorithm>
#include <cmath>

#include "ops/op_helpers.h"
#include "ops/optimizer_functors.h"
#include "ops/sparse_grad.h"

namespace fluid {
namespace ops {

AdamAttrs ReadAdamAttrs(const ExecutionContext& ctx) {
  return {ctx.Attr<float>("beta1"), ctx.Attr<float>("beta2"),
          ctx.Attr<float>("epsilon"), ctx.Attr<float>("weight_decay"),
          ctx.Attr<bool>("decoupled_weight_decay")};
}

AdamInputs GetAdamInputs(const ExecutionContext& ctx) {
  const Tensor& param = ctx.Input("Param");
  const Tensor& grad = ctx.Input("Grad");
  const Tensor& moment1 = ctx.Input("Moment1");
  const Tensor& moment2 = ctx.Input("Moment2");
  const int64_t n = param.numel();
  FLUID_ENFORCE(
      grad.numel() == n && moment1.numel() == n && moment2.numel() == n,
      "adam: Param '", ctx.InputName("Param"), "' ", param.shape(), ", Grad '",
      ctx.InputName("Grad"), "' ", grad.shape(), ", Moment1 '",
      ctx.InputName("Moment1"), "' ", moment1.shape(), " and Moment2 '",
      ctx.InputName("Moment2"), "' ", moment2.shape(),
      " must have the same shape");
  return {param, grad, moment1, moment2};
}

namespace {

// Writes a one-element output in the dtype of the input it replaces.
void WriteScalar(const ExecutionContext& ctx, const std::string& slot,
                 const Tensor& like, double value) {
  Tensor* t = ctx.Output(slot);
  t->Resize(like.shape());
  if (like.dtype() == DataType::kFloat64) {
    t->mutable_data<double>()[0] = value;
  } else {
    t->mutable_data<float>()[0] = static_cast<float>(value);
  }
}

void CheckScalar(InferShapeContext* ctx, const std::string& slot) {
  Shape s = ctx->GetInputShape(slot);
  FLUID_ENFORCE(s.numel() < 0 || s.numel() == 1, "adam: ", slot, " '",
                ctx->InputName(slot), "' must hold one element, has shape ", s);
  DataType t = ctx->GetInputDtype(slot);
  FLUID_ENFORCE(t == DataType::kFloat32 || t == DataType::kFloat64,
                "adam: ", slot, " '", ctx->InputName(slot),
                "' must be float32 or float64, is ", DataTypeName(t));
}

void AdamInferShape(InferShapeContext* ctx) {
  CheckLikeParam(ctx, "Grad");
  CheckLikeParam(ctx, "Moment1");
  CheckLikeParam(ctx, "Moment2");
  CheckScalar(ctx, "LearningRate");
  CheckScalar(ctx, "Beta1Pow");
  CheckScalar(ctx, "Beta2Pow");
  ctx->ShareShape("Param", "ParamOut");
  ctx->ShareShape("Moment1", "Moment1Out");
  ctx->ShareShape("Moment2", "Moment2Out");
  ctx->ShareShape("Beta1Pow", "Beta1PowOut");
  ctx->ShareShape("Beta2Pow", "Beta2PowOut");
}

template <typename T>
void DenseAdam(const ExecutionContext& ctx, const AdamFunctor<T>& f) {
  const auto& [param, grad, moment1, moment2] = GetAdamInputs(ctx);
  const T* p = param.data<T>();
  const T* g = grad.data<T>();
  const T* m1 = moment1.data<T>();
  const T* m2 = moment2.data<T>();
  T* p_out = ctx.Output("ParamOut")->mutable_data<T>(param.shape());
  T* m1_out = ctx.Output("Moment1Out")->mutable_data<T>(moment1.shape());
  T* m2_out = ctx.Output("Moment2Out")->mutable_data<T>(moment2.shape());
  // Blocks of kBlock elements copied into local arrays and updated there:
  // the outputs may be the inputs (in place), so the compiler would not
  // vectorise the update on the tensors themselves, and a square root and
  // two divisions an element, one at a time, made adam the slowest
  // optimizer per element. The values are the scalar loop's.
  constexpr int64_t kBlock = 16;
  ParallelFor(ctx.device(), param.numel(), 16.0, [&](int64_t b, int64_t e) {
    int64_t i = b;
    for (; i + kBlock <= e; i += kBlock) {
      T pb[kBlock], gb[kBlock], ab[kBlock], vb[kBlock];
      std::copy_n(p + i, kBlock, pb);
      std::copy_n(g + i, kBlock, gb);
      std::copy_n(m1 + i, kBlock, ab);
      std::copy_n(m2 + i, kBlock, vb);
      for (int64_t j = 0; j < kBlock; ++j)
        f(pb[j], gb[j], ab[j], vb[j], &pb[j], &ab[j], &vb[j]);
      std::copy_n(pb, kBlock, p_out + i);
      std::copy_n(ab, kBlock, m1_out + i);
      std::copy_n(vb, kBlock, m2_out + i);
    }
    for (; i < e; ++i)
      f(p[i], g[i], m1[i], m2[i], &p_out[i], &m1_out[i], &m2_out[i]);
  });
}

template <typename T>
void SparseAdam(const ExecutionContext& ctx, const AdamFunctor<T>& f) {
  MergedGrad<T>& m = ThreadMergedGrad<T>();
  MergeSparseGrad(ctx, &m);
  FLUID_ENFORCE(ctx.Input("Moment1").numel() == ctx.Input("Param").numel() &&
                    ctx.Input("Moment2").numel() == ctx.Input("Param").numel(),
                "adam: Moment1 '", ctx.InputName("Moment1"), "' and Moment2 '",
                ctx.InputName("Moment2"), "' must be shaped like Param '",
                ctx.InputName("Param"), "'");
  T* p = UpdatedInPlace<T>(ctx, "Param", "ParamOut");
  T* m1 = UpdatedInPlace<T>(ctx, "Moment1", "Moment1Out");
  T* m2 = UpdatedInPlace<T>(ctx, "Moment2", "Moment2Out");
  ForEachSparseElement(m, ctx.Attr<bool>("lazy_mode"), [&](int64_t i, T g) {
    f(p[i], g, m1[i], m2[i], &p[i], &m1[i], &m2[i]);
  });
}

template <typename T>
void AdamKernel(const ExecutionContext& ctx) {
  const double lr = ReadScalar(ctx, "LearningRate");
  const double beta1_pow = ReadScalar(ctx, "Beta1Pow");
  const double beta2_pow = ReadScalar(ctx, "Beta2Pow");
  const AdamAttrs a = ReadAdamAttrs(ctx);
  FLUID_ENFORCE(beta1_pow < 1.0 && beta2_pow < 1.0, "adam: Beta1Pow '",
                ctx.InputName("Beta1Pow"), "' = ", beta1_pow, " and Beta2Pow '",
                ctx.InputName("Beta2Pow"), "' = ", beta2_pow,
                " must be below 1 (beta^t for step t >= 1)");
  const AdamFunctor<T> f =
      AdamFunctor<T>::Make(lr, beta1_pow, beta2_pow, a.beta1, a.beta2,
                           a.epsilon, a.weight_decay, a.decoupled);
  if (HasSparseGrad(ctx)) {
    SparseAdam<T>(ctx, f);
  } else {
    DenseAdam<T>(ctx, f);
  }
  WriteScalar(ctx, "Beta1PowOut", ctx.Input("Beta1Pow"), beta1_pow * a.beta1);
  WriteScalar(ctx, "Beta2PowOut", ctx.Input("Beta2Pow"), beta2_pow * a.beta2);
}

}  // namespace

REGISTER_OP(adam)
    .Doc(
        "Adam / AdamW as in torch.optim, with bias correction from the "
        "running powers Beta1Pow and Beta2Pow.")
    .Input("Param", "the parameter")
    .Input("Grad", "its gradient, shaped like Param (dense or sparse rows)")
    .Input("LearningRate", "a one-element float32 or float64 tensor")
    .Input("Moment1", "first moment, shaped like Param; starts at 0")
    .Input("Moment2", "second moment, shaped like Param; starts at 0")
    .Input("Beta1Pow", "beta1^t for this step t; starts at beta1")
    .Input("Beta2Pow", "beta2^t for this step t; starts at beta2")
    .Output("ParamOut", "the updated parameter; normally Param itself")
    .Output("Moment1Out", "normally Moment1 itself")
    .Output("Moment2Out", "normally Moment2 itself")
    .Output("Beta1PowOut", "Beta1Pow * beta1; normally Beta1Pow itself")
    .Output("Beta2PowOut", "Beta2Pow * beta2; normally Beta2Pow itself")
    .Attr<float>("beta1", 0.9f, "decay of the first moment")
    .InRange(0, 1)
    .Attr<float>("beta2", 0.999f, "decay of the second moment")
    .InRange(0, 1)
    .Attr<float>("epsilon", 1e-8f, "added to the denominator")
    .InRange(0, kNoUpperBound)
    .Attr<float>("weight_decay", 0.0f, "weight decay factor")
    .InRange(0, kNoUpperBound)
    .Attr<bool>("lazy_mode", false,
                "with a sparse Grad: update only the rows it touches")
    .Attr<bool>("decoupled_weight_decay", false,
                "false: L2 added to the gradient (torch Adam); true: the "
                "parameter shrinks by lr * weight_decay first (AdamW)")
    .SetInferShape(AdamInferShape)
    .CPUKernel<float>(AdamKernel<float>)
    .CPUKernel<double>(AdamKernel<double>);

}  // namespace ops
}  // namespace fluid
