// lstm_unit: one LSTM step on dense rows, as Fluid's op computes it. X
// [N, 4D] holds the gate pre-activations in the blocks {i, f, o, j} (the fc
// of [x_t, h_prev] the layer builds):
//   i = sigmoid(x_i)   f = sigmoid(x_f + forget_bias)   o = sigmoid(x_o)
//   j = tanh(x_j)      C = f * C_prev + i * j           H = o * tanh(C)
// Written once for both places; the gradient recomputes the gates from X.
//
// For 16-bit X (bfloat16, float16) the step computes in float32 (C below is
// ComputeType<T>): X, H and their gradients are T, while the cell state
// C_prev and C, carried from step to step, and their gradients stay
// float32, as lstm keeps its cell state. Each 16-bit output is rounded
// once.
#pragma once

#include "ops/recurrent_helpers.h"
#include "src/framework/grad_op_maker.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// The gates of one element, in C, from its four pre-activations in X (of
// type T) `w` apart.
template <typename C>
struct LstmUnitGates {
  C i, f, o, j;
  template <typename T>
  FLUID_HOSTDEVICE LstmUnitGates(const T* x, int64_t w, C forget_bias)
      : i(SigmoidFunctor::Forward(Convert<C>(x[0]))),
        f(SigmoidFunctor::Forward(Convert<C>(x[w]) + forget_bias)),
        o(SigmoidFunctor::Forward(Convert<C>(x[2 * w]))),
        j(TanhFunctor::Forward(Convert<C>(x[3 * w]))) {}
};

// X and H of type T; the cell states, and the arithmetic, in C.
template <typename T, typename C = T>
struct LstmUnitStep {
  const T* x;
  const C* c_prev;
  C* c;
  T* h;
  int64_t width;
  C forget_bias;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t k = e / width, d = e % width;
    const LstmUnitGates<C> g(x + k * 4 * width + d, width, forget_bias);
    const C cell = g.f * c_prev[e] + g.i * g.j;
    c[e] = cell;
    h[e] = Convert<T>(g.o * TanhFunctor::Forward(cell));
  }
};

// dX and dC_prev from dC and dH (either null: zeros); dx or dc_prev may be
// null when not wanted. Types as in LstmUnitStep: dX and dH are T, dC and
// dC_prev are C.
template <typename T, typename C = T>
struct LstmUnitGradStep {
  const T* x;
  const C* c_prev;
  const C* c;
  const C* dc;
  const T* dh;
  T* dx;
  C* dc_prev;
  int64_t width;
  C forget_bias;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t k = e / width, d = e % width, w = width;
    const LstmUnitGates<C> g(x + k * 4 * w + d, w, forget_bias);
    const C tc = TanhFunctor::Forward(c[e]);
    const C dhv = dh != nullptr ? Convert<C>(dh[e]) : C(0);
    const C dct =
        (dc != nullptr ? dc[e] : C(0)) + TanhFunctor::Backward(tc, dhv * g.o);
    if (dx != nullptr) {
      T* p = dx + k * 4 * w + d;
      p[0] = Convert<T>(SigmoidFunctor::Backward(g.i, dct * g.j));
      p[w] = Convert<T>(SigmoidFunctor::Backward(g.f, dct * c_prev[e]));
      p[2 * w] = Convert<T>(SigmoidFunctor::Backward(g.o, dhv * tc));
      p[3 * w] = Convert<T>(TanhFunctor::Backward(g.j, dct * g.i));
    }
    if (dc_prev != nullptr) dc_prev[e] = dct * g.f;
  }
};

template <typename T, typename Device>
void LstmUnitForward(const Device& dev) {
  using C = ComputeType<T>;
  const ExecutionContext& ctx = dev.ctx();
  const Tensor& c_prev = ctx.Input("C_prev");
  const int64_t w = c_prev.shape()[1];
  dev.ForEach(
      c_prev.numel(),
      LstmUnitStep<T, C>{ctx.Input("X").data<T>(), c_prev.data<C>(),
                         dev.template Out<C>("C"), dev.template Out<T>("H"), w,
                         static_cast<C>(ctx.Attr<float>("forget_bias"))});
}

// The gradient of output `slot` as U, or null when the grad op is not fed
// it.
template <typename U>
const U* LstmUnitOutGrad(const ExecutionContext& ctx, const char* slot) {
  return ctx.HasInput(GradSlot(slot)) ? ctx.Input(GradSlot(slot)).data<U>()
                                      : nullptr;
}

template <typename T, typename Device>
void LstmUnitBackward(const Device& dev) {
  using C = ComputeType<T>;
  const ExecutionContext& ctx = dev.ctx();
  const Tensor& c_prev = ctx.Input("C_prev");
  dev.ForEach(
      c_prev.numel(),
      LstmUnitGradStep<T, C>{
          ctx.Input("X").data<T>(), c_prev.data<C>(), ctx.Input("C").data<C>(),
          LstmUnitOutGrad<C>(ctx, "C"), LstmUnitOutGrad<T>(ctx, "H"),
          dev.template Out<T>(GradSlot("X")),
          dev.template Out<C>(GradSlot("C_prev")), c_prev.shape()[1],
          static_cast<C>(ctx.Attr<float>("forget_bias"))});
}

}  // namespace ops
}  // namespace fluid
