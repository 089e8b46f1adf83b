// CUDA kernels for gather and gather_grad (schemas, shape inference and
// checks in gather_op.cc). An index outside X's rows gives a row of zeros
// and no gradient (the device does not stop to check).
//
// The gradient groups Index's positions by the row they name, on the host
// (RowMerge, as lookup_table's dense gradient does: the N indices sorted,
// each row's positions kept in Index's order); then one thread per (row,
// column) sums that row's Out@GRAD values (or, with overwrite, takes the
// last). Device work O(N x width) besides zeroing X@GRAD, no atomics, and
// the additions run in the CPU kernel's order, so the result equals the
// CPU's bit for bit, float32 included.
#include <vector>

#include "ops/cuda/cuda_helpers.cuh"
#include "ops/cuda/sparse_rows.cuh"
#include "ops/gather_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T, typename I>
struct GatherFill {
  const T* x;
  const I* index;
  int64_t rows, width;
  T* out;
  __device__ void operator()(int64_t e) const {
    const int64_t i = e / width, c = e - i * width;
    const int64_t r = static_cast<int64_t>(index[i]);
    out[e] = r >= 0 && r < rows ? x[r * width + c] : T(0);
  }
};

// X@GRAD's rows named by Index: merged row k (m.rows[k]) from the Out@GRAD
// rows of its copies, in Index's order.
template <typename T>
struct GatherGradFill {
  cuda::DeviceMerge m;
  const T* dout;
  int64_t width;
  bool overwrite;
  T* dx;
  __device__ void operator()(int64_t e) const {
    const int64_t k = e / width, c = e - k * width;
    const int64_t last = m.sources[m.offsets[k + 1] - 1];
    dx[m.rows[k] * width + c] = overwrite
                                    ? dout[last * width + c]
                                    : cuda::MergedAt(m, dout, width, k, c);
  }
};

template <typename T, typename I>
void Gather(const ExecutionContext& ctx, const GatherArgs& a) {
  T* out = cuda::OutputData<T>(ctx, "Out");
  cuda::ForEach(
      cuda::Dev(ctx), a.count * a.width,
      GatherFill<T, I>{a.x.data<T>(), a.index.data<I>(), a.rows, a.width, out});
}

template <typename T>
void GatherKernel(const ExecutionContext& ctx) {
  const GatherArgs a = ReadGatherArgs(ctx);
  if (a.index.dtype() == DataType::kInt32) {
    Gather<T, int32_t>(ctx, a);
  } else {
    Gather<T, int64_t>(ctx, a);
  }
}

// Index's rows in range and their positions (CUDA gives the others no
// gradient), from Index copied to the host.
template <typename I>
void RowsInRange(const Tensor& index_host, int64_t count, int64_t rows,
                 std::vector<int64_t>* in_range,
                 std::vector<int64_t>* positions) {
  const I* idx = index_host.data<I>();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t r = static_cast<int64_t>(idx[i]);
    if (r < 0 || r >= rows) continue;
    in_range->push_back(r);
    positions->push_back(i);
  }
}

template <typename T>
void GatherGrad(const ExecutionContext& ctx, const GatherArgs& a, T* dx) {
  Tensor index_host;
  cuda::Download(ctx, a.index, &index_host);
  std::vector<int64_t> rows, positions, scratch;
  if (a.index.dtype() == DataType::kInt32) {
    RowsInRange<int32_t>(index_host, a.count, a.rows, &rows, &positions);
  } else {
    RowsInRange<int64_t>(index_host, a.count, a.rows, &rows, &positions);
  }
  RowMerge merge;
  merge.Build(rows);
  Tensor holders[3];
  GatherGradFill<T> f{
      cuda::UploadMerge(ctx, merge, &positions, &scratch, holders),
      ctx.Input(GradSlot("Out")).data<T>(), a.width,
      ctx.Attr<bool>("overwrite"), dx};
  cuda::ZeroAsync(cuda::Dev(ctx), dx, sizeof(T) * a.rows * a.width);
  cuda::ForEach(cuda::Dev(ctx), merge.size() * a.width, f);
  cuda::Dev(ctx).Wait();  // the index lists are freed on return
}

template <typename T>
void GatherGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const GatherArgs a = ReadGatherArgs(ctx);
  FLUID_ENFORCE(ctx.Input(GradSlot("Out")).numel() == a.count * a.width,
                "gather_grad: Out@GRAD '", ctx.InputName(GradSlot("Out")), "' ",
                ctx.Input(GradSlot("Out")).shape(),
                " does not hold one row of X per index");
  GatherGrad<T>(ctx, a, dx->mutable_data<T>(ctx.place()));
}

}  // namespace

REGISTER_FLOAT_KERNELS(gather, kCUDA, GatherKernel);
REGISTER_KERNEL(gather, kCUDA, int32_t, GatherKernel<int32_t>);
REGISTER_KERNEL(gather, kCUDA, int64_t, GatherKernel<int64_t>);
REGISTER_FLOAT_KERNELS(gather_grad, kCUDA, GatherGradKernel);

}  // namespace ops
}  // namespace fluid
