// lstm: Fluid's dynamic LSTM over a level-1 LoD batch (equations in
// ops/lstm_op.h). Input is the already projected gate input [rows, 4D],
// Weight [D, 4D] the recurrent weight, Bias [1, 4D] ([1, 7D] with
// use_peepholes: then W_ic, W_fc, W_oc). Hidden and Cell keep Input's rows
// and LoD; BatchGate (the gate activations) and BatchCellPreAct (the cell
// state), both in batch order, are kept for the gradient. Every sequence
// must hold at least one row. With a bfloat16 or float16 Input, Weight, H0,
// Hidden and Cell are of its type and Bias, C0, BatchGate and
// BatchCellPreAct float32 (ops/lstm_op.h).
#include "ops/lstm_op.h"

#include "ops/recurrent_cpu.h"
#include "ops/sequence_helpers.h"

namespace fluid {
namespace ops {

LstmArgs ReadLstmArgs(const ExecutionContext& ctx) {
  LstmArgs a;
  a.x = &ctx.Input("Input");
  a.weight = &ctx.Input("Weight");
  a.bias = &ctx.Input("Bias");
  a.h0 = ctx.HasInput("H0") ? &ctx.Input("H0") : nullptr;
  a.c0 = ctx.HasInput("C0") ? &ctx.Input("C0") : nullptr;
  a.width = a.weight->shape()[0];
  a.peepholes = ctx.Attr<bool>("use_peepholes");
  a.acts.gate = ParseRecurrentAct(ctx.type(), "gate_activation",
                                  ctx.Attr<std::string>("gate_activation"));
  a.acts.cell = ParseRecurrentAct(ctx.type(), "cell_activation",
                                  ctx.Attr<std::string>("cell_activation"));
  a.acts.candidate =
      ParseRecurrentAct(ctx.type(), "candidate_activation",
                        ctx.Attr<std::string>("candidate_activation"));
  a.layout = &ThreadBatchLayout(ctx, a.x->lod(), ctx.Attr<bool>("is_reverse"));
  return a;
}

namespace {

void CheckActivations(InferShapeContext* ctx) {
  for (const char* attr :
       {"gate_activation", "cell_activation", "candidate_activation"})
    ParseRecurrentAct(ctx->op_type(), attr, ctx->Attr<std::string>(attr));
}

void LstmInferShape(InferShapeContext* ctx) {
  CheckActivations(ctx);
  const LoD lod = SequenceInputLoD(ctx, "Input");
  const Shape x = ctx->GetInputShape("Input");
  const Shape w = ctx->GetInputShape("Weight");
  const Shape b = ctx->GetInputShape("Bias");
  FLUID_ENFORCE(w.rank() == 2 && (w[0] < 0 || w[1] < 0 || w[1] == 4 * w[0]),
                "lstm: Weight ", Quote(ctx->InputName("Weight")), " has shape ",
                w, "; it must be [D, 4 * D]");
  const int64_t d = w[0];
  FLUID_ENFORCE(x.rank() == 2 && (x[1] < 0 || d < 0 || x[1] == 4 * d),
                "lstm: Input ", Quote(ctx->InputName("Input")), " has shape ",
                x, "; with Weight ", w, " it must be [rows, ", 4 * d, "]");
  const bool peep = ctx->Attr<bool>("use_peepholes");
  const int64_t bias_width = (peep ? 7 : 4) * d;
  FLUID_ENFORCE(
      b.rank() == 2 && b[0] == 1 && (b[1] < 0 || d < 0 || b[1] == bias_width),
      "lstm: Bias ", Quote(ctx->InputName("Bias")), " has shape ", b,
      "; with use_peepholes ", peep ? "true" : "false", " it must be [1, ",
      bias_width, "]");
  CheckRecurrentState(ctx, "H0", d, lod);
  CheckRecurrentState(ctx, "C0", d, lod);
  const DataType dtype = ctx->GetInputDtype("Input");
  const DataType compute =
      RecurrentComputeDtype(ctx, {"Weight", "H0"}, {"Bias", "C0"});
  for (const char* slot : {"Hidden", "Cell", "BatchGate", "BatchCellPreAct"}) {
    const std::string name = slot;
    const int64_t cols = name == "BatchGate" ? 4 * d : d;
    ctx->SetOutputShape(slot, Shape{x[0], d < 0 ? -1 : cols});
    ctx->SetOutputDtype(slot, name.rfind("Batch", 0) == 0 ? compute : dtype);
  }
  ctx->ShareLoD("Input", "Hidden");
  ctx->ShareLoD("Input", "Cell");
}

void LstmGradInferShape(InferShapeContext* ctx) {
  for (const char* slot : {"Input", "Weight", "Bias", "H0", "C0"})
    if (ctx->HasInput(slot)) ctx->ShareShape(slot, GradSlot(slot));
}

template <typename T>
void LstmKernel(const ExecutionContext& ctx) {
  LstmForward<T>(CpuRecurrentDevice(ctx));
}

template <typename T>
void LstmGradKernel(const ExecutionContext& ctx) {
  LstmBackward<T>(CpuRecurrentDevice(ctx));
}

}  // namespace

REGISTER_OP(lstm)
    .Doc(
        "LSTM over each sequence of a level-1 LoD batch, Fluid's gate "
        "layout {c~, i, f, o}, optional peepholes, forward or reverse.")
    .Input("Input", "[rows, 4D] projected gate input, level-1 LoD")
    .OptionalInput("H0", "[sequences, D] initial hidden state; absent: 0")
    .OptionalInput("C0", "[sequences, D] initial cell state; absent: 0")
    .Input("Weight", "[D, 4D] recurrent weight")
    .Input("Bias", "[1, 4D] gate bias; [1, 7D] with use_peepholes")
    .Output("Hidden", "[rows, D], Input's LoD")
    .Output("Cell", "[rows, D], Input's LoD")
    .Output("BatchGate", "[rows, 4D] gate activations in batch order")
    .Output("BatchCellPreAct", "[rows, D] cell state in batch order")
    .Attr<bool>("use_peepholes", true, "W_ic, W_fc, W_oc from the bias")
    .Attr<bool>("is_reverse", false, "run each sequence from its end")
    .Attr<std::string>("gate_activation", "sigmoid", "of i, f and o")
    .Attr<std::string>("cell_activation", "tanh", "of c, in h")
    .Attr<std::string>("candidate_activation", "tanh", "of c~")
    .SetInferShape(LstmInferShape)
    .SetGrad(GradSpec("lstm_grad")
                 .Inputs({"Input", "H0", "C0", "Weight", "Bias"})
                 .Outputs({"Hidden", "BatchGate", "BatchCellPreAct"})
                 .OutGrads({"Hidden", "Cell"})
                 .InGrads({"Input", "H0", "C0", "Weight", "Bias"}))
    .CPUKernel<float>(LstmKernel<float>)
    .CPUKernel<double>(LstmKernel<double>)
    .CPUKernel<bfloat16>(LstmKernel<bfloat16>)
    .CPUKernel<float16>(LstmKernel<float16>);

REGISTER_GRAD_OP(lstm_grad)
    .Doc("Backpropagation through time of lstm, step by step in reverse.")
    .SetInferShape(LstmGradInferShape)
    .CPUKernel<float>(LstmGradKernel<float>)
    .CPUKernel<double>(LstmGradKernel<double>)
    .CPUKernel<bfloat16>(LstmGradKernel<bfloat16>)
    .CPUKernel<float16>(LstmGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
