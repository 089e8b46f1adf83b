// CUDA kernels for squared_l2_norm and its gradient (schemas in
// squared_l2_norm_op.cc): the sum in double, in a fixed order; a sparse
// X's values are summed (ops/sparse_values.h).
#include "ops/cuda/squared_norm.cuh"
#include "ops/sparse_values.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct StoreAs {
  const double* from;
  T* to;
  __device__ void operator()(int64_t) const { to[0] = static_cast<T>(*from); }
};

template <typename T>
struct TwiceScaled {
  const T* dout;
  const T* x;
  T* dx;
  __device__ void operator()(int64_t i) const { dx[i] = T(2) * dout[0] * x[i]; }
};

template <typename T>
void SquaredL2NormKernel(const ExecutionContext& ctx) {
  const Tensor& x = DistinctRowsOrTensor(ctx, "X");
  const auto& dev = cuda::Dev(ctx);
  const T* xs[1] = {x.data<T>()};
  auto* scratch = static_cast<double*>(
      dev.Workspace(sizeof(double) * cuda::SquaredNormScratch(x.numel(), 1)));
  StoreAs<T> store;
  store.from = cuda::SquaredNorms<T>(dev, xs, 1, x.numel(), scratch);
  store.to = ctx.Output("Out")->mutable_data<T>(Shape{1}, ctx.place());
  cuda::ForEach(dev, 1, store);
}

template <typename T>
void SquaredL2NormGradKernel(const ExecutionContext& ctx) {
  if (ctx.Output(GradSlot("X")) == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.numel() == 1, ctx.type(), ": Out@GRAD '",
                ctx.InputName(GradSlot("Out")),
                "' must hold one element, has shape ", dout.shape());
  TwiceScaled<T> u;
  u.dout = dout.data<T>();
  u.x = x.data<T>();
  u.dx = cuda::OutputLike<T>(ctx, GradSlot("X"), x);
  cuda::ForEach(cuda::Dev(ctx), x.numel(), u);
}

}  // namespace

REGISTER_FLOAT_KERNELS(squared_l2_norm, kCUDA, SquaredL2NormKernel);
REGISTER_FLOAT_KERNELS(squared_l2_norm_grad, kCUDA, SquaredL2NormGradKernel);

}  // namespace ops
}  // namespace fluid
