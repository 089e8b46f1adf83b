// CUDA kernel for arg_max (schema and shape inference in arg_max_op.cc),
// one thread per output element, with the CPU's search (topk_op.h).
#include "ops/concat_split.h"
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/topk_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct ArgMaxFunctor {
  const T* x;
  int64_t* out;
  int64_t dim, inner;
  __device__ void operator()(int64_t i) const {
    const int64_t o = i / inner, in = i % inner;
    out[i] = ArgMaxAlong(x + o * dim * inner + in, dim, inner);
  }
};

template <typename T>
void ArgMaxKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Shape& s = x.shape();
  const int axis = NormalizeAxis(static_cast<int>(ctx.Attr<int64_t>("axis")),
                                 s.rank(), "arg_max", ctx.InputName("X"));
  ArgMaxFunctor<T> f;
  f.dim = s[axis];
  f.inner = s.Product(axis + 1, s.rank());
  FLUID_ENFORCE(f.dim > 0, "arg_max: X '", ctx.InputName("X"), "' ", s,
                " has no elements along axis ", axis);
  f.x = x.data<T>();
  f.out = cuda::OutputData<int64_t>(ctx, "Out");
  cuda::ForEach(cuda::Dev(ctx), s.Product(0, axis) * f.inner, f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(arg_max, kCUDA, ArgMaxKernel);

}  // namespace ops
}  // namespace fluid
