// prelu: Out = X where X > 0, else Alpha * X, with one alpha for all of X
// (mode "all"), one per channel (dim 1, "channel") or one per element of
// an example ("element"). dX = dOut where X > 0, else Alpha * dOut;
// dAlpha = the sum of X * dOut over the elements X <= 0 that each alpha
// serves.
#include "ops/prelu_op.h"

#include <string>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

namespace {

// The [outer, alphas, inner] view of X for `mode` (-1 products for unknown
// dims); checks the mode against X's rank.
PreluDims PreluView(const std::string& op, const std::string& x_name,
                    const Shape& x, const std::string& mode) {
  if (mode == "all") return {1, 1, x.numel()};
  FLUID_ENFORCE(x.rank() >= 2, op, ": mode '", mode, "' needs X of rank >= 2 ",
                "([N, C, ...]); X '", x_name, "' is ", x);
  if (mode == "channel") return {x[0], x[1], x.Product(2, x.rank())};
  return {x[0], x.Product(1, x.rank()), 1};
}

void CheckAlpha(const std::string& op, const std::string& x_name,
                const Shape& x, const std::string& a_name, const Shape& a,
                const std::string& mode, int64_t alphas) {
  const int64_t n = a.numel();
  FLUID_ENFORCE(n < 0 || alphas < 0 || n == alphas, op, ": Alpha '", a_name,
                "' ", a, " must hold ", alphas, " elements for mode '", mode,
                "' and X '", x_name, "' ", x,
                mode == "all"       ? ""
                : mode == "channel" ? " (one per channel, X's dim 1)"
                                    : " (one per element of an example)");
}

void PreluInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  const std::string& mode = ctx->Attr<std::string>("mode");
  const PreluDims d = PreluView("prelu", ctx->InputName("X"), x, mode);
  CheckAlpha("prelu", ctx->InputName("X"), x, ctx->InputName("Alpha"),
             ctx->GetInputShape("Alpha"), mode, d.alphas);
  FLUID_ENFORCE(ctx->GetInputDtype("Alpha") == ctx->GetInputDtype("X"),
                "prelu: Alpha '", ctx->InputName("Alpha"), "' is ",
                DataTypeName(ctx->GetInputDtype("Alpha")), " but X '",
                ctx->InputName("X"), "' is ",
                DataTypeName(ctx->GetInputDtype("X")));
  ctx->ShareShape("X", "Out");
}

template <typename T>
void PreluKernel(const ExecutionContext& ctx) {
  const PreluDims d = ReadPreluDims(ctx);
  const Tensor& x_t = ctx.Input("X");
  const T* x = x_t.data<T>();
  const T* alpha = ctx.Input("Alpha").data<T>();
  T* out = ctx.Output("Out")->mutable_data<T>(x_t.shape());
  ParallelFor(ctx.device(), x_t.numel(), 2.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = Prelu(x[i], alpha[d.AlphaOf(i)]);
  });
}

template <typename T>
void PreluGradKernel(const ExecutionContext& ctx) {
  const PreluDims d = ReadPreluDims(ctx);
  const Tensor& x_t = ctx.Input("X");
  const T* x = x_t.data<T>();
  const T* alpha = ctx.Input("Alpha").data<T>();
  const T* dout = ctx.Input(GradSlot("Out")).data<T>();
  if (Tensor* dx_t = ctx.Output(GradSlot("X"))) {
    T* dx = dx_t->mutable_data<T>(x_t.shape());
    ParallelFor(ctx.device(), x_t.numel(), 2.0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        dx[i] = PreluGradX(x[i], alpha[d.AlphaOf(i)], dout[i]);
    });
  }
  if (Tensor* da_t = ctx.Output(GradSlot("Alpha"))) {
    T* da = da_t->mutable_data<T>(ctx.Input("Alpha").shape());
    const int64_t per = d.outer * d.inner;
    ParallelFor(ctx.device(), d.alphas, 2.0 * per, [&](int64_t b, int64_t e) {
      for (int64_t a = b; a < e; ++a) {
        T s = 0;
        for (int64_t k = 0; k < per; ++k) {
          const int64_t i = d.ElementOf(a, k);
          s += PreluGradAlpha(x[i], dout[i]);
        }
        da[a] = s;
      }
    });
  }
}

}  // namespace

PreluDims ReadPreluDims(const ExecutionContext& ctx) {
  const Shape& x = ctx.Input("X").shape();
  const std::string& mode = ctx.Attr<std::string>("mode");
  const PreluDims d = PreluView(ctx.type(), ctx.InputName("X"), x, mode);
  CheckAlpha(ctx.type(), ctx.InputName("X"), x, ctx.InputName("Alpha"),
             ctx.Input("Alpha").shape(), mode, d.alphas);
  if (ctx.type() == "prelu_grad") {
    const Shape& dout = ctx.Input(GradSlot("Out")).shape();
    FLUID_ENFORCE(dout == x, ctx.type(), ": Out@GRAD '",
                  ctx.InputName(GradSlot("Out")), "' ", dout,
                  " differs from X '", ctx.InputName("X"), "' ", x);
  }
  // An empty X has inner or alphas 0: AlphaOf and ElementOf are then never
  // called (no element to index), so nothing divides by them.
  return d;
}

REGISTER_OP(prelu)
    .Doc(
        "Out = X where X > 0, else Alpha * X (one alpha, per channel or "
        "per element of an example).")
    .Input("X", "any float tensor; rank >= 2 for modes channel and element")
    .Input("Alpha", "1, C or (numel / N) slopes, as mode says")
    .Output("Out", "X's shape")
    .Attr<std::string>("mode", "all",
                       "all: one alpha; channel: one per dim-1 index; "
                       "element: one per element of an example")
    .OneOf({"all", "channel", "element"})
    .SetInferShape(PreluInferShape)
    .SetGrad(GradSpec("prelu_grad")
                 .Inputs({"X", "Alpha"})
                 .OutGrads({"Out"})
                 .InGrads({"X", "Alpha"}))
    .CPUKernel<float>(PreluKernel<float>)
    .CPUKernel<double>(PreluKernel<double>);

REGISTER_GRAD_OP(prelu_grad)
    .Doc(
        "dX = dOut where X > 0, else Alpha * dOut; dAlpha = sum of X * dOut "
        "over the elements X <= 0 each alpha serves.")
    .SetInferShape([](InferShapeContext* ctx) {
      ctx->ShareShape("X", GradSlot("X"));
      ctx->ShareShape("Alpha", GradSlot("Alpha"));
    })
    .CPUKernel<float>(PreluGradKernel<float>)
    .CPUKernel<double>(PreluGradKernel<double>);

}  // namespace ops
}  // namespace fluid
