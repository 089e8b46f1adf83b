// gru_unit: one GRU step on dense rows (see ops/gru_unit_op.h). With a
// bfloat16 or float16 Input, Weight and ResetHiddenPrev are of its type
// and HiddenPrev, Bias, Gate and Hidden float32.
#include "ops/gru_unit_op.h"

#include "ops/recurrent_cpu.h"

namespace fluid {
namespace ops {

RecurrentAct GruUnitAct(const ExecutionContext& ctx, const char* attr) {
  switch (ctx.Attr<int32_t>(attr)) {
    case 0:
      return RecurrentAct::kIdentity;
    case 1:
      return RecurrentAct::kSigmoid;
    case 2:
      return RecurrentAct::kTanh;
    case 3:
      return RecurrentAct::kRelu;
    default:
      FLUID_THROW(ErrorCode::kInvalidArgument, ctx.type(), ": attr '", attr,
                  "' is ", ctx.Attr<int32_t>(attr),
                  "; expected 0 (identity), 1 (sigmoid), 2 (tanh) or 3 "
                  "(relu)");
  }
}

namespace {

void GruUnitInferShape(InferShapeContext* ctx) {
  for (const char* attr : {"activation", "gate_activation"}) {
    const int32_t v = ctx->Attr<int32_t>(attr);
    FLUID_ENFORCE(v >= 0 && v <= 3, "gru_unit: attr '", attr, "' is ", v,
                  "; expected 0 (identity), 1 (sigmoid), 2 (tanh) or 3 "
                  "(relu)");
  }
  const Shape x = ctx->GetInputShape("Input");
  const Shape h = ctx->GetInputShape("HiddenPrev");
  const Shape w = ctx->GetInputShape("Weight");
  FLUID_ENFORCE(h.rank() == 2, "gru_unit: HiddenPrev ",
                Quote(ctx->InputName("HiddenPrev")), " has shape ", h,
                "; it must be [N, D]");
  const int64_t d = h[1];
  FLUID_ENFORCE(w.rank() == 2 && (d < 0 || (w[0] == d && w[1] == 3 * d)),
                "gru_unit: Weight ", Quote(ctx->InputName("Weight")),
                " has shape ", w, "; with HiddenPrev ", h, " it must be [", d,
                ", ", 3 * d, "]");
  FLUID_ENFORCE(x.rank() == 2 && (d < 0 || x[1] == 3 * d) &&
                    (x[0] < 0 || h[0] < 0 || x[0] == h[0]),
                "gru_unit: Input ", Quote(ctx->InputName("Input")),
                " has shape ", x, "; with HiddenPrev ", h, " it must be [",
                h[0], ", ", 3 * d, "]");
  if (ctx->HasInput("Bias")) {
    const Shape b = ctx->GetInputShape("Bias");
    FLUID_ENFORCE(b.numel() == 3 * d || b.numel() < 0 || d < 0,
                  "gru_unit: Bias ", Quote(ctx->InputName("Bias")),
                  " has shape ", b, "; it must be [1, ", 3 * d, "]");
  }
  const DataType compute =
      RecurrentComputeDtype(ctx, {"Weight"}, {"HiddenPrev", "Bias"});
  ctx->SetOutputShape("Gate", x);
  ctx->SetOutputDtype("Gate", compute);
  ctx->ShareShape("HiddenPrev", "ResetHiddenPrev");
  ctx->SetOutputDtype("ResetHiddenPrev", ctx->GetInputDtype("Input"));
  ctx->ShareShape("HiddenPrev", "Hidden");
}

void GruUnitGradInferShape(InferShapeContext* ctx) {
  for (const char* slot : {"Input", "HiddenPrev", "Weight", "Bias"})
    if (ctx->HasInput(slot)) ctx->ShareShape(slot, GradSlot(slot));
}

template <typename T>
void GruUnitKernel(const ExecutionContext& ctx) {
  GruUnitForward<T>(CpuRecurrentDevice(ctx));
}

template <typename T>
void GruUnitGradKernel(const ExecutionContext& ctx) {
  GruUnitBackward<T>(CpuRecurrentDevice(ctx));
}

}  // namespace

REGISTER_OP(gru_unit)
    .Doc("One GRU step on dense rows, Fluid's gate and weight layout.")
    .Input("Input", "[N, 3D] projected gate input")
    .Input("HiddenPrev",
           "[N, D] previous hidden state (float32 for a 16-bit Input)")
    .Input("Weight", "[D, 3D]: W_ur [D, 2D] then W_c [D, D] in memory")
    .OptionalInput("Bias",
                   "[1, 3D] gate bias (float32 for a 16-bit Input); absent: 0")
    .Output("Gate", "[N, 3D] u, r, c; HiddenPrev's type")
    .Output("ResetHiddenPrev", "[N, D] r * HiddenPrev; Input's type")
    .Output("Hidden", "[N, D] hidden state; HiddenPrev's type")
    .Attr<int32_t>("activation", 2,
                   "of the candidate: 0 identity, 1 sigmoid, 2 tanh, 3 relu")
    .Attr<int32_t>("gate_activation", 1, "of u and r, numbered as activation")
    .Attr<bool>("origin_mode", false,
                "h = u * h_prev + (1 - u) * c; false: (1 - u) * h_prev + u * c")
    .SetInferShape(GruUnitInferShape)
    .SetGrad(GradSpec("gru_unit_grad")
                 .Inputs({"Input", "HiddenPrev", "Weight", "Bias"})
                 .Outputs({"Gate", "ResetHiddenPrev"})
                 .OutGrads({"Hidden"})
                 .InGrads({"Input", "HiddenPrev", "Weight", "Bias"}))
    .CPUKernel<float>(GruUnitKernel<float>)
    .CPUKernel<double>(GruUnitKernel<double>)
    .CPUKernel<bfloat16>(GruUnitKernel<bfloat16>)
    .CPUKernel<float16>(GruUnitKernel<float16>);

REGISTER_GRAD_OP(gru_unit_grad)
    .Doc("Gradients of gru_unit from Hidden's.")
    .SetInferShape(GruUnitGradInferShape)
    .CPUKernel<float>(GruUnitGradKernel<float>)
    .CPUKernel<double>(GruUnitGradKernel<double>)
    .CPUKernel<bfloat16>(GruUnitGradKernel<bfloat16>)
    .CPUKernel<float16>(GruUnitGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
