// What the sequence ops' CUDA kernels share: their inputs' LoD offsets
// (host vectors on the tensors) copied to device scratch on the context's
// stream. Included only by ops/sequence_*_op.cu.
#pragma once

#include <initializer_list>

#include "ops/cuda/cuda_helpers.cuh"
#include "src/framework/lod.h"

namespace fluid {
namespace ops {
namespace cuda {

// Device copies of up to four LoDs, in the order given, in the context's
// workspace after `extra_bytes` of scratch the caller may use (at `extra`).
// Valid until the next use of the workspace; the copies are ordered before
// the kernels issued after them on stream(). Allocates nothing once the
// workspace is large enough.
struct DeviceLoDs {
  const int64_t* lod[4] = {nullptr, nullptr, nullptr, nullptr};
  void* extra = nullptr;
};

inline DeviceLoDs CopyLoDsToDevice(const CUDADeviceContext& dev,
                                   std::initializer_list<const LoD*> lods,
                                   size_t extra_bytes = 0) {
  const size_t head = (extra_bytes + 255) / 256 * 256;
  size_t total = head;
  for (const LoD* l : lods) total += sizeof(int64_t) * l->size();
  char* base = static_cast<char*>(dev.Workspace(total == 0 ? 1 : total));
  DeviceLoDs out;
  out.extra = base;
  size_t at = head;
  int i = 0;
  for (const LoD* l : lods) {
    auto* dst = reinterpret_cast<int64_t*>(base + at);
    if (!l->empty()) {
      FLUID_CUDA_CHECK(cudaMemcpyAsync(dst, l->data(),
                                       sizeof(int64_t) * l->size(),
                                       cudaMemcpyHostToDevice, dev.stream()));
    }
    out.lod[i++] = dst;
    at += sizeof(int64_t) * l->size();
  }
  return out;
}

}  // namespace cuda
}  // namespace ops
}  // namespace fluid
