// uniform_random_batch_size_like, gaussian_random_batch_size_like: Out drawn
// as uniform_random and gaussian_random draw it (ops/random_fill.h: the
// same generators, seeds and values on every rank and every run), of the
// shape attr with its dim output_dim_idx replaced by Input's dim
// input_dim_idx (the batch size, known at run time). Input's values are not
// read and no gradient flows to it.
#include "ops/random_batch_size_like_op.h"

#include <vector>

#include "ops/op_helpers.h"
#include "ops/random_fill.h"

namespace fluid {
namespace ops {

namespace {

// Out's shape from the attrs and Input's shape (-1 where unknown).
Shape BatchSizeLikeShape(const std::string& op, const AttributeMap& attrs,
                         const std::string& in_name, const Shape& in,
                         const std::string& out_name) {
  const auto& spec = GetAttr<std::vector<int64_t>>(attrs, "shape", op);
  const int in_idx = GetAttr<int32_t>(attrs, "input_dim_idx", op);
  const int out_idx = GetAttr<int32_t>(attrs, "output_dim_idx", op);
  FLUID_ENFORCE(in_idx >= 0 && in_idx < in.rank(), op,
                ": attr input_dim_idx=", in_idx, " is out of range for Input '",
                in_name, "' ", in);
  FLUID_ENFORCE(out_idx >= 0 && out_idx < static_cast<int>(spec.size()), op,
                ": attr output_dim_idx=", out_idx,
                " is out of range for attr shape ", Shape(spec));
  Shape out(spec);
  out[out_idx] = in[in_idx];
  for (int i = 0; i < out.rank(); ++i) {
    FLUID_ENFORCE(i == out_idx || out[i] >= 0, op, ": attr shape ", Shape(spec),
                  " of '", out_name,
                  "' must be known but at output_dim_idx=", out_idx);
  }
  return out;
}

DataType RandomDtype(const std::string& op, int32_t attr,
                     const std::string& out) {
  const DataType dt = static_cast<DataType>(attr);
  FLUID_ENFORCE(dt == DataType::kFloat32 || dt == DataType::kFloat64, op,
                ": dtype of '", out, "' must be float32 or float64, is ",
                attr >= 0 && attr <= kMaxDataType ? DataTypeName(dt) : "none");
  return dt;
}

void RandomBatchSizeLikeInferShape(InferShapeContext* ctx) {
  const std::string& op = ctx->op_type();
  ctx->SetOutputShape(
      "Out",
      BatchSizeLikeShape(op, ctx->attrs(), ctx->InputName("Input"),
                         ctx->GetInputShape("Input"), ctx->OutputName("Out")));
  ctx->SetOutputDtype("Out", RandomDtype(op, ctx->Attr<int32_t>("dtype"),
                                         ctx->OutputName("Out")));
}

void UniformBatchSizeLikeKernel(const ExecutionContext& ctx) {
  const UniformParams p = GetUniformParams(ctx);
  Tensor* out = ctx.Output("Out");
  if (ShapeRandomBatchSizeLike(ctx) == DataType::kFloat32) {
    FillUniform(p, out->mutable_data<float>(), out->numel());
  } else {
    FillUniform(p, out->mutable_data<double>(), out->numel());
  }
}

void GaussianBatchSizeLikeKernel(const ExecutionContext& ctx) {
  const GaussianParams p = GetGaussianParams(ctx);
  Tensor* out = ctx.Output("Out");
  if (ShapeRandomBatchSizeLike(ctx) == DataType::kFloat32) {
    FillGaussian(p, out->mutable_data<float>(), out->numel());
  } else {
    FillGaussian(p, out->mutable_data<double>(), out->numel());
  }
}

}  // namespace

DataType ShapeRandomBatchSizeLike(const ExecutionContext& ctx) {
  const std::string& op = ctx.type();
  ctx.Output("Out")->Resize(
      BatchSizeLikeShape(op, ctx.op().attrs(), ctx.InputName("Input"),
                         ctx.Input("Input").shape(), ctx.OutputName("Out")));
  return RandomDtype(op, ctx.Attr<int32_t>("dtype"), ctx.OutputName("Out"));
}

REGISTER_OP(uniform_random_batch_size_like)
    .Doc(
        "Out ~ U[min, max), of shape with dim output_dim_idx set to Input's "
        "dim input_dim_idx.")
    .Input("Input", "the tensor whose dim gives the batch size (not read)")
    .Output("Out", "the values drawn")
    .Attr<std::vector<int64_t>>("shape", {}, "shape of Out")
    .Attr<int32_t>("input_dim_idx", 0, "the dim of Input to copy")
    .Attr<int32_t>("output_dim_idx", 0, "the dim of Out it sets")
    .Attr<float>("min", -1.0f, "lower bound (inclusive)")
    .Attr<float>("max", 1.0f, "upper bound (exclusive)")
    .Attr<int32_t>("seed", 0, "random seed; 0 derives one from Out's name")
    .Attr<int32_t>("dtype", static_cast<int32_t>(DataType::kFloat32),
                   "float32 or float64")
    .SetInferShape(RandomBatchSizeLikeInferShape)
    .AnyDtypeKernel(UniformBatchSizeLikeKernel);

REGISTER_OP(gaussian_random_batch_size_like)
    .Doc(
        "Out ~ N(mean, std^2), of shape with dim output_dim_idx set to "
        "Input's dim input_dim_idx.")
    .Input("Input", "the tensor whose dim gives the batch size (not read)")
    .Output("Out", "the values drawn")
    .Attr<std::vector<int64_t>>("shape", {}, "shape of Out")
    .Attr<int32_t>("input_dim_idx", 0, "the dim of Input to copy")
    .Attr<int32_t>("output_dim_idx", 0, "the dim of Out it sets")
    .Attr<float>("mean", 0.0f, "mean")
    .Attr<float>("std", 1.0f, "standard deviation")
    .Attr<int32_t>("seed", 0, "random seed; 0 derives one from Out's name")
    .Attr<int32_t>("dtype", static_cast<int32_t>(DataType::kFloat32),
                   "float32 or float64")
    .SetInferShape(RandomBatchSizeLikeInferShape)
    .AnyDtypeKernel(GaussianBatchSizeLikeKernel);

}  // namespace ops
}  // namespace fluid
