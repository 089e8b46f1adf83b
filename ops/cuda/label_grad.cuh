// The gradient kernel that the CUDA kernels of the cross-entropy family
// (cross_entropy_op.cu, softmax_with_cross_entropy_op.cu) share: one thread
// per element of the gradient of the class scores, the op supplying the
// value at an element of a counted row. Included only by ops/*.cu.
#pragma once

#include <string>

#include "ops/cuda/cuda_helpers.cuh"
#include "ops/label_helpers.h"

namespace fluid {
namespace ops {
namespace cuda {

// Element idx = i * classes + j: 0 on a row whose label selects no class
// (ignored, or out of range: the labels are not checked on the device),
// else g(i, idx, j == label[i]).
template <typename T, typename G>
struct LabelGrad {
  const int64_t* label;
  int64_t classes, ignore;
  G g;
  T* dscores;
  __device__ void operator()(int64_t idx) const {
    const int64_t i = idx / classes, j = idx - i * classes;
    const int64_t l = label[i];
    dscores[idx] =
        LabelSelectsClass(l, classes, ignore) ? g(i, idx, j == l) : T(0);
  }
};

// Writes output `dscores_slot` (when wanted), the gradient of the scores in
// input `scores_slot`, through G<T>{scores, dout}: `dout` is the gradient
// of the per-row output, input `dout_slot`.
template <typename T, template <typename> class G>
void LabelGradKernel(const ExecutionContext& ctx,
                     const std::string& dscores_slot,
                     const std::string& scores_slot,
                     const std::string& dout_slot) {
  Tensor* dscores = ctx.Output(dscores_slot);
  if (dscores == nullptr) return;
  const LabelArgs a = ReadLabelArgs(ctx, scores_slot);
  T* d = dscores->mutable_data<T>(ctx.place());
  const G<T> g{a.scores.data<T>(), ctx.Input(dout_slot).data<T>()};
  ForEach(
      Dev(ctx), a.rows * a.classes,
      LabelGrad<T, G<T>>{a.label.data<int64_t>(), a.classes, a.ignore, g, d});
}

}  // namespace cuda
}  // namespace ops
}  // namespace fluid
