// diag: Out [n, n] with Diagonal [n] on its main diagonal and zeros
// elsewhere. Behind fluid.layers.diag; no gradient (Fluid's has none).
#include <algorithm>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

namespace {

void DiagInferShape(InferShapeContext* ctx) {
  const Shape d = ctx->GetInputShape("Diagonal");
  FLUID_ENFORCE(d.rank() == 1, "diag: Diagonal '", ctx->InputName("Diagonal"),
                "' ", d, " must have rank 1");
  const DataType dt = ctx->GetInputDtype("Diagonal");
  FLUID_ENFORCE(!IsHalfDtype(dt) && dt != DataType::kBool, "diag: Diagonal '",
                ctx->InputName("Diagonal"), "' is ", DataTypeName(dt),
                " (float32, float64, int32, int64)");
  ctx->SetOutputShape("Out", Shape({d[0], d[0]}));
  ctx->SetOutputDtype("Out", dt);
}

template <typename T>
void DiagKernel(const ExecutionContext& ctx) {
  const Tensor& d = ctx.Input("Diagonal");
  const int64_t n = d.numel();
  T* p = ctx.Output("Out")->mutable_data<T>(Shape({n, n}));
  std::fill(p, p + n * n, T(0));
  const T* v = d.data<T>();
  for (int64_t i = 0; i < n; ++i) p[i * n + i] = v[i];
}

}  // namespace

REGISTER_OP(diag)
    .Doc("Out = the [n, n] matrix with Diagonal on its diagonal, 0 elsewhere.")
    .Input("Diagonal", "[n]")
    .Output("Out", "[n, n]")
    .SetInferShape(DiagInferShape)
    .CPUKernel<float>(DiagKernel<float>)
    .CPUKernel<double>(DiagKernel<double>)
    .CPUKernel<int32_t>(DiagKernel<int32_t>)
    .CPUKernel<int64_t>(DiagKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
