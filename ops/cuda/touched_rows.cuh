// The CUDA side of ops/sampled_rows.h (nce, hierarchical_sigmoid): host
// vectors uploaded for a kernel, and the gradient of a weight table summed
// over the entries touching each of its rows, in the order the CPU kernels
// sum them (no atomics). Included only by ops/*.cu.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "ops/cuda/sparse_rows.cuh"
#include "ops/sampled_rows.h"

namespace fluid {
namespace ops {
namespace cuda {

// `host` converted to T and copied into `holder` at the kernel's place;
// returns the device pointer. The caller waits on the stream before
// `holder` goes.
template <typename T, typename S>
const T* UploadAs(const ExecutionContext& ctx, const std::vector<S>& host,
                  Tensor* holder) {
  const int64_t n = static_cast<int64_t>(host.size());
  std::vector<T> staged(host.begin(), host.end());
  T* d = holder->mutable_data<T>(Shape({n > 0 ? n : 1}), ctx.place());
  if (n > 0) {
    FLUID_CUDA_CHECK(cudaMemcpyAsync(d, staged.data(), sizeof(T) * n,
                                     cudaMemcpyHostToDevice,
                                     Dev(ctx).stream()));
    // `staged` is pageable: the copy has left it when this returns.
    FLUID_CUDA_CHECK(cudaStreamSynchronize(Dev(ctx).stream()));
  }
  return d;
}

// dst[dst_rows[k], j] = the sum over the copies of merged row k (entries
// p, ascending) of coef[p] * x[p / per_row, j] (x null: coef[p]).
template <typename T>
struct TouchedRowSums {
  DeviceMerge m;  // sources: the entries p
  const int64_t* dst_rows;
  const T* coef;
  const T* x;
  T* dst;
  int64_t width;
  int64_t per_row;
  __device__ void operator()(int64_t i) const {
    const int64_t k = i / width, j = i % width;
    T acc = T(0);
    for (int64_t c = m.offsets[k]; c < m.offsets[k + 1]; ++c) {
      const int64_t p = m.sources[c];
      acc += x == nullptr ? coef[p] : coef[p] * x[(p / per_row) * width + j];
    }
    dst[dst_rows[k] * width + j] = acc;
  }
};

// The gradient of table `slot` (dense, or sparse rows), from the per-entry
// coefficients `coef` (device) and the rows of `x` (device; null for a
// width-1 table). Waits for the kernel before returning.
template <typename T>
void TouchedTableGrad(const ExecutionContext& ctx, const std::string& slot,
                      const Shape& table, bool sparse, const TouchedRows& t,
                      const T* coef, const T* x, int64_t per_row) {
  TableGrad<T> g = AllocTableGrad<T>(ctx, slot, table, t.merge, sparse);
  ZeroAsync(Dev(ctx), g.values, sizeof(T) * g.numel);
  std::vector<int64_t> scratch;
  Tensor holders[4];
  TouchedRowSums<T> f;
  f.m = UploadMerge(ctx, t.merge, &t.positions, &scratch, holders);
  f.dst_rows = Upload(ctx, g.dst_rows, &holders[3]);
  f.coef = coef;
  f.x = x;
  f.dst = g.values;
  f.width = table.Product(1, table.rank());
  f.per_row = per_row;
  ForEach(Dev(ctx), t.merge.size() * f.width, f);
  Dev(ctx).Wait();  // the index lists are freed on return
}

}  // namespace cuda
}  // namespace ops
}  // namespace fluid
