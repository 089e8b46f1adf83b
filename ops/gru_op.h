// gru over a level-1 LoD batch and gru_unit (one step), written once for
// both places: the per-element math of a step, a step's forward and
// backward (two GEMMs each way), and the drivers that walk the steps of the
// batch layout (ops/recurrent_helpers.h). `Device` is CpuRecurrentDevice
// (ops/recurrent_cpu.h) or its CUDA twin (ops/cuda/recurrent_device.cuh).
//
// Gate blocks of width D in Fluid's order {update u, reset r, candidate c};
// the weight [D, 3D] holds, as Fluid's does, W_ur [D, 2D] in its first
// 2D * D elements and W_c [D, D] in the last D * D. With the gate input g
// (the op's Input plus the bias):
//   u = gate_act(g_u + h_prev W_u)   r = gate_act(g_r + h_prev W_r)
//   c = act(g_c + (r * h_prev) W_c)
//   h = (1 - u) * h_prev + u * c     (origin_mode: u * h_prev + (1 - u) * c)
//
// For 16-bit T (bfloat16, float16) the drivers compute in float32 (C =
// ComputeType<T>): Input, Weight, H0, Hidden and BatchResetHiddenPrev (r *
// h_prev, a GEMM operand) are T; Bias and the saved BatchGate and
// BatchHidden (the state carried from step to step) are float32. The GEMMs
// multiply T operands (h_prev and r * h_prev rounded to T, the gate
// gradients rounded to T backward) with float32 sums; the weight's gradient
// is one GEMM over all steps per block, rounded once.
#pragma once

#include <string>
#include <type_traits>

#include "ops/recurrent_helpers.h"
#include "src/framework/grad_op_maker.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

struct GruActs {
  RecurrentAct gate, candidate;
};

// What a step needs besides its rows: the weight and the attrs.
template <typename T>
struct GruCell {
  const T* weight;
  int64_t width;
  GruActs acts;
  bool origin_mode;
  const T* gate_weight() const { return weight; }
  const T* state_weight() const { return weight + 2 * width * width; }
};

// u and r (in place in gate [rows, 3D]), and r * h_prev (stored as R).
template <typename T, typename R = T>
struct GruGateStep {
  T* gate;
  const T* hw;      // [rows, 2D] h_prev W_ur, null when h_prev is zeros
  const T* h_prev;  // [rows, D], null: zeros
  R* reset_h;       // [rows, D]
  int64_t width;
  GruActs acts;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t k = e / width, j = e % width, w = width;
    T* g = gate + k * 3 * w + j;
    const T* p = hw != nullptr ? hw + k * 2 * w + j : nullptr;
    const T u = Activate(acts.gate, g[0] + (p ? p[0] : T(0)));
    const T r = Activate(acts.gate, g[w] + (p ? p[w] : T(0)));
    g[0] = u;
    g[w] = r;
    reset_h[e] = Convert<R>(h_prev != nullptr ? r * h_prev[e] : T(0));
  }
};

// c (in place) and h, also stored as H in hidden_t when that is not null.
template <typename T, typename H = T>
struct GruOutputStep {
  T* gate;
  const T* rw;  // [rows, D] (r * h_prev) W_c, null when h_prev is zeros
  const T* h_prev;
  T* hidden;
  H* hidden_t;
  int64_t width;
  GruActs acts;
  bool origin_mode;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t k = e / width, j = e % width, w = width;
    T* g = gate + k * 3 * w + j;
    const T c = Activate(acts.candidate, g[2 * w] + (rw ? rw[e] : T(0)));
    const T u = g[0];
    const T hp = h_prev != nullptr ? h_prev[e] : T(0);
    g[2 * w] = c;
    const T h = origin_mode ? u * hp + (T(1) - u) * c : (T(1) - u) * hp + u * c;
    hidden[e] = h;
    if (hidden_t != nullptr) hidden_t[e] = Convert<H>(h);
  }
};

// From dh: the update gate's and the candidate's pre-activation gradients,
// and h_prev's direct share added to dh_prev.
template <typename T>
struct GruGradOutput {
  const T* gate;
  const T* h_prev;
  const T* dh;
  T* dur;    // [rows, 2D]
  T* dcand;  // [rows, D]
  T* dh_prev;
  int64_t width;
  GruActs acts;
  bool origin_mode;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t k = e / width, j = e % width, w = width;
    const T u = gate[k * 3 * w + j], c = gate[k * 3 * w + 2 * w + j];
    const T hp = h_prev != nullptr ? h_prev[e] : T(0), d = dh[e];
    const T dc = origin_mode ? d * (T(1) - u) : d * u;
    const T du = origin_mode ? d * (hp - c) : d * (c - hp);
    dcand[e] = ActivationGrad(acts.candidate, c, dc);
    dur[k * 2 * w + j] = ActivationGrad(acts.gate, u, du);
    dh_prev[e] += origin_mode ? d * u : d * (T(1) - u);
  }
};

// From d(r * h_prev): the reset gate's pre-activation gradient, and
// h_prev's share through r * h_prev added to dh_prev.
template <typename T>
struct GruGradReset {
  const T* gate;
  const T* h_prev;
  const T* drh;  // [rows, D]
  T* dur;
  T* dh_prev;
  int64_t width;
  GruActs acts;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t k = e / width, j = e % width, w = width;
    const T r = gate[k * 3 * w + w + j];
    const T hp = h_prev != nullptr ? h_prev[e] : T(0);
    dur[k * 2 * w + w + j] = ActivationGrad(acts.gate, r, drh[e] * hp);
    dh_prev[e] += drh[e] * r;
  }
};

// Row i of the gate gradient [rows, 3D] from dur [rows, 2D] and dcand
// [rows, D], written to row map[i] of dst (row i when map is null) as T.
template <typename T, typename S = T>
struct GruGateGrad {
  const S* dur;
  const S* dcand;
  const int64_t* map;
  T* dst;
  int64_t width;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t w3 = 3 * width, i = e / w3, m = e % w3;
    const S v = m < 2 * width ? dur[i * 2 * width + m]
                              : dcand[i * width + m - 2 * width];
    dst[(map != nullptr ? map[i] : i) * w3 + m] = Convert<T>(v);
  }
};

// Bias@GRAD [3D]: the gate gradient's columns summed over `rows` rows.
template <typename T>
struct GruBiasGrad {
  const T* dur;
  const T* dcand;
  T* dbias;
  int64_t rows, width;
  FLUID_HOSTDEVICE void operator()(int64_t m) const {
    T sum = 0;
    for (int64_t i = 0; i < rows; ++i)
      sum += m < 2 * width ? dur[i * 2 * width + m]
                           : dcand[i * width + m - 2 * width];
    dbias[m] = sum;
  }
};

// One step over `rows` rows, computed in C: gate (the gate input in,
// activations out), reset_h (T, the second GEMM's operand) and hidden
// written, hidden also as T in hidden_t when that is not null; h_prev_t is
// h_prev as T, the first GEMM's operand; tmp holds rows * 2D.
template <typename T, typename C, typename Device>
void GruStepForward(const Device& dev, const GruCell<T>& cell, int64_t rows,
                    C* gate, const C* h_prev, const T* h_prev_t, T* reset_h,
                    C* hidden, T* hidden_t, C* tmp) {
  const int64_t w = cell.width;
  if (h_prev)
    dev.Gemm(false, false, rows, 2 * w, w, C(1), h_prev_t, cell.gate_weight(),
             C(0), tmp);
  dev.ForEach(rows * w, GruGateStep<C, T>{gate, h_prev ? tmp : nullptr, h_prev,
                                          reset_h, w, cell.acts});
  if (h_prev)
    dev.Gemm(false, false, rows, w, w, C(1), reset_h, cell.state_weight(), C(0),
             tmp);
  dev.ForEach(rows * w,
              GruOutputStep<C, T>{gate, h_prev ? tmp : nullptr, h_prev, hidden,
                                  hidden_t, w, cell.acts, cell.origin_mode});
}

// The step all in T (gru_unit).
template <typename T, typename Device>
void GruStepForward(const Device& dev, const GruCell<T>& cell, int64_t rows,
                    T* gate, const T* h_prev, T* reset_h, T* hidden, T* tmp) {
  GruStepForward<T, T>(dev, cell, rows, gate, h_prev, h_prev, reset_h, hidden,
                       static_cast<T*>(nullptr), tmp);
}

// Its gradient from dh, in C: dur, dcand written (and as T in dur_t,
// dcand_t, the GEMMs' operands; the same buffers when T is C), dh_prev
// added to; tmp holds rows * D. The weight's gradient is left to the
// caller.
template <typename T, typename C, typename Device>
void GruStepBackward(const Device& dev, const GruCell<T>& cell, int64_t rows,
                     const C* gate, const C* h_prev, const C* dh, C* dur,
                     C* dcand, T* dur_t, T* dcand_t, C* dh_prev, C* tmp) {
  const int64_t w = cell.width;
  dev.ForEach(rows * w, GruGradOutput<C>{gate, h_prev, dh, dur, dcand, dh_prev,
                                         w, cell.acts, cell.origin_mode});
  if constexpr (!std::is_same<T, C>::value)
    dev.ForEach(rows * w, ConvertValues<T, C>{dcand, dcand_t});
  dev.Gemm(false, true, rows, w, w, C(1), dcand_t, cell.state_weight(), C(0),
           tmp);
  dev.ForEach(rows * w,
              GruGradReset<C>{gate, h_prev, tmp, dur, dh_prev, w, cell.acts});
  if constexpr (!std::is_same<T, C>::value)
    dev.ForEach(rows * 2 * w, ConvertValues<T, C>{dur, dur_t});
  if (dh_prev)
    dev.Gemm(false, true, rows, w, 2 * w, C(1), dur_t, cell.gate_weight(), C(1),
             dh_prev);
}

// The step's gradient all in T (gru_unit), W_ur's gradient added to
// dw_gate when given. W_c's gradient is reset_h^T dcand, left to the
// caller.
template <typename T, typename Device>
void GruStepBackward(const Device& dev, const GruCell<T>& cell, int64_t rows,
                     const T* gate, const T* h_prev, const T* dh, T* dur,
                     T* dcand, T* dh_prev, T* dw_gate, T* tmp) {
  const int64_t w = cell.width;
  GruStepBackward<T, T>(dev, cell, rows, gate, h_prev, dh, dur, dcand, dur,
                        dcand, dh_prev, tmp);
  if (dw_gate && h_prev)
    dev.Gemm(true, false, w, 2 * w, rows, T(1), h_prev, dur, T(1), dw_gate);
}

// The op's inputs, checked, and (for gru) its batch layout.
struct GruArgs {
  const Tensor* x;
  const Tensor* weight;
  const Tensor* bias;  // null when absent
  const Tensor* h0;    // null when absent
  int64_t width;
  GruActs acts;
  bool origin_mode;
  const BatchLayout* layout;  // ThreadBatchLayout
  template <typename T>
  GruCell<T> Cell() const {
    return GruCell<T>{weight->data<T>(), width, acts, origin_mode};
  }
};
GruArgs ReadGruArgs(const ExecutionContext& ctx);

// The forward driver's scratch: the GEMMs' output (C), the batch hidden as
// T (the GEMMs' operand; BatchHidden itself when T is C) and H0 sorted, as
// T and as C (one buffer when T is C).
template <typename T>
struct GruForwardBuffers {
  ComputeType<T>* tmp;
  T* hb_t;
  T* h0_t;
  ComputeType<T>* h0;
};

template <typename T>
GruForwardBuffers<T> CarveGruForward(ScratchCarver* s, const GruArgs& a,
                                     ComputeType<T>* batch_hidden) {
  using C = ComputeType<T>;
  const int64_t w = a.width, n = a.layout->count;
  GruForwardBuffers<T> b;
  b.tmp = s->Take<C>(2 * n * w);
  b.h0_t = a.h0 ? s->Take<T>(n * w) : nullptr;
  if constexpr (std::is_same<T, C>::value) {
    b.hb_t = batch_hidden;
    b.h0 = b.h0_t;
  } else {
    b.hb_t = s->Take<T>(a.layout->total * w);
    b.h0 = a.h0 ? s->Take<C>(n * w) : nullptr;
  }
  return b;
}

template <typename T, typename Device>
void GruForward(const Device& dev) {
  using C = ComputeType<T>;
  const GruArgs a = ReadGruArgs(dev.ctx());
  const BatchLayout& l = *a.layout;
  const int64_t w = a.width, n = l.count;
  T* hidden = dev.template Out<T>("Hidden");
  C* gate = dev.template Out<C>("BatchGate");
  T* reset_h = dev.template Out<T>("BatchResetHiddenPrev");
  C* bh = dev.template Out<C>("BatchHidden");
  if (l.total == 0) return;
  ScratchCarver sizing;
  CarveGruForward<T>(&sizing, a, bh);
  const RecurrentScratch<float> s =
      dev.template Reserve<float>(l, sizing.floats());
  ScratchCarver carver(s.data);
  const GruForwardBuffers<T> b = CarveGruForward<T>(&carver, a, bh);
  dev.ForEach(l.total * 3 * w,
              GatherRows<C, T>{a.x->data<T>(), gate, s.index.rows,
                               a.bias ? a.bias->data<C>() : nullptr, 3 * w});
  if (a.h0) {
    dev.ForEach(n * w, GatherRows<T>{a.h0->data<T>(), b.h0_t, s.index.order,
                                     nullptr, w});
    if constexpr (!std::is_same<T, C>::value)
      dev.ForEach(n * w, ConvertValues<C, T>{b.h0_t, b.h0});
  }
  const GruCell<T> cell = a.Cell<T>();
  dev.SetWeight(cell.weight, 3 * w * w);
  constexpr bool kSame = std::is_same<T, C>::value;
  for (int64_t t = 0; t < l.steps; ++t) {
    const int64_t at = l.Offset(t), prev = t > 0 ? l.Offset(t - 1) : 0;
    GruStepForward<T, C>(dev, cell, l.Rows(t), gate + at * 3 * w,
                         t > 0 ? bh + prev * w : b.h0,
                         t > 0 ? b.hb_t + prev * w : b.h0_t, reset_h + at * w,
                         bh + at * w, kSame ? nullptr : b.hb_t + at * w, b.tmp);
  }
  dev.ForEach(l.total * w, ScatterRows<T, C>{bh, hidden, s.index.rows, w});
}

// The backward driver's scratch: the gradients of hidden, of the gates
// (dur [total, 2D], dcand [total, D]) in C and in T (the GEMMs' operands;
// the same buffers when T is C), the GEMMs' output, H0 sorted in C and in
// T, its gradient, and every row's previous hidden in T (the weight
// gradient's operand; null without Weight@GRAD).
template <typename T>
struct GruGradBuffers {
  ComputeType<T>*dh, *dur, *dcand, *tmp, *h0, *dh0;
  T *dur_t, *dcand_t, *h0_t, *hprev;
};

template <typename T>
GruGradBuffers<T> CarveGruGrad(ScratchCarver* s, const GruArgs& a,
                               bool weight_grad) {
  using C = ComputeType<T>;
  const int64_t w = a.width, n = a.layout->count, total = a.layout->total;
  GruGradBuffers<T> b;
  b.dh = s->Take<C>(total * w);
  b.dur = s->Take<C>(total * 2 * w);
  b.dcand = s->Take<C>(total * w);
  b.tmp = s->Take<C>(n * w);
  b.h0_t = a.h0 ? s->Take<T>(n * w) : nullptr;
  b.dh0 = s->Take<C>(n * w);
  b.hprev = weight_grad ? s->Take<T>(total * w) : nullptr;
  if constexpr (std::is_same<T, C>::value) {
    b.dur_t = b.dur;
    b.dcand_t = b.dcand;
    b.h0 = b.h0_t;
  } else {
    b.dur_t = s->Take<T>(total * 2 * w);
    b.dcand_t = s->Take<T>(total * w);
    b.h0 = a.h0 ? s->Take<C>(n * w) : nullptr;
  }
  return b;
}

// Writes the op's gradients from the batch-ordered ones.
template <typename T, typename Device>
void GruGradScatter(const Device& dev, const GruArgs& a,
                    const GruGradBuffers<T>& b, const BatchIndex& ix) {
  using C = ComputeType<T>;
  const int64_t w = a.width, n = a.layout->count, total = a.layout->total;
  if (T* dx = dev.template Out<T>(GradSlot("Input")))
    dev.ForEach(total * 3 * w,
                GruGateGrad<T, C>{b.dur, b.dcand, ix.rows, dx, w});
  if (C* dbias = a.bias ? dev.template Out<C>(GradSlot("Bias")) : nullptr)
    dev.ForEach(3 * w, GruBiasGrad<C>{b.dur, b.dcand, dbias, total, w});
  if (T* dh0 = a.h0 ? dev.template Out<T>(GradSlot("H0")) : nullptr)
    dev.ForEach(n * w, ScatterRows<T, C>{b.dh0, dh0, ix.order, w});
}

template <typename T, typename Device>
void GruBackward(const Device& dev) {
  using C = ComputeType<T>;
  const ExecutionContext& ctx = dev.ctx();
  const GruArgs a = ReadGruArgs(ctx);
  const BatchLayout& l = *a.layout;
  const int64_t w = a.width, n = l.count, total = l.total;
  T* dw = dev.template Out<T>(GradSlot("Weight"));
  if (total == 0) {
    if (dw) dev.Zero(dw, 3 * w * w);
    if (C* dbias = a.bias ? dev.template Out<C>(GradSlot("Bias")) : nullptr)
      dev.Zero(dbias, 3 * w);
    return;
  }
  ScratchCarver sizing;
  CarveGruGrad<T>(&sizing, a, dw != nullptr);
  const RecurrentScratch<float> s =
      dev.template Reserve<float>(l, sizing.floats());
  ScratchCarver carver(s.data);
  const GruGradBuffers<T> b = CarveGruGrad<T>(&carver, a, dw != nullptr);
  dev.ForEach(total * w,
              GatherRows<C, T>{ctx.Input(GradSlot("Hidden")).data<T>(), b.dh,
                               s.index.rows, nullptr, w});
  if (a.h0) {
    dev.ForEach(n * w, GatherRows<T>{a.h0->data<T>(), b.h0_t, s.index.order,
                                     nullptr, w});
    if constexpr (!std::is_same<T, C>::value)
      dev.ForEach(n * w, ConvertValues<C, T>{b.h0_t, b.h0});
  }
  dev.Zero(b.dh0, n * w);
  const C* gate = ctx.Input("BatchGate").data<C>();
  const C* bh = ctx.Input("BatchHidden").data<C>();
  const GruCell<T> cell = a.Cell<T>();
  dev.SetWeight(cell.weight, 3 * w * w);
  for (int64_t t = l.steps - 1; t >= 0; --t) {
    const int64_t at = l.Offset(t), prev = t > 0 ? l.Offset(t - 1) : 0;
    GruStepBackward<T, C>(dev, cell, l.Rows(t), gate + at * 3 * w,
                          t > 0 ? bh + prev * w : b.h0, b.dh + at * w,
                          b.dur + at * 2 * w, b.dcand + at * w,
                          b.dur_t + at * 2 * w, b.dcand_t + at * w,
                          t > 0 ? b.dh + prev * w : b.dh0, b.tmp);
  }
  if (dw) {
    dev.ForEach(total * w, PreviousRows<T, C>{bh, b.h0_t, b.hprev, s.index, w});
    dev.Gemm(true, false, w, 2 * w, total, C(1), b.hprev, b.dur_t, C(0), dw);
    dev.Gemm(true, false, w, w, total, C(1),
             ctx.Input("BatchResetHiddenPrev").data<T>(), b.dcand_t, C(0),
             dw + 2 * w * w);
  }
  GruGradScatter<T>(dev, a, b, s.index);
}

}  // namespace ops
}  // namespace fluid
