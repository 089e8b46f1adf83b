// CUDA kernels for batch_norm and batch_norm_grad (schemas, the CPU
// kernels and the exchange with other ranks in batch_norm_op.cc). Each
// per-channel sum is one block's reduction over the channel's n * hw values,
// in a fixed order (deterministic run to run); the arithmetic per element is
// written in the CPU kernels' order.
//
// X, Y and their gradients are T; Scale, Bias, the statistics and their
// gradients are P = ComputeType<T>: T itself for float and double, float32
// for bfloat16 and float16, whose values are computed and summed in float
// and rounded once when stored.
#include "ops/batch_norm_helpers.h"
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/half_math.h"

namespace fluid {
namespace ops {
namespace {

// Flat index of value j of channel ch in [n, c, hw].
struct ChannelIndex {
  int64_t c, hw;
  __device__ int64_t operator()(int64_t ch, int64_t j) const {
    return ((j / hw) * c + ch) * hw + j % hw;
  }
};

template <typename T>
struct ValueAt {
  const T* x;
  ChannelIndex at;
  __device__ ComputeType<T> operator()(int64_t ch, int64_t j) const {
    return ToCompute(x[at(ch, j)]);
  }
};

template <typename T, typename P = ComputeType<T>>
struct SquaredDeviationAt {
  const T* x;
  const P* mean;
  ChannelIndex at;
  __device__ P operator()(int64_t ch, int64_t j) const {
    const P v = ToCompute(x[at(ch, j)]) - mean[ch];
    return v * v;
  }
};

// dY[i], or 0 where a fused relu cut Y to 0 (y is null without one).
template <typename T, typename P = ComputeType<T>>
__device__ P GradReaching(const T* dy, const T* y, int64_t i) {
  return y != nullptr && !(ToCompute(y[i]) > P(0)) ? P(0) : ToCompute(dy[i]);
}

// The gradient reaching the normalisation, per entry.
template <typename T>
struct GradAt {
  const T* dy;
  const T* y;
  ChannelIndex at;
  __device__ ComputeType<T> operator()(int64_t ch, int64_t j) const {
    return GradReaching(dy, y, at(ch, j));
  }
};

// Its product with xhat = (x - mean) * inv_std.
template <typename T, typename P = ComputeType<T>>
struct GradXhatAt {
  const T* dy;
  const T* y;
  const T* x;
  const P* mean;
  const P* inv_std;
  ChannelIndex at;
  __device__ P operator()(int64_t ch, int64_t j) const {
    const int64_t i = at(ch, j);
    return GradReaching(dy, y, i) *
           ((ToCompute(x[i]) - mean[ch]) * inv_std[ch]);
  }
};

template <typename T, typename F>
void ReduceChannels(const CUDADeviceContext& dev, const BatchNormDims& d, F f,
                    T* out) {
  cuda::RowReduce<T>(dev, d.c, d.per_channel(), f, cuda::SumOp(), T(0), out);
}

// v[c] = v[c] / m.
template <typename T>
struct DivideBy {
  T* v;
  T m;
  __device__ void operator()(int64_t i) const { v[i] = v[i] / m; }
};

// var[c] = sum[c] / m; the running statistics move toward the batch's;
// var[c] becomes the inverse std.
template <typename T>
struct FinishStats {
  const T* mean;
  T* var;
  const T* running_mean;
  const T* running_var;
  T* mean_out;
  T* var_out;
  T m, mom, eps;
  __device__ void operator()(int64_t i) const {
    const T v = var[i] / m;
    mean_out[i] = running_mean[i] * mom + mean[i] * (T(1) - mom);
    var_out[i] = running_var[i] * mom + v * (T(1) - mom);
    var[i] = T(1) / sqrt(v + eps);
  }
};

template <typename T>
struct InverseStd {
  const T* var;
  T* inv_std;
  T eps;
  __device__ void operator()(int64_t i) const {
    inv_std[i] = T(1) / sqrt(var[i] + eps);
  }
};

template <typename T, typename P = ComputeType<T>>
struct Normalize {
  const T* x;
  const P* mean;
  const P* inv_std;
  const P* scale;
  const P* bias;
  T* y;
  int64_t c, hw;
  bool relu;
  __device__ void operator()(int64_t i) const {
    const int64_t ch = (i / hw) % c;
    const P v =
        (ToCompute(x[i]) - mean[ch]) * (inv_std[ch] * scale[ch]) + bias[ch];
    y[i] = FromCompute<T>(relu && !(v > P(0)) ? P(0) : v);
  }
};

template <typename T>
void CopyIfApart(const ExecutionContext& ctx, const std::string& in_slot,
                 const std::string& out_slot) {
  const Tensor& in = ctx.Input(in_slot);
  T* out = cuda::OutputLike<T>(ctx, out_slot, in);
  if (out != in.data<T>())
    cuda::CopyAsync(cuda::Dev(ctx), out, in.data<T>(), in.numel() * sizeof(T));
}

template <typename T>
void UseRunningStats(const ExecutionContext& ctx, const BatchNormDims& d,
                     T eps) {
  const Tensor& var = ctx.Input("Variance");
  CopyIfApart<T>(ctx, "Mean", "SavedMean");
  CopyIfApart<T>(ctx, "Mean", "MeanOut");
  CopyIfApart<T>(ctx, "Variance", "VarianceOut");
  T* inv_std = cuda::OutputLike<T>(ctx, "SavedVariance", var);
  cuda::ForEach(cuda::Dev(ctx), d.c,
                InverseStd<T>{var.data<T>(), inv_std, eps});
}

// The batch's statistics of X (T) into SavedMean and SavedVariance (P).
template <typename T, typename P = ComputeType<T>>
void UseBatchStats(const ExecutionContext& ctx, const BatchNormDims& d, P eps) {
  const auto& dev = cuda::Dev(ctx);
  Communicator* comm = StatsCommunicator(ctx);
  const P m = static_cast<P>(GlobalCount(comm, d.per_channel()));
  const T* x = ctx.Input("X").data<T>();
  const ChannelIndex at{d.c, d.hw};
  const Tensor& running_mean = ctx.Input("Mean");
  P* mean = cuda::OutputLike<P>(ctx, "SavedMean", running_mean);
  P* var = cuda::OutputLike<P>(ctx, "SavedVariance", running_mean);
  ReduceChannels<P>(dev, d, ValueAt<T>{x, at}, mean);
  SumOverRanks(ctx, comm, ctx.Output("SavedMean"));
  cuda::ForEach(dev, d.c, DivideBy<P>{mean, m});
  ReduceChannels<P>(dev, d, SquaredDeviationAt<T>{x, mean, at}, var);
  SumOverRanks(ctx, comm, ctx.Output("SavedVariance"));
  const Tensor& running_var = ctx.Input("Variance");
  P* mean_out = cuda::OutputLike<P>(ctx, "MeanOut", running_mean);
  P* var_out = cuda::OutputLike<P>(ctx, "VarianceOut", running_var);
  const P mom = static_cast<P>(ctx.Attr<float>("momentum"));
  cuda::ForEach(
      dev, d.c,
      FinishStats<P>{mean, var, running_mean.data<P>(), running_var.data<P>(),
                     mean_out, var_out, m, mom, eps});
}

template <typename T>
void BatchNormKernel(const ExecutionContext& ctx) {
  using P = ComputeType<T>;
  const Tensor& x = ctx.Input("X");
  const BatchNormDims d = BatchNormDimsOf(x.shape());
  const P eps = static_cast<P>(ctx.Attr<float>("epsilon"));
  if (UsesGlobalStats(ctx)) {
    UseRunningStats<P>(ctx, d, eps);
  } else {
    UseBatchStats<T>(ctx, d, eps);
  }
  T* y = cuda::OutputLike<T>(ctx, "Y", x);
  cuda::ForEach(
      cuda::Dev(ctx), x.numel(),
      Normalize<T>{x.data<T>(), ctx.Output("SavedMean")->data<P>(),
                   ctx.Output("SavedVariance")->data<P>(),
                   ctx.Input("Scale").data<P>(), ctx.Input("Bias").data<P>(), y,
                   d.c, d.hw, ctx.Attr<bool>("fuse_with_relu")});
}

// dx with the running statistics (constants): dy * scale * inv_std; with
// the batch's: scale * inv_std * (dy - (sum dy + xhat * sum dy xhat) / m).
template <typename T, typename P = ComputeType<T>>
struct NormalizeGrad {
  const T* dy;
  const T* y;
  const T* x;
  const P* mean;
  const P* inv_std;
  const P* scale;
  const P* sum_dy;
  const P* sum_dy_xhat;
  T* dx;
  int64_t c, hw;
  P inv_m;
  bool global;
  __device__ void operator()(int64_t i) const {
    const int64_t ch = (i / hw) % c;
    const P k = scale[ch] * inv_std[ch];
    const P g = GradReaching(dy, y, i);
    if (global) {
      dx[i] = FromCompute<T>(g * k);
    } else {
      const P xhat = (ToCompute(x[i]) - mean[ch]) * inv_std[ch];
      dx[i] = FromCompute<T>(
          k * (g - (sum_dy[ch] + xhat * sum_dy_xhat[ch]) * inv_m));
    }
  }
};

template <typename T>
struct ScaleBoth {
  T* a;
  T* b;
  T s;
  __device__ void operator()(int64_t i) const {
    a[i] = a[i] * s;
    b[i] = b[i] * s;
  }
};

// The per-channel output `slot`, or `scratch` when it is not wanted.
template <typename T>
Tensor* ChannelSums(const ExecutionContext& ctx, const std::string& slot,
                    int64_t c, Tensor* scratch) {
  Tensor* t = ctx.HasOutput(slot) ? ctx.Output(slot) : scratch;
  t->mutable_data<T>(Shape{c}, ctx.place());
  return t;
}

template <typename T>
void BatchNormGradKernel(const ExecutionContext& ctx) {
  using P = ComputeType<T>;
  const auto& dev = cuda::Dev(ctx);
  const Tensor& x = ctx.Input("X");
  const BatchNormDims d = BatchNormDimsOf(x.shape());
  const bool global = UsesGlobalStats(ctx);
  Communicator* comm = global ? nullptr : StatsCommunicator(ctx);
  const T* dy = ctx.Input(GradSlot("Y")).data<T>();
  const T* y =
      ctx.Attr<bool>("fuse_with_relu") ? ctx.Input("Y").data<T>() : nullptr;
  const P* mean = ctx.Input("SavedMean").data<P>();
  const P* inv_std = ctx.Input("SavedVariance").data<P>();
  const ChannelIndex at{d.c, d.hw};
  Tensor scratch_scale, scratch_bias;
  Tensor* dscale = ChannelSums<P>(ctx, GradSlot("Scale"), d.c, &scratch_scale);
  Tensor* dbias = ChannelSums<P>(ctx, GradSlot("Bias"), d.c, &scratch_bias);
  ReduceChannels<P>(dev, d, GradAt<T>{dy, y, at}, dbias->data<P>());
  ReduceChannels<P>(dev, d,
                    GradXhatAt<T>{dy, y, x.data<T>(), mean, inv_std, at},
                    dscale->data<P>());
  SumOverRanks(ctx, comm, dbias);
  SumOverRanks(ctx, comm, dscale);
  if (ctx.HasOutput(GradSlot("X"))) {
    const P inv_m =
        global ? P(0)
               : P(1) / static_cast<P>(GlobalCount(comm, d.per_channel()));
    T* dx = cuda::OutputLike<T>(ctx, GradSlot("X"), x);
    cuda::ForEach(
        dev, x.numel(),
        NormalizeGrad<T>{dy, y, x.data<T>(), mean, inv_std,
                         ctx.Input("Scale").data<P>(), dbias->data<P>(),
                         dscale->data<P>(), dx, d.c, d.hw, inv_m, global});
  }
  if (comm != nullptr)
    cuda::ForEach(dev, d.c,
                  ScaleBoth<P>{dscale->data<P>(), dbias->data<P>(),
                               P(1) / static_cast<P>(RankCount(comm))});
}

}  // namespace

REGISTER_FLOAT_KERNELS(batch_norm, kCUDA, BatchNormKernel);
REGISTER_FLOAT_KERNELS(batch_norm_grad, kCUDA, BatchNormGradKernel);
REGISTER_HALF_KERNELS(batch_norm, kCUDA, BatchNormKernel);
REGISTER_HALF_KERNELS(batch_norm_grad, kCUDA, BatchNormGradKernel);

}  // namespace ops
}  // namespace fluid
