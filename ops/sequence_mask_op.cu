// CUDA kernel for sequence_mask (schema in sequence_mask_op.cc): one
// thread per element of Y. With maxlen -1 the lengths are read back to the
// host first, to size Y.
#include <algorithm>
#include <vector>

#include "ops/cuda/cuda_helpers.cuh"
#include "ops/dtype_visit.h"

namespace fluid {
namespace ops {
namespace {

template <typename T, typename Out>
struct MaskFunctor {
  const T* len;
  int64_t maxlen;
  Out* out;
  __device__ void operator()(int64_t k) const {
    out[k] = static_cast<Out>(k % maxlen < len[k / maxlen] ? 1 : 0);
  }
};

template <typename T>
int64_t LargestLength(const Tensor& x) {
  std::vector<T> host(static_cast<size_t>(x.numel()));
  if (host.empty()) return 0;
  FLUID_CUDA_CHECK(cudaMemcpy(host.data(), x.data<T>(), sizeof(T) * host.size(),
                              cudaMemcpyDeviceToHost));
  return static_cast<int64_t>(*std::max_element(host.begin(), host.end()));
}

template <typename T>
void SequenceMaskKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  int64_t maxlen = ctx.Attr<int32_t>("maxlen");
  if (maxlen < 0) maxlen = LargestLength<T>(x);
  Shape shape = x.shape();
  shape.push_back(maxlen);
  Tensor* y = ctx.Output("Y");
  y->Resize(shape);
  const DataType dtype =
      DtypeAttr(ctx.Attr<int32_t>("out_dtype"), "sequence_mask", "out_dtype");
  VisitDtype(dtype, [&](auto o) {
    using Out = decltype(o);
    MaskFunctor<T, Out> f;
    f.len = x.data<T>();
    f.maxlen = maxlen;
    f.out = y->mutable_data<Out>(ctx.place());
    if (y->numel() > 0) cuda::ForEach(cuda::Dev(ctx), y->numel(), f);
  });
}

}  // namespace

REGISTER_KERNEL(sequence_mask, kCUDA, int32_t, SequenceMaskKernel<int32_t>);
REGISTER_KERNEL(sequence_mask, kCUDA, int64_t, SequenceMaskKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
