// Shared helpers for CPU kernels: Eigen views of tensors, evaluation on the
// executor's thread pool, and a parallel loop.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>

#include "src/framework/cpu_team.h"
#include "src/framework/grad_op_maker.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

template <typename T>
using EigenVec = Eigen::TensorMap<Eigen::Tensor<T, 1, Eigen::RowMajor>>;
template <typename T>
using ConstEigenVec =
    Eigen::TensorMap<Eigen::Tensor<const T, 1, Eigen::RowMajor>>;
template <typename T>
using EigenMat = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor>>;
template <typename T>
using ConstEigenMat =
    Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor>>;
template <typename T>
using RowMatrix =
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <typename T>
EigenVec<T> Vec(Tensor* t) {
  return EigenVec<T>(t->data<T>(), t->numel());
}
template <typename T>
ConstEigenVec<T> Vec(const Tensor& t) {
  return ConstEigenVec<T>(t.data<T>(), t.numel());
}
// Views t as [rows, numel / rows] where rows = product of dims [0, axis).
template <typename T>
EigenMat<T> Mat(Tensor* t, int axis) {
  return EigenMat<T>(t->data<T>(), t->shape().Product(0, axis),
                     t->shape().Product(axis, t->shape().rank()));
}
template <typename T>
ConstEigenMat<T> Mat(const Tensor& t, int axis) {
  return ConstEigenMat<T>(t.data<T>(), t.shape().Product(0, axis),
                          t.shape().Product(axis, t.shape().rank()));
}

// Elementwise work below this many elements runs inline: waking the pool
// costs more than it saves. (64K: resnet's 7x7 stage, 200K elements a
// tensor, gains from the second thread; the mlp's 32K-element activations
// stay inline.)
constexpr int64_t kParallelElements = 1 << 16;

// out = expr for a one-dimensional `out` (a Vec), in chunks on the
// context's threads (RunOnTeam) when there are several and it is large.
template <typename Out, typename Expr>
void Assign(const CPUDeviceContext& dev, Out out, const Expr& expr) {
  const int64_t n = out.size();
  if (dev.num_threads() == 1 || n < kParallelElements) {
    out = expr;
    return;
  }
  RunOnTeam(dev, n, kParallelElements, [&](int64_t b, int64_t e) {
    const Eigen::array<Eigen::Index, 1> at{b}, len{e - b};
    out.slice(at, len) = expr.slice(at, len);
  });
}

// Calls fn(begin, end) over [0, n) in chunks, on the context's threads
// (RunOnTeam) when worthwhile. `cost` is a rough count of operations per
// item.
template <typename Fn>
void ParallelFor(const CPUDeviceContext& dev, int64_t n, double cost, Fn fn) {
  if (n <= 0) return;
  if (dev.num_threads() == 1 || n * cost < kParallelElements) {
    fn(int64_t{0}, n);
    return;
  }
  // Chunks of at least kParallelElements operations (see cpu_team.h).
  const int64_t grain =
      static_cast<int64_t>(static_cast<double>(kParallelElements) / cost) + 1;
  RunOnTeam(dev, n, grain, fn);
}

// The one element of a scalar input (a learning rate, a beta power), stored
// as float32 or float64 whatever the kernel's dtype.
inline double ReadScalar(const ExecutionContext& ctx, const std::string& slot) {
  const Tensor& t = ctx.Input(slot);
  FLUID_ENFORCE(t.numel() == 1, slot, " '", ctx.InputName(slot),
                "' must hold one element, has shape ", t.shape());
  switch (t.dtype()) {
    case DataType::kFloat32:
      return t.data<float>()[0];
    case DataType::kFloat64:
      return t.data<double>()[0];
    default:
      FLUID_THROW(ErrorCode::kInvalidArgument, slot, " '", ctx.InputName(slot),
                  "' must be float32 or float64, is ", DataTypeName(t.dtype()));
  }
}

// Shape inference of optimizer ops: `slot` must be shaped and typed like
// Param; an error names the op, the slot and both vars.
inline void CheckLikeParam(InferShapeContext* ctx, const std::string& slot) {
  Shape p = ctx->GetInputShape("Param");
  Shape s = ctx->GetInputShape(slot);
  FLUID_ENFORCE(ShapesCompatible(p, s), ctx->op_type(), ": ", slot, " '",
                ctx->InputName(slot), "' has shape ", s, " but Param '",
                ctx->InputName("Param"), "' has shape ", p);
  FLUID_ENFORCE(ctx->GetInputDtype(slot) == ctx->GetInputDtype("Param"),
                ctx->op_type(), ": ", slot, " '", ctx->InputName(slot), "' is ",
                DataTypeName(ctx->GetInputDtype(slot)), " but Param '",
                ctx->InputName("Param"), "' is ",
                DataTypeName(ctx->GetInputDtype("Param")));
}

// ... and `slot` must hold one element (a learning rate, a beta power).
inline void CheckOneElement(InferShapeContext* ctx, const std::string& slot) {
  const int64_t n = ctx->GetInputShape(slot).numel();
  FLUID_ENFORCE(n < 0 || n == 1, ctx->op_type(), ": ", slot, " '",
                ctx->InputName(slot), "' must hold one element, has shape ",
                ctx->GetInputShape(slot));
}

}  // namespace ops
}  // namespace fluid
