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
#pragma once

#include <string>

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

// u and r (in place in gate [rows, 3D]), and r * h_prev.
template <typename T>
struct GruGateStep {
  T* gate;
  const T* hw;      // [rows, 2D] h_prev W_ur, null when h_prev is zeros
  const T* h_prev;  // [rows, D], null: zeros
  T* reset_h;       // [rows, D]
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
    reset_h[e] = h_prev != nullptr ? r * h_prev[e] : T(0);
  }
};

// c (in place) and h.
template <typename T>
struct GruOutputStep {
  T* gate;
  const T* rw;  // [rows, D] (r * h_prev) W_c, null when h_prev is zeros
  const T* h_prev;
  T* hidden;
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
    hidden[e] = origin_mode ? u * hp + (T(1) - u) * c : (T(1) - u) * hp + u * c;
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
// [rows, D], written to row map[i] of dst (row i when map is null).
template <typename T>
struct GruGateGrad {
  const T* dur;
  const T* dcand;
  const int64_t* map;
  T* dst;
  int64_t width;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t w3 = 3 * width, i = e / w3, m = e % w3;
    const T v = m < 2 * width ? dur[i * 2 * width + m]
                              : dcand[i * width + m - 2 * width];
    dst[(map != nullptr ? map[i] : i) * w3 + m] = v;
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

// One step over `rows` rows: gate (the gate input in, activations out),
// reset_h and hidden written; tmp holds rows * 2D.
template <typename T, typename Device>
void GruStepForward(const Device& dev, const GruCell<T>& cell, int64_t rows,
                    T* gate, const T* h_prev, T* reset_h, T* hidden, T* tmp) {
  const int64_t w = cell.width;
  if (h_prev)
    dev.Gemm(false, false, rows, 2 * w, w, T(1), h_prev, cell.gate_weight(),
             T(0), tmp);
  dev.ForEach(rows * w, GruGateStep<T>{gate, h_prev ? tmp : nullptr, h_prev,
                                       reset_h, w, cell.acts});
  if (h_prev)
    dev.Gemm(false, false, rows, w, w, T(1), reset_h, cell.state_weight(), T(0),
             tmp);
  dev.ForEach(rows * w,
              GruOutputStep<T>{gate, h_prev ? tmp : nullptr, h_prev, hidden, w,
                               cell.acts, cell.origin_mode});
}

// Its gradient from dh: dur, dcand written, dh_prev added to (may be null
// when h_prev is), W_ur's gradient added to dw_gate when given; tmp holds
// rows * D. W_c's gradient is reset_h^T dcand, left to the caller (one GEMM
// over every step).
template <typename T, typename Device>
void GruStepBackward(const Device& dev, const GruCell<T>& cell, int64_t rows,
                     const T* gate, const T* h_prev, const T* dh, T* dur,
                     T* dcand, T* dh_prev, T* dw_gate, T* tmp) {
  const int64_t w = cell.width;
  dev.ForEach(rows * w, GruGradOutput<T>{gate, h_prev, dh, dur, dcand, dh_prev,
                                         w, cell.acts, cell.origin_mode});
  dev.Gemm(false, true, rows, w, w, T(1), dcand, cell.state_weight(), T(0),
           tmp);
  dev.ForEach(rows * w,
              GruGradReset<T>{gate, h_prev, tmp, dur, dh_prev, w, cell.acts});
  if (dh_prev)
    dev.Gemm(false, true, rows, w, 2 * w, T(1), dur, cell.gate_weight(), T(1),
             dh_prev);
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

template <typename T, typename Device>
void GruForward(const Device& dev) {
  const GruArgs a = ReadGruArgs(dev.ctx());
  const BatchLayout& l = *a.layout;
  const int64_t w = a.width, n = l.count;
  T* hidden = dev.template Out<T>("Hidden");
  T* gate = dev.template Out<T>("BatchGate");
  T* reset_h = dev.template Out<T>("BatchResetHiddenPrev");
  T* bh = dev.template Out<T>("BatchHidden");
  if (l.total == 0) return;
  const RecurrentScratch<T> s = dev.template Reserve<T>(l, 3 * n * w);
  T* tmp = s.data;
  T* h0 = a.h0 ? s.data + 2 * n * w : nullptr;
  dev.ForEach(l.total * 3 * w,
              GatherRows<T>{a.x->data<T>(), gate, s.index.rows,
                            a.bias ? a.bias->data<T>() : nullptr, 3 * w});
  if (h0)
    dev.ForEach(n * w,
                GatherRows<T>{a.h0->data<T>(), h0, s.index.order, nullptr, w});
  const GruCell<T> cell = a.Cell<T>();
  for (int64_t t = 0; t < l.steps; ++t) {
    const int64_t at = l.Offset(t);
    GruStepForward(dev, cell, l.Rows(t), gate + at * 3 * w,
                   t > 0 ? bh + l.Offset(t - 1) * w : h0, reset_h + at * w,
                   bh + at * w, tmp);
  }
  dev.ForEach(l.total * w, ScatterRows<T>{bh, hidden, s.index.rows, w});
}

template <typename T, typename Device>
void GruBackward(const Device& dev) {
  const ExecutionContext& ctx = dev.ctx();
  const GruArgs a = ReadGruArgs(ctx);
  const BatchLayout& l = *a.layout;
  const int64_t w = a.width, n = l.count, total = l.total;
  T* dx = dev.template Out<T>(GradSlot("Input"));
  T* dw = dev.template Out<T>(GradSlot("Weight"));
  T* dbias = a.bias ? dev.template Out<T>(GradSlot("Bias")) : nullptr;
  T* dh0 = a.h0 ? dev.template Out<T>(GradSlot("H0")) : nullptr;
  if (dw) dev.Zero(dw, 3 * w * w);
  if (total == 0) {
    if (dbias) dev.Zero(dbias, 3 * w);
    return;
  }
  const RecurrentScratch<T> s =
      dev.template Reserve<T>(l, (4 * total + 3 * n) * w);
  T *dh = s.data, *dur = dh + total * w, *dcand = dur + 2 * total * w;
  T *tmp = dcand + total * w, *h0 = tmp + n * w, *dh0s = h0 + n * w;
  dev.ForEach(total * w, GatherRows<T>{ctx.Input(GradSlot("Hidden")).data<T>(),
                                       dh, s.index.rows, nullptr, w});
  if (a.h0)
    dev.ForEach(n * w,
                GatherRows<T>{a.h0->data<T>(), h0, s.index.order, nullptr, w});
  dev.Zero(dh0s, n * w);
  const T* gate = ctx.Input("BatchGate").data<T>();
  const T* bh = ctx.Input("BatchHidden").data<T>();
  const GruCell<T> cell = a.Cell<T>();
  for (int64_t t = l.steps - 1; t >= 0; --t) {
    const int64_t at = l.Offset(t), prev = t > 0 ? l.Offset(t - 1) : 0;
    GruStepBackward(dev, cell, l.Rows(t), gate + at * 3 * w,
                    t > 0 ? bh + prev * w : (a.h0 ? h0 : nullptr), dh + at * w,
                    dur + at * 2 * w, dcand + at * w,
                    t > 0 ? dh + prev * w : dh0s, dw, tmp);
  }
  if (dw)
    dev.Gemm(true, false, w, w, total, T(1),
             ctx.Input("BatchResetHiddenPrev").data<T>(), dcand, T(0),
             dw + 2 * w * w);
  if (dx)
    dev.ForEach(total * 3 * w, GruGateGrad<T>{dur, dcand, s.index.rows, dx, w});
  if (dbias) dev.ForEach(3 * w, GruBiasGrad<T>{dur, dcand, dbias, total, w});
  if (dh0) dev.ForEach(n * w, ScatterRows<T>{dh0s, dh0, s.index.order, w});
}

}  // namespace ops
}  // namespace fluid
