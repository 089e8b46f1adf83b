// The linear-chain CRF's math, written once for the CPU and CUDA kernels of
// linear_chain_crf (the negative log-likelihood and its gradient) and
// crf_decoding (Viterbi). One call handles one sequence; pointers are
// already offset to its first row. D tags; the transition weights w are
// [D + 2, D] as Fluid lays them out: row 0 the start weights, row 1 the
// end weights, row 2 + i the weights from tag i to each tag.
//
// The forward and backward vectors are kept as logarithms, so no product
// of many probabilities underflows. Each step's log-sum-exps are sums of
// products of max-shifted exponentials (D exponentials a step rather than
// D^2), no exponential exceeding 1; where such a sum underflows, the exact
// log-sum-exp is taken instead. Free of Eigen so that nvcc compiles it.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// The weight of the path step i -> j (tags), of starting at j, of ending
// at j. The recursions also read e and cmax (CrfColumnExps; not needed by
// Viterbi): cmax[j] the largest weight of a step into j, e[i * D + j] =
// exp(step(i, j) - cmax[j]), in (0, 1].
template <typename T>
struct CrfWeights {
  const T* w;
  int64_t d;
  const T* e = nullptr;
  const T* cmax = nullptr;
  FLUID_HOSTDEVICE T Start(int64_t j) const { return w[j]; }
  FLUID_HOSTDEVICE T End(int64_t j) const { return w[d + j]; }
  FLUID_HOSTDEVICE T Step(int64_t i, int64_t j) const {
    return w[(2 + i) * d + j];
  }
};

// Column j of CrfWeights' e and cmax.
template <typename T>
FLUID_HOSTDEVICE void CrfColumnExps(const T* w, int64_t d, int64_t j, T* e,
                                    T* cmax) {
  using std::exp;
  const CrfWeights<T> cw{w, d};
  T m = cw.Step(0, j);
  for (int64_t i = 1; i < d; ++i) m = cw.Step(i, j) > m ? cw.Step(i, j) : m;
  cmax[j] = m;
  for (int64_t i = 0; i < d; ++i) e[i * d + j] = exp(cw.Step(i, j) - m);
}

// Below this a sum of products of shifted exponentials may have lost
// precision to underflow (its largest term near the smallest normal
// number): the recursions then take the exact log-sum-exp instead.
FLUID_HOSTDEVICE float CrfTiny(float) { return 1e-30f; }
FLUID_HOSTDEVICE double CrfTiny(double) { return 1e-290; }

FLUID_HOSTDEVICE bool CrfLabelValid(int64_t label, int64_t d) {
  return label >= 0 && label < d;
}

// log(sum_j exp(v[j])) over v[0..n), the largest term factored out.
template <typename T>
FLUID_HOSTDEVICE T CrfLogSumExp(const T* v, int64_t n) {
  using std::exp;
  using std::log;
  T m = v[0];
  for (int64_t j = 1; j < n; ++j) m = v[j] > m ? v[j] : m;
  if (!(m > -INFINITY)) return m;  // every term exp(-inf) (or NaN)
  T s = 0;
  for (int64_t j = 0; j < n; ++j) s += exp(v[j] - m);
  return m + log(s);
}

// The log forward vector of step t > 0, from step t - 1's (prev) and the
// emission row x: cur[j] = x[j] + log sum_i exp(prev[i] + step(i, j)). As
// prev[i] + step(i, j) = m + cmax[j] + log(p[i] e[i][j]) with p[i] =
// exp(prev[i] - m) (m = max prev), the sum is D products per tag and D
// exponentials per step; a column whose sum underflows takes the exact
// log-sum-exp. p: D scratch.
template <typename T>
FLUID_HOSTDEVICE void CrfForwardStep(const CrfWeights<T>& w, const T* prev,
                                     const T* x, T* cur, T* p) {
  using std::exp;
  using std::log;
  const int64_t d = w.d;
  T m = prev[0];
  for (int64_t i = 1; i < d; ++i) m = prev[i] > m ? prev[i] : m;
  for (int64_t i = 0; i < d; ++i) p[i] = exp(prev[i] - m);
  for (int64_t j = 0; j < d; ++j) {
    T s = 0;
    for (int64_t i = 0; i < d; ++i) s += p[i] * w.e[i * d + j];
    if (s > CrfTiny(T(0))) {
      cur[j] = x[j] + m + w.cmax[j] + log(s);
      continue;
    }
    T mx = prev[0] + w.Step(0, j);
    for (int64_t i = 1; i < d; ++i) {
      const T v = prev[i] + w.Step(i, j);
      mx = v > mx ? v : mx;
    }
    T exact = 0;
    for (int64_t i = 0; i < d; ++i) exact += exp(prev[i] + w.Step(i, j) - mx);
    cur[j] = x[j] + mx + log(exact);
  }
}

// The score of the labelled path; NaN when a label lies outside [0, D)
// (the CPU kernel refuses such labels before; CUDA cannot stop).
template <typename T>
FLUID_HOSTDEVICE T CrfPathScore(const CrfWeights<T>& w, const T* x,
                                const int64_t* label, int64_t len) {
  for (int64_t t = 0; t < len; ++t)
    if (!CrfLabelValid(label[t], w.d)) return NAN;
  T score = w.Start(label[0]) + x[label[0]] + w.End(label[len - 1]);
  for (int64_t t = 1; t < len; ++t)
    score += x[t * w.d + label[t]] + w.Step(label[t - 1], label[t]);
  return score;
}

// One sequence of len rows: returns -log P(label | x) (0 for an empty
// sequence) and writes Alpha (each row the forward vector normalised to sum
// to 1, as Fluid's op leaves it) and EmissionExps (exp(x - the row's max)).
// scratch: D values.
template <typename T>
FLUID_HOSTDEVICE T CrfForward(const CrfWeights<T>& w, const T* x,
                              const int64_t* label, int64_t len, T* alpha,
                              T* emission_exps, T* scratch) {
  using std::exp;
  if (len <= 0) return 0;
  const int64_t d = w.d;
  // alpha holds the log forward vectors until they are normalised below.
  for (int64_t j = 0; j < d; ++j) alpha[j] = w.Start(j) + x[j];
  for (int64_t t = 1; t < len; ++t)
    CrfForwardStep(w, alpha + (t - 1) * d, x + t * d, alpha + t * d, scratch);
  const T* last = alpha + (len - 1) * d;
  T m = last[0] + w.End(0);
  for (int64_t j = 1; j < d; ++j)
    m = last[j] + w.End(j) > m ? last[j] + w.End(j) : m;
  T s = 0;
  for (int64_t j = 0; j < d; ++j) s += exp(last[j] + w.End(j) - m);
  using std::log;
  const T log_z = m + log(s);
  const T nll = log_z - CrfPathScore(w, x, label, len);
  for (int64_t t = 0; t < len; ++t) {
    T* a = alpha + t * d;
    const T norm = CrfLogSumExp(a, d);
    for (int64_t j = 0; j < d; ++j) a[j] = exp(a[j] - norm);
    const T* xr = x + t * d;
    T mx = xr[0];
    for (int64_t j = 1; j < d; ++j) mx = xr[j] > mx ? xr[j] : mx;
    for (int64_t j = 0; j < d; ++j) emission_exps[t * d + j] = exp(xr[j] - mx);
  }
  return nll;
}

// The log backward vectors of one sequence into beta [len, D]:
// beta[len-1][j] = end(j), beta[t][i] = log sum_j exp(step(i, j) +
// x[t+1][j] + beta[t+1][j]), as products of shifted exponentials (q: D
// scratch) with the exact log-sum-exp where a sum underflows.
template <typename T>
FLUID_HOSTDEVICE void CrfBackwardVectors(const CrfWeights<T>& w, const T* x,
                                         int64_t len, T* beta, T* q) {
  using std::exp;
  using std::log;
  const int64_t d = w.d;
  for (int64_t j = 0; j < d; ++j) beta[(len - 1) * d + j] = w.End(j);
  for (int64_t t = len - 2; t >= 0; --t) {
    const T* next = beta + (t + 1) * d;
    const T* xn = x + (t + 1) * d;
    T m = xn[0] + next[0] + w.cmax[0];
    for (int64_t j = 1; j < d; ++j) {
      const T v = xn[j] + next[j] + w.cmax[j];
      m = v > m ? v : m;
    }
    for (int64_t j = 0; j < d; ++j) q[j] = exp(xn[j] + next[j] + w.cmax[j] - m);
    for (int64_t i = 0; i < d; ++i) {
      T s = 0;
      for (int64_t j = 0; j < d; ++j) s += w.e[i * d + j] * q[j];
      if (s > CrfTiny(T(0))) {
        beta[t * d + i] = m + log(s);
        continue;
      }
      T mx = w.Step(i, 0) + xn[0] + next[0];
      for (int64_t j = 1; j < d; ++j) {
        const T v = w.Step(i, j) + xn[j] + next[j];
        mx = v > mx ? v : mx;
      }
      T exact = 0;
      for (int64_t j = 0; j < d; ++j)
        exact += exp(w.Step(i, j) + xn[j] + next[j] - mx);
      beta[t * d + i] = mx + log(exact);
    }
  }
}

// g times P(i at t - 1, j at t) summed into dw's transition rows, for step
// t, from the log forward vector la of step t - 1 and the log backward
// vector b of step t: P = q[i] e[i][j] exp(r[j]) with q[i] = exp(la[i] -
// M) (M = max la; q: D scratch) and r[j] = M + cmax[j] + x[t][j] + b[j] -
// n_{t-1}; a column whose exp(r[j]) is too large for the product to keep
// its precision takes each term's exponential whole.
template <typename T>
FLUID_HOSTDEVICE void CrfPairMarginals(const CrfWeights<T>& w, const T* la,
                                       const T* xt, const T* b, T n_prev, T g,
                                       T* q, T* dw) {
  using std::exp;
  const int64_t d = w.d;
  T m = la[0];
  for (int64_t i = 1; i < d; ++i) m = la[i] > m ? la[i] : m;
  for (int64_t i = 0; i < d; ++i) q[i] = exp(la[i] - m);
  for (int64_t j = 0; j < d; ++j) {
    const T er = exp(m + w.cmax[j] + xt[j] + b[j] - n_prev);
    if (er * CrfTiny(T(0)) < T(1)) {
      const T ge = g * er;
      for (int64_t i = 0; i < d; ++i)
        dw[(2 + i) * d + j] += ge * q[i] * w.e[i * d + j];
      continue;
    }
    for (int64_t i = 0; i < d; ++i)
      dw[(2 + i) * d + j] +=
          g * exp(la[i] - n_prev + w.Step(i, j) + xt[j] + b[j]);
  }
}

// The gradient of g * CrfForward's value for one sequence: dx [len, D]
// (also the scratch of the log backward vectors) and this sequence's share
// of the transition gradient, dw [(D + 2) * D] (overwritten). la: [len, D]
// scratch for the log forward vectors, recomputed here rather than read
// from Alpha (a float32 Alpha underflows where tags' forward scores differ
// by more than ~100, and the backward vector may make those tags likely);
// scratch: D values. With a = exp(la), b = exp(log backward vector),
// P(tag j at t) = a[t][j] b[t][j] / n_t and P(i at t - 1, j at t) =
// a[t-1][i] exp(step(i, j) + x[t][j]) b[t][j] / n_{t-1}, where n_t =
// sum_j a[t][j] b[t][j]; the gradient is g times the expected counts less
// the labelled path's counts.
template <typename T>
FLUID_HOSTDEVICE void CrfBackward(const CrfWeights<T>& w, const T* x,
                                  const int64_t* label, int64_t len, T g, T* la,
                                  T* dx, T* dw, T* scratch) {
  using std::exp;
  using std::log;
  const int64_t d = w.d;
  for (int64_t k = 0; k < (d + 2) * d; ++k) dw[k] = 0;
  if (len <= 0) return;
  for (int64_t j = 0; j < d; ++j) la[j] = w.Start(j) + x[j];
  for (int64_t t = 1; t < len; ++t)
    CrfForwardStep(w, la + (t - 1) * d, x + t * d, la + t * d, scratch);
  CrfBackwardVectors(w, x, len, dx, scratch);
  T n_prev = 0;
  for (int64_t t = 0; t < len; ++t) {
    const T* a = la + t * d;
    T* b = dx + t * d;  // the log backward vector of step t, then dx
    if (t > 0) {
      CrfPairMarginals(w, la + (t - 1) * d, x + t * d, b, n_prev, g, scratch,
                       dw);
      if (CrfLabelValid(label[t - 1], d) && CrfLabelValid(label[t], d))
        dw[(2 + label[t - 1]) * d + label[t]] -= g;
    }
    T m = a[0] + b[0];
    for (int64_t j = 1; j < d; ++j) m = a[j] + b[j] > m ? a[j] + b[j] : m;
    T s = 0;
    for (int64_t j = 0; j < d; ++j) s += exp(a[j] + b[j] - m);
    const T n = m + log(s);
    for (int64_t j = 0; j < d; ++j) b[j] = g * exp(a[j] + b[j] - n);
    if (CrfLabelValid(label[t], d)) b[label[t]] -= g;
    n_prev = n;
  }
  for (int64_t j = 0; j < d; ++j) {
    dw[j] = dx[j];
    dw[d + j] = dx[(len - 1) * d + j];
  }
}

// The most likely path of one sequence (Viterbi) into path[0..len): score
// holds 2 * D scratch, back len * D. Ties go to the lowest tag.
template <typename T>
FLUID_HOSTDEVICE void CrfViterbi(const CrfWeights<T>& w, const T* x,
                                 int64_t len, T* score, int32_t* back,
                                 int64_t* path) {
  if (len <= 0) return;
  const int64_t d = w.d;
  T* prev = score;
  T* cur = score + d;
  for (int64_t j = 0; j < d; ++j) prev[j] = w.Start(j) + x[j];
  for (int64_t t = 1; t < len; ++t) {
    for (int64_t j = 0; j < d; ++j) {
      int32_t best = 0;
      T best_v = prev[0] + w.Step(0, j);
      for (int64_t i = 1; i < d; ++i) {
        const T v = prev[i] + w.Step(i, j);
        if (v > best_v) {
          best_v = v;
          best = static_cast<int32_t>(i);
        }
      }
      back[t * d + j] = best;
      cur[j] = best_v + x[t * d + j];
    }
    T* tmp = prev;
    prev = cur;
    cur = tmp;
  }
  int64_t best = 0;
  T best_v = prev[0] + w.End(0);
  for (int64_t j = 1; j < d; ++j) {
    if (prev[j] + w.End(j) > best_v) {
      best_v = prev[j] + w.End(j);
      best = j;
    }
  }
  path[len - 1] = best;
  for (int64_t t = len - 1; t > 0; --t) path[t - 1] = back[t * d + path[t]];
}

// Where the sequences of a CRF op's batch lie, as pairs {begin row,
// length}: from the level-1 LoD of a [rows, ...] input, or in padded mode
// (a [N, S, ...] input with Length) sequence i at rows [i * S, i * S +
// Length[i]). Host code: a bad length is an error naming `what`.
std::vector<int64_t> SpansFromLoD(const std::vector<int64_t>& lod);
std::vector<int64_t> SpansFromLengths(const std::vector<int64_t>& lengths,
                                      int64_t max_len, const std::string& what);
// The spans of `emission`'s sequences: its LoD, or with `length` (host
// int64 values, or nullptr) padded mode. Errors name `op`.
std::vector<int64_t> CrfSpans(const Tensor& emission, const Tensor* length,
                              const std::string& op);
// Shape inference of the CRF ops' inputs (Emission, Transition, Label,
// Length; Label optional unless `label_required`): every shape, dtype and
// the LoD checked, errors naming the op, the slot and what is allowed.
// Returns D, the number of tags.
int64_t CrfInferInputs(InferShapeContext* ctx, bool label_required);
// CUDA builds (linear_chain_crf_op.cu): a host copy of the int64 device
// input `slot` (lengths the kernels lay sequences out by), or an empty
// tensor when the op has no such input.
Tensor HostInt64Input(const ExecutionContext& ctx, const std::string& slot);

}  // namespace ops
}  // namespace fluid
