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
// the variance accurate where a sum of squares would cancel. The count
// travels with the sums it divides: two collectives forward, one backward.
//
// The CPU kernels walk X as its [n, c] planes of hw contiguous values: each
// channel's n planes in turn, the channels spread over the pool. Without
// sync_stats a channel's statistics, normalisation (or backward sums and
// gradient) are done in one visit, while its planes are in cache; each plane
// is summed vectorised and the plane sums are added in double.
//
// SavedMean holds the mean used and SavedVariance the inverse standard
// deviation 1 / sqrt(var + epsilon), for the gradient.
//
// A bfloat16 or float16 X (and Y, X@GRAD, Y@GRAD) comes with float32
// Scale, Bias and statistics (and their gradients): X and Y@GRAD are
// copied to float, the float32 code runs on the copies, and Y or X@GRAD is
// rounded once.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/batch_norm_helpers.h"
#include "ops/conv_workspace.h"
#include "ops/half_cpu.h"
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

// X viewed as its [n, c] planes of hw contiguous values: every kernel walks
// a channel's n planes, each a contiguous run, and the channels are spread
// over the pool.
template <typename T>
using ConstArr = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using Arr = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

int64_t PlaneOffset(const BatchNormDims& d, int64_t i, int64_t c) {
  return (i * d.c + c) * d.hw;
}

template <typename T>
ConstArr<T> Plane(const T* base, const BatchNormDims& d, int64_t i, int64_t c) {
  return ConstArr<T>(base + PlaneOffset(d, i, c), d.hw);
}

// Calls fn(c) for every channel, on the pool when X is large. `cost` is the
// rough number of operations per element of X.
template <typename Fn>
void ForEachChannel(const ExecutionContext& ctx, const BatchNormDims& d,
                    double cost, Fn fn) {
  ParallelFor(ctx.device(), d.c, cost * static_cast<double>(d.per_channel()),
              [&fn](int64_t begin, int64_t end) {
                for (int64_t c = begin; c < end; ++c) fn(c);
              });
}

// Sum of channel c's values; each plane is summed vectorised, the planes'
// sums are added in double.
template <typename T>
T ChannelSum(const T* x, const BatchNormDims& d, int64_t c) {
  double s = 0;
  for (int64_t i = 0; i < d.n; ++i) s += Plane(x, d, i, c).sum();
  return static_cast<T>(s);
}

// Sum of the squared deviations of channel c's values from `mean`.
template <typename T>
T ChannelSquaredDeviation(const T* x, const BatchNormDims& d, int64_t c,
                          T mean) {
  double s = 0;
  for (int64_t i = 0; i < d.n; ++i)
    s += (Plane(x, d, i, c) - mean).square().sum();
  return static_cast<T>(s);
}

// Y = (X - mean) * k + bias over channel c, then max(Y, 0) with `relu`.
template <typename T>
void NormaliseChannel(const T* x, T* y, const BatchNormDims& d, int64_t c,
                      T mean, T k, T bias, bool relu) {
  for (int64_t i = 0; i < d.n; ++i) {
    Arr<T> out(y + PlaneOffset(d, i, c), d.hw);
    if (relu) {
      out = ((Plane(x, d, i, c) - mean) * k + bias).max(T(0));
    } else {
      out = (Plane(x, d, i, c) - mean) * k + bias;
    }
  }
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
  // The parameters and statistics are X's dtype, or float32 for a 16-bit
  // X (the kernel computes in float32 and keeps them so).
  const DataType x_dtype = ctx->GetInputDtype("X");
  const DataType param_dtype =
      IsHalfDtype(x_dtype) ? DataType::kFloat32 : x_dtype;
  for (const char* slot : {"Scale", "Bias", "Mean", "Variance"}) {
    CheckVector(*ctx, slot, x);
    FLUID_ENFORCE(ctx->GetInputDtype(slot) == param_dtype, "batch_norm: ", slot,
                  " '", ctx->InputName(slot), "' is ",
                  DataTypeName(ctx->GetInputDtype(slot)), " but must be ",
                  DataTypeName(param_dtype), " for X '", ctx->InputName("X"),
                  "' of ", DataTypeName(x_dtype));
  }
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

// What the forward kernel reads and writes, resolved once.
template <typename T>
struct ForwardArgs {
  BatchNormDims d;
  const T* x;
  T* y;
  const T* scale;
  const T* bias;
  T* mean;     // SavedMean
  T* inv_std;  // SavedVariance
  T eps;
  bool relu;  // fuse_with_relu
};

// The args of X's values `x` and Y's `y` (X's and Y's own memory, or
// float copies of 16-bit ones); the parameters and statistics are T.
template <typename T>
ForwardArgs<T> ForwardArgsOf(const ExecutionContext& ctx, const T* x, T* y) {
  ForwardArgs<T> a;
  a.d = BatchNormDimsOf(ctx.Input("X").shape());
  a.x = x;
  a.y = y;
  a.scale = ctx.Input("Scale").data<T>();
  a.bias = ctx.Input("Bias").data<T>();
  a.mean = ctx.Output("SavedMean")->mutable_data<T>(Shape{a.d.c});
  a.inv_std = ctx.Output("SavedVariance")->mutable_data<T>(Shape{a.d.c});
  a.eps = static_cast<T>(ctx.Attr<float>("epsilon"));
  a.relu = ctx.Attr<bool>("fuse_with_relu");
  return a;
}

template <typename T>
void NormaliseChannel(const ForwardArgs<T>& a, int64_t c) {
  NormaliseChannel(a.x, a.y, a.d, c, a.mean[c], a.inv_std[c] * a.scale[c],
                   a.bias[c], a.relu);
}

// SavedMean <- the running mean, SavedVariance <- its inverse std; the
// running statistics pass through unchanged.
template <typename T>
void UseRunningStats(const ExecutionContext& ctx, const ForwardArgs<T>& a) {
  const Tensor& mean = ctx.Input("Mean");
  const T* var = ctx.Input("Variance").data<T>();
  std::copy(mean.data<T>(), mean.data<T>() + a.d.c, a.mean);
  for (int64_t c = 0; c < a.d.c; ++c)
    a.inv_std[c] = T(1) / std::sqrt(var[c] + a.eps);
  for (const char* slot : {"Mean", "Variance"}) {
    Tensor* out = ctx.Output(std::string(slot) + "Out");
    const Tensor& in = ctx.Input(slot);
    if (out != &in) out->CopyFrom(in);
  }
}

// Moves the running statistics toward the batch's (SavedMean and, until
// FinishBatchStats, the biased variance in SavedVariance).
template <typename T>
void UpdateRunningStats(const ExecutionContext& ctx, const ForwardArgs<T>& a) {
  const T mom = static_cast<T>(ctx.Attr<float>("momentum"));
  // In place (MeanOut is Mean) or not: each element is read before written.
  const T* running_mean = ctx.Input("Mean").data<T>();
  const T* running_var = ctx.Input("Variance").data<T>();
  T* mean_out = ctx.Output("MeanOut")->mutable_data<T>(Shape{a.d.c});
  T* var_out = ctx.Output("VarianceOut")->mutable_data<T>(Shape{a.d.c});
  for (int64_t c = 0; c < a.d.c; ++c) {
    mean_out[c] = running_mean[c] * mom + a.mean[c] * (T(1) - mom);
    var_out[c] = running_var[c] * mom + a.inv_std[c] * (T(1) - mom);
  }
}

// Local batch statistics: each channel's mean, variance and normalisation in
// one visit, while its planes are in cache. SavedVariance holds the biased
// variance until the running statistics have been updated.
template <typename T>
void LocalBatchNorm(const ExecutionContext& ctx, const ForwardArgs<T>& a) {
  const T inv_m = T(1) / static_cast<T>(a.d.per_channel());
  ForEachChannel(ctx, a.d, 6, [&](int64_t c) {
    const T mean = ChannelSum(a.x, a.d, c) * inv_m;
    const T var = ChannelSquaredDeviation(a.x, a.d, c, mean) * inv_m;
    a.mean[c] = mean;
    a.inv_std[c] = var;
    NormaliseChannel(a.x, a.y, a.d, c, mean,
                     a.scale[c] / std::sqrt(var + a.eps), a.bias[c], a.relu);
  });
  UpdateRunningStats(ctx, a);
  for (int64_t c = 0; c < a.d.c; ++c)
    a.inv_std[c] = T(1) / std::sqrt(a.inv_std[c] + a.eps);
}

// The number of values per channel travels with the per-channel sums it
// divides, so that the sums and the global count take one collective: as
// two small integers (count = hi * kCountBase + lo), each summed exactly
// over the ranks even in float32.
constexpr int64_t kCountBase = 4096;

template <typename T>
void PutCount(int64_t count, T* at) {
  at[0] = static_cast<T>(count % kCountBase);
  at[1] = static_cast<T>(count / kCountBase);
}

template <typename T>
int64_t GetCount(const T* at) {
  return std::llround(at[0]) + std::llround(at[1]) * kCountBase;
}

// A per-thread [size] workspace of T for the collectives (reused across
// steps: no allocation once it has grown).
template <typename T>
Tensor* CollectiveWorkspace(int64_t size) {
  thread_local Tensor t;
  t.mutable_data<T>(Shape{size});
  return &t;
}

// Statistics of the global batch: the channels' sums (with the count) are
// added over the ranks, then their squared deviations from the global mean.
template <typename T>
void SyncedBatchNorm(const ExecutionContext& ctx, Communicator* comm,
                     const ForwardArgs<T>& a) {
  Tensor* sums = CollectiveWorkspace<T>(a.d.c + 2);
  T* s = sums->data<T>();
  ForEachChannel(ctx, a.d, 1,
                 [&](int64_t c) { s[c] = ChannelSum(a.x, a.d, c); });
  PutCount(a.d.per_channel(), s + a.d.c);
  SumOverRanks(ctx, comm, sums);
  const T inv_m = T(1) / static_cast<T>(GetCount(s + a.d.c));
  for (int64_t c = 0; c < a.d.c; ++c) a.mean[c] = s[c] * inv_m;
  ForEachChannel(ctx, a.d, 3, [&](int64_t c) {
    a.inv_std[c] = ChannelSquaredDeviation(a.x, a.d, c, a.mean[c]);
  });
  SumOverRanks(ctx, comm, ctx.Output("SavedVariance"));
  for (int64_t c = 0; c < a.d.c; ++c) a.inv_std[c] *= inv_m;
  UpdateRunningStats(ctx, a);
  for (int64_t c = 0; c < a.d.c; ++c)
    a.inv_std[c] = T(1) / std::sqrt(a.inv_std[c] + a.eps);
  ForEachChannel(ctx, a.d, 2, [&](int64_t c) { NormaliseChannel(a, c); });
}

template <typename T>
void RunBatchNorm(const ExecutionContext& ctx, const ForwardArgs<T>& a) {
  if (UsesGlobalStats(ctx)) {
    UseRunningStats(ctx, a);
    ForEachChannel(ctx, a.d, 2, [&](int64_t c) { NormaliseChannel(a, c); });
    return;
  }
  Communicator* comm = StatsCommunicator(ctx);
  if (comm == nullptr) {
    LocalBatchNorm(ctx, a);
  } else {
    SyncedBatchNorm(ctx, comm, a);
  }
}

// A thread's float copy of a 16-bit tensor (slot 0 or 1 of its two
// buffers, reused across steps: no allocation once they have grown); or
// only the buffer, of t's size, when `t` is null.
template <typename T>
float* FloatCopy(const ExecutionContext& ctx, int slot, const Tensor* t,
                 int64_t n) {
  thread_local std::vector<float> buffers[2];
  std::vector<float>& b = buffers[slot];
  if (static_cast<int64_t>(b.size()) < n) b.resize(n);
  float* f = b.data();
  if (t != nullptr) {
    const T* src = t->data<T>();
    ParallelFor(ctx.device(), n, 1.0, [&](int64_t lo, int64_t hi) {
      ToFloats(src + lo, f + lo, hi - lo);
    });
  }
  return f;
}

// dst = `f` rounded to T.
template <typename T>
void StoreRounded(const ExecutionContext& ctx, const float* f, T* dst,
                  int64_t n) {
  ParallelFor(ctx.device(), n, 1.0, [&](int64_t lo, int64_t hi) {
    FromFloats(f + lo, dst + lo, hi - lo);
  });
}

template <typename T>
void BatchNormKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  T* y = ctx.Output("Y")->mutable_data<T>(x.shape());
  if constexpr (IsHalfType<T>::value) {
    // X and Y as float copies, the float32 parameters and statistics as
    // they are: the float32 computation, Y rounded once.
    const float* xf = FloatCopy<T>(ctx, 0, &x, x.numel());
    float* yf = FloatCopy<T>(ctx, 1, nullptr, x.numel());
    RunBatchNorm(ctx, ForwardArgsOf<float>(ctx, xf, yf));
    StoreRounded(ctx, yf, y, x.numel());
  } else {
    RunBatchNorm(ctx, ForwardArgsOf<T>(ctx, x.data<T>(), y));
  }
}

// The per-channel output `slot` (Scale@GRAD, Bias@GRAD), or thread scratch
// slot `scratch` when the gradient is not wanted: the backward pass needs
// the sums either way.
template <typename T>
T* ChannelSums(const ExecutionContext& ctx, const std::string& slot, int64_t c,
               ScratchSlot scratch) {
  if (ctx.HasOutput(slot)) return ctx.Output(slot)->mutable_data<T>(Shape{c});
  return ThreadScratch<T>(scratch, c);
}

// What the backward kernel reads and writes, resolved once. dx is null when
// X@GRAD is not wanted; dscale and dbias are left null for the caller to set
// unless `with_sums`.
template <typename T>
struct BackwardArgs {
  BatchNormDims d;
  const T* x;
  const T* dy;
  const T* y = nullptr;  // with fuse_with_relu: dY counts only where Y > 0
  T* dx;
  const T* scale;
  const T* mean;
  const T* inv_std;
  T* dscale = nullptr;  // the sum of dY * xhat
  T* dbias = nullptr;   // the sum of dY
};

// X's, Y@GRAD's, Y's (read with fuse_with_relu) and X@GRAD's values (null
// when not wanted) are given: the tensors' own memory, or float copies of
// 16-bit ones.
template <typename T>
BackwardArgs<T> BackwardArgsOf(const ExecutionContext& ctx, bool with_sums,
                               const T* x, const T* dy, const T* y, T* dx) {
  BackwardArgs<T> a;
  a.d = BatchNormDimsOf(ctx.Input("X").shape());
  a.x = x;
  a.dy = dy;
  if (ctx.Attr<bool>("fuse_with_relu")) a.y = y;
  a.dx = dx;
  a.scale = ctx.Input("Scale").data<T>();
  a.mean = ctx.Input("SavedMean").data<T>();
  a.inv_std = ctx.Input("SavedVariance").data<T>();
  if (with_sums) {
    a.dscale = ChannelSums<T>(ctx, GradSlot("Scale"), a.d.c, kScratchTmp);
    a.dbias = ChannelSums<T>(ctx, GradSlot("Bias"), a.d.c, kScratchPartial);
  }
  return a;
}

// Plane (i, c) of the gradient reaching the normalisation. Without a fused
// relu that is dY; with one, dY zeroed where the relu cut Y to 0, which
// GradSums writes into X@GRAD's plane (or the thread's scratch when X@GRAD
// is not wanted) and InputGrad then reads back and overwrites in place.
template <typename T>
const T* MaskedGradPlane(const BackwardArgs<T>& a, int64_t i, int64_t c) {
  const int64_t at = PlaneOffset(a.d, i, c);
  T* out = a.dx != nullptr ? a.dx + at : ThreadScratch<T>(kScratchCol, a.d.hw);
  const T* y = a.y + at;
  const T* dy = a.dy + at;
  for (int64_t k = 0; k < a.d.hw; ++k) out[k] = y[k] > T(0) ? dy[k] : T(0);
  return out;
}

// dbias[c] = sum of dY, dscale[c] = sum of dY * xhat over channel c.
template <typename T>
void GradSums(const BackwardArgs<T>& a, int64_t c) {
  double sum_dy = 0, sum_dy_dev = 0;
  const T mean = a.mean[c];
  for (int64_t i = 0; i < a.d.n; ++i) {
    ConstArr<T> dy(a.y == nullptr ? a.dy + PlaneOffset(a.d, i, c)
                                  : MaskedGradPlane(a, i, c),
                   a.d.hw);
    sum_dy += dy.sum();
    sum_dy_dev += (dy * (Plane(a.x, a.d, i, c) - mean)).sum();
  }
  a.dbias[c] = static_cast<T>(sum_dy);
  a.dscale[c] = static_cast<T>(sum_dy_dev) * a.inv_std[c];
}

// X@GRAD over channel c: k * dY with the running statistics; with the
// batch's, k * (dY - (dbias + xhat * dscale) / m), k = Scale * inv_std.
// With a fused relu, GradSums left the masked dY in X@GRAD.
template <typename T>
void InputGrad(const BackwardArgs<T>& a, bool global, T inv_m, int64_t c) {
  const T inv_std = a.inv_std[c], mean = a.mean[c];
  const T k = a.scale[c] * inv_std;
  const T shift = global ? T(0) : k * a.dbias[c] * inv_m;
  const T slope = global ? T(0) : k * inv_std * a.dscale[c] * inv_m;
  const T* g = a.y == nullptr ? a.dy : a.dx;
  for (int64_t i = 0; i < a.d.n; ++i) {
    Arr<T>(a.dx + PlaneOffset(a.d, i, c), a.d.hw) =
        Plane(g, a.d, i, c) * k - (Plane(a.x, a.d, i, c) - mean) * slope -
        shift;
  }
}

// Scale@GRAD or Bias@GRAD, when wanted, <- the ranks' share of `sums`.
template <typename T>
void WriteRankShare(const ExecutionContext& ctx, const std::string& slot,
                    const T* sums, int64_t c, T inv_size) {
  if (!ctx.HasOutput(slot)) return;
  T* out = ctx.Output(slot)->mutable_data<T>(Shape{c});
  for (int64_t i = 0; i < c; ++i) out[i] = sums[i] * inv_size;
}

// With sync_stats: both per-channel sums and the count in one [2C + 2]
// workspace (dbias, dscale, count), added over the ranks in one collective.
template <typename T>
void SyncedBatchNormGrad(const ExecutionContext& ctx, Communicator* comm,
                         BackwardArgs<T> a) {
  Tensor* sums = CollectiveWorkspace<T>(2 * a.d.c + 2);
  a.dbias = sums->data<T>();
  a.dscale = a.dbias + a.d.c;
  ForEachChannel(ctx, a.d, 4, [&](int64_t c) { GradSums(a, c); });
  PutCount(a.d.per_channel(), a.dscale + a.d.c);
  SumOverRanks(ctx, comm, sums);
  const T inv_m = T(1) / static_cast<T>(GetCount(a.dscale + a.d.c));
  if (a.dx != nullptr)
    ForEachChannel(ctx, a.d, 4,
                   [&](int64_t c) { InputGrad(a, false, inv_m, c); });
  // Every rank now holds the global sums: its share of them is the average,
  // which the data-parallel gradient averaging then leaves unchanged.
  const T inv_size = T(1) / static_cast<T>(RankCount(comm));
  WriteRankShare(ctx, GradSlot("Bias"), a.dbias, a.d.c, inv_size);
  WriteRankShare(ctx, GradSlot("Scale"), a.dscale, a.d.c, inv_size);
}

// The backward pass over args `a` made with_sums unless the statistics
// are synchronised.
template <typename T>
void RunBatchNormGrad(const ExecutionContext& ctx, Communicator* comm,
                      bool global, const BackwardArgs<T>& a) {
  if (comm != nullptr) {
    SyncedBatchNormGrad(ctx, comm, a);
    return;
  }
  // Each channel's sums and gradient in one visit.
  const T inv_m = T(1) / static_cast<T>(a.d.per_channel());
  ForEachChannel(ctx, a.d, 8, [&](int64_t c) {
    GradSums(a, c);
    if (a.dx != nullptr) InputGrad(a, global, inv_m, c);
  });
}

template <typename T>
void BatchNormGradKernel(const ExecutionContext& ctx) {
  const bool global = UsesGlobalStats(ctx);
  Communicator* comm = global ? nullptr : StatsCommunicator(ctx);
  const Tensor& x = ctx.Input("X");
  const Tensor& dy = ctx.Input(GradSlot("Y"));
  const bool relu = ctx.Attr<bool>("fuse_with_relu");
  T* dx = ctx.HasOutput(GradSlot("X"))
              ? ctx.Output(GradSlot("X"))->mutable_data<T>(x.shape())
              : nullptr;
  if constexpr (IsHalfType<T>::value) {
    // X and Y@GRAD (masked in place where a fused relu cut Y) as float
    // copies; X@GRAD computed in float into the second copy and rounded.
    const int64_t n = x.numel();
    float* xf = FloatCopy<T>(ctx, 0, &x, n);
    float* gf = FloatCopy<T>(ctx, 1, &dy, n);
    if (relu) {
      const T* y = ctx.Input("Y").data<T>();
      for (int64_t i = 0; i < n; ++i)
        if (!(ToCompute(y[i]) > 0.0f)) gf[i] = 0.0f;
    }
    RunBatchNormGrad(ctx, comm, global,
                     BackwardArgsOf<float>(ctx, comm == nullptr, xf, gf,
                                           nullptr, dx ? gf : nullptr));
    if (dx != nullptr) StoreRounded(ctx, gf, dx, n);
  } else {
    RunBatchNormGrad(
        ctx, comm, global,
        BackwardArgsOf<T>(ctx, comm == nullptr, x.data<T>(), dy.data<T>(),
                          relu ? ctx.Input("Y").data<T>() : nullptr, dx));
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
    .InRange(0, 1)
    .Attr<float>("epsilon", 1e-5f, "added to the variance")
    .InRange(0, kNoUpperBound)
    .Attr<std::string>("data_layout", "NCHW", "only \"NCHW\"")
    .Attr<bool>("use_global_stats", false,
                "train with the running statistics (frozen)")
    .Attr<bool>("sync_stats", false,
                "batch statistics over the global batch of all ranks")
    .Attr<bool>("fuse_with_relu", false,
                "Y = max(normalised X, 0): the relu applied in the same pass")
    .SetInferShape(BatchNormInferShape)
    .SetGrad(GradSpec("batch_norm_grad")
                 .Inputs({"X", "Scale"})
                 .Outputs({"Y", "SavedMean", "SavedVariance"})
                 .OutGrads({"Y"})
                 .InGrads({"X", "Scale", "Bias"}))
    .CPUKernel<float>(BatchNormKernel<float>)
    .CPUKernel<double>(BatchNormKernel<double>)
    .CPUKernel<bfloat16>(BatchNormKernel<bfloat16>)
    .CPUKernel<float16>(BatchNormKernel<float16>);

REGISTER_GRAD_OP(batch_norm_grad)
    .Doc(
        "Gradient of batch_norm. With batch statistics the mean and variance "
        "depend on X; with sync_stats their two per-channel sums are added "
        "over the ranks and Scale@GRAD, Bias@GRAD are the ranks' average.")
    .SetInferShape(BatchNormGradInferShape)
    .CPUKernel<float>(BatchNormGradKernel<float>)
    .CPUKernel<double>(BatchNormGradKernel<double>)
    .CPUKernel<bfloat16>(BatchNormGradKernel<bfloat16>)
    .CPUKernel<float16>(BatchNormGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
