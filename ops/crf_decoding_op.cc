// crf_decoding: the most likely tag path of each sequence under the
// linear-chain CRF of linear_chain_crf (Viterbi), as Fluid's op computes
// it. Emission [rows, D] with level-1 LoD (or padded [N, S, D] with
// Length), Transition [D + 2, D]. ViterbiPath is int64 [rows, 1] with
// Emission's LoD (padded: [N, S], 0 past each length); given Label, it
// holds 1 where the path's tag equals the label and 0 elsewhere. Not
// differentiable.
#include <algorithm>

#include "ops/linear_chain_crf_op.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

void CrfDecodingInferShape(InferShapeContext* ctx) {
  CrfInferInputs(ctx, false);
  const Shape e = ctx->GetInputShape("Emission");
  if (ctx->HasInput("Length")) {
    ctx->SetOutputShape("ViterbiPath", Shape({e[0], e[1]}));
    ctx->SetOutputLoDLevel("ViterbiPath", 0);
  } else {
    ctx->SetOutputShape("ViterbiPath", Shape({e[0], 1}));
    ctx->ShareLoD("Emission", "ViterbiPath");
  }
  ctx->SetOutputDtype("ViterbiPath", DataType::kInt64);
}

template <typename T>
void CrfDecodingKernel(const ExecutionContext& ctx) {
  const Tensor& emission = ctx.Input("Emission");
  const std::vector<int64_t> spans = CrfSpans(
      emission, ctx.HasInput("Length") ? &ctx.Input("Length") : nullptr,
      "crf_decoding");
  const int64_t d = emission.shape()[emission.shape().rank() - 1];
  const int64_t rows = emission.numel() / d;
  const CrfWeights<T> w{ctx.Input("Transition").data<T>(), d};
  const T* x = emission.data<T>();
  int64_t* path = ctx.Output("ViterbiPath")->mutable_data<int64_t>();
  std::fill(path, path + rows, int64_t{0});
  const int64_t n = static_cast<int64_t>(spans.size() / 2);
  ParallelFor(ctx.device(), n, static_cast<double>(d * d) * 8,
              [&](int64_t b, int64_t e) {
                std::vector<T> score(static_cast<size_t>(2 * d));
                std::vector<int32_t> back;
                for (int64_t i = b; i < e; ++i) {
                  const int64_t r = spans[2 * i], len = spans[2 * i + 1];
                  back.resize(static_cast<size_t>(len * d));
                  CrfViterbi(w, x + r * d, len, score.data(), back.data(),
                             path + r);
                }
              });
  if (!ctx.HasInput("Label")) return;
  const int64_t* label = ctx.Input("Label").data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t r = spans[2 * i]; r < spans[2 * i] + spans[2 * i + 1]; ++r)
      path[r] = path[r] == label[r] ? 1 : 0;
  }
}

}  // namespace

REGISTER_OP(crf_decoding)
    .Doc(
        "The most likely tag path of each sequence under a linear-chain CRF "
        "(Viterbi).")
    .Input("Emission", "[rows, D] with level-1 LoD, or padded [N, S, D]")
    .Input("Transition", "[D + 2, D], as linear_chain_crf's")
    .OptionalInput("Label", "int64 [rows, 1] (padded: [N, S] or [N, S, 1])")
    .OptionalInput("Length", "int64 [N]: padded mode's lengths")
    .Output("ViterbiPath",
            "int64 [rows, 1] (padded [N, S]): the tags, or with Label 1 where "
            "they equal it")
    .SetInferShape(CrfDecodingInferShape)
    .CPUKernel<float>(CrfDecodingKernel<float>)
    .CPUKernel<double>(CrfDecodingKernel<double>);

}  // namespace ops
}  // namespace fluid
