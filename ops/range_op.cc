// range: Out[i] = start + i * step for i in [0, RangeLength) (range_op.h),
// of dtype float32, float64, int32 or int64, start, end and step given as
// attrs. Behind fluid.layers.range for numbers.
#include "ops/range_op.h"

#include <cmath>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

int64_t RangeLength(const AttributeMap& attrs, const std::string& out) {
  const double start = GetAttr<double>(attrs, "start", "range");
  const double end = GetAttr<double>(attrs, "end", "range");
  const double step = GetAttr<double>(attrs, "step", "range");
  FLUID_ENFORCE(
      std::isfinite(start) && std::isfinite(end) && std::isfinite(step),
      "range: start=", start, ", end=", end, " and step=", step, " of '", out,
      "' must be finite");
  FLUID_ENFORCE(step != 0, "range: step of '", out, "' must not be 0");
  FLUID_ENFORCE((end - start) * step >= 0, "range: step=", step, " of '", out,
                "' points away from end=", end, " (start=", start, "): use a ",
                step > 0 ? "negative" : "positive", " step");
  const double n = std::ceil(std::abs((end - start) / step));
  FLUID_ENFORCE(n < 9e15, "range: '", out, "' would hold ", n,
                " elements: too many");
  return static_cast<int64_t>(n);
}

namespace {

void RangeInferShape(InferShapeContext* ctx) {
  const DataType dt = static_cast<DataType>(ctx->Attr<int32_t>("dtype"));
  FLUID_ENFORCE(!IsHalfDtype(dt) && dt != DataType::kBool, "range: dtype ",
                DataTypeName(dt), " of '", ctx->OutputName("Out"),
                "' is not supported (float32, float64, int32, int64)");
  if (dt == DataType::kInt32 || dt == DataType::kInt64) {
    for (const char* a : {"start", "end", "step"}) {
      const double v = ctx->Attr<double>(a);
      FLUID_ENFORCE(v == std::floor(v), "range: ", a, "=", v, " of '",
                    ctx->OutputName("Out"), "' must be a whole number for ",
                    DataTypeName(dt));
    }
  }
  ctx->SetOutputShape(
      "Out", Shape({RangeLength(ctx->attrs(), ctx->OutputName("Out"))}));
  ctx->SetOutputDtype("Out", dt);
}

template <typename T>
void RangeKernel(const ExecutionContext& ctx) {
  const int64_t n = RangeLength(ctx.op().attrs(), ctx.OutputName("Out"));
  const double start = ctx.Attr<double>("start");
  const double step = ctx.Attr<double>("step");
  T* p = ctx.Output("Out")->mutable_data<T>(Shape({n}));
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + i * step);
}

}  // namespace

REGISTER_OP(range)
    .Doc("Out[i] = start + i * step, for the i that stay short of end.")
    .Output("Out", "[ceil(|end - start| / |step|)]")
    .Attr<double>("start", 0.0, "the first value")
    .Attr<double>("end", 0.0, "the bound, not reached")
    .Attr<double>("step", 1.0, "the difference of neighbours; not 0")
    .Attr<int32_t>("dtype", static_cast<int32_t>(DataType::kFloat32),
                   "element type of Out")
    .SetInferShape(RangeInferShape)
    .CPUKernel<float>(RangeKernel<float>)
    .CPUKernel<double>(RangeKernel<double>)
    .CPUKernel<int32_t>(RangeKernel<int32_t>)
    .CPUKernel<int64_t>(RangeKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
