// What the CUDA kernels of sparse rows (lookup_table's gradient, the
// optimizers' SelectedRows paths) share: moving index lists between the
// host and the device, and summing the copies of each merged row
// (RowMerge) in a fixed order, without atomics, so that every run gives the
// same bits. Included only by ops/*.cu.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "ops/cuda/cuda_helpers.cuh"
#include "src/framework/selected_rows.h"

namespace fluid {
namespace ops {
namespace cuda {

// `host` copied into `holder` (device memory at the kernel's place, reused
// while large enough); returns the device pointer. The copy is staged
// before this returns, so `host` may change afterwards.
inline const int64_t* Upload(const ExecutionContext& ctx,
                             const std::vector<int64_t>& host, Tensor* holder) {
  const int64_t n = static_cast<int64_t>(host.size());
  int64_t* d =
      holder->mutable_data<int64_t>(Shape({n > 0 ? n : 1}), ctx.place());
  if (n > 0) {
    FLUID_CUDA_CHECK(cudaMemcpyAsync(d, host.data(), sizeof(int64_t) * n,
                                     cudaMemcpyHostToDevice,
                                     Dev(ctx).stream()));
  }
  return d;
}

// The device tensor `t` copied to the host, after the work queued before it
// on the kernel's stream has finished.
inline void Download(const ExecutionContext& ctx, const Tensor& t,
                     Tensor* host) {
  FLUID_CUDA_CHECK(cudaStreamSynchronize(Dev(ctx).stream()));
  host->CopyFrom(t, Place::CPU());
}

// The index lists of a merge on the device: unique rows, offsets, and the
// source row (in the values being merged) of each copy, in merge order.
struct DeviceMerge {
  const int64_t* rows;
  const int64_t* offsets;
  const int64_t* sources;
  int64_t size;
};

// Uploads `m`; `source_of[p]` is the value row holding copy p of the list
// merged (pass nullptr when it is p itself).
inline DeviceMerge UploadMerge(const ExecutionContext& ctx, const RowMerge& m,
                               const std::vector<int64_t>* source_of,
                               std::vector<int64_t>* scratch,
                               Tensor holders[3]) {
  scratch->resize(m.order.size());
  for (size_t c = 0; c < m.order.size(); ++c)
    (*scratch)[c] = source_of ? (*source_of)[m.order[c]] : m.order[c];
  DeviceMerge d;
  d.rows = Upload(ctx, m.unique_rows, &holders[0]);
  d.offsets = Upload(ctx, m.offsets, &holders[1]);
  d.sources = Upload(ctx, *scratch, &holders[2]);
  d.size = m.size();
  return d;
}

// The sum of the copies of merged row k at column j, in merge order.
template <typename T>
__device__ T MergedAt(const DeviceMerge& m, const T* values, int64_t width,
                      int64_t k, int64_t j) {
  T acc = T(0);
  for (int64_t c = m.offsets[k]; c < m.offsets[k + 1]; ++c)
    acc += values[m.sources[c] * width + j];
  return acc;
}

// A sparse gradient ready for an optimizer's kernel: element i of the
// launch (count in all) updates Param element Elem(i) with gradient G(i).
// Lazy: the touched rows only; otherwise every row, g = 0 where untouched.
template <typename T>
struct SparseGradView {
  DeviceMerge m;
  const int64_t* slot_of_row;  // non-lazy: merged row of each row, or -1
  const T* values;
  int64_t width;
  int64_t count;
  __device__ int64_t Elem(int64_t i) const {
    return slot_of_row != nullptr ? i : m.rows[i / width] * width + i % width;
  }
  __device__ T G(int64_t i) const {
    const int64_t j = i % width;
    if (slot_of_row == nullptr) return MergedAt(m, values, width, i / width, j);
    const int64_t k = slot_of_row[i / width];
    return k < 0 ? T(0) : MergedAt(m, values, width, k, j);
  }
};

// What a SparseGradView points at; its device lists are freed with it, so
// it must outlive the kernels using the view (Wait before it goes).
struct SparseGradScratch {
  RowMerge merge;
  std::vector<int64_t> order, slots;
  Tensor holders[4];
};

template <typename T>
SparseGradView<T> PrepareSparseGrad(const ExecutionContext& ctx,
                                    const SelectedRows& sr, bool lazy,
                                    SparseGradScratch* s) {
  s->merge.Build(sr.rows());
  SparseGradView<T> v;
  v.m = UploadMerge(ctx, s->merge, nullptr, &s->order, s->holders);
  v.values = sr.value().data<T>();
  v.width = sr.row_width();
  v.slot_of_row = nullptr;
  v.count = s->merge.size() * v.width;
  if (!lazy) {
    s->slots.assign(sr.height(), -1);
    for (int64_t k = 0; k < s->merge.size(); ++k)
      s->slots[s->merge.unique_rows[k]] = k;
    v.slot_of_row = Upload(ctx, s->slots, &s->holders[3]);
    v.count = sr.height() * v.width;
  }
  return v;
}

// The output `out_slot` holding `in_slot`'s values, on the device, for an
// update that writes only some elements: a copy unless it is the input.
template <typename T>
T* UpdatedInPlace(const ExecutionContext& ctx, const std::string& in_slot,
                  const std::string& out_slot) {
  const Tensor& in = ctx.Input(in_slot);
  Tensor* out = ctx.Output(out_slot);
  if (out->initialized() && out->buffer() == in.buffer() &&
      out->offset() == in.offset())
    return out->data<T>();
  const T* src = in.data<T>();
  T* dst = out->mutable_data<T>(in.shape(), ctx.place());
  CopyAsync(Dev(ctx), dst, src, in.bytes());
  return dst;
}

}  // namespace cuda
}  // namespace ops
}  // namespace fluid
