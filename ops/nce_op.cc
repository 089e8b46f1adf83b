// nce: noise-contrastive estimation (Fluid's nce op). Each row i of Input
// [N, D] has num_true true classes (Label [N, num_true], int64) and
// num_neg_samples classes drawn from a noise distribution P (sampler:
// uniform, log_uniform or custom_dist). For each of them, o =
// sigmoid(Input[i] . Weight[c] + Bias[c]) and b = num_neg_samples * P(c);
//   Cost[i] = SampleWeight[i] * (sum over true c of -log(o / (o + b))
//                              + sum over sampled c of -log(b / (o + b))).
// SampleLabels [N, num_true + num_neg] holds the classes (true ones first)
// and SampleLogits the o of each (Fluid's name: they are probabilities).
//
// The draws are a function of (seed, step, row, slot) (nce_op.h): with the
// optional Step counter (a persistable int64 [1] the layer creates, written
// back +1 through StepOut after each run) the samples change from step to
// step, the same on every rank of a data-parallel job; without it every run
// draws the same samples. A seed of 0 derives one from Cost's name.
//
// The gradients of Input, Weight and Bias; with is_sparse, those of Weight
// and Bias are sparse rows (SelectedRows) holding the classes the batch
// touched, each once, in ascending order, as the optimizers and the
// collective transpiler take them.
#include "ops/nce_op.h"

#include <algorithm>
#include <string>

#include "ops/dropout_mask.h"
#include "ops/op_helpers.h"
#include "ops/sampled_rows.h"
#include "src/framework/hash.h"

namespace fluid {
namespace ops {

namespace {

// Two dims agree when equal or either is unknown (compile time).
bool DimsAgree(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

const char* kCustomTables[] = {"CustomDistProbs", "CustomDistAlias",
                               "CustomDistAliasProbs"};

void CheckNceAttrs(InferShapeContext* ctx) {
  const std::string& op = ctx->op_type();
  const int32_t classes = ctx->Attr<int32_t>("num_total_classes");
  FLUID_ENFORCE(classes >= 1, op, ": num_total_classes ", classes,
                " must be at least 1");
  const int32_t neg = ctx->Attr<int32_t>("num_neg_samples");
  FLUID_ENFORCE(neg >= 1, op, ": num_neg_samples ", neg, " must be at least 1");
  const int32_t sampler = ctx->Attr<int32_t>("sampler");
  FLUID_ENFORCE(sampler >= kNceUniform && sampler <= kNceCustomDist, op,
                ": sampler ", sampler,
                " must be 0 (uniform), 1 (log_uniform) or 2 (custom_dist)");
  const auto& custom = ctx->Attr<std::vector<int32_t>>("custom_neg_classes");
  FLUID_ENFORCE(custom.empty() || static_cast<int32_t>(custom.size()) == neg,
                op, ": custom_neg_classes holds ", custom.size(),
                " classes; it must be empty or hold num_neg_samples = ", neg);
  for (int32_t c : custom)
    FLUID_ENFORCE(c >= 0 && c < classes, op, ": custom_neg_classes holds ", c,
                  ", outside [0, ", classes, ") (num_total_classes)");
  for (const char* slot : kCustomTables) {
    const bool has = ctx->HasInput(slot);
    FLUID_ENFORCE(has || sampler != kNceCustomDist, op,
                  ": sampler 2 (custom_dist) needs the input ", slot);
    if (!has) continue;
    const Shape s = ctx->GetInputShape(slot);
    const DataType want = std::string(slot) == "CustomDistAlias"
                              ? DataType::kInt32
                              : DataType::kFloat32;
    FLUID_ENFORCE(s.rank() == 1 && DimsAgree(s[0], classes) &&
                      ctx->GetInputDtype(slot) == want,
                  op, ": ", slot, " '", ctx->InputName(slot), "' must be ",
                  DataTypeName(want), " [", classes,
                  "] (num_total_classes), got ",
                  DataTypeName(ctx->GetInputDtype(slot)), " ", s);
  }
}

// [rows] or [rows, 1] with rows agreeing with Input's.
void CheckPerRow(InferShapeContext* ctx, const std::string& slot,
                 const Shape& s, int64_t rows, int64_t second,
                 const std::string& want) {
  FLUID_ENFORCE((s.rank() == 1 || (s.rank() == 2 && DimsAgree(s[1], second))) &&
                    DimsAgree(s[0], rows),
                ctx->op_type(), ": ", slot, " '", ctx->InputName(slot),
                "' must be ", want, ", got ", s);
}

// Checks every input against Input and the attrs; returns the sample
// width (num_true + num_neg_samples), -1 when num_true is unknown.
int64_t CheckNceInputs(InferShapeContext* ctx) {
  CheckNceAttrs(ctx);
  const std::string& op = ctx->op_type();
  const Shape x = ctx->GetInputShape("Input");
  const DataType dt = ctx->GetInputDtype("Input");
  FLUID_ENFORCE(x.rank() == 2, op, ": Input '", ctx->InputName("Input"),
                "' must be [N, D], got ", x);
  FLUID_ENFORCE(dt == DataType::kFloat32 || dt == DataType::kFloat64, op,
                ": Input '", ctx->InputName("Input"),
                "' must be float32 or float64, got ", DataTypeName(dt));
  const int64_t classes = ctx->Attr<int32_t>("num_total_classes");
  const Shape label = ctx->GetInputShape("Label");
  FLUID_ENFORCE(ctx->GetInputDtype("Label") == DataType::kInt64, op,
                ": Label '", ctx->InputName("Label"), "' must be int64, got ",
                DataTypeName(ctx->GetInputDtype("Label")));
  FLUID_ENFORCE(
      (label.rank() == 1 || label.rank() == 2) && DimsAgree(label[0], x[0]), op,
      ": Label '", ctx->InputName("Label"),
      "' must be [N] or [N, num_true] with N = ", x[0],
      " (the rows of Input), got ", label);
  const Shape w = ctx->GetInputShape("Weight");
  FLUID_ENFORCE(w.rank() == 2 && DimsAgree(w[0], classes) &&
                    DimsAgree(w[1], x[1]) && ctx->GetInputDtype("Weight") == dt,
                op, ": Weight '", ctx->InputName("Weight"), "' must be ",
                DataTypeName(dt), " [", classes, ", ", x[1],
                "] (num_total_classes, the width of Input), got ",
                DataTypeName(ctx->GetInputDtype("Weight")), " ", w);
  if (ctx->HasInput("Bias")) {
    FLUID_ENFORCE(ctx->GetInputDtype("Bias") == dt, op, ": Bias '",
                  ctx->InputName("Bias"), "' must be ", DataTypeName(dt));
    CheckPerRow(ctx, "Bias", ctx->GetInputShape("Bias"), classes, 1,
                "[num_total_classes, 1] or [num_total_classes]");
  }
  if (ctx->HasInput("SampleWeight")) {
    FLUID_ENFORCE(ctx->GetInputDtype("SampleWeight") == dt, op,
                  ": SampleWeight '", ctx->InputName("SampleWeight"),
                  "' must be ", DataTypeName(dt));
    CheckPerRow(ctx, "SampleWeight", ctx->GetInputShape("SampleWeight"), x[0],
                1, "[N] or [N, 1] (one weight per row of Input)");
  }
  if (ctx->HasInput("Step")) {
    const Shape s = ctx->GetInputShape("Step");
    FLUID_ENFORCE(s.rank() == 1 && DimsAgree(s[0], 1) &&
                      ctx->GetInputDtype("Step") == DataType::kInt64,
                  op, ": Step '", ctx->InputName("Step"),
                  "' must be an int64 [1] counter, got ",
                  DataTypeName(ctx->GetInputDtype("Step")), " ", s);
  }
  const int64_t num_true = label.rank() == 1 ? 1 : label[1];
  FLUID_ENFORCE(num_true != 0, op, ": Label '", ctx->InputName("Label"), "' ",
                label, " holds no true class per row");
  return num_true < 0 ? -1 : num_true + ctx->Attr<int32_t>("num_neg_samples");
}

void NceInferShape(InferShapeContext* ctx) {
  const int64_t width = CheckNceInputs(ctx);
  const int64_t rows = ctx->GetInputShape("Input")[0];
  const DataType dt = ctx->GetInputDtype("Input");
  ctx->SetOutputShape("Cost", Shape({rows, 1}));
  ctx->SetOutputDtype("Cost", dt);
  ctx->SetOutputShape("SampleLogits", Shape({rows, width}));
  ctx->SetOutputDtype("SampleLogits", dt);
  ctx->SetOutputShape("SampleLabels", Shape({rows, width}));
  ctx->SetOutputDtype("SampleLabels", DataType::kInt64);
  if (ctx->HasInput("Step")) ctx->ShareShape("Step", "StepOut");
}

void NceGradInferShape(InferShapeContext* ctx) {
  CheckNceInputs(ctx);
  const bool sparse = ctx->Attr<bool>("is_sparse");
  ctx->ShareShape("Input", GradSlot("Input"));
  for (const char* slot : {"Weight", "Bias"}) {
    if (!ctx->HasOutput(GradSlot(slot)) || !ctx->HasInput(slot)) continue;
    if (sparse) ctx->SetOutputSelectedRows(GradSlot(slot));
    ctx->ShareShape(slot, GradSlot(slot));
  }
}

const Tensor* OptionalInput(const ExecutionContext& ctx, const char* slot) {
  return ctx.HasInput(slot) ? &ctx.Input(slot) : nullptr;
}

// What a kernel reads beyond Input: weight rows, bias, per-row weights.
template <typename T>
struct NceTensors {
  const T* x;
  const T* w;
  const T* bias;    // null: none
  const T* weight;  // SampleWeight, null: 1
};

template <typename T>
NceTensors<T> ReadNceTensors(const ExecutionContext& ctx) {
  const Tensor* bias = OptionalInput(ctx, "Bias");
  const Tensor* sw = OptionalInput(ctx, "SampleWeight");
  return {ctx.Input("Input").data<T>(), ctx.Input("Weight").data<T>(),
          bias ? bias->data<T>() : nullptr, sw ? sw->data<T>() : nullptr};
}

template <typename T>
void NceKernel(const ExecutionContext& ctx) {
  const NceDims d = ReadNceDims(ctx);
  const Tensor* step_in = OptionalInput(ctx, "Step");
  const int64_t step = NceStep(ctx, step_in);
  const NceSampler sampler(ctx, d, OptionalInput(ctx, kCustomTables[0]),
                           OptionalInput(ctx, kCustomTables[1]),
                           OptionalInput(ctx, kCustomTables[2]), step);
  const int64_t* labels = ctx.Input("Label").data<int64_t>();
  sampler.CheckLabels(ctx, labels);
  const Shape sample_shape{d.rows, d.width};
  int64_t* samples =
      ctx.Output("SampleLabels")->mutable_data<int64_t>(sample_shape);
  sampler.Draw(labels, samples);
  std::vector<double> b;
  sampler.Noise(samples, d.rows * d.width, &b);
  const NceTensors<T> in = ReadNceTensors<T>(ctx);
  T* probs = ctx.Output("SampleLogits")->mutable_data<T>(sample_shape);
  T* cost = ctx.Output("Cost")->mutable_data<T>(Shape({d.rows, 1}));
  ParallelFor(
      ctx.device(), d.rows, 2.0 * d.width * d.dim, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          const T* xr = in.x + i * d.dim;
          T sum = 0;
          for (int64_t j = 0; j < d.width; ++j) {
            const int64_t p = i * d.width + j, c = samples[p];
            const T* wr = in.w + c * d.dim;
            T z = in.bias ? in.bias[c] : T(0);
            for (int64_t k = 0; k < d.dim; ++k) z += xr[k] * wr[k];
            probs[p] = NceSigmoid(z);
            sum +=
                NceSampleCost(probs[p], static_cast<T>(b[p]), j < d.num_true);
          }
          cost[i] = (in.weight ? in.weight[i] : T(1)) * sum;
        }
      });
  if (step_in != nullptr && ctx.HasOutput("StepOut"))
    ctx.Output("StepOut")->mutable_data<int64_t>(Shape{1})[0] = step + 1;
}

// The classes of SampleLabels (from the forward run), checked, and the
// per-sample d(Cost)/d(logit) times Cost@GRAD.
template <typename T>
std::vector<T> NceLogitGrads(const ExecutionContext& ctx, const NceDims& d,
                             const NceSampler& sampler, const int64_t* samples,
                             const NceTensors<T>& in) {
  const int64_t n = d.rows * d.width;
  for (int64_t p = 0; p < n; ++p)
    FLUID_ENFORCE(samples[p] >= 0 && samples[p] < d.classes, ctx.type(),
                  ": SampleLabels '", ctx.InputName("SampleLabels"),
                  "' holds class ", samples[p], " at position ", p,
                  ", outside [0, ", d.classes, ")");
  std::vector<double> b;
  sampler.Noise(samples, n, &b);
  const T* probs = ctx.Input("SampleLogits").data<T>();
  const T* dcost = ctx.Input(GradSlot("Cost")).data<T>();
  std::vector<T> g(n);
  for (int64_t p = 0; p < n; ++p) {
    const int64_t i = p / d.width;
    const T w = in.weight ? in.weight[i] : T(1);
    g[p] = NceSampleGrad(probs[p], static_cast<T>(b[p]),
                         p % d.width < d.num_true, w) *
           dcost[i];
  }
  return g;
}

template <typename T>
void NceTableGrad(const ExecutionContext& ctx, const char* slot,
                  const TouchedRows& t, const std::vector<T>& g, const T* x,
                  int64_t width, int64_t per_row) {
  if (!ctx.HasOutput(GradSlot(slot)) || !ctx.HasInput(slot)) return;
  TableGrad<T> dst =
      AllocTableGrad<T>(ctx, GradSlot(slot), ctx.Input(slot).shape(), t.merge,
                        ctx.Attr<bool>("is_sparse"));
  std::fill_n(dst.values, dst.numel, T(0));
  ParallelFor(ctx.device(), t.merge.size(), 2.0 * width * per_row,
              [&](int64_t lo, int64_t hi) {
                AccumulateTouchedRows(t, dst.dst_rows, g.data(), x, width,
                                      per_row, dst.values, lo, hi);
              });
}

template <typename T>
void NceGradKernel(const ExecutionContext& ctx) {
  const NceDims d = ReadNceDims(ctx);
  const NceSampler sampler(ctx, d, OptionalInput(ctx, kCustomTables[0]),
                           OptionalInput(ctx, kCustomTables[1]),
                           OptionalInput(ctx, kCustomTables[2]), 0);
  const int64_t* samples = ctx.Input("SampleLabels").data<int64_t>();
  const NceTensors<T> in = ReadNceTensors<T>(ctx);
  const std::vector<T> g = NceLogitGrads<T>(ctx, d, sampler, samples, in);
  if (ctx.HasOutput(GradSlot("Input"))) {
    T* dx = ctx.Output(GradSlot("Input"))
                ->mutable_data<T>(ctx.Input("Input").shape());
    ParallelFor(ctx.device(), d.rows, 2.0 * d.width * d.dim,
                [&](int64_t lo, int64_t hi) {
                  for (int64_t i = lo; i < hi; ++i) {
                    T* row = dx + i * d.dim;
                    std::fill_n(row, d.dim, T(0));
                    for (int64_t j = 0; j < d.width; ++j) {
                      const int64_t p = i * d.width + j;
                      const T* wr = in.w + samples[p] * d.dim;
                      for (int64_t k = 0; k < d.dim; ++k)
                        row[k] += g[p] * wr[k];
                    }
                  }
                });
  }
  const TouchedRows t = CollectTouchedRows(samples, d.rows * d.width);
  NceTableGrad<T>(ctx, "Weight", t, g, in.x, d.dim, d.width);
  NceTableGrad<T>(ctx, "Bias", t, g, nullptr, 1, d.width);
}

}  // namespace

NceDims ReadNceDims(const ExecutionContext& ctx) {
  const Shape x = ctx.Input("Input").shape();
  const Shape label = ctx.Input("Label").shape();
  NceDims d;
  d.rows = x[0];
  d.dim = x[1];
  d.num_true = label.rank() == 1 ? 1 : label[1];
  d.num_neg = ctx.Attr<int32_t>("num_neg_samples");
  d.width = d.num_true + d.num_neg;
  d.classes = ctx.Attr<int32_t>("num_total_classes");
  if (ctx.type() == "nce_grad") {
    const Shape want{d.rows, d.width};
    for (const char* slot : {"SampleLabels", "SampleLogits"})
      FLUID_ENFORCE(ctx.Input(slot).shape() == want, ctx.type(), ": ", slot,
                    " '", ctx.InputName(slot), "' has shape ",
                    ctx.Input(slot).shape(), ", the forward run's ", want);
    FLUID_ENFORCE(ctx.Input(GradSlot("Cost")).numel() == d.rows, ctx.type(),
                  ": Cost@GRAD '", ctx.InputName(GradSlot("Cost")), "' ",
                  ctx.Input(GradSlot("Cost")).shape(), " must hold ", d.rows,
                  " elements, one per row of Input");
  }
  return d;
}

int64_t NceStep(const ExecutionContext& ctx, const Tensor* step) {
  if (step == nullptr) return 0;
  FLUID_ENFORCE(step->numel() == 1, ctx.type(), ": Step '",
                ctx.InputName("Step"), "' must hold one int64, has shape ",
                step->shape());
  return step->data<int64_t>()[0];
}

NceSampler::NceSampler(const ExecutionContext& ctx, const NceDims& d,
                       const Tensor* probs, const Tensor* alias,
                       const Tensor* alias_probs, int64_t step)
    : d_(d), kind_(ctx.Attr<int32_t>("sampler")) {
  const int32_t seed = ctx.Attr<int32_t>("seed");
  const uint64_t base =
      seed != 0 ? static_cast<uint32_t>(seed)
                : Fnv1a64(ctx.type() == "nce" ? ctx.OutputName("Cost")
                                              : std::string("nce"));
  key_ = DropoutKey(Mix64(base), step);
  custom_neg_ = ctx.Attr<std::vector<int32_t>>("custom_neg_classes");
  if (kind_ != kNceCustomDist) return;
  FLUID_ENFORCE(probs && alias && alias_probs, ctx.type(),
                ": sampler 2 (custom_dist) needs CustomDistProbs, "
                "CustomDistAlias and CustomDistAliasProbs");
  for (const Tensor* t : {probs, alias, alias_probs})
    FLUID_ENFORCE(t->numel() == d.classes, ctx.type(),
                  ": the custom_dist tables must hold num_total_classes = ",
                  d.classes, " entries, one has shape ", t->shape());
  probs_.assign(probs->data<float>(), probs->data<float>() + d.classes);
  alias_.assign(alias->data<int32_t>(), alias->data<int32_t>() + d.classes);
  alias_probs_.assign(alias_probs->data<float>(),
                      alias_probs->data<float>() + d.classes);
  for (int64_t c = 0; c < d.classes; ++c) {
    FLUID_ENFORCE(probs_[c] >= 0.0f && probs_[c] <= 1.0f, ctx.type(),
                  ": CustomDistProbs '", ctx.InputName("CustomDistProbs"),
                  "' holds ", probs_[c], " at ", c, ", outside [0, 1]");
    FLUID_ENFORCE(alias_[c] >= -1 && alias_[c] < d.classes, ctx.type(),
                  ": CustomDistAlias '", ctx.InputName("CustomDistAlias"),
                  "' holds ", alias_[c], " at ", c, ", outside [0, ", d.classes,
                  ") and not -1 (no alias)");
    FLUID_ENFORCE(alias_probs_[c] >= 0.0f && alias_probs_[c] <= 1.0f,
                  ctx.type(), ": CustomDistAliasProbs '",
                  ctx.InputName("CustomDistAliasProbs"), "' holds ",
                  alias_probs_[c], " at ", c, ", outside [0, 1]");
  }
}

void NceSampler::CheckLabels(const ExecutionContext& ctx,
                             const int64_t* labels) const {
  for (int64_t p = 0; p < d_.rows * d_.num_true; ++p)
    FLUID_ENFORCE(labels[p] >= 0 && labels[p] < d_.classes, ctx.type(),
                  ": Label '", ctx.InputName("Label"), "' holds class ",
                  labels[p], " at position ", p, ", outside [0, ", d_.classes,
                  ") (num_total_classes)");
}

int64_t NceSampler::DrawOne(int64_t row, int64_t slot) const {
  // Two 53-bit uniforms per draw (the alias method uses both).
  const uint64_t counter = static_cast<uint64_t>(row * d_.num_neg + slot) * 2;
  const double u = static_cast<double>(Mix64(key_ + counter) >> 11) * 0x1.0p-53;
  const int64_t n = d_.classes;
  if (kind_ == kNceLogUniform) {
    // P(c) = log((c + 2) / (c + 1)) / log(n): floor(exp(u log n)) - 1.
    const int64_t c =
        static_cast<int64_t>(std::exp(u * std::log(static_cast<double>(n)))) -
        1;
    return std::min(std::max<int64_t>(c, 0), n - 1);
  }
  const int64_t c = std::min(static_cast<int64_t>(u * n), n - 1);
  if (kind_ == kNceUniform) return c;
  const double v =
      static_cast<double>(Mix64(key_ + counter + 1) >> 11) * 0x1.0p-53;
  return v < alias_probs_[c] || alias_[c] < 0 ? c : alias_[c];
}

void NceSampler::Draw(const int64_t* labels, int64_t* samples) const {
  for (int64_t i = 0; i < d_.rows; ++i) {
    int64_t* row = samples + i * d_.width;
    std::copy_n(labels + i * d_.num_true, d_.num_true, row);
    for (int64_t j = 0; j < d_.num_neg; ++j)
      row[d_.num_true + j] =
          custom_neg_.empty() ? DrawOne(i, j) : int64_t{custom_neg_[j]};
  }
}

void NceSampler::Noise(const int64_t* samples, int64_t n,
                       std::vector<double>* b) const {
  b->resize(n);
  const double classes = static_cast<double>(d_.classes);
  for (int64_t p = 0; p < n; ++p) {
    const int64_t c = samples[p];
    double prob;
    if (kind_ == kNceUniform) {
      prob = 1.0 / classes;
    } else if (kind_ == kNceLogUniform) {
      prob = std::log((c + 2.0) / (c + 1.0)) / std::log(classes);
    } else {
      prob = probs_[c];
    }
    (*b)[p] = prob * static_cast<double>(d_.num_neg);
  }
}

REGISTER_OP(nce)
    .Doc(
        "Noise-contrastive estimation: Cost [N, 1] of each row's true "
        "classes against num_neg_samples classes drawn from a noise "
        "distribution.")
    .Input("Input", "[N, D]")
    .Input("Label", "int64 [N, num_true] (or [N]): the true classes")
    .Input("Weight", "[num_total_classes, D]")
    .OptionalInput("Bias", "[num_total_classes, 1]")
    .OptionalInput("SampleWeight", "[N] or [N, 1]: each row's cost weight")
    .OptionalInput("CustomDistProbs", "float32 [num_total_classes]: P(c)")
    .OptionalInput("CustomDistAlias",
                   "int32 [num_total_classes]: the alias table of P")
    .OptionalInput("CustomDistAliasProbs",
                   "float32 [num_total_classes]: the alias probabilities")
    .OptionalInput("Step", "int64 [1]: the run counter the draws depend on")
    .Output("Cost", "[N, 1]")
    .Output("SampleLogits",
            "[N, num_true + num_neg_samples]: sigmoid of each class's logit")
    .Output("SampleLabels",
            "int64 [N, num_true + num_neg_samples]: true classes, then the "
            "sampled ones")
    .OptionalOutput("StepOut", "Step + 1 (normally Step itself)")
    .Attr<int32_t>("num_total_classes", 1, "the number of classes")
    .Attr<int32_t>("num_neg_samples", 10, "sampled classes per row")
    .Attr<int32_t>("sampler", kNceUniform,
                   "0: uniform, 1: log_uniform, 2: custom_dist")
    .Attr<int32_t>("seed", 0, "the draws' seed; 0 derives one from Cost's name")
    .Attr<bool>("is_sparse", false,
                "Weight@GRAD and Bias@GRAD as sparse rows (SelectedRows)")
    .Attr<std::vector<int32_t>>(
        "custom_neg_classes", {},
        "when given, the sampled classes of every row (for tests)")
    .SetInferShape(NceInferShape)
    .SetGrad(GradSpec("nce_grad")
                 .Inputs({"Input", "Label", "Weight", "Bias", "SampleWeight",
                          "CustomDistProbs", "CustomDistAlias",
                          "CustomDistAliasProbs"})
                 .Outputs({"SampleLogits", "SampleLabels"})
                 .OutGrads({"Cost"})
                 .InGrads({"Input", "Weight", "Bias"}))
    .CPUKernel<float>(NceKernel<float>)
    .CPUKernel<double>(NceKernel<double>);

REGISTER_GRAD_OP(nce_grad)
    .Doc(
        "Gradients of nce for Input, Weight and Bias, given the forward "
        "run's samples; Weight's and Bias's as sparse rows with is_sparse.")
    .SetInferShape(NceGradInferShape)
    .CPUKernel<float>(NceGradKernel<float>)
    .CPUKernel<double>(NceGradKernel<double>);

}  // namespace ops
}  // namespace fluid
