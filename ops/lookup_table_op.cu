// CUDA kernels for lookup_table and c_embedding and their gradients
// (schemas, shape inference and the host-side checks in
// lookup_table_op.cc). The ids are
// copied to the host and checked there before any row is read, so an id
// out of range is the same error as on the CPU. The dense gradient sums
// the copies of each row in the order of Ids (no atomics): the same bits
// on every run.
#include <vector>

#include "ops/cuda/sparse_rows.cuh"
#include "ops/lookup_table_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct GatherRows {
  const T* w;
  const int64_t* ids;
  T* out;
  int64_t width;
  int64_t padding;
  __device__ void operator()(int64_t i) const {
    const int64_t id = ids[i / width];
    out[i] = padding >= 0 && id == padding ? T(0) : w[id * width + i % width];
  }
};

// dW[rows[k], j] = the sum of the copies of row k.
template <typename T>
struct ScatterMerged {
  cuda::DeviceMerge m;
  const T* dout;
  T* dw;
  int64_t width;
  __device__ void operator()(int64_t i) const {
    const int64_t k = i / width;
    const int64_t j = i % width;
    dw[m.rows[k] * width + j] = cuda::MergedAt(m, dout, width, k, j);
  }
};

template <typename T>
struct GatherPositions {
  const int64_t* positions;
  const T* dout;
  T* values;
  int64_t width;
  __device__ void operator()(int64_t i) const {
    values[i] = dout[positions[i / width] * width + i % width];
  }
};

template <typename T>
void Gather(const ExecutionContext& ctx, const LookupArgs& a,
            const int64_t* device_ids) {
  GatherRows<T> f;
  f.w = ctx.Input("W").data<T>();
  f.ids = device_ids;
  f.out = cuda::OutputData<T>(ctx, "Out");
  f.width = a.width;
  f.padding = a.padding;
  cuda::ForEach(cuda::Dev(ctx), a.num_ids * a.width, f);
}

template <typename T>
void LookupTableKernel(const ExecutionContext& ctx) {
  const Tensor& ids = ctx.Input("Ids");
  Tensor host_ids;
  cuda::Download(ctx, ids, &host_ids);
  Gather<T>(ctx, CheckLookup(ctx, host_ids), ids.data<int64_t>());
}

// c_embedding: the ids shifted into this rank's rows on the host, then
// uploaded for the gather.
template <typename T>
void CEmbeddingKernel(const ExecutionContext& ctx) {
  Tensor host_ids, holder;
  cuda::Download(ctx, ctx.Input("Ids"), &host_ids);
  std::vector<int64_t> local;
  const LookupArgs a = LocalLookup(ctx, host_ids, &local);
  Gather<T>(ctx, a, cuda::Upload(ctx, local, &holder));
  cuda::Dev(ctx).Wait();  // the uploaded ids are freed on return
}

template <typename T>
void DenseLookupGrad(const ExecutionContext& ctx, const LookupArgs& a,
                     const T* dout) {
  std::vector<int64_t> positions, rows, scratch;
  KeptIds(a, &positions, &rows);
  RowMerge merge;
  merge.Build(rows);
  Tensor holders[3];
  Tensor* dw = ctx.Output(GradVarName("W"));
  ScatterMerged<T> f;
  f.m = cuda::UploadMerge(ctx, merge, &positions, &scratch, holders);
  f.dout = dout;
  f.dw = dw->mutable_data<T>(ctx.Input("W").shape(), ctx.place());
  f.width = a.width;
  cuda::ZeroAsync(cuda::Dev(ctx), f.dw, dw->bytes());
  cuda::ForEach(cuda::Dev(ctx), merge.size() * a.width, f);
  cuda::Dev(ctx).Wait();  // the index lists are freed on return
}

template <typename T>
void SparseLookupGrad(const ExecutionContext& ctx, const LookupArgs& a,
                      const T* dout) {
  SelectedRows* sr = ctx.OutputVar(GradVarName("W"))->GetMutableSelectedRows();
  std::vector<int64_t> positions;
  KeptIds(a, &positions, sr->mutable_rows());
  sr->set_height(a.height);
  const int64_t n = static_cast<int64_t>(positions.size());
  Tensor holder;
  GatherPositions<T> f;
  f.positions = cuda::Upload(ctx, positions, &holder);
  f.dout = dout;
  f.values =
      sr->mutable_value()->mutable_data<T>(Shape({n, a.width}), ctx.place());
  f.width = a.width;
  cuda::ForEach(cuda::Dev(ctx), n * a.width, f);
  cuda::Dev(ctx).Wait();  // the positions are freed on return
}

template <typename T>
void LookupGrad(const ExecutionContext& ctx, const LookupArgs& a) {
  const T* dout = ctx.Input(GradVarName("Out")).data<T>();
  if (ctx.Attr<bool>("is_sparse")) {
    SparseLookupGrad<T>(ctx, a, dout);
  } else {
    DenseLookupGrad<T>(ctx, a, dout);
  }
}

template <typename T>
void LookupTableGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradVarName("W"))) return;
  Tensor host_ids;
  cuda::Download(ctx, ctx.Input("Ids"), &host_ids);
  LookupGrad<T>(ctx, CheckLookup(ctx, host_ids));
}

template <typename T>
void CEmbeddingGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradVarName("W"))) return;
  Tensor host_ids;
  cuda::Download(ctx, ctx.Input("Ids"), &host_ids);
  std::vector<int64_t> local;
  LookupGrad<T>(ctx, LocalLookup(ctx, host_ids, &local));
}

}  // namespace

REGISTER_FLOAT_KERNELS(lookup_table, kCUDA, LookupTableKernel);
REGISTER_FLOAT_KERNELS(lookup_table_grad, kCUDA, LookupTableGradKernel);
REGISTER_FLOAT_KERNELS(c_embedding, kCUDA, CEmbeddingKernel);
REGISTER_FLOAT_KERNELS(c_embedding_grad, kCUDA, CEmbeddingGradKernel);

}  // namespace ops
}  // namespace fluid
