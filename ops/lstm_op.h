// lstm over a level-1 LoD batch, written once for both places: the
// per-element math of a step (forward and backward) and the drivers that
// walk the steps of the batch layout (ops/recurrent_helpers.h), one GEMM per
// step. `Device` is CpuRecurrentDevice (ops/recurrent_cpu.h) or its CUDA
// twin (ops/cuda/recurrent_device.cuh).
//
// Gate blocks of width D in Fluid's order {candidate c~, input i, forget f,
// output o}; with the gate input g = x W_x (the op's Input) + h_prev W + b:
//   c~ = cand_act(g_c)          i = gate_act(g_i + W_ic * c_prev)
//   f = gate_act(g_f + W_fc * c_prev)
//   c = c~ * i + f * c_prev     o = gate_act(g_o + W_oc * c)
//   h = o * cell_act(c)
// the peephole terms (W_ic, W_fc, W_oc: the bias's last 3D) only with
// use_peepholes. A sequence starts from H0/C0's row (zeros when absent).
#pragma once

#include <string>

#include "ops/recurrent_helpers.h"
#include "src/framework/grad_op_maker.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

struct LstmActs {
  RecurrentAct gate, cell, candidate;
};

// The op's inputs, checked, and its batch layout.
struct LstmArgs {
  const Tensor* x;
  const Tensor* weight;
  const Tensor* bias;
  const Tensor* h0;  // null when absent
  const Tensor* c0;  // null when absent
  int64_t width;     // D
  bool peepholes;
  LstmActs acts;
  const BatchLayout* layout;  // ThreadBatchLayout
};
LstmArgs ReadLstmArgs(const ExecutionContext& ctx);

// One step's rows, element e = (row k, column j) of [rows, D].
template <typename T>
struct LstmStep {
  T* gate;          // [rows, 4D]: pre-activations in, activations out
  const T* c_prev;  // [rows, D], null: zeros
  const T* peep;    // [3D] W_ic, W_fc, W_oc, or null
  T* cell;          // [rows, D]
  T* hidden;        // [rows, D]
  int64_t width;
  LstmActs acts;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t k = e / width, j = e % width, w = width;
    T* g = gate + k * 4 * w + j;
    const T cp = c_prev != nullptr ? c_prev[e] : T(0);
    const bool p = peep != nullptr;
    const T a = Activate(acts.candidate, g[0]);
    const T i = Activate(acts.gate, g[w] + (p ? peep[j] * cp : T(0)));
    const T f = Activate(acts.gate, g[2 * w] + (p ? peep[w + j] * cp : T(0)));
    const T c = a * i + f * cp;
    const T o =
        Activate(acts.gate, g[3 * w] + (p ? peep[2 * w + j] * c : T(0)));
    g[0] = a;
    g[w] = i;
    g[2 * w] = f;
    g[3 * w] = o;
    cell[e] = c;
    hidden[e] = o * Activate(acts.cell, c);
  }
};

// Its gradient: from dh (everything reaching h) and dc (what reaches c from
// outside the step), the gate pre-activations' gradient, and c_prev's added
// to dc_prev.
template <typename T>
struct LstmGradStep {
  const T* gate;    // [rows, 4D] activations
  const T* cell;    // [rows, D]
  const T* c_prev;  // [rows, D], null: zeros
  const T* peep;
  const T* dh;
  const T* dc;
  T* dgate;    // [rows, 4D]
  T* dc_prev;  // [rows, D], accumulated into
  int64_t width;
  LstmActs acts;
  FLUID_HOSTDEVICE void operator()(int64_t e) const {
    const int64_t k = e / width, j = e % width, w = width;
    const T* g = gate + k * 4 * w + j;
    T* dg = dgate + k * 4 * w + j;
    const T a = g[0], i = g[w], f = g[2 * w], o = g[3 * w];
    const T cp = c_prev != nullptr ? c_prev[e] : T(0);
    const bool p = peep != nullptr;
    const T tc = Activate(acts.cell, cell[e]);
    const T d_o = ActivationGrad(acts.gate, o, dh[e] * tc);
    const T d_c = dc[e] + ActivationGrad(acts.cell, tc, dh[e] * o) +
                  (p ? d_o * peep[2 * w + j] : T(0));
    const T d_i = ActivationGrad(acts.gate, i, d_c * a);
    const T d_f = ActivationGrad(acts.gate, f, d_c * cp);
    dg[0] = ActivationGrad(acts.candidate, a, d_c * i);
    dg[w] = d_i;
    dg[2 * w] = d_f;
    dg[3 * w] = d_o;
    dc_prev[e] += d_c * f + (p ? d_i * peep[j] + d_f * peep[w + j] : T(0));
  }
};

// Bias@GRAD column j, the batch rows summed in order: the gates' columns
// (j < 4D), then W_ic, W_fc, W_oc (the input and forget gates against
// c_prev, the output gate against c).
template <typename T>
struct LstmBiasGrad {
  const T* dgate;  // [total, 4D] in batch order
  const T* cell;   // [total, D] in batch order
  const T* c0;     // [count, D] sorted, or null
  T* dbias;
  BatchIndex index;
  int64_t width;
  FLUID_HOSTDEVICE void operator()(int64_t col) const {
    const int64_t w = width, gates = 4 * w;
    T sum = 0;
    if (col < gates) {
      for (int64_t b = 0; b < index.total; ++b) sum += dgate[b * gates + col];
      dbias[col] = sum;
      return;
    }
    const int64_t p = (col - gates) / w, j = (col - gates) % w;
    for (int64_t t = 0; t < index.steps; ++t) {
      for (int64_t b = index.offsets[t]; b < index.offsets[t + 1]; ++b) {
        const int64_t k = b - index.offsets[t];
        T c = cell[b * w + j];
        if (p < 2) {
          c = t > 0 ? cell[(index.offsets[t - 1] + k) * w + j]
                    : (c0 != nullptr ? c0[k * w + j] : T(0));
        }
        sum += dgate[b * gates + (p + 1) * w + j] * c;
      }
    }
    dbias[col] = sum;
  }
};

// Scratch (floats) of the forward driver.
inline int64_t LstmForwardScratch(const LstmArgs& a) {
  return (a.layout->total + 2 * a.layout->count) * a.width;
}

template <typename T, typename Device>
void LstmForward(const Device& dev) {
  const LstmArgs a = ReadLstmArgs(dev.ctx());
  const BatchLayout& l = *a.layout;
  const int64_t w = a.width, n = l.count;
  T* hidden = dev.template Out<T>("Hidden");
  T* cell_out = dev.template Out<T>("Cell");
  T* gate = dev.template Out<T>("BatchGate");
  T* cell = dev.template Out<T>("BatchCellPreAct");
  if (l.total == 0) return;
  const RecurrentScratch<T> s =
      dev.template Reserve<T>(l, LstmForwardScratch(a));
  T* hb = s.data;  // batch hidden, then H0 and C0 sorted
  T* h0 = a.h0 ? hb + l.total * w : nullptr;
  T* c0 = a.c0 ? hb + (l.total + n) * w : nullptr;
  const T* bias = a.bias->data<T>();
  dev.ForEach(l.total * 4 * w,
              GatherRows<T>{a.x->data<T>(), gate, s.index.rows, bias, 4 * w});
  if (h0)
    dev.ForEach(n * w,
                GatherRows<T>{a.h0->data<T>(), h0, s.index.order, nullptr, w});
  if (c0)
    dev.ForEach(n * w,
                GatherRows<T>{a.c0->data<T>(), c0, s.index.order, nullptr, w});
  const T* weight = a.weight->data<T>();
  for (int64_t t = 0; t < l.steps; ++t) {
    const int64_t at = l.Offset(t), rows = l.Rows(t);
    const T* hp = t > 0 ? hb + l.Offset(t - 1) * w : h0;
    const T* cp = t > 0 ? cell + l.Offset(t - 1) * w : c0;
    if (hp)
      dev.Gemm(false, false, rows, 4 * w, w, T(1), hp, weight, T(1),
               gate + at * 4 * w);
    dev.ForEach(rows * w, LstmStep<T>{gate + at * 4 * w, cp,
                                      a.peepholes ? bias + 4 * w : nullptr,
                                      cell + at * w, hb + at * w, w, a.acts});
  }
  dev.ForEach(l.total * w, ScatterRows<T>{hb, hidden, s.index.rows, w});
  dev.ForEach(l.total * w, ScatterRows<T>{cell, cell_out, s.index.rows, w});
}

// The backward driver's scratch: batch-ordered hidden, its gradient and the
// cell's, the gates' gradient, and H0, C0 and their gradients sorted.
template <typename T>
struct LstmGradBuffers {
  T *hb, *dh, *dc, *dgate, *h0, *c0, *dh0, *dc0;
};

inline int64_t LstmGradScratch(const LstmArgs& a) {
  return (7 * a.layout->total + 4 * a.layout->count) * a.width;
}

// Gathers what the steps read into batch order.
template <typename T, typename Device>
LstmGradBuffers<T> LstmGradGather(const Device& dev, const LstmArgs& a,
                                  const RecurrentScratch<T>& s) {
  const ExecutionContext& ctx = dev.ctx();
  const int64_t w = a.width, total = a.layout->total, n = a.layout->count;
  LstmGradBuffers<T> b;
  b.hb = s.data;
  b.dh = b.hb + total * w;
  b.dc = b.dh + total * w;
  b.dgate = b.dc + total * w;
  b.h0 = a.h0 ? b.dgate + total * 4 * w : nullptr;
  b.c0 = a.c0 ? b.dgate + total * 4 * w + n * w : nullptr;
  b.dh0 = b.dgate + total * 4 * w + 2 * n * w;
  b.dc0 = b.dh0 + n * w;
  // dst row i = src row map[i], for `rows` rows.
  auto gather = [&](const Tensor& src, T* dst, const int64_t* map,
                    int64_t rows) {
    dev.ForEach(rows * w, GatherRows<T>{src.data<T>(), dst, map, nullptr, w});
  };
  gather(ctx.Input("Hidden"), b.hb, s.index.rows, total);
  gather(ctx.Input(GradSlot("Hidden")), b.dh, s.index.rows, total);
  if (ctx.HasInput(GradSlot("Cell"))) {
    gather(ctx.Input(GradSlot("Cell")), b.dc, s.index.rows, total);
  } else {
    dev.Zero(b.dc, total * w);
  }
  if (b.h0) gather(*a.h0, b.h0, s.index.order, n);
  if (b.c0) gather(*a.c0, b.c0, s.index.order, n);
  dev.Zero(b.dc0, n * w);
  return b;
}

template <typename T, typename Device>
void LstmBackward(const Device& dev) {
  const LstmArgs a = ReadLstmArgs(dev.ctx());
  const BatchLayout& l = *a.layout;
  const int64_t w = a.width;
  T* dx = dev.template Out<T>(GradSlot("Input"));
  T* dw = dev.template Out<T>(GradSlot("Weight"));
  T* dbias = dev.template Out<T>(GradSlot("Bias"));
  T* dh0 = a.h0 ? dev.template Out<T>(GradSlot("H0")) : nullptr;
  T* dc0 = a.c0 ? dev.template Out<T>(GradSlot("C0")) : nullptr;
  if (dw) dev.Zero(dw, w * 4 * w);
  if (l.total == 0) {
    if (dbias) dev.Zero(dbias, a.bias->numel());
    return;
  }
  const RecurrentScratch<T> s = dev.template Reserve<T>(l, LstmGradScratch(a));
  const LstmGradBuffers<T> b = LstmGradGather<T>(dev, a, s);
  const T* gate = dev.ctx().Input("BatchGate").template data<T>();
  const T* cell = dev.ctx().Input("BatchCellPreAct").template data<T>();
  const T* weight = a.weight->data<T>();
  const T* peep = a.peepholes ? a.bias->data<T>() + 4 * w : nullptr;
  for (int64_t t = l.steps - 1; t >= 0; --t) {
    const int64_t at = l.Offset(t), rows = l.Rows(t);
    const int64_t prev = t > 0 ? l.Offset(t - 1) : 0;
    const T* hp = t > 0 ? b.hb + prev * w : b.h0;
    dev.ForEach(
        rows * w,
        LstmGradStep<T>{gate + at * 4 * w, cell + at * w,
                        t > 0 ? cell + prev * w : b.c0, peep, b.dh + at * w,
                        b.dc + at * w, b.dgate + at * 4 * w,
                        t > 0 ? b.dc + prev * w : b.dc0, w, a.acts});
    T* dh_prev = t > 0 ? b.dh + prev * w : (dh0 ? b.dh0 : nullptr);
    if (dh_prev)
      dev.Gemm(false, true, rows, w, 4 * w, T(1), b.dgate + at * 4 * w, weight,
               T(t > 0 ? 1 : 0), dh_prev);
    if (dw && hp)
      dev.Gemm(true, false, w, 4 * w, rows, T(1), hp, b.dgate + at * 4 * w,
               T(1), dw);
  }
  const BatchIndex& ix = s.index;
  if (dx)
    dev.ForEach(l.total * 4 * w, ScatterRows<T>{b.dgate, dx, ix.rows, 4 * w});
  if (dh0) dev.ForEach(l.count * w, ScatterRows<T>{b.dh0, dh0, ix.order, w});
  if (dc0) dev.ForEach(l.count * w, ScatterRows<T>{b.dc0, dc0, ix.order, w});
  if (dbias)
    dev.ForEach(a.bias->numel(),
                LstmBiasGrad<T>{b.dgate, cell, b.c0, dbias, ix, w});
}

}  // namespace ops
}  // namespace fluid
