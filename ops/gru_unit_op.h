// gru_unit: one GRU step on dense rows, as Fluid's op computes it: the step
// of ops/gru_op.h with h_prev = HiddenPrev for every row. Input [N, 3D] is
// the projected gate input, Weight [D, 3D] in gru's memory layout, Bias
// [1, 3D] optional; Gate (the activations u, r, c), ResetHiddenPrev
// (r * h_prev) and Hidden out. The activations are attrs of Fluid's
// numbering: 0 identity, 1 sigmoid, 2 tanh, 3 relu. Written once for both
// places.
#pragma once

#include "ops/gru_op.h"

namespace fluid {
namespace ops {

// Fluid's activation number `value` of attr `attr`; others are an error.
RecurrentAct GruUnitAct(const ExecutionContext& ctx, const char* attr);

template <typename T>
GruCell<T> ReadGruUnitCell(const ExecutionContext& ctx) {
  return GruCell<T>{ctx.Input("Weight").data<T>(),
                    ctx.Input("HiddenPrev").shape()[1],
                    GruActs{GruUnitAct(ctx, "gate_activation"),
                            GruUnitAct(ctx, "activation")},
                    ctx.Attr<bool>("origin_mode")};
}

template <typename T>
const T* BiasOrNull(const ExecutionContext& ctx) {
  return ctx.HasInput("Bias") ? ctx.Input("Bias").data<T>() : nullptr;
}

template <typename T, typename Device>
void GruUnitForward(const Device& dev) {
  const ExecutionContext& ctx = dev.ctx();
  const GruCell<T> cell = ReadGruUnitCell<T>(ctx);
  const Tensor& h_prev = ctx.Input("HiddenPrev");
  const int64_t n = h_prev.shape()[0], w = cell.width;
  T* gate = dev.template Out<T>("Gate");
  T* reset_h = dev.template Out<T>("ResetHiddenPrev");
  T* hidden = dev.template Out<T>("Hidden");
  if (n == 0) return;
  T* tmp = dev.template Scratch<T>(2 * n * w);
  dev.ForEach(n * 3 * w, AddRowBias<T>{ctx.Input("Input").data<T>(),
                                       BiasOrNull<T>(ctx), gate, 3 * w});
  GruStepForward(dev, cell, n, gate, h_prev.data<T>(), reset_h, hidden, tmp);
}

template <typename T, typename Device>
void GruUnitBackward(const Device& dev) {
  const ExecutionContext& ctx = dev.ctx();
  const GruCell<T> cell = ReadGruUnitCell<T>(ctx);
  const Tensor& h_prev = ctx.Input("HiddenPrev");
  const int64_t n = h_prev.shape()[0], w = cell.width;
  T* dx = dev.template Out<T>(GradSlot("Input"));
  T* dw = dev.template Out<T>(GradSlot("Weight"));
  T* dbias =
      ctx.HasInput("Bias") ? dev.template Out<T>(GradSlot("Bias")) : nullptr;
  T* dh_prev = dev.template Out<T>(GradSlot("HiddenPrev"));
  if (dw) dev.Zero(dw, 3 * w * w);
  T* dur = dev.template Scratch<T>((dh_prev ? 4 : 5) * n * w);
  T *dcand = dur + 2 * n * w, *tmp = dcand + n * w;
  if (!dh_prev) dh_prev = tmp + n * w;
  dev.Zero(dh_prev, n * w);
  GruStepBackward(dev, cell, n, ctx.Input("Gate").data<T>(), h_prev.data<T>(),
                  ctx.Input(GradSlot("Hidden")).data<T>(), dur, dcand, dh_prev,
                  dw, tmp);
  if (dw)
    dev.Gemm(true, false, w, w, n, T(1), ctx.Input("ResetHiddenPrev").data<T>(),
             dcand, T(0), dw + 2 * w * w);
  if (dx) dev.ForEach(n * 3 * w, GruGateGrad<T>{dur, dcand, nullptr, dx, w});
  if (dbias) dev.ForEach(3 * w, GruBiasGrad<T>{dur, dcand, dbias, n, w});
}

}  // namespace ops
}  // namespace fluid
