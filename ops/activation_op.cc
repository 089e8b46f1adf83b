// Elementwise activations: relu, sigmoid, tanh. Each gradient is computed
// from Out rather than X (relu: Out > 0 exactly where X > 0), so the
// backward pass does not need X kept alive.
#include "ops/grad_checks.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

void CheckOutGradLikeOut(const ExecutionContext& ctx, const Tensor& out,
                         const Tensor& dout) {
  FLUID_ENFORCE(dout.shape() == out.shape(), ctx.type(), ": Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                " differs from Out '", ctx.InputName("Out"), "' ", out.shape());
}

namespace {

struct Relu {
  template <typename X>
  auto operator()(const X& x) const {
    return x.cwiseMax(static_cast<typename X::Scalar>(0));
  }
  // dX = dOut where Out > 0, else 0.
  template <typename O, typename G>
  auto Grad(const O& out, const G& dout) const {
    using T = typename O::Scalar;
    return (out > static_cast<T>(0)).select(dout, dout.constant(T(0)));
  }
};

struct Sigmoid {
  template <typename X>
  auto operator()(const X& x) const {
    return x.sigmoid();
  }
  // dX = dOut * Out * (1 - Out).
  template <typename O, typename G>
  auto Grad(const O& out, const G& dout) const {
    using T = typename O::Scalar;
    return dout * out * (static_cast<T>(1) - out);
  }
};

struct Tanh {
  template <typename X>
  auto operator()(const X& x) const {
    return x.tanh();
  }
  // dX = dOut * (1 - Out^2).
  template <typename O, typename G>
  auto Grad(const O& out, const G& dout) const {
    using T = typename O::Scalar;
    return dout * (static_cast<T>(1) - out * out);
  }
};

void ActivationInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", "Out");
}

void ActivationGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("Out", GradSlot("X"));
}

template <typename T, typename F>
void ActivationKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  out->mutable_data<T>();
  Assign(ctx.device(), Vec<T>(out), F()(Vec<T>(x)));
}

template <typename T, typename F>
void ActivationGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& out = ctx.Input("Out");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  CheckOutGradLikeOut(ctx, out, dout);
  dx->mutable_data<T>();
  Assign(ctx.device(), Vec<T>(dx), F().Grad(Vec<T>(out), Vec<T>(dout)));
}

}  // namespace

REGISTER_OP(relu)
    .Doc("Out = max(X, 0).")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .SetInferShape(ActivationInferShape)
    .SetGrad(
        GradSpec("relu_grad").Outputs({"Out"}).OutGrads({"Out"}).InGrads({"X"}))
    .CPUKernel<float>(ActivationKernel<float, Relu>)
    .CPUKernel<double>(ActivationKernel<double, Relu>);

REGISTER_GRAD_OP(relu_grad)
    .Doc("dX = dOut where Out > 0, else 0.")
    .SetInferShape(ActivationGradInferShape)
    .CPUKernel<float>(ActivationGradKernel<float, Relu>)
    .CPUKernel<double>(ActivationGradKernel<double, Relu>);

REGISTER_OP(sigmoid)
    .Doc("Out = 1 / (1 + exp(-X)).")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .SetInferShape(ActivationInferShape)
    .SetGrad(GradSpec("sigmoid_grad")
                 .Outputs({"Out"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(ActivationKernel<float, Sigmoid>)
    .CPUKernel<double>(ActivationKernel<double, Sigmoid>);

REGISTER_GRAD_OP(sigmoid_grad)
    .Doc("dX = dOut * Out * (1 - Out).")
    .SetInferShape(ActivationGradInferShape)
    .CPUKernel<float>(ActivationGradKernel<float, Sigmoid>)
    .CPUKernel<double>(ActivationGradKernel<double, Sigmoid>);

REGISTER_OP(tanh)
    .Doc("Out = tanh(X).")
    .Input("X", "input")
    .Output("Out", "the activation of X, same shape")
    .SetInferShape(ActivationInferShape)
    .SetGrad(
        GradSpec("tanh_grad").Outputs({"Out"}).OutGrads({"Out"}).InGrads({"X"}))
    .CPUKernel<float>(ActivationKernel<float, Tanh>)
    .CPUKernel<double>(ActivationKernel<double, Tanh>);

REGISTER_GRAD_OP(tanh_grad)
    .Doc("dX = dOut * (1 - Out^2).")
    .SetInferShape(ActivationGradInferShape)
    .CPUKernel<float>(ActivationGradKernel<float, Tanh>)
    .CPUKernel<double>(ActivationGradKernel<double, Tanh>);

}  // namespace ops
}  // namespace fluid
