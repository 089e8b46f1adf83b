// sequence_pad: a level-1 LoD batch X [rows, ...] to a dense
// [sequences, padded_length, ...] tensor, filled past each sequence's end
// with PadValue (one element, or one row), and the int64 Length of each
// sequence, as Fluid's op does. padded_length -1 takes the longest
// sequence; a shorter one than that is an error.
#include "ops/sequence_pad_op.h"

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

void SequencePadInferShape(InferShapeContext* ctx) {
  const LoD lod = SequenceInputLoD(ctx, "X");
  const Shape x = ctx->GetInputShape("X");
  const Shape pad = ctx->GetInputShape("PadValue");
  const int64_t width = RowWidth(x);
  FLUID_ENFORCE(
      pad.numel() < 0 || width < 0 || pad.numel() == 1 || pad.numel() == width,
      "sequence_pad: PadValue ", Quote(ctx->InputName("PadValue")),
      " has shape ", pad, "; it must hold one element or one row of X ",
      Quote(ctx->InputName("X")), " (", width, " elements)");
  int64_t padded = ctx->Attr<int32_t>("padded_length");
  FLUID_ENFORCE(padded >= -1, "sequence_pad: attr 'padded_length' is ", padded,
                "; -1 (the longest sequence) or a length");
  int64_t count = -1;
  if (ctx->IsRuntime()) {
    int64_t longest = 0;
    for (int64_t n : LoDLengths(lod)) longest = std::max(longest, n);
    FLUID_ENFORCE(padded < 0 || padded >= longest,
                  "sequence_pad: attr 'padded_length' (maxlen) is ", padded,
                  " but X ", Quote(ctx->InputName("X")),
                  " holds a sequence of ", longest, " rows");
    if (padded < 0) padded = longest;
    count = LoDCount(lod);
  }
  Shape out{count, padded};
  for (int i = 1; i < x.rank(); ++i) out.push_back(x[i]);
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  ctx->SetOutputLoDLevel("Out", 0);
  ctx->SetOutputShape("Length", Shape{count});
  ctx->SetOutputDtype("Length", DataType::kInt64);
}

template <typename T>
void SequencePadKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& pad = ctx.Input("PadValue");
  const LoD& lod = x.lod();
  Tensor* out = ctx.Output("Out");
  const PadMap m{lod.data(), LoDCount(lod), out->shape()[1],
                 RowWidth(x.shape())};
  const T* xp = x.data<T>();
  const T* pp = pad.data<T>();
  const bool one = pad.numel() == 1;
  T* op = out->mutable_data<T>();
  for (int64_t k = 0; k < out->numel(); ++k) {
    const int64_t p = m.PackedOf(k);
    op[k] = p >= 0 ? xp[p] : pp[one ? 0 : k % m.width];
  }
  int64_t* len = ctx.Output("Length")->mutable_data<int64_t>();
  for (int64_t i = 0; i < m.count; ++i) len[i] = lod[i + 1] - lod[i];
}

void SequencePadGradInferShape(InferShapeContext* ctx) {
  SequenceInputLoD(ctx, "X");
  ctx->ShareShape("X", GradSlot("X"));
}

template <typename T>
void SequencePadGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  const LoD& lod = x.lod();
  const int64_t width = RowWidth(x.shape());
  const int64_t count = LoDCount(lod);
  FLUID_ENFORCE(dout.shape().rank() >= 2 && dout.shape()[0] == count,
                "Out@GRAD has shape ", dout.shape(), " for ", count,
                " sequences");
  const PadMap m{lod.data(), count, dout.shape()[1], width};
  const T* g = dout.data<T>();
  T* dp = dx->mutable_data<T>();
  for (int64_t k = 0; k < x.numel(); ++k) dp[k] = g[m.PaddedOf(k)];
}

}  // namespace

REGISTER_OP(sequence_pad)
    .Doc("Pads the sequences of a level-1 LoD batch to one length.")
    .Input("X", "a batch of sequences [rows, ...] with level-1 LoD")
    .Input("PadValue", "one element, or one row of X, to pad with")
    .Output("Out", "[sequences, padded_length, ...]")
    .Output("Length", "int64 [sequences]: each sequence's length")
    .Attr<int32_t>("padded_length", -1,
                   "the padded length; -1: the longest sequence")
    .SetInferShape(SequencePadInferShape)
    .SetGrad(GradSpec("sequence_pad_grad")
                 .Inputs({"X"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(SequencePadKernel<float>)
    .CPUKernel<double>(SequencePadKernel<double>);

REGISTER_GRAD_OP(sequence_pad_grad)
    .Doc("dX = the rows of dOut within each sequence's length.")
    .SetInferShape(SequencePadGradInferShape)
    .CPUKernel<float>(SequencePadGradKernel<float>)
    .CPUKernel<double>(SequencePadGradKernel<double>);

}  // namespace ops
}  // namespace fluid
