// linspace: Out = num values evenly spaced from start to stop, both
// included (num 1: [start]): Out[i] = start + i * (stop - start) / (num - 1),
// computed in double and rounded once. Behind fluid.layers.linspace for
// numbers.
#include <cmath>

#include "ops/op_helpers.h"
#include "ops/range_op.h"

namespace fluid {
namespace ops {

int64_t LinspaceLength(const AttributeMap& attrs, const std::string& out) {
  const int64_t num = GetAttr<int64_t>(attrs, "num", "linspace");
  FLUID_ENFORCE(num >= 1, "linspace: num=", num, " of '", out,
                "' must be >= 1");
  const double start = GetAttr<double>(attrs, "start", "linspace");
  const double stop = GetAttr<double>(attrs, "stop", "linspace");
  FLUID_ENFORCE(std::isfinite(start) && std::isfinite(stop),
                "linspace: start=", start, " and stop=", stop, " of '", out,
                "' must be finite");
  return num;
}

namespace {

void LinspaceInferShape(InferShapeContext* ctx) {
  const DataType dt = static_cast<DataType>(ctx->Attr<int32_t>("dtype"));
  FLUID_ENFORCE(dt == DataType::kFloat32 || dt == DataType::kFloat64,
                "linspace: dtype ", DataTypeName(dt), " of '",
                ctx->OutputName("Out"), "' must be float32 or float64");
  ctx->SetOutputShape(
      "Out", Shape({LinspaceLength(ctx->attrs(), ctx->OutputName("Out"))}));
  ctx->SetOutputDtype("Out", dt);
}

template <typename T>
void LinspaceKernel(const ExecutionContext& ctx) {
  const int64_t n = LinspaceLength(ctx.op().attrs(), ctx.OutputName("Out"));
  const double start = ctx.Attr<double>("start");
  const double stop = ctx.Attr<double>("stop");
  const double step = n > 1 ? (stop - start) / (n - 1) : 0.0;
  T* p = ctx.Output("Out")->mutable_data<T>(Shape({n}));
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + i * step);
}

}  // namespace

REGISTER_OP(linspace)
    .Doc("Out = num values evenly spaced from start to stop, both included.")
    .Output("Out", "[num]")
    .Attr<double>("start", 0.0, "the first value")
    .Attr<double>("stop", 1.0, "the last value (num > 1)")
    .Attr<int64_t>("num", 1, "how many values; >= 1")
    .Attr<int32_t>("dtype", static_cast<int32_t>(DataType::kFloat32),
                   "float32 or float64")
    .SetInferShape(LinspaceInferShape)
    .CPUKernel<float>(LinspaceKernel<float>)
    .CPUKernel<double>(LinspaceKernel<double>);

}  // namespace ops
}  // namespace fluid
