// CUDA kernel for edit_distance (schema in edit_distance_op.cc): the
// sequences are laid out on the host (LoD, or lengths read back), then one
// thread per pair runs the CPU kernel's dynamic programme
// (ops/edit_distance_op.h) with its row in the context's workspace.
#include <vector>

#include "ops/cuda/sequence_helpers.cuh"
#include "ops/edit_distance_op.h"
#include "ops/linear_chain_crf_op.h"

namespace fluid {
namespace ops {
namespace {

struct DistanceFunctor {
  const int64_t* hyps_spans;
  const int64_t* refs_spans;
  const int64_t* row_at;  // each pair's first scratch entry
  const int64_t* a;
  const int64_t* b;
  int64_t* rows;
  bool normalized;
  float* out;
  __device__ void operator()(int64_t i) const {
    const int64_t len = refs_spans[2 * i + 1];
    const int64_t dist =
        Levenshtein(a + hyps_spans[2 * i], hyps_spans[2 * i + 1],
                    b + refs_spans[2 * i], len, rows + row_at[i]);
    out[i] = normalized ? static_cast<float>(double(dist) / double(len))
                        : static_cast<float>(dist);
  }
};

struct CountFunctor {
  int64_t n;
  int64_t* out;
  __device__ void operator()(int64_t) const { out[0] = n; }
};

void EditDistanceKernel(const ExecutionContext& ctx) {
  const Tensor& hyps = ctx.Input("Hyps");
  const Tensor& refs = ctx.Input("Refs");
  const bool normalized = ctx.Attr<bool>("normalized");
  const bool padded = ctx.HasInput("HypsLength");
  const Tensor hyps_length = HostInt64Input(ctx, "HypsLength");
  const Tensor refs_length = HostInt64Input(ctx, "RefsLength");
  const EditDistanceSpans s =
      EditDistanceInputs(hyps, refs, padded ? &hyps_length : nullptr,
                         padded ? &refs_length : nullptr, normalized);
  const int64_t n = static_cast<int64_t>(s.hyps.size() / 2);
  const auto& dev = cuda::Dev(ctx);
  Tensor* out = ctx.Output("Out");
  out->Resize(Shape({n, 1}));
  DistanceFunctor f;
  f.out = out->mutable_data<float>(ctx.place());
  int64_t* count =
      ctx.Output("SequenceNum")->mutable_data<int64_t>(Shape({1}), ctx.place());
  cuda::ForEach(dev, 1, CountFunctor{n, count});
  if (n == 0) return;
  std::vector<int64_t> row_at(static_cast<size_t>(n));
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    row_at[i] = total;
    total += s.refs[2 * i + 1] + 1;
  }
  const cuda::DeviceLoDs ws = cuda::CopyLoDsToDevice(
      dev, {&s.hyps, &s.refs, &row_at}, sizeof(int64_t) * total);
  f.hyps_spans = ws.lod[0];
  f.refs_spans = ws.lod[1];
  f.row_at = ws.lod[2];
  f.rows = static_cast<int64_t*>(ws.extra);
  f.a = hyps.data<int64_t>();
  f.b = refs.data<int64_t>();
  f.normalized = normalized;
  cuda::ForEach(dev, n, f);
}

}  // namespace

REGISTER_KERNEL(edit_distance, kCUDA, int64_t, EditDistanceKernel);

}  // namespace ops
}  // namespace fluid
