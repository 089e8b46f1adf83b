// CUDA kernel for crf_decoding (schema in crf_decoding_op.cc): one thread
// per sequence running the CPU kernel's Viterbi (ops/linear_chain_crf_op.h)
// with its scores and back-pointers in the context's workspace.
#include <vector>

#include "ops/cuda/sequence_helpers.cuh"
#include "ops/linear_chain_crf_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct ViterbiFunctor {
  const int64_t* spans;
  CrfWeights<T> w;
  const T* x;
  const int64_t* label;  // nullptr: write the tags
  T* score;
  int32_t* back;
  int64_t* path;
  __device__ void operator()(int64_t i) const {
    const int64_t r = spans[2 * i], len = spans[2 * i + 1];
    CrfViterbi(w, x + r * w.d, len, score + 2 * i * w.d, back + r * w.d,
               path + r);
    if (label == nullptr) return;
    for (int64_t k = r; k < r + len; ++k) path[k] = path[k] == label[k];
  }
};

template <typename T>
void CrfDecodingKernel(const ExecutionContext& ctx) {
  const Tensor& emission = ctx.Input("Emission");
  const bool padded = ctx.HasInput("Length");
  const Tensor length = HostInt64Input(ctx, "Length");
  const std::vector<int64_t> spans =
      CrfSpans(emission, padded ? &length : nullptr, "crf_decoding");
  const int64_t n = static_cast<int64_t>(spans.size() / 2);
  const int64_t d = emission.shape()[emission.shape().rank() - 1];
  const int64_t rows = emission.numel() / d;
  const auto& dev = cuda::Dev(ctx);
  ViterbiFunctor<T> f;
  f.path = cuda::OutputData<int64_t>(ctx, "ViterbiPath");
  cuda::ZeroAsync(dev, f.path, sizeof(int64_t) * rows);
  if (n == 0) return;
  const size_t score_bytes = (sizeof(T) * 2 * n * d + 255) / 256 * 256;
  const cuda::DeviceLoDs ws = cuda::CopyLoDsToDevice(
      dev, {&spans}, score_bytes + sizeof(int32_t) * rows * d);
  f.spans = ws.lod[0];
  f.w = CrfWeights<T>{ctx.Input("Transition").data<T>(), d};
  f.x = emission.data<T>();
  f.label =
      ctx.HasInput("Label") ? ctx.Input("Label").data<int64_t>() : nullptr;
  f.score = static_cast<T*>(ws.extra);
  f.back =
      reinterpret_cast<int32_t*>(static_cast<char*>(ws.extra) + score_bytes);
  cuda::ForEach(dev, n, f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(crf_decoding, kCUDA, CrfDecodingKernel);

}  // namespace ops
}  // namespace fluid
