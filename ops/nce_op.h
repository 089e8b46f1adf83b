// What nce's CPU kernels (nce_op.cc) and CUDA kernels (nce_op.cu) share:
// the checked geometry, the negative sampler and the per-sample cost and
// gradient. The samples are drawn on the host by the same compiled code for
// both places (nce_op.cc), so a CPU and a CUDA run of one step train on the
// same classes. Free of Eigen so that nvcc can compile the CUDA kernels that
// include it.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// The sampler attr (Fluid's numbering).
enum NceSamplerKind : int32_t {
  kNceUniform = 0,
  kNceLogUniform = 1,
  kNceCustomDist = 2,
};

// Input [rows, dim]; each row has `num_true` true classes followed by
// `num_neg` sampled ones: SampleLabels and SampleLogits are [rows, width].
struct NceDims {
  int64_t rows = 0;
  int64_t dim = 0;
  int64_t num_true = 0;
  int64_t num_neg = 0;
  int64_t width = 0;    // num_true + num_neg
  int64_t classes = 0;  // num_total_classes
};

// nce's (or nce_grad's) inputs, checked against each other and the attrs at
// run time; the label values are checked by NceSampler::CheckLabels.
NceDims ReadNceDims(const ExecutionContext& ctx);

// Draws the negative classes and gives each class its noise term
// b = num_neg * P(class). A draw is a function of (seed, step, row, slot):
// a counter-based generator (SplitMix64's finaliser, as dropout's mask)
// needs no state between draws, so a run is reproduced by any rerun with
// the same Step, on any rank and either place. `seed` 0 derives one from
// the name of Cost, as uniform_random does, so a job draws the same
// samples on every rank.
class NceSampler {
 public:
  // Reads the sampler attrs, the seed and, for custom_dist, the three
  // tables (host tensors, checked: probabilities in [0, 1], aliases in
  // range). `step` is the value of the Step counter (0 without one).
  NceSampler(const ExecutionContext& ctx, const NceDims& d, const Tensor* probs,
             const Tensor* alias, const Tensor* alias_probs, int64_t step);

  // Each label of `labels` (host, rows x num_true) must lie in
  // [0, classes): an error names the op, Label, the value and its position.
  void CheckLabels(const ExecutionContext& ctx, const int64_t* labels) const;

  // samples[rows, width]: each row's true labels, then its negatives (the
  // custom_neg_classes attr when given, else drawn).
  void Draw(const int64_t* labels, int64_t* samples) const;

  // num_neg * P(c) for each of `n` classes.
  void Noise(const int64_t* samples, int64_t n, std::vector<double>* b) const;

 private:
  int64_t DrawOne(int64_t row, int64_t slot) const;

  NceDims d_;
  int32_t kind_ = kNceUniform;
  uint64_t key_ = 0;
  std::vector<int32_t> custom_neg_;
  std::vector<float> probs_, alias_probs_;
  std::vector<int32_t> alias_;
};

// The Step counter's value, from a host copy of the Step input (or 0 when
// `step` is null).
int64_t NceStep(const ExecutionContext& ctx, const Tensor* step);

// The cost of one sample whose probability under the model is
// o = sigmoid(logit) against noise b: -log(o / (o + b)) for a true class,
// -log(b / (o + b)) for a sampled one, as log1p terms that keep their
// precision when o or b is small.
template <typename T>
FLUID_HOSTDEVICE T NceSampleCost(T o, T b, bool is_true) {
  return is_true ? log1p(b / o) : log1p(o / b);
}

// d(cost) / d(logit) for that sample, times the row's weight w.
template <typename T>
FLUID_HOSTDEVICE T NceSampleGrad(T o, T b, bool is_true, T w) {
  return is_true ? w * (b / (o + b)) * (o - T(1))
                 : w * (o * (T(1) - o) / (o + b));
}

template <typename T>
FLUID_HOSTDEVICE T NceSigmoid(T z) {
  return T(1) / (T(1) + exp(-z));
}

}  // namespace ops
}  // namespace fluid
