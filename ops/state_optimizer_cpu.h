// The CPU kernel of every state optimizer (state_optimizer.h): one pass
// over the elements, on the executor's pool when the tensor is large.
#pragma once

#include <array>
#include <string>

#include "ops/op_helpers.h"
#include "ops/state_optimizer.h"

namespace fluid {
namespace ops {

template <typename T, typename F>
void StateOptimizerCpuKernel(const ExecutionContext& ctx) {
  constexpr int K = F::kStates;
  const double lr = F::kUsesLr ? ReadScalar(ctx, "LearningRate") : 1.0;
  const double aux = F::Aux() != nullptr ? ReadScalar(ctx, F::Aux()) : 0.0;
  const F f = F::Make(ctx);
  const StateOptimizerInputs in = ReadStateOptimizerInputs(ctx, F::Slots(), K);
  const T* p = in.param->data<T>();
  const T* g = in.grad->data<T>();
  std::array<const T*, K> s;
  std::array<T*, K> s_out;
  for (int k = 0; k < K; ++k) {
    s[k] = in.states[k]->data<T>();
    s_out[k] = ctx.Output(std::string(F::Slots()[k]) + "Out")
                   ->mutable_data<T>(in.states[k]->shape());
  }
  T* p_out = ctx.Output("ParamOut")->mutable_data<T>(in.param->shape());
  ParallelFor(ctx.device(), in.param->numel(), 8.0 * K,
              [&](int64_t b, int64_t e) {
                T si[K], so[K];
                for (int64_t i = b; i < e; ++i) {
                  for (int k = 0; k < K; ++k) si[k] = s[k][i];
                  f(lr, aux, p[i], g[i], si, &p_out[i], so);
                  for (int k = 0; k < K; ++k) s_out[k][i] = so[k];
                }
              });
}

// The shape inference of the state optimizer F.
template <typename F>
void StateOptimizerShapes(InferShapeContext* ctx) {
  StateOptimizerInferShape(ctx, F::Slots(), F::kStates, F::kUsesLr, F::Aux());
}

}  // namespace ops
}  // namespace fluid
