// One-element inputs and outputs (a learning rate, a beta power) that stay
// on the device and are float32 or float64 whatever the kernel's dtype. The
// kernels read them through these handles, so nothing waits for a copy to
// the host. Included only by ops/*.cu.
#pragma once

#include <string>

#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace cuda {

// Exactly one of f and d is set.
struct ScalarIn {
  const float* f = nullptr;
  const double* d = nullptr;
  __device__ double Get() const {
    return f != nullptr ? static_cast<double>(*f) : *d;
  }
};

struct ScalarOut {
  float* f = nullptr;
  double* d = nullptr;
  __device__ void Set(double v) const {
    if (f != nullptr) {
      *f = static_cast<float>(v);
    } else {
      *d = v;
    }
  }
};

// The handle of input `slot`, with the checks (one element, float32 or
// float64) and messages of ReadScalar in op_helpers.h.
inline ScalarIn ScalarInput(const ExecutionContext& ctx,
                            const std::string& slot) {
  const Tensor& t = ctx.Input(slot);
  FLUID_ENFORCE(t.numel() == 1, slot, " '", ctx.InputName(slot),
                "' must hold one element, has shape ", t.shape());
  ScalarIn s;
  switch (t.dtype()) {
    case DataType::kFloat32:
      s.f = t.data<float>();
      break;
    case DataType::kFloat64:
      s.d = t.data<double>();
      break;
    default:
      FLUID_THROW(ErrorCode::kInvalidArgument, slot, " '", ctx.InputName(slot),
                  "' must be float32 or float64, is ", DataTypeName(t.dtype()));
  }
  return s;
}

// Output `slot` shaped like and in the dtype of `like` (the input it
// replaces), allocated on the kernel's device.
inline ScalarOut ScalarOutput(const ExecutionContext& ctx,
                              const std::string& slot, const Tensor& like) {
  Tensor* t = ctx.Output(slot);
  t->Resize(like.shape());
  ScalarOut s;
  if (like.dtype() == DataType::kFloat64) {
    s.d = t->mutable_data<double>(ctx.place());
  } else {
    s.f = t->mutable_data<float>(ctx.place());
  }
  return s;
}

}  // namespace cuda
}  // namespace ops
}  // namespace fluid
