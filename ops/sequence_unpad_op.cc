// sequence_unpad: the inverse of sequence_pad. From a dense X [sequences,
// padded_length, ...] and the int64 Length of each sequence, the level-1
// LoD batch Out [sum of lengths, ...] of each sequence's first Length rows,
// as Fluid's op does. Out's size and LoD depend on Length's values, so the
// kernel sizes Out.
#include <vector>

#include "ops/op_helpers.h"
#include "ops/sequence_pad_op.h"

namespace fluid {
namespace ops {

// The LoD of Out from the lengths, each checked against X's padded length.
LoD UnpadLoD(const std::vector<int64_t>& lengths, const Shape& x) {
  FLUID_ENFORCE(static_cast<int64_t>(lengths.size()) == x[0],
                "sequence_unpad: Length holds ", lengths.size(),
                " lengths for ", x[0], " sequences of X (shape ", x, ")");
  for (size_t i = 0; i < lengths.size(); ++i)
    FLUID_ENFORCE(lengths[i] <= x[1], "sequence_unpad: Length[", i, "] is ",
                  lengths[i], " but X (shape ", x, ") holds ", x[1],
                  " rows per sequence");
  return LoDFromLengths(lengths, "sequence_unpad: Length");
}

namespace {

void SequenceUnpadInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  FLUID_ENFORCE(x.rank() >= 2, "sequence_unpad: X ", Quote(ctx->InputName("X")),
                " must be [sequences, padded_length, ...], its shape is ", x);
  const DataType len = ctx->GetInputDtype("Length");
  FLUID_ENFORCE(len == DataType::kInt64, "sequence_unpad: Length ",
                Quote(ctx->InputName("Length")), " must be int64, is ",
                DataTypeName(len));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  ctx->SetOutputLoDLevel("Out", 1);
  if (ctx->IsRuntime()) return;  // the kernel sizes Out from Length
  Shape out{-1};
  for (int i = 2; i < x.rank(); ++i) out.push_back(x[i]);
  ctx->SetOutputShape("Out", out);
}

// Out's rows: X's shape without the padded dim, sum(lengths) rows.
Shape UnpadShape(const Shape& x, const LoD& lod) {
  Shape out{lod.back()};
  for (int i = 2; i < x.rank(); ++i) out.push_back(x[i]);
  return out;
}

template <typename T>
void SequenceUnpadKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& length = ctx.Input("Length");
  const int64_t* lp = length.data<int64_t>();
  LoD lod = UnpadLoD(std::vector<int64_t>(lp, lp + length.numel()), x.shape());
  Tensor* out = ctx.Output("Out");
  out->Resize(UnpadShape(x.shape(), lod));
  const PadMap m{lod.data(), LoDCount(lod), x.shape()[1],
                 x.shape().Product(2, x.shape().rank())};
  const T* xp = x.data<T>();
  T* op = out->mutable_data<T>();
  for (int64_t k = 0; k < out->numel(); ++k) op[k] = xp[m.PaddedOf(k)];
  out->set_lod(std::move(lod));
}

void SequenceUnpadGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", GradSlot("X"));
}

template <typename T>
void SequenceUnpadGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& length = ctx.Input("Length");
  const int64_t* lp = length.data<int64_t>();
  const LoD lod =
      UnpadLoD(std::vector<int64_t>(lp, lp + length.numel()), x.shape());
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  const PadMap m{lod.data(), LoDCount(lod), x.shape()[1],
                 x.shape().Product(2, x.shape().rank())};
  FLUID_ENFORCE(dout.numel() == lod.back() * m.width, "Out@GRAD has shape ",
                dout.shape(), " but Out has ", lod.back(), " rows of ",
                m.width);
  const T* g = dout.data<T>();
  T* dp = dx->mutable_data<T>();
  for (int64_t k = 0; k < x.numel(); ++k) {
    const int64_t p = m.PackedOf(k);
    dp[k] = p >= 0 ? g[p] : T(0);
  }
}

}  // namespace

REGISTER_OP(sequence_unpad)
    .Doc("The level-1 LoD batch of each sequence's first Length rows.")
    .Input("X", "[sequences, padded_length, ...]")
    .Input("Length", "int64 [sequences]: each sequence's length")
    .Output("Out", "[sum of lengths, ...] with level-1 LoD")
    .SetInferShape(SequenceUnpadInferShape)
    .SetGrad(GradSpec("sequence_unpad_grad")
                 .Inputs({"X", "Length"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(SequenceUnpadKernel<float>)
    .CPUKernel<double>(SequenceUnpadKernel<double>);

REGISTER_GRAD_OP(sequence_unpad_grad)
    .Doc("dX = dOut's rows at each sequence's first Length rows, 0 after.")
    .SetInferShape(SequenceUnpadGradInferShape)
    .CPUKernel<float>(SequenceUnpadGradKernel<float>)
    .CPUKernel<double>(SequenceUnpadGradKernel<double>);

}  // namespace ops
}  // namespace fluid
