// sequence_pool: one row per sequence of X's finest LoD level, pooling
// each column over the sequence's rows (AVERAGE, SUM, SQRT: sum /
// sqrt(length), MAX, LAST, FIRST), as Fluid's op does; the levels above
// stay on Out. An empty sequence pools to
// pad_value and receives no gradient. MaxIndex records, for MAX, the row
// of X each output element came from (what the gradient routes to).
#include "ops/sequence_pool_op.h"

#include "ops/op_helpers.h"
#include "ops/sequence_helpers.h"

namespace fluid {
namespace ops {

SequencePoolType ReadSequencePoolType(const AttributeMap& attrs,
                                      const std::string& op) {
  const std::string& s = GetAttr<std::string>(attrs, "pooltype", op);
  if (s == "AVERAGE") return SequencePoolType::kAverage;
  if (s == "SUM") return SequencePoolType::kSum;
  if (s == "SQRT") return SequencePoolType::kSqrt;
  if (s == "MAX") return SequencePoolType::kMax;
  if (s == "LAST") return SequencePoolType::kLast;
  if (s == "FIRST") return SequencePoolType::kFirst;
  FLUID_THROW(ErrorCode::kInvalidArgument, op, ": attr 'pooltype' is ",
              Quote(s), "; known: AVERAGE, SUM, SQRT, MAX, LAST, FIRST");
}

namespace {

void SequencePoolInferShape(InferShapeContext* ctx) {
  ReadSequencePoolType(ctx->attrs(), ctx->op_type());
  const LoD lod = SequenceInputLoD(ctx, "X");
  Shape out = ctx->GetInputShape("X");
  FLUID_ENFORCE(out.rank() >= 1, "sequence_pool: X ",
                Quote(ctx->InputName("X")), " must have a row dim");
  out[0] = ctx->IsRuntime() ? LoDCount(lod) : -1;
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
  // Pooling X's finest level leaves the levels above it on Out, as Fluid
  // does: words pooled into sentences are still grouped into paragraphs
  // (and can be pooled again).
  const int levels = ctx->InputLoDLevel("X");
  ctx->SetOutputLoDLevel("Out", levels > 1 ? levels - 1 : 0);
  if (ctx->IsRuntime() && levels > 1) {
    LoDLevels upper = ctx->InputAllLoD("X");
    upper.pop_back();
    ctx->SetOutputAllLoD("Out", upper);
  }
  if (ctx->HasOutput("MaxIndex")) {
    ctx->SetOutputShape("MaxIndex", out);
    ctx->SetOutputDtype("MaxIndex", DataType::kInt32);
  }
}

template <typename T>
void SequencePoolKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const LoD& lod = x.lod();
  const SequencePoolType type =
      ReadSequencePoolType(ctx.op().attrs(), "sequence_pool");
  const int64_t width = RowWidth(x.shape());
  const T pad = static_cast<T>(ctx.Attr<float>("pad_value"));
  const T* xp = x.data<T>();
  T* out = ctx.Output("Out")->mutable_data<T>();
  int32_t* index = ctx.HasOutput("MaxIndex")
                       ? ctx.Output("MaxIndex")->mutable_data<int32_t>()
                       : nullptr;
  const int64_t count = LoDCount(lod);
  ParallelFor(ctx.device(), count, static_cast<double>(width) * 4,
              [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i) {
                  for (int64_t c = 0; c < width; ++c) {
                    int32_t arg;
                    out[i * width + c] = PoolSequence(
                        type, xp, width, c, lod[i], lod[i + 1], pad, &arg);
                    if (index != nullptr) index[i * width + c] = arg;
                  }
                }
              });
}

void SequencePoolGradInferShape(InferShapeContext* ctx) {
  SequenceInputLoD(ctx, "X");
  ctx->ShareShape("X", GradSlot("X"));
}

template <typename T>
void SequencePoolGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const LoD& lod = x.lod();
  const SequencePoolType type =
      ReadSequencePoolType(ctx.op().attrs(), "sequence_pool_grad");
  const int64_t width = RowWidth(x.shape());
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.numel() == LoDCount(lod) * width, "Out@GRAD has shape ",
                dout.shape(), " but X ", Quote(ctx.InputName("X")), " holds ",
                LoDCount(lod), " sequences of ", width, " elements");
  const int32_t* index = ctx.Input("MaxIndex").data<int32_t>();
  const T* g = dout.data<T>();
  T* dp = dx->mutable_data<T>();
  ParallelFor(ctx.device(), LoDCount(lod), static_cast<double>(width) * 4,
              [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i) {
                  for (int64_t r = lod[i]; r < lod[i + 1]; ++r) {
                    for (int64_t c = 0; c < width; ++c) {
                      const int64_t k = i * width + c;
                      dp[r * width + c] =
                          g[k] * PoolGradWeight<T>(type, r, lod[i], lod[i + 1],
                                                   index[k]);
                    }
                  }
                }
              });
}

}  // namespace

REGISTER_OP(sequence_pool)
    .Doc("Pools each sequence of a level-1 LoD batch X into one row.")
    .Input("X", "a batch of sequences [rows, ...] with level-1 LoD")
    .Output("Out", "[sequences, ...], no LoD")
    .Output("MaxIndex",
            "int32 [sequences, ...]: for MAX the row of X of each maximum, "
            "else -1")
    .Attr<std::string>("pooltype", "AVERAGE",
                       "AVERAGE, SUM, SQRT (sum / sqrt(length)), MAX, LAST "
                       "or FIRST")
    .Attr<bool>("is_test", false, "accepted; pooling is the same in both")
    .Attr<float>("pad_value", 0.0f, "the output of an empty sequence")
    .SetInferShape(SequencePoolInferShape)
    .SetGrad(GradSpec("sequence_pool_grad")
                 .Inputs({"X"})
                 .Outputs({"MaxIndex"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(SequencePoolKernel<float>)
    .CPUKernel<double>(SequencePoolKernel<double>);

REGISTER_GRAD_OP(sequence_pool_grad)
    .Doc(
        "dX[r] = dOut[seq(r)] times d pool / d X[r] (0 for rows MAX, LAST "
        "or FIRST did not pick).")
    .SetInferShape(SequencePoolGradInferShape)
    .CPUKernel<float>(SequencePoolGradKernel<float>)
    .CPUKernel<double>(SequencePoolGradKernel<double>);

}  // namespace ops
}  // namespace fluid
