// CUDA kernel for sequence_erase (schema in sequence_erase_op.cc): Out's
// size and LoD depend on the tokens' values, so the tokens are read back to
// the host, erased there (the CPU kernel's EraseTokens) and the kept ones
// copied to the device.
#include <vector>

#include "ops/cuda/cuda_helpers.cuh"
#include "ops/sequence_erase_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void SequenceEraseKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  std::vector<T> host(static_cast<size_t>(x.numel()));
  if (!host.empty()) {
    FLUID_CUDA_CHECK(cudaMemcpy(host.data(), x.data<T>(),
                                sizeof(T) * host.size(),
                                cudaMemcpyDeviceToHost));
  }
  std::vector<T> kept(host.size());
  LoD lod;
  const int64_t n =
      EraseTokens(host.data(), x.lod(),
                  ctx.Attr<std::vector<int32_t>>("tokens"), kept.data(), &lod);
  Tensor* out = ctx.Output("Out");
  T* op = out->mutable_data<T>(Shape({n, 1}), ctx.place());
  if (n > 0) {
    FLUID_CUDA_CHECK(
        cudaMemcpy(op, kept.data(), sizeof(T) * n, cudaMemcpyHostToDevice));
  }
  out->set_lod(std::move(lod));
}

}  // namespace

REGISTER_KERNEL(sequence_erase, kCUDA, int32_t, SequenceEraseKernel<int32_t>);
REGISTER_KERNEL(sequence_erase, kCUDA, int64_t, SequenceEraseKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
