// CUDA kernel for sparse_weight_decay (schema and rule in
// sparse_weight_decay_op.cc): one thread per value of the listed rows, the
// row ids uploaded from the host.
#include "ops/clip_functors.h"
#include "ops/cuda/sparse_rows.cuh"
#include "ops/sparse_weight_decay_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct DecayRows {
  const int64_t* rows;
  const T* param;
  const T* grad;
  T* out;
  int64_t width;
  T coeff;
  bool l1;
  __device__ void operator()(int64_t i) const {
    const T p = param[rows[i / width] * width + i % width];
    const T decay = (l1 ? SignOf(p) : p) * coeff;
    out[i] = grad[i] + decay;
  }
};

template <typename T>
void SparseDecayKernel(const ExecutionContext& ctx) {
  const SparseDecayArgs a = ReadSparseDecayArgs(ctx);
  Tensor rows;
  DecayRows<T> u;
  u.rows = cuda::Upload(ctx, a.rows, &rows);
  u.param = a.param.data<T>();
  u.grad = a.grad.x.data<T>();
  u.out = a.grad.out->mutable_data<T>(a.grad.x.shape(), ctx.place());
  u.width = a.width;
  u.coeff = static_cast<T>(ctx.Attr<float>("regularization_coeff"));
  u.l1 = a.l1;
  cuda::ForEach(cuda::Dev(ctx), a.grad.x.numel(), u);
  cuda::Dev(ctx).Wait();  // the uploaded rows are freed on return
}

}  // namespace

REGISTER_FLOAT_KERNELS(sparse_weight_decay, kCUDA, SparseDecayKernel);

}  // namespace ops
}  // namespace fluid
