// The CUDA kernel of every state optimizer (state_optimizer.h): one launch
// per parameter; the learning rate and the auxiliary scalar are read on the
// device. Included only by ops/*.cu.
#pragma once

#include <string>

#include "ops/cuda/device_scalar.cuh"
#include "ops/state_optimizer.h"

namespace fluid {
namespace ops {
namespace cuda {

template <typename T, typename F>
struct StateUpdate {
  ScalarIn lr, aux;
  bool has_lr, has_aux;
  F f;
  const T* p;
  const T* g;
  T* p_out;
  const T* s[F::kStates];
  T* s_out[F::kStates];
  __device__ void operator()(int64_t i) const {
    T si[F::kStates], so[F::kStates];
    for (int k = 0; k < F::kStates; ++k) si[k] = s[k][i];
    f(has_lr ? lr.Get() : 1.0, has_aux ? aux.Get() : 0.0, p[i], g[i], si,
      &p_out[i], so);
    for (int k = 0; k < F::kStates; ++k) s_out[k][i] = so[k];
  }
};

template <typename T, typename F>
void StateOptimizerCudaKernel(const ExecutionContext& ctx) {
  StateUpdate<T, F> u;
  u.has_lr = F::kUsesLr;
  u.has_aux = F::Aux() != nullptr;
  if (u.has_lr) u.lr = ScalarInput(ctx, "LearningRate");
  if (u.has_aux) u.aux = ScalarInput(ctx, F::Aux());
  u.f = F::Make(ctx);
  const StateOptimizerInputs in =
      ReadStateOptimizerInputs(ctx, F::Slots(), F::kStates);
  u.p = in.param->data<T>();
  u.g = in.grad->data<T>();
  u.p_out = OutputLike<T>(ctx, "ParamOut", *in.param);
  for (int k = 0; k < F::kStates; ++k) {
    u.s[k] = in.states[k]->data<T>();
    u.s_out[k] =
        OutputLike<T>(ctx, std::string(F::Slots()[k]) + "Out", *in.states[k]);
  }
  ForEach(Dev(ctx), in.param->numel(), u);
}

}  // namespace cuda
}  // namespace ops
}  // namespace fluid
