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
//
// For 16-bit T (bfloat16, float16) the drivers compute in float32 (C =
// ComputeType<T>): Input, Weight, H0, Hidden and Cell are T; Bias, C0 and
// the saved BatchGate and BatchCellPreAct are float32, as are the cell
// state, the gates and every gradient summed across steps. Each step's GEMM
// multiplies the hidden rows (T) by the weight (T), summed in float32 into
// the float32 gates; backward, the gates' gradient is rounded to T as the
// GEMMs' operand, and the weight's gradient is one GEMM over all steps,
// rounded once.
#pragma once

#include <string>
#include <type_traits>

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

// One step's rows, element e = (row k, column j) of [rows, D], computed in
// T; the hidden state stored as H.
template <typename T, typename H = T>
struct LstmStep {
  T* gate;          // [rows, 4D]: pre-activations in, activations out
  const T* c_prev;  // [rows, D], null: zeros
  const T* peep;    // [3D] W_ic, W_fc, W_oc, or null
  T* cell;          // [rows, D]
  H* hidden;        // [rows, D]
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
    hidden[e] = Convert<H>(o * Activate(acts.cell, c));
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

// The forward driver's scratch: the batch-ordered hidden state (the GEMMs'
// operand, T) and H0 (T) and C0 (C) sorted, null when absent.
template <typename T>
struct LstmForwardBuffers {
  T* hb;
  T* h0;
  ComputeType<T>* c0;
};

template <typename T>
LstmForwardBuffers<T> CarveLstmForward(ScratchCarver* s, const LstmArgs& a) {
  const int64_t w = a.width, n = a.layout->count;
  LstmForwardBuffers<T> b;
  b.hb = s->Take<T>(a.layout->total * w);
  b.h0 = a.h0 ? s->Take<T>(n * w) : nullptr;
  b.c0 = a.c0 ? s->Take<ComputeType<T>>(n * w) : nullptr;
  return b;
}

template <typename T, typename Device>
void LstmForward(const Device& dev) {
  using C = ComputeType<T>;
  const LstmArgs a = ReadLstmArgs(dev.ctx());
  const BatchLayout& l = *a.layout;
  const int64_t w = a.width, n = l.count;
  T* hidden = dev.template Out<T>("Hidden");
  T* cell_out = dev.template Out<T>("Cell");
  C* gate = dev.template Out<C>("BatchGate");
  C* cell = dev.template Out<C>("BatchCellPreAct");
  if (l.total == 0) return;
  ScratchCarver sizing;
  CarveLstmForward<T>(&sizing, a);
  const RecurrentScratch<float> s =
      dev.template Reserve<float>(l, sizing.floats());
  ScratchCarver carver(s.data);
  const LstmForwardBuffers<T> b = CarveLstmForward<T>(&carver, a);
  const C* bias = a.bias->data<C>();
  dev.ForEach(l.total * 4 * w, GatherRows<C, T>{a.x->data<T>(), gate,
                                                s.index.rows, bias, 4 * w});
  if (b.h0)
    dev.ForEach(
        n * w, GatherRows<T>{a.h0->data<T>(), b.h0, s.index.order, nullptr, w});
  if (b.c0)
    dev.ForEach(
        n * w, GatherRows<C>{a.c0->data<C>(), b.c0, s.index.order, nullptr, w});
  const T* weight = a.weight->data<T>();
  dev.SetWeight(weight, w * 4 * w);
  for (int64_t t = 0; t < l.steps; ++t) {
    const int64_t at = l.Offset(t), rows = l.Rows(t);
    const T* hp = t > 0 ? b.hb + l.Offset(t - 1) * w : b.h0;
    const C* cp = t > 0 ? cell + l.Offset(t - 1) * w : b.c0;
    if (hp)
      dev.Gemm(false, false, rows, 4 * w, w, C(1), hp, weight, C(1),
               gate + at * 4 * w);
    dev.ForEach(rows * w,
                LstmStep<C, T>{gate + at * 4 * w, cp,
                               a.peepholes ? bias + 4 * w : nullptr,
                               cell + at * w, b.hb + at * w, w, a.acts});
  }
  dev.ForEach(l.total * w, ScatterRows<T>{b.hb, hidden, s.index.rows, w});
  dev.ForEach(l.total * w, ScatterRows<T, C>{cell, cell_out, s.index.rows, w});
}

// The backward driver's scratch: the batch-ordered hidden state and every
// row's previous one (T, the weight gradient's operands; null without
// Weight@GRAD), the gradients of hidden, cell and gates (C), the gates'
// also in T as the GEMMs' operand (the same buffer when T is C), and H0, C0
// and their gradients sorted.
template <typename T>
struct LstmGradBuffers {
  T *hb, *hprev, *dgate_t, *h0;
  ComputeType<T>*dh, *dc, *dgate, *c0, *dh0, *dc0;
};

template <typename T>
LstmGradBuffers<T> CarveLstmGrad(ScratchCarver* s, const LstmArgs& a,
                                 bool weight_grad) {
  using C = ComputeType<T>;
  const int64_t w = a.width, total = a.layout->total, n = a.layout->count;
  LstmGradBuffers<T> b;
  b.hb = weight_grad ? s->Take<T>(total * w) : nullptr;
  b.hprev = weight_grad ? s->Take<T>(total * w) : nullptr;
  b.dh = s->Take<C>(total * w);
  b.dc = s->Take<C>(total * w);
  b.dgate = s->Take<C>(total * 4 * w);
  if constexpr (std::is_same<T, C>::value) {
    b.dgate_t = b.dgate;
  } else {
    b.dgate_t = s->Take<T>(total * 4 * w);
  }
  b.h0 = a.h0 ? s->Take<T>(n * w) : nullptr;
  b.c0 = a.c0 ? s->Take<C>(n * w) : nullptr;
  b.dh0 = s->Take<C>(n * w);
  b.dc0 = s->Take<C>(n * w);
  return b;
}

// Carves the scratch and gathers what the steps read into batch order.
template <typename T, typename Device>
LstmGradBuffers<T> LstmGradGather(const Device& dev, const LstmArgs& a,
                                  const RecurrentScratch<float>& s,
                                  bool weight_grad) {
  using C = ComputeType<T>;
  const ExecutionContext& ctx = dev.ctx();
  const int64_t w = a.width, total = a.layout->total, n = a.layout->count;
  ScratchCarver carver(s.data);
  const LstmGradBuffers<T> b = CarveLstmGrad<T>(&carver, a, weight_grad);
  const int64_t* rows = s.index.rows;
  if (b.hb)
    dev.ForEach(total * w, GatherRows<T>{ctx.Input("Hidden").data<T>(), b.hb,
                                         rows, nullptr, w});
  dev.ForEach(total * w,
              GatherRows<C, T>{ctx.Input(GradSlot("Hidden")).data<T>(), b.dh,
                               rows, nullptr, w});
  if (ctx.HasInput(GradSlot("Cell"))) {
    dev.ForEach(total * w,
                GatherRows<C, T>{ctx.Input(GradSlot("Cell")).data<T>(), b.dc,
                                 rows, nullptr, w});
  } else {
    dev.Zero(b.dc, total * w);
  }
  if (b.h0)
    dev.ForEach(
        n * w, GatherRows<T>{a.h0->data<T>(), b.h0, s.index.order, nullptr, w});
  if (b.c0)
    dev.ForEach(
        n * w, GatherRows<C>{a.c0->data<C>(), b.c0, s.index.order, nullptr, w});
  dev.Zero(b.dc0, n * w);
  return b;
}

// Writes the op's gradients from the batch-ordered ones.
template <typename T, typename Device>
void LstmGradScatter(const Device& dev, const LstmArgs& a,
                     const LstmGradBuffers<T>& b, const BatchIndex& ix) {
  using C = ComputeType<T>;
  const int64_t w = a.width, total = a.layout->total, n = a.layout->count;
  if (T* dx = dev.template Out<T>(GradSlot("Input")))
    dev.ForEach(total * 4 * w, ScatterRows<T, C>{b.dgate, dx, ix.rows, 4 * w});
  if (T* dh0 = a.h0 ? dev.template Out<T>(GradSlot("H0")) : nullptr)
    dev.ForEach(n * w, ScatterRows<T, C>{b.dh0, dh0, ix.order, w});
  if (C* dc0 = a.c0 ? dev.template Out<C>(GradSlot("C0")) : nullptr)
    dev.ForEach(n * w, ScatterRows<C>{b.dc0, dc0, ix.order, w});
  const Tensor& cell = dev.ctx().Input("BatchCellPreAct");
  if (C* dbias = dev.template Out<C>(GradSlot("Bias")))
    dev.ForEach(a.bias->numel(),
                LstmBiasGrad<C>{b.dgate, cell.data<C>(), b.c0, dbias, ix, w});
}

template <typename T, typename Device>
void LstmBackward(const Device& dev) {
  using C = ComputeType<T>;
  const LstmArgs a = ReadLstmArgs(dev.ctx());
  const BatchLayout& l = *a.layout;
  const int64_t w = a.width;
  T* dw = dev.template Out<T>(GradSlot("Weight"));
  if (l.total == 0) {
    if (dw) dev.Zero(dw, w * 4 * w);
    if (C* dbias = dev.template Out<C>(GradSlot("Bias")))
      dev.Zero(dbias, a.bias->numel());
    return;
  }
  ScratchCarver sizing;
  CarveLstmGrad<T>(&sizing, a, dw != nullptr);
  const RecurrentScratch<float> s =
      dev.template Reserve<float>(l, sizing.floats());
  const LstmGradBuffers<T> b = LstmGradGather<T>(dev, a, s, dw != nullptr);
  const C* gate = dev.ctx().Input("BatchGate").template data<C>();
  const C* cell = dev.ctx().Input("BatchCellPreAct").template data<C>();
  const T* weight = a.weight->data<T>();
  dev.SetWeight(weight, w * 4 * w);
  const C* peep = a.peepholes ? a.bias->data<C>() + 4 * w : nullptr;
  const bool dh0 = a.h0 && dev.ctx().Output(GradSlot("H0")) != nullptr;
  for (int64_t t = l.steps - 1; t >= 0; --t) {
    const int64_t at = l.Offset(t), rows = l.Rows(t);
    const int64_t prev = t > 0 ? l.Offset(t - 1) : 0;
    dev.ForEach(
        rows * w,
        LstmGradStep<C>{gate + at * 4 * w, cell + at * w,
                        t > 0 ? cell + prev * w : b.c0, peep, b.dh + at * w,
                        b.dc + at * w, b.dgate + at * 4 * w,
                        t > 0 ? b.dc + prev * w : b.dc0, w, a.acts});
    if constexpr (!std::is_same<T, C>::value)
      dev.ForEach(rows * 4 * w, ConvertValues<T, C>{b.dgate + at * 4 * w,
                                                    b.dgate_t + at * 4 * w});
    C* dh_prev = t > 0 ? b.dh + prev * w : (dh0 ? b.dh0 : nullptr);
    if (dh_prev)
      dev.Gemm(false, true, rows, w, 4 * w, C(1), b.dgate_t + at * 4 * w,
               weight, C(t > 0 ? 1 : 0), dh_prev);
  }
  if (dw) {
    dev.ForEach(l.total * w, PreviousRows<T>{b.hb, b.h0, b.hprev, s.index, w});
    dev.Gemm(true, false, w, 4 * w, l.total, C(1), b.hprev, b.dgate_t, C(0),
             dw);
  }
  LstmGradScatter<T>(dev, a, b, s.index);
}

}  // namespace ops
}  // namespace fluid
