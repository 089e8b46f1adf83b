// sequence_mask: from lengths X (int32 or int64, any shape) the mask
// Out[..., j] = j < X[...] of shape X.shape + [maxlen], in out_dtype, as
// Fluid's op builds it. maxlen -1 takes the largest length (known only
// once X is, so the kernel sizes Out). Not differentiable.
#include <algorithm>

#include "ops/dtype_visit.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

DataType MaskDtype(const AttributeMap& attrs) {
  return DtypeAttr(GetAttr<int32_t>(attrs, "out_dtype", "sequence_mask"),
                   "sequence_mask", "out_dtype");
}

void SequenceMaskInferShape(InferShapeContext* ctx) {
  const DataType x = ctx->GetInputDtype("X");
  FLUID_ENFORCE(x == DataType::kInt32 || x == DataType::kInt64,
                "sequence_mask: X ", Quote(ctx->InputName("X")),
                " holds lengths: it must be int32 or int64, is ",
                DataTypeName(x));
  const int32_t maxlen = ctx->Attr<int32_t>("maxlen");
  FLUID_ENFORCE(maxlen >= -1, "sequence_mask: attr 'maxlen' is ", maxlen,
                "; -1 (the largest length) or a length >= 0");
  ctx->SetOutputDtype("Y", MaskDtype(ctx->attrs()));
  if (ctx->IsRuntime() && maxlen < 0) return;  // the kernel sizes Y
  Shape out = ctx->GetInputShape("X");
  out.push_back(maxlen);
  ctx->SetOutputShape("Y", out);
}

template <typename T>
void SequenceMaskKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const T* len = x.data<T>();
  const int64_t n = x.numel();
  int64_t maxlen = ctx.Attr<int32_t>("maxlen");
  if (maxlen < 0)
    maxlen = n == 0 ? 0 : int64_t(*std::max_element(len, len + n));
  Shape shape = x.shape();
  shape.push_back(maxlen);
  Tensor* y = ctx.Output("Y");
  y->Resize(shape);
  VisitDtype(MaskDtype(ctx.op().attrs()), [&](auto o) {
    using Out = decltype(o);
    Out* out = y->mutable_data<Out>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < maxlen; ++j)
        out[i * maxlen + j] = static_cast<Out>(j < len[i] ? 1 : 0);
  });
}

}  // namespace

REGISTER_OP(sequence_mask)
    .Doc("Y[..., j] = (j < X[...]) for sequence lengths X.")
    .Input("X", "int32 or int64 lengths, any shape")
    .Output("Y", "X.shape + [maxlen], in out_dtype")
    .Attr<int32_t>("maxlen", -1, "the mask's last dim; -1: the largest X")
    .Attr<int32_t>("out_dtype", static_cast<int32_t>(DataType::kInt64),
                   "Y's dtype (0 float32, 1 float64, 2 int32, 3 int64)")
    .SetInferShape(SequenceMaskInferShape)
    .CPUKernel<int32_t>(SequenceMaskKernel<int32_t>)
    .CPUKernel<int64_t>(SequenceMaskKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
