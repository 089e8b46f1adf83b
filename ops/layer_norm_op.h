// What layer_norm's CPU kernels (layer_norm_op.cc) and CUDA kernels
// (layer_norm_op.cu) read and check on the host, defined once in
// layer_norm_op.cc. Free of Eigen so that nvcc can compile the CUDA kernels
// that include it.
#pragma once

#include <cstdint>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// X viewed as [rows, cols]: rows the product of X's dims before
// begin_norm_axis, cols the product of the rest (the normalised dims).
struct LayerNormDims {
  int64_t rows = 0;
  int64_t cols = 0;
};

// layer_norm's inputs, checked: Scale and Bias (null when absent) hold
// `cols` elements.
struct LayerNormArgs {
  const Tensor& x;
  const Tensor* scale;
  const Tensor* bias;
  LayerNormDims dims;
  float epsilon;
};

LayerNormArgs ReadLayerNormArgs(const ExecutionContext& ctx);

// layer_norm_grad's inputs, checked: X, Scale (null when absent), the
// saved Mean and Variance ([rows]) and Y@GRAD (shaped like X).
struct LayerNormGradArgs {
  const Tensor& x;
  const Tensor* scale;
  const Tensor& mean;
  const Tensor& variance;
  const Tensor& dy;
  LayerNormDims dims;
  float epsilon;
};

LayerNormGradArgs ReadLayerNormGradArgs(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
