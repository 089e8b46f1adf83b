// group_norm: the channels of each example split into `groups` groups, each
// group normalised to zero mean and unit (biased) variance over its
// channels and positions, then scaled and shifted per channel:
//   Y = (X - mean) / sqrt(var + epsilon) * Scale[c] + Bias[c].
// Mean and Variance ([N, groups]) are saved for the gradient. With
// xhat = (X - mean) * rstd and g = dY * Scale[c], over each group:
//   dX = rstd * (g - mean(g) - xhat * mean(g * xhat)),
//   dScale[c] = sum over N and positions of dY * xhat, dBias[c] = sum of dY.
// Sums are taken in double. Layouts NCHW and NHWC (any rank >= 2; the dims
// other than N and C are the positions).
#include "ops/group_norm_op.h"

#include <cmath>
#include <string>

#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

namespace {

// X's dims as a GroupNormDims (-1 where unknown), checked against groups.
GroupNormDims GroupNormView(const std::string& op, const std::string& x_name,
                            const Shape& x, int groups,
                            const std::string& layout) {
  FLUID_ENFORCE(x.rank() >= 2, op, ": X '", x_name, "' ", x,
                " must have rank >= 2 ([N, C, ...] or [N, ..., C])");
  GroupNormDims d;
  d.channels_last = layout == "NHWC";
  const int c_axis = d.channels_last ? x.rank() - 1 : 1;
  d.n = x[0];
  d.c = x[c_axis];
  d.s = d.channels_last ? x.Product(1, x.rank() - 1) : x.Product(2, x.rank());
  d.groups = groups;
  FLUID_ENFORCE(d.c < 0 || (d.c >= groups && d.c % groups == 0), op,
                ": attr groups=", groups, " must divide the ", d.c,
                " channels of X '", x_name, "' ", x, " (", layout, ")");
  return d;
}

void CheckParams(const std::string& op, const GroupNormDims& d,
                 const std::string& x_name, const Shape& x,
                 const std::string& slot, const std::string& name,
                 const Shape& p) {
  FLUID_ENFORCE(d.c < 0 || p.numel() < 0 || p.numel() == d.c, op, ": ", slot,
                " '", name, "' ", p, " must hold ", d.c,
                " values, one per channel of X '", x_name, "' ", x);
}

void GroupNormInferShape(InferShapeContext* ctx) {
  const Shape x = ctx->GetInputShape("X");
  const GroupNormDims d = GroupNormView("group_norm", ctx->InputName("X"), x,
                                        ctx->Attr<int32_t>("groups"),
                                        ctx->Attr<std::string>("data_layout"));
  const DataType dt = ctx->GetInputDtype("X");
  for (const char* slot : {"Scale", "Bias"}) {
    if (!ctx->HasInput(slot)) continue;
    CheckParams("group_norm", d, ctx->InputName("X"), x, slot,
                ctx->InputName(slot), ctx->GetInputShape(slot));
    FLUID_ENFORCE(ctx->GetInputDtype(slot) == dt, "group_norm: ", slot, " '",
                  ctx->InputName(slot), "' is ",
                  DataTypeName(ctx->GetInputDtype(slot)), " but X '",
                  ctx->InputName("X"), "' is ", DataTypeName(dt));
  }
  ctx->ShareShape("X", "Y");
  for (const char* slot : {"Mean", "Variance"}) {
    ctx->SetOutputShape(slot, Shape({d.n, d.groups}));
    ctx->SetOutputDtype(slot, dt);
  }
}

template <typename T>
void GroupNormKernel(const ExecutionContext& ctx) {
  const GroupNormDims d = ReadGroupNormDims(ctx);
  const Tensor& x_t = ctx.Input("X");
  const T* x = x_t.data<T>();
  const T* scale =
      ctx.HasInput("Scale") ? ctx.Input("Scale").data<T>() : nullptr;
  const T* bias = ctx.HasInput("Bias") ? ctx.Input("Bias").data<T>() : nullptr;
  const double eps = ctx.Attr<float>("epsilon");
  T* y = ctx.Output("Y")->mutable_data<T>(x_t.shape());
  T* mean = ctx.Output("Mean")->mutable_data<T>(Shape({d.n, d.groups}));
  T* var = ctx.Output("Variance")->mutable_data<T>(Shape({d.n, d.groups}));
  const int64_t k_size = d.group_size();
  ParallelFor(ctx.device(), d.n * d.groups, 5.0 * k_size,
              [&](int64_t b, int64_t e) {
                for (int64_t j = b; j < e; ++j) {
                  const int64_t ni = j / d.groups, g = j % d.groups;
                  double m = 0, v = 0;
                  for (int64_t k = 0; k < k_size; ++k) m += x[d.At(ni, g, k)];
                  m /= k_size;
                  for (int64_t k = 0; k < k_size; ++k) {
                    const double t = x[d.At(ni, g, k)] - m;
                    v += t * t;
                  }
                  v /= k_size;
                  mean[j] = static_cast<T>(m);
                  var[j] = static_cast<T>(v);
                  const double rstd = 1.0 / std::sqrt(v + eps);
                  for (int64_t k = 0; k < k_size; ++k) {
                    const int64_t i = d.At(ni, g, k);
                    const int64_t ch = d.ChannelOf(i);
                    double o = (x[i] - m) * rstd;
                    if (scale) o *= scale[ch];
                    if (bias) o += bias[ch];
                    y[i] = static_cast<T>(o);
                  }
                }
              });
}

// dScale and dBias: per channel, over N and the positions.
template <typename T>
void GroupNormParamGrads(const ExecutionContext& ctx, const GroupNormDims& d) {
  Tensor* ds_t = ctx.Output(GradSlot("Scale"));
  Tensor* db_t = ctx.Output(GradSlot("Bias"));
  if (ds_t == nullptr && db_t == nullptr) return;
  const T* x = ctx.Input("X").data<T>();
  const T* mean = ctx.Input("Mean").data<T>();
  const T* var = ctx.Input("Variance").data<T>();
  const T* dy = ctx.Input(GradSlot("Y")).data<T>();
  const double eps = ctx.Attr<float>("epsilon");
  T* ds = ds_t ? ds_t->mutable_data<T>(ctx.Input("Scale").shape()) : nullptr;
  T* db = db_t ? db_t->mutable_data<T>(ctx.Input("Bias").shape()) : nullptr;
  ParallelFor(ctx.device(), d.c, 4.0 * d.n * d.s, [&](int64_t b, int64_t e) {
    for (int64_t ch = b; ch < e; ++ch) {
      double sx = 0, sb = 0;
      for (int64_t k = 0; k < d.n * d.s; ++k) {
        const int64_t i = d.OfChannel(ch, k), j = d.GroupOf(i);
        sx += double(dy[i]) * (x[i] - double(mean[j])) /
              std::sqrt(double(var[j]) + eps);
        sb += dy[i];
      }
      if (ds) ds[ch] = static_cast<T>(sx);
      if (db) db[ch] = static_cast<T>(sb);
    }
  });
}

template <typename T>
void GroupNormGradKernel(const ExecutionContext& ctx) {
  const GroupNormDims d = ReadGroupNormDims(ctx);
  GroupNormParamGrads<T>(ctx, d);
  Tensor* dx_t = ctx.Output(GradSlot("X"));
  if (dx_t == nullptr) return;
  const T* x = ctx.Input("X").data<T>();
  const T* scale =
      ctx.HasInput("Scale") ? ctx.Input("Scale").data<T>() : nullptr;
  const T* mean = ctx.Input("Mean").data<T>();
  const T* var = ctx.Input("Variance").data<T>();
  const T* dy = ctx.Input(GradSlot("Y")).data<T>();
  const double eps = ctx.Attr<float>("epsilon");
  T* dx = dx_t->mutable_data<T>(ctx.Input("X").shape());
  const int64_t k_size = d.group_size();
  ParallelFor(
      ctx.device(), d.n * d.groups, 8.0 * k_size, [&](int64_t b, int64_t e) {
        for (int64_t j = b; j < e; ++j) {
          const int64_t ni = j / d.groups, g = j % d.groups;
          const double m = mean[j];
          const double rstd = 1.0 / std::sqrt(double(var[j]) + eps);
          double sg = 0, sgx = 0;
          for (int64_t k = 0; k < k_size; ++k) {
            const int64_t i = d.At(ni, g, k);
            const double gi =
                scale ? dy[i] * double(scale[d.ChannelOf(i)]) : double(dy[i]);
            sg += gi;
            sgx += gi * (x[i] - m) * rstd;
          }
          sg /= k_size;
          sgx /= k_size;
          for (int64_t k = 0; k < k_size; ++k) {
            const int64_t i = d.At(ni, g, k);
            const double gi =
                scale ? dy[i] * double(scale[d.ChannelOf(i)]) : double(dy[i]);
            dx[i] = static_cast<T>(rstd * (gi - sg - (x[i] - m) * rstd * sgx));
          }
        }
      });
}

void GroupNormGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", GradSlot("X"));
  ctx->ShareShape("Scale", GradSlot("Scale"));
  ctx->ShareShape("Bias", GradSlot("Bias"));
}

}  // namespace

GroupNormDims ReadGroupNormDims(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const std::string& xn = ctx.InputName("X");
  const GroupNormDims d =
      GroupNormView(ctx.type(), xn, x.shape(), ctx.Attr<int32_t>("groups"),
                    ctx.Attr<std::string>("data_layout"));
  for (const char* slot : {"Scale", "Bias"}) {
    if (!ctx.HasInput(slot)) continue;
    CheckParams(ctx.type(), d, xn, x.shape(), slot, ctx.InputName(slot),
                ctx.Input(slot).shape());
  }
  if (ctx.type() != "group_norm_grad") return d;
  for (const char* slot : {"Mean", "Variance"}) {
    const Tensor& t = ctx.Input(slot);
    FLUID_ENFORCE(t.numel() == d.n * d.groups, ctx.type(), ": ", slot, " '",
                  ctx.InputName(slot), "' ", t.shape(), " must hold ",
                  d.n * d.groups, " values (N x groups) for X '", xn, "' ",
                  x.shape());
  }
  const Shape& dy = ctx.Input(GradSlot("Y")).shape();
  FLUID_ENFORCE(dy == x.shape(), ctx.type(), ": Y@GRAD '",
                ctx.InputName(GradSlot("Y")), "' ", dy, " differs from X '", xn,
                "' ", x.shape());
  return d;
}

REGISTER_OP(group_norm)
    .Doc(
        "Y = each group of channels of each example normalised over its "
        "channels and positions, times Scale[c], plus Bias[c].")
    .Input("X", "[N, C, ...] (NCHW) or [N, ..., C] (NHWC)")
    .OptionalInput("Scale", "[C]")
    .OptionalInput("Bias", "[C]")
    .Output("Y", "X's shape")
    .Output("Mean", "[N, groups]")
    .Output("Variance", "[N, groups], biased")
    .Attr<float>("epsilon", 1e-5f, "added to the variance")
    .InRange(0, kNoUpperBound)
    .Attr<int32_t>("groups", 1, "the number of groups; divides C")
    .InRange(1, kNoUpperBound)
    .Attr<std::string>("data_layout", "NCHW", "where the channels are")
    .OneOf({"NCHW", "NHWC"})
    .SetInferShape(GroupNormInferShape)
    .SetGrad(GradSpec("group_norm_grad")
                 .Inputs({"X", "Scale", "Bias"})
                 .Outputs({"Mean", "Variance"})
                 .OutGrads({"Y"})
                 .InGrads({"X", "Scale", "Bias"}))
    .CPUKernel<float>(GroupNormKernel<float>)
    .CPUKernel<double>(GroupNormKernel<double>);

REGISTER_GRAD_OP(group_norm_grad)
    .Doc(
        "dX = rstd (g - mean(g) - xhat mean(g xhat)) per group, g = dY Scale; "
        "dScale = sum of dY xhat, dBias = sum of dY, per channel.")
    .SetInferShape(GroupNormGradInferShape)
    .CPUKernel<float>(GroupNormGradKernel<float>)
    .CPUKernel<double>(GroupNormGradKernel<double>);

}  // namespace ops
}  // namespace fluid
