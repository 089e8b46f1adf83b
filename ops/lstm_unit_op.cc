// lstm_unit: one LSTM step on dense rows (equations in ops/lstm_unit_op.h):
// X [N, 4D] gate pre-activations {i, f, o, j}, C_prev [N, D] -> C, H. With
// a bfloat16 or float16 X, H is of its type and the cell states C_prev and
// C are float32.
#include "ops/lstm_unit_op.h"

#include "ops/recurrent_cpu.h"

namespace fluid {
namespace ops {
namespace {

void LstmUnitInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  const Shape c = ctx->GetInputShape("C_prev");
  FLUID_ENFORCE(c.rank() == 2, "lstm_unit: C_prev ",
                Quote(ctx->InputName("C_prev")), " has shape ", c,
                "; it must be [N, D]");
  FLUID_ENFORCE(x.rank() == 2 && (x[1] < 0 || c[1] < 0 || x[1] == 4 * c[1]) &&
                    (x[0] < 0 || c[0] < 0 || x[0] == c[0]),
                "lstm_unit: X ", Quote(ctx->InputName("X")), " has shape ", x,
                "; with C_prev ", c, " it must be [", c[0], ", ", 4 * c[1],
                "]");
  const DataType xt = ctx->GetInputDtype("X");
  const DataType cell = IsHalfDtype(xt) ? DataType::kFloat32 : xt;
  FLUID_ENFORCE(ctx->GetInputDtype("C_prev") == cell, "lstm_unit: C_prev ",
                Quote(ctx->InputName("C_prev")), " is ",
                DataTypeName(ctx->GetInputDtype("C_prev")), " but must be ",
                DataTypeName(cell), " for X ", Quote(ctx->InputName("X")),
                " of ", DataTypeName(xt),
                IsHalfDtype(xt) ? " (16-bit kernels keep the cell state in "
                                  "float32)"
                                : "");
  ctx->ShareShape("C_prev", "C");
  ctx->ShareShape("C_prev", "H");
  ctx->SetOutputDtype("H", xt);
}

void LstmUnitGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", GradSlot("X"));
  ctx->ShareShape("C_prev", GradSlot("C_prev"));
}

template <typename T>
void LstmUnitKernel(const ExecutionContext& ctx) {
  LstmUnitForward<T>(CpuRecurrentDevice(ctx));
}

template <typename T>
void LstmUnitGradKernel(const ExecutionContext& ctx) {
  LstmUnitBackward<T>(CpuRecurrentDevice(ctx));
}

}  // namespace

REGISTER_OP(lstm_unit)
    .Doc("One LSTM step: gate pre-activations X {i, f, o, j} and C_prev.")
    .Input("X", "[N, 4D] gate pre-activations, blocks i, f, o, j")
    .Input("C_prev", "[N, D] previous cell state (float32 for a 16-bit X)")
    .Output("C", "[N, D] cell state, C_prev's type")
    .Output("H", "[N, D] hidden state, X's type")
    .Attr<float>("forget_bias", 0.0f, "added to the forget gate's input")
    .SetInferShape(LstmUnitInferShape)
    .SetGrad(GradSpec("lstm_unit_grad")
                 .Inputs({"X", "C_prev"})
                 .Outputs({"C"})
                 .OutGrads({"C", "H"})
                 .InGrads({"X", "C_prev"}))
    .CPUKernel<float>(LstmUnitKernel<float>)
    .CPUKernel<double>(LstmUnitKernel<double>)
    .CPUKernel<bfloat16>(LstmUnitKernel<bfloat16>)
    .CPUKernel<float16>(LstmUnitKernel<float16>);

REGISTER_GRAD_OP(lstm_unit_grad)
    .Doc("Gradients of lstm_unit with respect to X and C_prev.")
    .SetInferShape(LstmUnitGradInferShape)
    .CPUKernel<float>(LstmUnitGradKernel<float>)
    .CPUKernel<double>(LstmUnitGradKernel<double>)
    .CPUKernel<bfloat16>(LstmUnitGradKernel<bfloat16>)
    .CPUKernel<float16>(LstmUnitGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
