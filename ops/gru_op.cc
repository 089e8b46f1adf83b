// gru: Fluid's dynamic GRU over a level-1 LoD batch (equations in
// ops/gru_op.h). Input is the already projected gate input [rows, 3D],
// Weight [D, 3D] the recurrent weight in Fluid's memory layout (W_ur, then
// W_c), Bias [1, 3D] optional. Hidden keeps Input's rows and LoD;
// BatchGate (the activations), BatchResetHiddenPrev (r * h_prev) and
// BatchHidden, in batch order, are kept for the gradient. Every sequence
// must hold at least one row. With a bfloat16 or float16 Input, Weight, H0,
// Hidden and BatchResetHiddenPrev are of its type and Bias, BatchGate and
// BatchHidden float32 (ops/gru_op.h).
#include "ops/gru_op.h"

#include "ops/recurrent_cpu.h"
#include "ops/sequence_helpers.h"

namespace fluid {
namespace ops {

GruArgs ReadGruArgs(const ExecutionContext& ctx) {
  GruArgs a;
  a.x = &ctx.Input("Input");
  a.weight = &ctx.Input("Weight");
  a.bias = ctx.HasInput("Bias") ? &ctx.Input("Bias") : nullptr;
  a.h0 = ctx.HasInput("H0") ? &ctx.Input("H0") : nullptr;
  a.width = a.weight->shape()[0];
  a.acts.gate = ParseRecurrentAct(ctx.type(), "gate_activation",
                                  ctx.Attr<std::string>("gate_activation"));
  a.acts.candidate = ParseRecurrentAct(ctx.type(), "activation",
                                       ctx.Attr<std::string>("activation"));
  a.origin_mode = ctx.Attr<bool>("origin_mode");
  a.layout = &ThreadBatchLayout(ctx, a.x->lod(), ctx.Attr<bool>("is_reverse"));
  return a;
}

namespace {

void GruInferShape(InferShapeContext* ctx) {
  for (const char* attr : {"gate_activation", "activation"})
    ParseRecurrentAct("gru", attr, ctx->Attr<std::string>(attr));
  const LoD lod = SequenceInputLoD(ctx, "Input");
  const Shape x = ctx->GetInputShape("Input");
  const Shape w = ctx->GetInputShape("Weight");
  FLUID_ENFORCE(w.rank() == 2 && (w[0] < 0 || w[1] < 0 || w[1] == 3 * w[0]),
                "gru: Weight ", Quote(ctx->InputName("Weight")), " has shape ",
                w, "; it must be [D, 3 * D]");
  const int64_t d = w[0];
  FLUID_ENFORCE(x.rank() == 2 && (x[1] < 0 || d < 0 || x[1] == 3 * d),
                "gru: Input ", Quote(ctx->InputName("Input")), " has shape ", x,
                "; with Weight ", w, " it must be [rows, ", 3 * d, "]");
  if (ctx->HasInput("Bias")) {
    const Shape b = ctx->GetInputShape("Bias");
    FLUID_ENFORCE(
        b.rank() == 2 && b[0] == 1 && (b[1] < 0 || d < 0 || b[1] == 3 * d),
        "gru: Bias ", Quote(ctx->InputName("Bias")), " has shape ", b,
        "; it must be [1, ", 3 * d, "]");
  }
  CheckRecurrentState(ctx, "H0", d, lod);
  const DataType dtype = ctx->GetInputDtype("Input");
  const DataType compute =
      RecurrentComputeDtype(ctx, {"Weight", "H0"}, {"Bias"});
  for (const char* slot :
       {"Hidden", "BatchGate", "BatchResetHiddenPrev", "BatchHidden"}) {
    const std::string name = slot;
    const int64_t cols = name == "BatchGate" ? 3 * d : d;
    ctx->SetOutputShape(slot, Shape{x[0], d < 0 ? -1 : cols});
    ctx->SetOutputDtype(
        slot, name == "BatchGate" || name == "BatchHidden" ? compute : dtype);
  }
  ctx->ShareLoD("Input", "Hidden");
}

void GruGradInferShape(InferShapeContext* ctx) {
  for (const char* slot : {"Input", "Weight", "Bias", "H0"})
    if (ctx->HasInput(slot)) ctx->ShareShape(slot, GradSlot(slot));
}

template <typename T>
void GruKernel(const ExecutionContext& ctx) {
  GruForward<T>(CpuRecurrentDevice(ctx));
}

template <typename T>
void GruGradKernel(const ExecutionContext& ctx) {
  GruBackward<T>(CpuRecurrentDevice(ctx));
}

}  // namespace

REGISTER_OP(gru)
    .Doc(
        "GRU over each sequence of a level-1 LoD batch, Fluid's gate "
        "layout {u, r, c} and weight layout, forward or reverse.")
    .Input("Input", "[rows, 3D] projected gate input, level-1 LoD")
    .OptionalInput("H0", "[sequences, D] initial hidden state; absent: 0")
    .Input("Weight", "[D, 3D]: W_ur [D, 2D] then W_c [D, D] in memory")
    .OptionalInput("Bias", "[1, 3D] gate bias; absent: 0")
    .Output("BatchGate", "[rows, 3D] u, r, c in batch order")
    .Output("BatchResetHiddenPrev", "[rows, D] r * h_prev in batch order")
    .Output("BatchHidden", "[rows, D] hidden state in batch order")
    .Output("Hidden", "[rows, D], Input's LoD")
    .Attr<std::string>("activation", "tanh", "of the candidate")
    .Attr<std::string>("gate_activation", "sigmoid", "of u and r")
    .Attr<bool>("is_reverse", false, "run each sequence from its end")
    .Attr<bool>("origin_mode", false,
                "h = u * h_prev + (1 - u) * c; false: (1 - u) * h_prev + u * c")
    .SetInferShape(GruInferShape)
    .SetGrad(GradSpec("gru_grad")
                 .Inputs({"Input", "H0", "Weight", "Bias"})
                 .Outputs({"BatchGate", "BatchResetHiddenPrev", "BatchHidden"})
                 .OutGrads({"Hidden"})
                 .InGrads({"Input", "H0", "Weight", "Bias"}))
    .CPUKernel<float>(GruKernel<float>)
    .CPUKernel<double>(GruKernel<double>)
    .CPUKernel<bfloat16>(GruKernel<bfloat16>)
    .CPUKernel<float16>(GruKernel<float16>);

REGISTER_GRAD_OP(gru_grad)
    .Doc("Backpropagation through time of gru, step by step in reverse.")
    .SetInferShape(GruGradInferShape)
    .CPUKernel<float>(GruGradKernel<float>)
    .CPUKernel<double>(GruGradKernel<double>)
    .CPUKernel<bfloat16>(GruGradKernel<bfloat16>)
    .CPUKernel<float16>(GruGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
