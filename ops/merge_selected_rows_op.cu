// CUDA kernel for merge_selected_rows (schema in merge_selected_rows_op.cc):
// the merge's index lists are built on the host and each merged element
// sums its copies in list order on the device (ops/cuda/sparse_rows.cuh),
// without atomics, so that it matches the CPU kernel and the optimizers'
// own merge.
#include "ops/cuda/sparse_rows.cuh"
#include "ops/merge_selected_rows_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct MergeRows {
  cuda::DeviceMerge m;
  const T* values;
  int64_t width;
  T* out;
  __device__ void operator()(int64_t i) const {
    out[i] = cuda::MergedAt(m, values, width, i / width, i % width);
  }
};

template <typename T>
void MergeKernel(const ExecutionContext& ctx) {
  const SelectedRows& x = MergeInput(ctx);
  if (RowsMerged(x.rows())) return PassMergedRows(ctx, x);
  RowMerge merge;
  merge.Build(x.rows());
  std::vector<int64_t> order;
  Tensor holders[3];
  MergeRows<T> u;
  u.m = cuda::UploadMerge(ctx, merge, nullptr, &order, holders);
  u.values = x.value().data<T>();
  u.width = x.row_width();
  Tensor merged;
  u.out = merged.mutable_data<T>(MergedShape(x, merge), ctx.place());
  cuda::ForEach(cuda::Dev(ctx), merged.numel(), u);
  cuda::Dev(ctx).Wait();  // the index lists are freed on return
  SetMergedRows(ctx, x, merge, &merged);
}

}  // namespace

REGISTER_FLOAT_KERNELS(merge_selected_rows, kCUDA, MergeKernel);

}  // namespace ops
}  // namespace fluid
