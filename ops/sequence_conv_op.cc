// sequence_conv: a 1-D convolution along each sequence of a level-1 LoD
// batch, as Fluid's op computes it. The column matrix holds each row's
// context window (contextLength rows from contextStart on, zeros past the
// sequence's ends), and Out = col * Filter, Filter [contextLength * D,
// filters]. Out keeps X's rows and LoD. Only contextStride 1 and zero
// padding (paddingTrainable false) are supported.
#include "ops/sequence_conv_op.h"

#include "ops/conv_workspace.h"
#include "ops/op_helpers.h"
#include "src/framework/math/blas.h"

namespace fluid {
namespace ops {
namespace {

void CheckContext(InferShapeContext* ctx) {
  FLUID_ENFORCE(ctx->Attr<int32_t>("contextLength") >= 1,
                "sequence_conv: attr 'contextLength' is ",
                ctx->Attr<int32_t>("contextLength"), "; it must be >= 1");
  FLUID_ENFORCE(ctx->Attr<int32_t>("contextStride") == 1,
                "sequence_conv: attr 'contextStride' is ",
                ctx->Attr<int32_t>("contextStride"), "; only 1 is supported");
  FLUID_ENFORCE(!ctx->Attr<bool>("paddingTrainable"),
                "sequence_conv: attr 'paddingTrainable': only zero padding "
                "(false) is supported");
}

void SequenceConvInferShape(InferShapeContext* ctx) {
  CheckContext(ctx);
  SequenceInputLoD(ctx, "X");
  const Shape x = ctx->GetInputShape("X");
  const Shape w = ctx->GetInputShape("Filter");
  FLUID_ENFORCE(x.rank() == 2, "sequence_conv: X ", Quote(ctx->InputName("X")),
                " must be [rows, D], its shape is ", x);
  const int64_t k = ctx->Attr<int32_t>("contextLength") * x[1];
  FLUID_ENFORCE(w.rank() == 2 && (x[1] < 0 || w[0] < 0 || w[0] == k),
                "sequence_conv: Filter ", Quote(ctx->InputName("Filter")),
                " has shape ", w, "; with contextLength ",
                ctx->Attr<int32_t>("contextLength"), " and X ", x,
                " it must be [", k, ", filters]");
  ctx->SetOutputShape("Out", Shape{x[0], w[1]});
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  ctx->ShareLoD("X", "Out");
}

ContextMap ReadContext(const ExecutionContext& ctx, const Tensor& x) {
  return ContextMap{x.lod().data(), LoDCount(x.lod()),
                    ctx.Attr<int32_t>("contextStart"),
                    ctx.Attr<int32_t>("contextLength"), x.shape()[1]};
}

template <typename T>
void SequenceConvKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& w = ctx.Input("Filter");
  const ContextMap m = ReadContext(ctx, x);
  const int64_t rows = x.shape()[0], k = m.length * m.width;
  const int64_t n = w.shape()[1];
  T* out = ctx.Output("Out")->mutable_data<T>();
  if (rows == 0) return;
  T* col = ThreadScratch<T>(kScratchCol, rows * k);
  const T* xp = x.data<T>();
  for (int64_t e = 0; e < rows * k; ++e) {
    const int64_t s = m.SourceOf(e);
    col[e] = s >= 0 ? xp[s] : T(0);
  }
  math::Gemm<T>(ctx.device(), false, false, rows, n, k, T(1), col, w.data<T>(),
                T(0), out);
}

void SequenceConvGradInferShape(InferShapeContext* ctx) {
  SequenceInputLoD(ctx, "X");
  ctx->ShareShape("X", GradSlot("X"));
  ctx->ShareShape("Filter", GradSlot("Filter"));
}

template <typename T>
void SequenceConvGradKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& w = ctx.Input("Filter");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  const ContextMap m = ReadContext(ctx, x);
  const int64_t rows = x.shape()[0], k = m.length * m.width;
  const int64_t n = w.shape()[1];
  FLUID_ENFORCE(dout.numel() == rows * n, "Out@GRAD has shape ", dout.shape(),
                " but Out is [", rows, ", ", n, "]");
  T* col = ThreadScratch<T>(kScratchCol, std::max<int64_t>(rows * k, 1));
  if (Tensor* dw = ctx.Output(GradSlot("Filter"))) {
    const T* xp = x.data<T>();
    for (int64_t e = 0; e < rows * k; ++e) {
      const int64_t s = m.SourceOf(e);
      col[e] = s >= 0 ? xp[s] : T(0);
    }
    // dFilter [k, n] = col [rows, k]^T * dOut [rows, n]
    math::Gemm<T>(ctx.device(), true, false, k, n, rows, T(1), col,
                  dout.data<T>(), T(0), dw->mutable_data<T>());
  }
  if (Tensor* dx = ctx.Output(GradSlot("X"))) {
    // dCol [rows, k] = dOut [rows, n] * Filter [k, n]^T, then each window
    // element back to the row it copied.
    math::Gemm<T>(ctx.device(), false, true, rows, k, n, T(1), dout.data<T>(),
                  w.data<T>(), T(0), col);
    T* dp = dx->mutable_data<T>();
    for (int64_t e = 0; e < x.numel(); ++e) dp[e] = m.GradOf(col, e);
  }
}

}  // namespace

REGISTER_OP(sequence_conv)
    .Doc("1-D convolution along each sequence of a level-1 LoD batch.")
    .Input("X", "[rows, D] with level-1 LoD")
    .Input("Filter", "[contextLength * D, filters]")
    .Output("Out", "[rows, filters], X's LoD")
    .Attr<int32_t>("contextLength", 3, "rows in the window")
    .Attr<int32_t>("contextStart", 0,
                   "the window's first row relative to the output row")
    .Attr<int32_t>("contextStride", 1, "only 1 is supported")
    .Attr<bool>("paddingTrainable", false, "only false (zero padding)")
    .SetInferShape(SequenceConvInferShape)
    .SetGrad(GradSpec("sequence_conv_grad")
                 .Inputs({"X", "Filter"})
                 .OutGrads({"Out"})
                 .InGrads({"X", "Filter"}))
    .CPUKernel<float>(SequenceConvKernel<float>)
    .CPUKernel<double>(SequenceConvKernel<double>);

REGISTER_GRAD_OP(sequence_conv_grad)
    .Doc(
        "dFilter = col^T dOut; dX = the windows of dOut Filter^T summed "
        "back onto the rows they copied.")
    .SetInferShape(SequenceConvGradInferShape)
    .CPUKernel<float>(SequenceConvGradKernel<float>)
    .CPUKernel<double>(SequenceConvGradKernel<double>);

}  // namespace ops
}  // namespace fluid
