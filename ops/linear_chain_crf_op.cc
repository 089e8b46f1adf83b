// linear_chain_crf: the negative log-likelihood of each labelled sequence
// under a linear-chain CRF, and its gradient, as Fluid's op computes it.
// Emission [rows, D] with level-1 LoD (or padded [N, S, D] with Length),
// Transition [D + 2, D] (start row, end row, then the D x D transitions),
// Label int64 [rows, 1] (padded: [N, S] or [N, S, 1]). LogLikelihood
// [N, 1] is -log P(label | emission) = log Z - score(label): Fluid's docs
// call it the log-likelihood, but its op returns this negative, the cost
// that chapter 07 of the Fluid book minimises. Alpha (the normalised
// forward vectors) and EmissionExps (exp(x - row max)) keep Emission's
// shape and LoD, TransitionExps is exp(Transition).
#include "ops/linear_chain_crf_op.h"

#include "ops/op_helpers.h"
#include "ops/sequence_helpers.h"

namespace fluid {
namespace ops {

std::vector<int64_t> SpansFromLoD(const std::vector<int64_t>& lod) {
  std::vector<int64_t> spans;
  for (int64_t i = 0; i < LoDCount(lod); ++i) {
    spans.push_back(lod[i]);
    spans.push_back(lod[i + 1] - lod[i]);
  }
  return spans;
}

std::vector<int64_t> SpansFromLengths(const std::vector<int64_t>& lengths,
                                      int64_t max_len,
                                      const std::string& what) {
  std::vector<int64_t> spans;
  for (size_t i = 0; i < lengths.size(); ++i) {
    FLUID_ENFORCE(lengths[i] >= 0 && lengths[i] <= max_len, what, "[", i,
                  "] is ", lengths[i], "; a length must lie in [0, ", max_len,
                  "] (the padded length)");
    spans.push_back(static_cast<int64_t>(i) * max_len);
    spans.push_back(lengths[i]);
  }
  return spans;
}

std::vector<int64_t> CrfSpans(const Tensor& emission, const Tensor* length,
                              const std::string& op) {
  if (length == nullptr) return SpansFromLoD(emission.lod());
  const int64_t* lp = length->data<int64_t>();
  FLUID_ENFORCE(length->numel() == emission.shape()[0], op, ": Length holds ",
                length->numel(), " lengths for ", emission.shape()[0],
                " padded sequences (Emission ", emission.shape(), ")");
  return SpansFromLengths(std::vector<int64_t>(lp, lp + length->numel()),
                          emission.shape()[1], op + ": Length");
}

namespace {

std::string Named(InferShapeContext* ctx, const std::string& slot) {
  return ctx->op_type() + ": " + slot + " " + Quote(ctx->InputName(slot));
}

void CheckInt64(InferShapeContext* ctx, const std::string& slot) {
  const DataType dt = ctx->GetInputDtype(slot);
  FLUID_ENFORCE(dt == DataType::kInt64, Named(ctx, slot), " must be int64, is ",
                DataTypeName(dt));
}

// Label (or Length) against Emission: LoD mode [rows, 1] or [rows]; padded
// mode [N, S] or [N, S, 1].
void CheckLabelShape(InferShapeContext* ctx, const std::string& slot,
                     const Shape& e, bool padded) {
  CheckInt64(ctx, slot);
  const Shape l = ctx->GetInputShape(slot);
  const int rank = padded ? 2 : 1;
  const bool ok = (l.rank() == rank ||
                   (l.rank() == rank + 1 && (l[rank] == 1 || l[rank] < 0))) &&
                  ShapesCompatible(Shape(l.begin(), l.begin() + rank),
                                   Shape(e.begin(), e.begin() + rank));
  FLUID_ENFORCE(ok, Named(ctx, slot), " has shape ", l, "; with Emission ", e,
                padded ? " it must be [N, S] or [N, S, 1]"
                       : " it must be [rows, 1] or [rows] (one tag a row)");
}

}  // namespace

int64_t CrfInferInputs(InferShapeContext* ctx, bool label_required) {
  const bool padded = ctx->HasInput("Length");
  const Shape e = ctx->GetInputShape("Emission");
  FLUID_ENFORCE(e.rank() == (padded ? 3 : 2) && e[e.rank() - 1] > 0,
                Named(ctx, "Emission"), " has shape ", e, "; it must be ",
                padded
                    ? "[N, S, D] (padded, with Length)"
                    : "[rows, D] with level-1 LoD (or [N, S, D] with Length)",
                ", D > 0 tags");
  const int64_t d = e[e.rank() - 1];
  const DataType dt = ctx->GetInputDtype("Emission");
  const Shape w = ctx->GetInputShape("Transition");
  FLUID_ENFORCE(ShapesCompatible(w, Shape({d + 2, d})),
                Named(ctx, "Transition"), " has shape ", w, "; with ", d,
                " tags it must be [", d + 2, ", ", d,
                "] (start row, end row, then the transitions)");
  FLUID_ENFORCE(ctx->GetInputDtype("Transition") == dt,
                Named(ctx, "Transition"), " is ",
                DataTypeName(ctx->GetInputDtype("Transition")),
                " but Emission is ", DataTypeName(dt));
  if (label_required || ctx->HasInput("Label"))
    CheckLabelShape(ctx, "Label", e, padded);
  if (padded) {
    CheckInt64(ctx, "Length");
    const Shape l = ctx->GetInputShape("Length");
    FLUID_ENFORCE(l.numel() < 0 || e[0] < 0 || l.numel() == e[0],
                  Named(ctx, "Length"), " has shape ", l,
                  "; it must hold one "
                  "length for each of Emission's ",
                  e[0], " sequences");
  } else {
    SequenceInputLoD(ctx, "Emission");
  }
  return d;
}

namespace {

void LinearChainCrfInferShape(InferShapeContext* ctx) {
  CrfInferInputs(ctx, true);
  const bool padded = ctx->HasInput("Length");
  const Shape e = ctx->GetInputShape("Emission");
  ctx->ShareShape("Emission", "Alpha");
  ctx->ShareShape("Emission", "EmissionExps");
  ctx->ShareShape("Transition", "TransitionExps");
  int64_t n = padded ? e[0] : -1;
  if (!padded && ctx->IsRuntime()) n = LoDCount(ctx->InputLoD("Emission"));
  ctx->SetOutputShape("LogLikelihood", Shape({n, 1}));
  ctx->SetOutputDtype("LogLikelihood", ctx->GetInputDtype("Emission"));
  ctx->SetOutputLoDLevel("LogLikelihood", 0);
}

const Tensor* OptionalInput(const ExecutionContext& ctx,
                            const std::string& slot) {
  return ctx.HasInput(slot) ? &ctx.Input(slot) : nullptr;
}

// CrfWeights over `trans` with its column exponentials in *cols (D * D
// shifted exponentials, then the D column maxima).
template <typename T>
CrfWeights<T> WeightsWithExps(const Tensor& trans, int64_t d,
                              std::vector<T>* cols) {
  cols->resize(static_cast<size_t>(d * d + d));
  for (int64_t j = 0; j < d; ++j)
    CrfColumnExps(trans.data<T>(), d, j, cols->data(), cols->data() + d * d);
  return CrfWeights<T>{trans.data<T>(), d, cols->data(), cols->data() + d * d};
}

template <typename T>
void LinearChainCrfKernel(const ExecutionContext& ctx) {
  const Tensor& emission = ctx.Input("Emission");
  const std::vector<int64_t> spans =
      CrfSpans(emission, OptionalInput(ctx, "Length"), "linear_chain_crf");
  const int64_t d = emission.shape()[emission.shape().rank() - 1];
  const int64_t* label = ctx.Input("Label").data<int64_t>();
  const int64_t n = static_cast<int64_t>(spans.size() / 2);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t t = spans[2 * i]; t < spans[2 * i] + spans[2 * i + 1]; ++t)
      FLUID_ENFORCE(CrfLabelValid(label[t], d), "linear_chain_crf: Label ",
                    Quote(ctx.InputName("Label")), " holds ", label[t],
                    " at row ", t, "; a tag must lie in [0, ", d, ")");
  }
  const Tensor& trans = ctx.Input("Transition");
  std::vector<T> cols;
  const CrfWeights<T> w = WeightsWithExps(trans, d, &cols);
  const T* x = emission.data<T>();
  T* alpha = ctx.Output("Alpha")->mutable_data<T>();
  T* exps = ctx.Output("EmissionExps")->mutable_data<T>();
  std::fill(alpha, alpha + emission.numel(), T(0));
  std::fill(exps, exps + emission.numel(), T(0));
  T* texps = ctx.Output("TransitionExps")->mutable_data<T>();
  for (int64_t k = 0; k < trans.numel(); ++k) texps[k] = std::exp(w.w[k]);
  T* nll = ctx.Output("LogLikelihood")->mutable_data<T>();
  ParallelFor(ctx.device(), n, static_cast<double>(d * d) * 16,
              [&](int64_t b, int64_t e) {
                std::vector<T> scratch(static_cast<size_t>(d));
                for (int64_t i = b; i < e; ++i) {
                  const int64_t r = spans[2 * i];
                  nll[i] =
                      CrfForward(w, x + r * d, label + r, spans[2 * i + 1],
                                 alpha + r * d, exps + r * d, scratch.data());
                }
              });
}

void LinearChainCrfGradInferShape(InferShapeContext* ctx) {
  CrfInferInputs(ctx, true);
  ctx->ShareShape("Emission", GradSlot("Emission"));
  ctx->ShareShape("Transition", GradSlot("Transition"));
}

template <typename T>
void LinearChainCrfGradKernel(const ExecutionContext& ctx) {
  const Tensor& emission = ctx.Input("Emission");
  const std::vector<int64_t> spans =
      CrfSpans(emission, OptionalInput(ctx, "Length"), "linear_chain_crf_grad");
  const int64_t d = emission.shape()[emission.shape().rank() - 1];
  const int64_t n = static_cast<int64_t>(spans.size() / 2);
  const Tensor& dll = ctx.Input(GradSlot("LogLikelihood"));
  FLUID_ENFORCE(dll.numel() == n,
                "linear_chain_crf_grad: LogLikelihood@GRAD "
                "has shape ",
                dll.shape(), " for ", n, " sequences");
  std::vector<T> cols;
  const CrfWeights<T> w = WeightsWithExps(ctx.Input("Transition"), d, &cols);
  const T* x = emission.data<T>();
  const int64_t* label = ctx.Input("Label").data<int64_t>();
  const T* g = dll.data<T>();
  Tensor* demission = ctx.Output(GradSlot("Emission"));
  std::vector<T> scratch(static_cast<size_t>(emission.numel()));
  T* dx = demission != nullptr ? demission->mutable_data<T>() : scratch.data();
  std::fill(dx, dx + emission.numel(), T(0));
  const int64_t wsize = (d + 2) * d;
  std::vector<T> partial(static_cast<size_t>(n * wsize));
  ParallelFor(ctx.device(), n, static_cast<double>(d * d) * 24,
              [&](int64_t b, int64_t e) {
                std::vector<T> scratch(static_cast<size_t>(d)), la;
                for (int64_t i = b; i < e; ++i) {
                  const int64_t r = spans[2 * i], len = spans[2 * i + 1];
                  la.resize(static_cast<size_t>(len * d));
                  CrfBackward(w, x + r * d, label + r, len, g[i], la.data(),
                              dx + r * d, partial.data() + i * wsize,
                              scratch.data());
                }
              });
  Tensor* dtrans = ctx.Output(GradSlot("Transition"));
  if (dtrans == nullptr) return;
  T* dw = dtrans->mutable_data<T>();
  for (int64_t k = 0; k < wsize; ++k) {
    T s = 0;
    for (int64_t i = 0; i < n; ++i) s += partial[i * wsize + k];
    dw[k] = s;
  }
}

}  // namespace

REGISTER_OP(linear_chain_crf)
    .Doc(
        "Negative log-likelihood of labelled sequences under a linear-chain "
        "CRF.")
    .Input("Emission", "[rows, D] with level-1 LoD, or padded [N, S, D]")
    .Input("Transition", "[D + 2, D]: start row, end row, D x D transitions")
    .Input("Label", "int64 [rows, 1] (padded: [N, S] or [N, S, 1])")
    .OptionalInput("Length", "int64 [N]: padded mode's lengths")
    .Output("Alpha", "Emission's shape: forward vectors, each row sums to 1")
    .Output("EmissionExps", "Emission's shape: exp(x - the row's max)")
    .Output("TransitionExps", "exp(Transition)")
    .Output("LogLikelihood", "[N, 1]: -log P(Label | Emission) per sequence")
    .SetInferShape(LinearChainCrfInferShape)
    .SetGrad(GradSpec("linear_chain_crf_grad")
                 .Inputs({"Emission", "Transition", "Label", "Length"})
                 .OutGrads({"LogLikelihood"})
                 .InGrads({"Emission", "Transition"}))
    .CPUKernel<float>(LinearChainCrfKernel<float>)
    .CPUKernel<double>(LinearChainCrfKernel<double>);

REGISTER_GRAD_OP(linear_chain_crf_grad)
    .Doc("dEmission and dTransition of linear_chain_crf by forward-backward.")
    .SetInferShape(LinearChainCrfGradInferShape)
    .CPUKernel<float>(LinearChainCrfGradKernel<float>)
    .CPUKernel<double>(LinearChainCrfGradKernel<double>);

}  // namespace ops
}  // namespace fluid
