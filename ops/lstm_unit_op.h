// lstm_unit: one LSTM step on dense rows, as Fluid's op computes it. X
// [N, 4D] holds the gate pre-activations in the blocks {i, f, o, j} (the fc
// of [x_t, h_prev] the layer builds):
//   i = sigmoid(x_i)   f = sigmoid(x_f + forget_bias)   o = sigmoid(x_o)
//   j = tanh(x_j)      C = f * C_prev + i * j           H = o * tanh(C)
// Written once for both places; the gradient recomputes the gates from X.
#pragma once

#include "ops/recurrent_helpers.h"
#include "src/framework/grad_op_maker.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

template <typename T>
struct LstmUnitGates {
  T i, f, o, j;
  FLUID_HOSTDEVICE LstmUnitGates(const T* x, int64_t w, T forget_bias)
      : i(SigmoidFunctor::Forward(x[0])),
        f(SigmoidFunctor::Forward(x[w] + forget_bias)),
        o(SigmoidFunctor::Forward(x[2 * w])),
        j(TanhFunctor::Forward(x[3 * w])) {}
};

template <typename T>
struct LstmUnitStep {
  const T* x;
  const T* c_prev;
  T* c;
  T* h;
  int64_t width;
  T forget_bias;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t k = e / width, d = e % width;
    const LstmUnitGates<T> g(x + k * 4 * width + d, width, forget_bias);
    c[e] = g.f * c_prev[e] + g.i * g.j;
    h[e] = g.o * TanhFunctor::Forward(c[e]);
  }
};

// dX and dC_prev from dC and dH (either null: zeros); dx or dc_prev may be
// null when not wanted.
template <typename T>
struct LstmUnitGradStep {
  const T* x;
  const T* c_prev;
  const T* c;
  const T* dc;
  const T* dh;
  T* dx;
  T* dc_prev;
  int64_t width;
  T forget_bias;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t k = e / width, d = e % width, w = width;
    const LstmUnitGates<T> g(x + k * 4 * w + d, w, forget_bias);
    const T tc = TanhFunctor::Forward(c[e]);
    const T dhv = dh != nullptr ? dh[e] : T(0);
    const T dct =
        (dc != nullptr ? dc[e] : T(0)) + TanhFunctor::Backward(tc, dhv * g.o);
    if (dx != nullptr) {
      T* p = dx + k * 4 * w + d;
      p[0] = SigmoidFunctor::Backward(g.i, dct * g.j);
      p[w] = SigmoidFunctor::Backward(g.f, dct * c_prev[e]);
      p[2 * w] = SigmoidFunctor::Backward(g.o, dhv * tc);
      p[3 * w] = TanhFunctor::Backward(g.j, dct * g.i);
    }
    if (dc_prev != nullptr) dc_prev[e] = dct * g.f;
  }
};

template <typename T, typename Device>
void LstmUnitForward(const Device& dev) {
  const ExecutionContext& ctx = dev.ctx();
  const Tensor& c_prev = ctx.Input("C_prev");
  const int64_t w = c_prev.shape()[1];
  dev.ForEach(
      c_prev.numel(),
      LstmUnitStep<T>{ctx.Input("X").data<T>(), c_prev.data<T>(),
                      dev.template Out<T>("C"), dev.template Out<T>("H"), w,
                      static_cast<T>(ctx.Attr<float>("forget_bias"))});
}

template <typename T, typename Device>
void LstmUnitBackward(const Device& dev) {
  const ExecutionContext& ctx = dev.ctx();
  const Tensor& c_prev = ctx.Input("C_prev");
  auto grad = [&ctx](const char* slot) {
    return ctx.HasInput(GradSlot(slot)) ? ctx.Input(GradSlot(slot)).data<T>()
                                        : nullptr;
  };
  dev.ForEach(
      c_prev.numel(),
      LstmUnitGradStep<T>{
          ctx.Input("X").data<T>(), c_prev.data<T>(), ctx.Input("C").data<T>(),
          grad("C"), grad("H"), dev.template Out<T>(GradSlot("X")),
          dev.template Out<T>(GradSlot("C_prev")), c_prev.shape()[1],
          static_cast<T>(ctx.Attr<float>("forget_bias"))});
}

}  // namespace ops
}  // namespace fluid
