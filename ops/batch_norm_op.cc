// batch_norm: Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias per
// channel, over NCHW images or [N, C] rows.
//
// Training normalises with the batch's mean and biased variance and moves
// the running statistics toward them: running = momentum * running +
// (1 - momentum) * batch (Fluid's convention; PyTorch's momentum is
// 1 - ours, and PyTorch moves the running variance toward the unbiased batch
// variance, m / (m - 1) times ours). is_test or use_global_stats normalise
// with the running statistics instead and leave them as they are.
//
// With sync_stats on a run of several ranks the batch statistics cover the
// global batch: each rank sums its part of every channel, the sums (and the
// counts) are added over the ranks, and the backward pass does the same for
// its two per-channel sums. The statistics are computed in two passes (mean,
// then the mean squared deviation), each reduced over the ranks, which keeps
// the variance accurate where a sum of squares would cancel.
//
// SavedMean holds the mean used and SavedVariance the inverse standard
// deviation 1 / sqrt(var + epsilon), for the gradient.
#include <cmath>
#include <string>
#include <vector>

#include "ops/batch_norm_helpers.h"
#include "ops/op_helpers.h"
#include "src/distributed/communicator.h"

namespace fluid {
namespace ops {

BatchNormDims BatchNormDimsOf(const Shape& x) {
  return {x[0], x[1], x.Product(2, x.rank())};
}

bool UsesGlobalStats(const ExecutionContext& ctx) {
  return ctx.Attr<bool>("is_test") || ctx.Attr<bool>("use_global_stats");
}

Communicator* StatsCommunicator(const ExecutionContext& ctx) {
  if (!ctx.Attr<bool>("sync_stats")) return nullptr;
  Communicator* comm = ctx.device_context().communicator();
  return comm != nullptr && comm->size() > 1 ? comm : nullptr;
}

int RankCount(Communicator* comm) { return comm == nullptr ? 1 : comm->size(); }

int64_t GlobalCount(Communicator* comm, int64_t local) {
  if (comm == nullptr) return local;
  int64_t total = 0;
  for (uint64_t v : comm->AllGatherValue(static_cast<uint64_t>(local)))
    total += static_cast<int64_t>(v);
  return total;
}

void SumOverRanks(const ExecutionContext& ctx, Communicator* comm, Tensor* t) {
  if (comm == nullptr) return;
  comm->AllReduceAsync(*t, ReduceOp::kSum, ctx.device_context().ReadyFence())
      ->Wait();
}

namespace {

using Index = Eigen::Index;

template <typename T>
using Const3 = Eigen::TensorMap<Eigen::Tensor<const T, 3, Eigen::RowMajor>>;

// The per-channel reduction over [n, c, hw]: dims n and hw.
const Eigen::array<Index, 2> kChannelReduce{0, 2};

template <typename T>
Const3<T> View3(const Tensor& t, const BatchNormDims& d) {
  return Const3<T>(t.data<T>(), d.n, d.c, d.hw);
}

// A per-channel vector broadcast over [n, c, hw].
template <typename Expr>
auto PerChannel(const Expr& v, const BatchNormDims& d) {
  return v.reshape(Eigen::array<Index, 3>{1, d.c, 1})
      .broadcast(Eigen::array<Index, 3>{d.n, 1, d.hw});
}

void CheckVector(const InferShapeContext& ctx, const std::string& slot,
                 const Shape& x) {
  Shape s = ctx.GetInputShape(slot);
  FLUID_ENFORCE(s.rank() == 1 && (s[0] < 0 || x[1] < 0 || s[0] == x[1]),
                ctx.op_type(), ": ", slot, " '", ctx.InputName(slot),
                "' must be [C] = [", x[1], "] for X '", ctx.InputName("X"),
                "' ", x, ", has shape ", s);
}

void BatchNormInferShape(InferShapeContext* ctx) {
  Shape x = ctx->GetInputShape("X");
  FLUID_ENFORCE(x.rank() >= 2, "batch_norm: X '", ctx->InputName("X"),
                "' must be [N, C] or [N, C, H, W], has shape ", x);
  const std::string& layout = ctx->Attr<std::string>("data_layout");
  FLUID_ENFORCE(layout == "NCHW",
                "batch_norm: data_layout must be \"NCHW\", "
                "is \"",
                layout, "\"");
  for (const char* slot : {"Scale", "Bias", "Mean", "Variance"})
    CheckVector(*ctx, slot, x);
  ctx->ShareShape("X", "Y");
  ctx->ShareShape("Mean", "MeanOut");
  ctx->ShareShape("Variance", "VarianceOut");
  ctx->ShareShape("Mean", "SavedMean");
  ctx->ShareShape("Variance", "SavedVariance");
}

void BatchNormGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", GradSlot("X"));
  ctx->ShareShape("Scale", GradSlot("Scale"));
  ctx->ShareShape("Scale", GradSlot("Bias"));
}

// SavedMean <- the running mean, SavedVariance <- its inverse std; the
// running statistics pass through unchanged.
template <typename T>
void UseRunningStats(const ExecutionContext& ctx, T eps) {
  const Tensor& mean = ctx.Input("Mean");
  const Tensor& var = ctx.Input("Variance");
  Tensor* saved_mean = ctx.Output("SavedMean");
  Tensor* saved_var = ctx.Output("SavedVariance");
  saved_mean->CopyFrom(mean);
  saved_var->mutable_data<T>(var.shape());
  Vec<T>(saved_var) = (Vec<T>(var) + eps).rsqrt();
  for (const char* slot : {"Mean", "Variance"}) {
    Tensor* out = ctx.Output(std::string(slot) + "Out");
    const Tensor& in = ctx.Input(slot);
    if (out != &in) out->CopyFrom(in);
  }
}

// SavedMean <- the batch mean, SavedVariance <- the batch inverse std, and
// the running statistics moved toward the batch's.
template <typename T>
void UseBatchStats(const ExecutionContext& ctx, const BatchNormDims& d, T eps) {
  Communicator* comm = StatsCommunicator(ctx);
  const T m = static_cast<T>(GlobalCount(comm, d.per_channel()));
  const T mom = static_cast<T>(ctx.Attr<float>("momentum"));
  Const3<T> x = View3<T>(ctx.Input("X"), d);
  Tensor* saved_mean = ctx.Output("SavedMean");
  Tensor* saved_var = ctx.Output("SavedVariance");
  saved_mean->mutable_data<T>(Shape{d.c});
  saved_var->mutable_data<T>(Shape{d.c});
  auto mean = Vec<T>(saved_mean);
  auto var = Vec<T>(saved_var);
  mean = x.sum(kChannelReduce);
  SumOverRanks(ctx, comm, saved_mean);
  mean = mean / m;
  var = (x - PerChannel(mean, d)).square().sum(kChannelReduce);
  SumOverRanks(ctx, comm, saved_var);
  var = var / m;
  Tensor* mean_out = ctx.Output("MeanOut");
  Tensor* var_out = ctx.Output("VarianceOut");
  // In place (MeanOut is Mean) or not: each element is read before written.
  auto running_mean = Vec<T>(ctx.Input("Mean"));
  auto running_var = Vec<T>(ctx.Input("Variance"));
  mean_out->mutable_data<T>(Shape{d.c});
  var_out->mutable_data<T>(Shape{d.c});
  Vec<T>(mean_out) = running_mean * mom + mean * (T(1) - mom);
  Vec<T>(var_out) = running_var * mom + var * (T(1) - mom);
  var = (var + eps).rsqrt();
}

template <typename T>
void BatchNormKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const BatchNormDims d = BatchNormDimsOf(x.shape());
  const T eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  if (UsesGlobalStats(ctx)) {
    UseRunningStats<T>(ctx, eps);
  } else {
    UseBatchStats<T>(ctx, d, eps);
  }
  auto mean = Vec<T>(*ctx.Output("SavedMean"));
  auto inv_std = Vec<T>(*ctx.Output("SavedVariance"));
  auto scale = Vec<T>(ctx.Input("Scale"));
  auto bias = Vec<T>(ctx.Input("Bias"));
  Tensor* y = ctx.Output("Y");
  y->mutable_data<T>(x.shape());
  EigenVec<T> yv = Vec<T>(y);
  Eigen::TensorMap<Eigen::Tensor<T, 3, Eigen::RowMajor>> y3(yv.data(), d.n, d.c,
                                                            d.hw);
  Assign(
      ctx.device(), y3,
      (View3<T>(x, d) - PerChannel(mean, d)) * PerChannel(inv_std * scale, d) +
          PerChannel(bias, d));
}

// The per-channel output `slot` (Scale@GRAD, Bias@GRAD), or `scratch` when
// the gradient is not wanted: the backward pass needs the sums either way.
template <typename T>
Tensor* ChannelSums(const ExecutionContext& ctx, const std::string& slot,
                    int64_t c, Tensor* scratch) {
  Tensor* t = ctx.HasOutput(slot) ? ctx.Output(slot) : scratch;
  t->mutable_data<T>(Shape{c});
  return t;
}

template <typename T>
void BatchNormGradKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const BatchNormDims d = BatchNormDimsOf(x.shape());
  const bool global = UsesGlobalStats(ctx);
  Communicator* comm = global ? nullptr : StatsCommunicator(ctx);
  Const3<T> dy = View3<T>(ctx.Input(GradSlot("Y")), d);
  auto mean = Vec<T>(ctx.Input("SavedMean"));
  auto inv_std = Vec<T>(ctx.Input("SavedVariance"));
  auto scale = Vec<T>(ctx.Input("Scale"));
  Const3<T> x3 = View3<T>(x, d);
  auto xhat = (x3 - PerChannel(mean, d)) * PerChannel(inv_std, d);
  Tensor scratch_scale, scratch_bias;
  Tensor* dscale = ChannelSums<T>(ctx, GradSlot("Scale"), d.c, &scratch_scale);
  Tensor* dbias = ChannelSums<T>(ctx, GradSlot("Bias"), d.c, &scratch_bias);
  Vec<T>(dbias) = dy.sum(kChannelReduce);
  Vec<T>(dscale) = (dy * xhat).sum(kChannelReduce);
  SumOverRanks(ctx, comm, dbias);
  SumOverRanks(ctx, comm, dscale);
  if (ctx.HasOutput(GradSlot("X"))) {
    Tensor* dx = ctx.Output(GradSlot("X"));
    dx->mutable_data<T>(x.shape());
    EigenVec<T> dxv = Vec<T>(dx);
    Eigen::TensorMap<Eigen::Tensor<T, 3, Eigen::RowMajor>> dx3(dxv.data(), d.n,
                                                               d.c, d.hw);
    auto k = PerChannel(scale * inv_std, d);
    if (global) {
      Assign(ctx.device(), dx3, dy * k);
    } else {
      const T inv_m = T(1) / static_cast<T>(GlobalCount(comm, d.per_channel()));
      Assign(ctx.device(), dx3,
             k * (dy - (PerChannel(Vec<T>(*dbias), d) +
                        xhat * PerChannel(Vec<T>(*dscale), d)) *
                           inv_m));
    }
  }
  // Every rank now holds the global sums: its share of them is the average,
  // which the data-parallel gradient averaging then leaves unchanged.
  if (comm != nullptr) {
    const T inv_size = T(1) / static_cast<T>(RankCount(comm));
    Vec<T>(dbias) = Vec<T>(*dbias) * inv_size;
    Vec<T>(dscale) = Vec<T>(*dscale) * inv_size;
  }
}

}  // namespace

REGISTER_OP(batch_norm)
    .Doc(
        "Per-channel batch normalisation of [N, C] or NCHW input, with "
        "running statistics updated in place (MeanOut is Mean, VarianceOut "
        "is Variance).")
    .Input("X", "[N, C] or [N, C, H, W]")
    .Input("Scale", "[C], gamma")
    .Input("Bias", "[C], beta")
    .Input("Mean", "[C], running mean")
    .Input("Variance", "[C], running (biased) variance")
    .Output("Y", "normalised X, same shape")
    .Output("MeanOut", "the updated running mean; normally Mean itself")
    .Output("VarianceOut",
            "the updated running variance; normally Variance itself")
    .Output("SavedMean", "[C], the mean Y was normalised with")
    .Output("SavedVariance", "[C], 1 / sqrt(variance + epsilon) used")
    .Attr<bool>("is_test", false, "normalise with the running statistics")
    .Attr<float>("momentum", 0.9f,
                 "running = momentum * running + (1 - momentum) * batch")
    .Attr<float>("epsilon", 1e-5f, "added to the variance")
    .Attr<std::string>("data_layout", "NCHW", "only \"NCHW\"")
    .Attr<bool>("use_global_stats", false,
                "train with the running statistics (frozen)")
    .Attr<bool>("sync_stats", false,
                "batch statistics over the global batch of all ranks")
    .SetInferShape(BatchNormInferShape)
    .SetGrad(GradSpec("batch_norm_grad")
                 .Inputs({"X", "Scale"})
                 .Outputs({"SavedMean", "SavedVariance"})
                 .OutGrads({"Y"})
                 .InGrads({"X", "Scale", "Bias"}))
    .CPUKernel<float>(BatchNormKernel<float>)
    .CPUKernel<double>(BatchNormKernel<double>);

REGISTER_GRAD_OP(batch_norm_grad)
    .Doc(
        "Gradient of batch_norm. With batch statistics the mean and variance "
        "depend on X; with sync_stats their two per-channel sums are added "
        "over the ranks and Scale@GRAD, Bias@GRAD are the ranks' average.")
    .SetInferShape(BatchNormGradInferShape)
    .CPUKernel<float>(BatchNormGradKernel<float>)
    .CPUKernel<double>(BatchNormGradKernel<double>);

}  // namespace ops
}  // namespace fluid
