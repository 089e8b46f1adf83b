// check_finite_and_unscale: the first half of dynamic loss scaling (fp16
// training). The loss was multiplied by Scale so that small gradients
// survive in 16 bits; this op divides every gradient X[i] back into Out[i]
// (usually X[i] itself) and sets FoundInfinite to 1 when any element of any
// X is an Inf or a NaN, else 0, for update_loss_scaling to skip the step.
// Fluid's FoundInfinite is bool; this product has no bool dtype, so it is
// int32 (0 or 1).
//
// Each X is dense or sparse rows (their values are checked and divided;
// Out keeps the rows), of its own float dtype (float32 for the master
// weights' gradients, float64, float16, bfloat16); a 16-bit element is
// divided in float32 and rounded once. Out = X / Scale holds for every
// element, the non-finite ones included. Not differentiable.
//
// Also defines what both loss-scaling ops share on the host
// (ops/loss_scaling.h).
#include <atomic>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ops/loss_scaling.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

namespace {

GradPair DenseGradPair(const ExecutionContext& ctx, size_t i, Variable* ov) {
  const Tensor& x = ctx.Input("X", i);
  Tensor* out = ov->GetMutableTensor();
  if (out != &x) {
    out->set_dtype(x.dtype());
    out->Resize(x.shape());
    out->raw_mutable_data(ctx.place());
  }
  return {&x, out, out->raw_data() == x.raw_data()};
}

GradPair SparseGradPair(const ExecutionContext& ctx, const SelectedRows& sr,
                        Variable* ov) {
  SelectedRows* o = ov->GetMutableSelectedRows();
  if (o != &sr) {
    o->set_height(sr.height());
    *o->mutable_rows() = sr.rows();
  }
  const Tensor& x = sr.value();
  Tensor* out = o->mutable_value();
  if (out != &x) {
    out->set_dtype(x.dtype());
    out->Resize(x.shape());
    // A gradient that touched no row may hold no memory: neither does Out.
    if (x.initialized()) out->raw_mutable_data(ctx.place());
  }
  const bool in_place =
      out == &x || (x.initialized() && out->raw_data() == x.raw_data());
  return {&x, out, in_place};
}

// The position of the first X other than X[i] named `name`, or -1.
int64_t OtherXNamed(const InferShapeContext& ctx, const std::string& name,
                    size_t i) {
  for (size_t j = 0; j < ctx.InputSize("X"); ++j)
    if (j != i && ctx.InputName("X", j) == name) return static_cast<int64_t>(j);
  return -1;
}

// Out[i] writes where no other position reads or writes: Out[i] is X[i] or
// a var of its own. (In place with X listing a var twice, the second would
// read the first's result.)
void CheckOutPositions(InferShapeContext* ctx) {
  const size_t n = ctx->InputSize("X");
  std::unordered_map<std::string, int> x_count;
  for (size_t i = 0; i < n; ++i) ++x_count[ctx->InputName("X", i)];
  std::unordered_set<std::string> outs;
  for (size_t i = 0; i < n; ++i) {
    const std::string& o = ctx->OutputName("Out", i);
    auto it = x_count.find(o);
    const int others = (it == x_count.end() ? 0 : it->second) -
                       (o == ctx->InputName("X", i) ? 1 : 0);
    FLUID_ENFORCE(others == 0, ctx->op_type(), ": Out[", i, "] '", o,
                  "' is also X[", OtherXNamed(*ctx, o, i),
                  "]; each Out must be its own X (in place) or a var no other ",
                  "X or Out names");
    FLUID_ENFORCE(outs.insert(o).second, ctx->op_type(), ": Out[", i, "] '", o,
                  "' is listed twice in Out; each Out must be its own X (in ",
                  "place) or a var no other X or Out names");
  }
}

}  // namespace

std::vector<GradPair> LossScalingGrads(const ExecutionContext& ctx) {
  const size_t n = ctx.InputSize("X");
  FLUID_ENFORCE(ctx.OutputSize("Out") == n, ctx.type(), ": ", n, " X but ",
                ctx.OutputSize("Out"), " Out");
  std::vector<GradPair> pairs;
  pairs.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Variable* xv = ctx.InputVar("X", i);
    Variable* ov = ctx.OutputVar("Out", i);
    FLUID_ENFORCE(ov != nullptr, ctx.type(), ": Out[", i, "] is missing");
    pairs.push_back(xv->IsSelectedRows()
                        ? SparseGradPair(ctx, xv->Get<SelectedRows>(), ov)
                        : DenseGradPair(ctx, i, ov));
  }
  return pairs;
}

void InferLossScalingGrads(InferShapeContext* ctx) {
  const size_t n = ctx->InputSize("X");
  FLUID_ENFORCE(ctx->OutputSize("Out") == n, ctx->op_type(), ": ", n, " X but ",
                ctx->OutputSize("Out"),
                " Out; Out lists one var per X (usually X itself)");
  CheckOutPositions(ctx);
  for (size_t i = 0; i < n; ++i) {
    const DataType dtype = ctx->GetInputDtype("X", i);
    FLUID_ENFORCE(IsFloatDtype(dtype), ctx->op_type(), ": X[", i, "] '",
                  ctx->InputName("X", i), "' is ", dtype,
                  "; the gradients must be float32, float64, float16 or "
                  "bfloat16");
    if (ctx->IsSelectedRowsInput("X", i)) ctx->SetOutputSelectedRows("Out", i);
    ctx->ShareShape("X", "Out", i);
  }
}

void CheckLossScalingScalar(InferShapeContext* ctx, const std::string& slot,
                            bool float_value) {
  const Shape shape = ctx->GetInputShape(slot);
  const int64_t n = shape.numel();
  FLUID_ENFORCE(n < 0 || n == 1, ctx->op_type(), ": ", slot, " '",
                ctx->InputName(slot), "' must hold one element, has shape ",
                shape);
  const DataType dtype = ctx->GetInputDtype(slot);
  const bool ok =
      float_value ? (dtype == DataType::kFloat32 || dtype == DataType::kFloat64)
                  : dtype == DataType::kInt32;
  FLUID_ENFORCE(ok, ctx->op_type(), ": ", slot, " '", ctx->InputName(slot),
                "' is ", dtype, "; it must be ",
                float_value ? "float32 or float64" : "int32");
}

namespace {

template <typename T>
bool UnscaleRange(const T* x, T* out, int64_t begin, int64_t end,
                  typename LossScalingCompute<T>::type s) {
  bool finite = true;
  for (int64_t i = begin; i < end; ++i)
    finite = UnscaleElement(x, out, i, s) & finite;
  return finite;
}

// Out = X / scale; returns whether X holds an Inf or a NaN.
template <typename T>
bool UnscaleValues(const CPUDeviceContext& dev, const GradPair& p,
                   double scale) {
  using C = typename LossScalingCompute<T>::type;
  const C s = static_cast<C>(scale);
  const T* x = p.x->data<T>();
  T* out = p.out->data<T>();
  std::atomic<bool> finite{true};
  ParallelFor(dev, p.x->numel(), 4.0, [&](int64_t b, int64_t e) {
    // In place, one pointer: the loop vectorizes without alias checks.
    const bool ok = p.in_place ? UnscaleRange(out, out, b, e, s)
                               : UnscaleRange(x, out, b, e, s);
    if (!ok) finite.store(false, std::memory_order_relaxed);
  });
  return !finite.load();
}

bool UnscaleOnCpu(const ExecutionContext& ctx, const GradPair& p,
                  double scale) {
  if (p.x->numel() == 0) return false;
  switch (p.x->dtype()) {
    case DataType::kFloat32:
      return UnscaleValues<float>(ctx.device(), p, scale);
    case DataType::kFloat64:
      return UnscaleValues<double>(ctx.device(), p, scale);
    case DataType::kFloat16:
      return UnscaleValues<float16>(ctx.device(), p, scale);
    case DataType::kBFloat16:
      return UnscaleValues<bfloat16>(ctx.device(), p, scale);
    default:
      FLUID_THROW(ErrorCode::kInvalidArgument, ctx.type(), ": a gradient is ",
                  p.x->dtype(), "; the gradients must be float32, float64, ",
                  "float16 or bfloat16");
  }
}

// One kernel for every dtype of X[0]: each X is read in its own dtype.
void CheckFiniteAndUnscaleKernel(const ExecutionContext& ctx) {
  const double scale = ReadScalar(ctx, "Scale");
  bool found = false;
  for (const GradPair& p : LossScalingGrads(ctx))
    found = UnscaleOnCpu(ctx, p, scale) || found;
  ctx.Output("FoundInfinite")->mutable_data<int32_t>(Shape{1})[0] =
      found ? 1 : 0;
}

void CheckFiniteAndUnscaleInferShape(InferShapeContext* ctx) {
  InferLossScalingGrads(ctx);
  CheckLossScalingScalar(ctx, "Scale", true);
  ctx->SetOutputShape("FoundInfinite", Shape{1});
  ctx->SetOutputDtype("FoundInfinite", DataType::kInt32);
}

}  // namespace

REGISTER_OP(check_finite_and_unscale)
    .Doc(
        "Out[i] = X[i] / Scale for every gradient X[i]; FoundInfinite = 1 "
        "when any element of any X is an Inf or a NaN, else 0 (int32: "
        "Fluid's is bool, a dtype this product lacks). Not differentiable.")
    .DuplicableInput("X",
                     "the gradients, dense or sparse rows, each float32, "
                     "float64, float16 or bfloat16")
    .Input("Scale", "the loss scaling, one element, float32 or float64")
    .DuplicableOutput("Out",
                      "X[i] / Scale, one per X, in X's dtype; usually X "
                      "itself (in place)")
    .Output("FoundInfinite",
            "int32 [1]: 1 when any X holds an Inf or a NaN, else 0")
    .SetInferShape(CheckFiniteAndUnscaleInferShape)
    .CPUKernel<float>(CheckFiniteAndUnscaleKernel)
    .CPUKernel<double>(CheckFiniteAndUnscaleKernel)
    .CPUKernel<float16>(CheckFiniteAndUnscaleKernel)
    .CPUKernel<bfloat16>(CheckFiniteAndUnscaleKernel);

}  // namespace ops
}  // namespace fluid
