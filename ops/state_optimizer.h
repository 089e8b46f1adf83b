// The per-element optimizers that keep state tensors shaped like Param
// (adagrad, decayed_adagrad, rmsprop, adamax, adadelta): their update rules,
// written once for the CPU kernels (state_optimizer_cpu.h) and the CUDA
// kernels (cuda/state_optimizer.cuh), and the host-side checks both share.
// Free of Eigen so that nvcc can compile it.
//
// Each rule is a functor F with
//   kStates          the number of state tensors, slots F::Slots()[k]; the
//                    outputs are "<slot>Out", normally bound to the inputs;
//   kUsesLr          whether the op reads a LearningRate input;
//   Aux()            the slot of an extra one-element input, or nullptr;
//   Make(ctx)        the functor with the op's attrs;
//   f(lr, aux, p, g, s, &p_out, s_out)   one element: s and s_out hold its
//                    kStates state values; everything is read before any
//                    output is written, so in-place bindings are safe.
// The formulas are Fluid's; where torch.optim differs, the op's doc says how.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// Moment += g^2; ParamOut = Param - lr * g / (sqrt(Moment) + epsilon).
template <typename T>
struct AdagradFunctor {
  static constexpr int kStates = 1;
  static constexpr bool kUsesLr = true;
  static const char* const* Slots() {
    static const char* const s[] = {"Moment"};
    return s;
  }
  static const char* Aux() { return nullptr; }
  static AdagradFunctor Make(const ExecutionContext& ctx) {
    AdagradFunctor f;
    f.eps = static_cast<T>(ctx.Attr<float>("epsilon"));
    return f;
  }
  T eps;
  FLUID_HOSTDEVICE void operator()(double lr, double, T p, T g, const T* s,
                                   T* p_out, T* s_out) const {
    const T m = s[0] + g * g;
    s_out[0] = m;
    *p_out = p - static_cast<T>(lr) * g / (std::sqrt(m) + eps);
  }
};

// Moment = decay * Moment + (1 - decay) * g^2; then as adagrad.
template <typename T>
struct DecayedAdagradFunctor {
  static constexpr int kStates = 1;
  static constexpr bool kUsesLr = true;
  static const char* const* Slots() { return AdagradFunctor<T>::Slots(); }
  static const char* Aux() { return nullptr; }
  static DecayedAdagradFunctor Make(const ExecutionContext& ctx) {
    DecayedAdagradFunctor f;
    f.decay = static_cast<T>(ctx.Attr<float>("decay"));
    f.one_minus_decay = static_cast<T>(1.0 - ctx.Attr<float>("decay"));
    f.eps = static_cast<T>(ctx.Attr<float>("epsilon"));
    return f;
  }
  T decay, one_minus_decay, eps;
  FLUID_HOSTDEVICE void operator()(double lr, double, T p, T g, const T* s,
                                   T* p_out, T* s_out) const {
    const T m = decay * s[0] + one_minus_decay * g * g;
    s_out[0] = m;
    *p_out = p - static_cast<T>(lr) * g / (std::sqrt(m) + eps);
  }
};

// MeanSquare = rho * MeanSquare + (1 - rho) * g^2
// centered: MeanGrad = rho * MeanGrad + (1 - rho) * g,
//           Moment = momentum * Moment
//                    + lr * g / sqrt(MeanSquare - MeanGrad^2 + epsilon)
// else:     Moment = momentum * Moment + lr * g / sqrt(MeanSquare + epsilon)
// ParamOut = Param - Moment
template <typename T>
struct RmspropFunctor {
  static constexpr int kStates = 3;
  static constexpr bool kUsesLr = true;
  static const char* const* Slots() {
    static const char* const s[] = {"Moment", "MeanSquare", "MeanGrad"};
    return s;
  }
  static const char* Aux() { return nullptr; }
  static RmspropFunctor Make(const ExecutionContext& ctx) {
    RmspropFunctor f;
    f.rho = static_cast<T>(ctx.Attr<float>("decay"));
    f.one_minus_rho = static_cast<T>(1.0 - ctx.Attr<float>("decay"));
    f.eps = static_cast<T>(ctx.Attr<float>("epsilon"));
    f.momentum = static_cast<T>(ctx.Attr<float>("momentum"));
    f.centered = ctx.Attr<bool>("centered");
    return f;
  }
  T rho, one_minus_rho, eps, momentum;
  bool centered;
  FLUID_HOSTDEVICE void operator()(double lr, double, T p, T g, const T* s,
                                   T* p_out, T* s_out) const {
    const T ms = rho * s[1] + one_minus_rho * g * g;
    T denom = ms + eps;
    T mg = s[2];
    if (centered) {
      mg = rho * mg + one_minus_rho * g;
      denom -= mg * mg;
    }
    const T mom = momentum * s[0] + static_cast<T>(lr) * g / std::sqrt(denom);
    s_out[0] = mom;
    s_out[1] = ms;
    s_out[2] = mg;
    *p_out = p - mom;
  }
};

// Moment = beta1 * Moment + (1 - beta1) * g
// InfNorm = max(beta2 * InfNorm + epsilon, |g|)
// ParamOut = Param - lr / (1 - Beta1Pow) * Moment / InfNorm
// Beta1Pow (beta1^t at step t) is advanced by a scale op after the update.
template <typename T>
struct AdamaxFunctor {
  static constexpr int kStates = 2;
  static constexpr bool kUsesLr = true;
  static const char* const* Slots() {
    static const char* const s[] = {"Moment", "InfNorm"};
    return s;
  }
  static const char* Aux() { return "Beta1Pow"; }
  static AdamaxFunctor Make(const ExecutionContext& ctx) {
    AdamaxFunctor f;
    f.b1 = static_cast<T>(ctx.Attr<float>("beta1"));
    f.one_minus_b1 = static_cast<T>(1.0 - ctx.Attr<float>("beta1"));
    f.b2 = static_cast<T>(ctx.Attr<float>("beta2"));
    f.eps = static_cast<T>(ctx.Attr<float>("epsilon"));
    return f;
  }
  T b1, one_minus_b1, b2, eps;
  FLUID_HOSTDEVICE void operator()(double lr, double beta1_pow, T p, T g,
                                   const T* s, T* p_out, T* s_out) const {
    const T m = b1 * s[0] + one_minus_b1 * g;
    const T decayed = b2 * s[1] + eps;
    const T abs_g = g < T(0) ? -g : g;
    const T inf = decayed > abs_g ? decayed : abs_g;
    s_out[0] = m;
    s_out[1] = inf;
    *p_out = p - static_cast<T>(lr / (1.0 - beta1_pow)) * m / inf;
  }
};

// AvgSquaredGrad = rho * AvgSquaredGrad + (1 - rho) * g^2
// update = -sqrt((AvgSquaredUpdate + epsilon) / (AvgSquaredGrad + epsilon)) * g
// AvgSquaredUpdate = rho * AvgSquaredUpdate + (1 - rho) * update^2
// ParamOut = Param + update    (no learning rate, as in Fluid)
template <typename T>
struct AdadeltaFunctor {
  static constexpr int kStates = 2;
  static constexpr bool kUsesLr = false;
  static const char* const* Slots() {
    static const char* const s[] = {"AvgSquaredGrad", "AvgSquaredUpdate"};
    return s;
  }
  static const char* Aux() { return nullptr; }
  static AdadeltaFunctor Make(const ExecutionContext& ctx) {
    AdadeltaFunctor f;
    f.rho = static_cast<T>(ctx.Attr<float>("rho"));
    f.one_minus_rho = static_cast<T>(1.0 - ctx.Attr<float>("rho"));
    f.eps = static_cast<T>(ctx.Attr<float>("epsilon"));
    return f;
  }
  T rho, one_minus_rho, eps;
  FLUID_HOSTDEVICE void operator()(double, double, T p, T g, const T* s,
                                   T* p_out, T* s_out) const {
    const T sg = rho * s[0] + one_minus_rho * g * g;
    const T update = -std::sqrt((s[1] + eps) / (sg + eps)) * g;
    s_out[0] = sg;
    s_out[1] = rho * s[1] + one_minus_rho * update * update;
    *p_out = p + update;
  }
};

// Param, Grad and the state tensors of a state optimizer, checked to hold
// one element count (the error names the op and the slots).
struct StateOptimizerInputs {
  const Tensor* param;
  const Tensor* grad;
  std::vector<const Tensor*> states;
};
StateOptimizerInputs ReadStateOptimizerInputs(const ExecutionContext& ctx,
                                              const char* const* slots,
                                              int num_states);

// Shape inference: Grad and the states shaped and typed like Param, the
// learning rate and `aux` (if any) one element; outputs like their inputs.
void StateOptimizerInferShape(InferShapeContext* ctx, const char* const* slots,
                              int num_states, bool uses_lr, const char* aux);

}  // namespace ops
}  // namespace fluid
