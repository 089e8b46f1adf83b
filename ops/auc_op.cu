// CUDA kernel for auc (schema, shape inference and the CPU kernel in
// auc_op.cc; the bucket and area rules in auc_op.h).
//
// Three launches on the context's stream: the window's rows move up (one
// thread per bucket walks its column, so no thread reads what another
// writes), the batch is counted into the last row by atomic adds (integer
// counts: exact whatever the order), and one thread adds up the area in the
// CPU's order, so the AUC is bitwise the CPU's. The area is one pass over
// the buckets (4096 by default), short next to a training step.
//
// The CPU kernel rejects a prediction outside [0, 1] and a label other than
// 0 or 1. Here they live in device memory, and checking them would need a
// copy back and a synchronisation on every step; such a row is left out of
// the counts instead, and nothing outside the histograms is written.
#include <string>

#include "ops/auc_op.h"
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {

namespace {

// Column b of both windows moves up one row; the last row is cleared.
struct ShiftColumns {
  int64_t* pos;
  int64_t* neg;
  int64_t rows, buckets;
  __device__ void operator()(int64_t b) const {
    for (int64_t r = 0; r + 1 < rows; ++r) {
      pos[r * buckets + b] = pos[(r + 1) * buckets + b];
      neg[r * buckets + b] = neg[(r + 1) * buckets + b];
    }
    pos[(rows - 1) * buckets + b] = 0;
    neg[(rows - 1) * buckets + b] = 0;
  }
};

// Row i of the batch counted into the last row of its label's histogram.
template <typename T>
struct CountRow {
  const T* predict;
  const int64_t* label;
  int64_t width, num_thresholds;
  int64_t* last_pos;
  int64_t* last_neg;
  __device__ void operator()(int64_t i) const {
    const int64_t b = AucBucket(predict[i * width + width - 1], num_thresholds);
    const int64_t l = label[i];
    if (b < 0 || (l != 0 && l != 1)) return;
    int64_t* counts = l == 1 ? last_pos : last_neg;
    atomicAdd(reinterpret_cast<unsigned long long*>(counts + b),  // NOLINT
              1ULL);
  }
};

struct Area {
  const int64_t* pos;
  const int64_t* neg;
  int64_t rows, buckets;
  double* out;
  __device__ void operator()(int64_t) const {
    *out = AucArea(pos, neg, rows, buckets);
  }
};

// The stat output `out_slot` holding the counts of `in_slot`: the same
// tensor when bound in place (as the layer binds them), else a copy made on
// the context's stream.
int64_t* StatOutput(const ExecutionContext& ctx, const std::string& in_slot,
                    const std::string& out_slot) {
  const Tensor& in = ctx.Input(in_slot);
  Tensor* out = ctx.Output(out_slot);
  if (out == &in) return out->mutable_data<int64_t>(ctx.place());
  int64_t* data = out->mutable_data<int64_t>(in.shape(), ctx.place());
  cuda::CopyAsync(cuda::Dev(ctx), data, in.data<int64_t>(),
                  sizeof(int64_t) * static_cast<size_t>(in.numel()));
  return data;
}

template <typename T>
void AucCudaKernel(const ExecutionContext& ctx) {
  const auto& dev = cuda::Dev(ctx);
  const Tensor& predict = ctx.Input("Predict");
  const int64_t nt = ctx.Attr<int32_t>("num_thresholds");
  const int32_t steps = ctx.Attr<int32_t>("slide_steps");
  const int64_t rows = AucStatRows(steps), buckets = nt + 1;
  int64_t* pos = StatOutput(ctx, "StatPos", "StatPosOut");
  int64_t* neg = StatOutput(ctx, "StatNeg", "StatNegOut");
  if (steps > 0)
    cuda::ForEach(dev, buckets, ShiftColumns{pos, neg, rows, buckets});
  CountRow<T> count;
  count.predict = predict.data<T>();
  count.label = ctx.Input("Label").data<int64_t>();
  count.width = predict.shape()[1];
  count.num_thresholds = nt;
  count.last_pos = pos + (rows - 1) * buckets;
  count.last_neg = neg + (rows - 1) * buckets;
  cuda::ForEach(dev, predict.shape()[0], count);
  double* auc = ctx.Output("AUC")->mutable_data<double>(Shape{1}, ctx.place());
  cuda::ForEach(dev, 1, Area{pos, neg, rows, buckets, auc});
}

}  // namespace

REGISTER_FLOAT_KERNELS(auc, kCUDA, AucCudaKernel);

}  // namespace ops
}  // namespace fluid
