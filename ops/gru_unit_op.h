// gru_unit: one GRU step on dense rows, as Fluid's op computes it: the step
// of ops/gru_op.h with h_prev = HiddenPrev for every row. Input [N, 3D] is
// the projected gate input, Weight [D, 3D] in gru's memory layout, Bias
// [1, 3D] optional; Gate (the activations u, r, c), ResetHiddenPrev
// (r * h_prev) and Hidden out. The activations are attrs of Fluid's
// numbering: 0 identity, 1 sigmoid, 2 tanh, 3 relu. Written once for both
// places.
//
// For 16-bit Input (bfloat16, float16) the step computes in float32, as
// gru's does (C below is ComputeType<T>): Input, Weight, their gradients
// and ResetHiddenPrev (the second GEMM's operand) are T; the hidden state
// carried from step to step (HiddenPrev, Hidden), the gate activations
// (Gate) and Bias, and their gradients, are float32. The
// GEMMs multiply T operands (HiddenPrev rounded to T, r * h_prev, and
// backward the gate gradients rounded to T) with float32 sums; each
// block of the weight's gradient is one GEMM rounded once.
#pragma once

#include <type_traits>

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

// gate = Input (T) plus the bias (C, when given) on every row, in C.
template <typename T, typename C>
struct GruUnitGateInput {
  const T* x;
  const C* bias;
  C* gate;
  int64_t width;  // 3D
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    gate[e] = Convert<C>(x[e]) + (bias != nullptr ? bias[e % width] : C(0));
  }
};

// HiddenPrev as T, the first GEMM's operand: HiddenPrev itself when T is
// C, else a rounded copy in `scratch`.
template <typename T, typename C, typename Device>
const T* GruUnitPrevOperand(const Device& dev, const C* h_prev, int64_t count,
                            T* scratch) {
  if constexpr (std::is_same<T, C>::value) {
    return h_prev;
  } else {
    dev.ForEach(count, ConvertValues<T, C>{h_prev, scratch});
    return scratch;
  }
}

template <typename T, typename Device>
void GruUnitForward(const Device& dev) {
  using C = ComputeType<T>;
  constexpr bool kSame = std::is_same<T, C>::value;
  const ExecutionContext& ctx = dev.ctx();
  const GruCell<T> cell = ReadGruUnitCell<T>(ctx);
  const Tensor& h_prev = ctx.Input("HiddenPrev");
  const int64_t n = h_prev.shape()[0], w = cell.width;
  C* gate = dev.template Out<C>("Gate");
  T* reset_h = dev.template Out<T>("ResetHiddenPrev");
  C* hidden = dev.template Out<C>("Hidden");
  if (n == 0) return;
  // The GEMMs' output [n, 2D] (C), then HiddenPrev as T [n, D].
  ScratchCarver sizing;
  sizing.Take<C>(2 * n * w);
  sizing.Take<T>(kSame ? 0 : n * w);
  ScratchCarver carver(dev.template Scratch<float>(sizing.floats()));
  C* tmp = carver.Take<C>(2 * n * w);
  T* prev_t = carver.Take<T>(kSame ? 0 : n * w);
  const C* bias = ctx.HasInput("Bias") ? ctx.Input("Bias").data<C>() : nullptr;
  dev.ForEach(n * 3 * w, GruUnitGateInput<T, C>{ctx.Input("Input").data<T>(),
                                                bias, gate, 3 * w});
  dev.SetWeight(cell.weight, 3 * w * w);
  const C* hp = h_prev.data<C>();
  GruStepForward<T, C>(dev, cell, n, gate, hp,
                       GruUnitPrevOperand<T, C>(dev, hp, n * w, prev_t),
                       reset_h, hidden, static_cast<T*>(nullptr), tmp);
}

// The backward scratch: the gate gradients dur [n, 2D] and dcand [n, D] in
// C and (for 16-bit T) in T, the GEMM's output, HiddenPrev@GRAD when not
// wanted, and HiddenPrev as T for the weight's gradient.
template <typename T>
struct GruUnitGradBuffers {
  ComputeType<T>*dur, *dcand, *tmp, *dh_prev;
  T *dur_t, *dcand_t, *prev_t;
};

template <typename T>
GruUnitGradBuffers<T> CarveGruUnitGrad(ScratchCarver* s, int64_t n, int64_t w,
                                       bool dh_prev, bool weight_grad) {
  using C = ComputeType<T>;
  constexpr bool kSame = std::is_same<T, C>::value;
  GruUnitGradBuffers<T> b;
  b.dur = s->Take<C>(2 * n * w);
  b.dcand = s->Take<C>(n * w);
  b.tmp = s->Take<C>(n * w);
  b.dh_prev = s->Take<C>(dh_prev ? 0 : n * w);
  b.dur_t = kSame ? reinterpret_cast<T*>(b.dur) : s->Take<T>(2 * n * w);
  b.dcand_t = kSame ? reinterpret_cast<T*>(b.dcand) : s->Take<T>(n * w);
  b.prev_t = s->Take<T>(!kSame && weight_grad ? n * w : 0);
  return b;
}

template <typename T, typename Device>
void GruUnitBackward(const Device& dev) {
  using C = ComputeType<T>;
  const ExecutionContext& ctx = dev.ctx();
  const GruCell<T> cell = ReadGruUnitCell<T>(ctx);
  const Tensor& h_prev = ctx.Input("HiddenPrev");
  const int64_t n = h_prev.shape()[0], w = cell.width;
  T* dx = dev.template Out<T>(GradSlot("Input"));
  T* dw = dev.template Out<T>(GradSlot("Weight"));
  C* dbias =
      ctx.HasInput("Bias") ? dev.template Out<C>(GradSlot("Bias")) : nullptr;
  C* dh_prev = dev.template Out<C>(GradSlot("HiddenPrev"));
  if (n == 0) {
    if (dw) dev.Zero(dw, 3 * w * w);
    if (dbias) dev.Zero(dbias, 3 * w);
    return;
  }
  ScratchCarver sizing;
  CarveGruUnitGrad<T>(&sizing, n, w, dh_prev != nullptr, dw != nullptr);
  ScratchCarver carver(dev.template Scratch<float>(sizing.floats()));
  const GruUnitGradBuffers<T> b =
      CarveGruUnitGrad<T>(&carver, n, w, dh_prev != nullptr, dw != nullptr);
  if (!dh_prev) dh_prev = b.dh_prev;
  dev.Zero(dh_prev, n * w);
  dev.SetWeight(cell.weight, 3 * w * w);
  const C* hp = h_prev.data<C>();
  GruStepBackward<T, C>(dev, cell, n, ctx.Input("Gate").data<C>(), hp,
                        ctx.Input(GradSlot("Hidden")).data<C>(), b.dur, b.dcand,
                        b.dur_t, b.dcand_t, dh_prev, b.tmp);
  if (dw) {
    // dW_ur = HiddenPrev^T dur and dW_c = ResetHiddenPrev^T dcand, on the
    // GEMM operands of the forward step.
    dev.Gemm(true, false, w, 2 * w, n, C(1),
             GruUnitPrevOperand<T, C>(dev, hp, n * w, b.prev_t), b.dur_t, C(0),
             dw);
    dev.Gemm(true, false, w, w, n, C(1), ctx.Input("ResetHiddenPrev").data<T>(),
             b.dcand_t, C(0), dw + 2 * w * w);
  }
  if (dx)
    dev.ForEach(n * 3 * w, GruGateGrad<T, C>{b.dur, b.dcand, nullptr, dx, w});
  if (dbias) dev.ForEach(3 * w, GruBiasGrad<C>{b.dur, b.dcand, dbias, n, w});
}

}  // namespace ops
}  // namespace fluid
