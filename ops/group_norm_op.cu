// CUDA kernels for group_norm and group_norm_grad (schemas and the CPU
// kernels in group_norm_op.cc; the layout in group_norm_op.h): one block per
// group for the statistics and dX, one per channel for dScale and dBias;
// sums in double, in a fixed order (deterministic).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/group_norm_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct GroupNormIo {
  GroupNormDims d;
  double eps;
  const T* x;
  const T* scale;  // null when absent
  const T* bias;   // null when absent
  T* mean;
  T* var;
  T* y;
};

template <typename T>
__global__ void GroupNormForwardKernel(GroupNormIo<T> io) {
  const GroupNormDims& d = io.d;
  const int64_t k_size = d.group_size();
  for (int64_t j = blockIdx.x; j < d.n * d.groups; j += gridDim.x) {
    const int64_t ni = j / d.groups, g = j % d.groups;
    double m = 0;
    for (int64_t k = threadIdx.x; k < k_size; k += blockDim.x)
      m += io.x[d.At(ni, g, k)];
    m = cuda::BlockReduce(m, cuda::SumOp(), 0.0) / k_size;
    double v = 0;
    for (int64_t k = threadIdx.x; k < k_size; k += blockDim.x) {
      const double t = io.x[d.At(ni, g, k)] - m;
      v += t * t;
    }
    v = cuda::BlockReduce(v, cuda::SumOp(), 0.0) / k_size;
    if (threadIdx.x == 0) {
      io.mean[j] = static_cast<T>(m);
      io.var[j] = static_cast<T>(v);
    }
    const double rstd = 1.0 / sqrt(v + io.eps);
    for (int64_t k = threadIdx.x; k < k_size; k += blockDim.x) {
      const int64_t i = d.At(ni, g, k);
      const int64_t ch = d.ChannelOf(i);
      double o = (io.x[i] - m) * rstd;
      if (io.scale) o *= io.scale[ch];
      if (io.bias) o += io.bias[ch];
      io.y[i] = static_cast<T>(o);
    }
  }
}

template <typename T>
struct GroupNormGradIo {
  GroupNormDims d;
  double eps;
  const T* x;
  const T* scale;
  const T* mean;
  const T* var;
  const T* dy;
  T* dx;
  T* dscale;
  T* dbias;
  __device__ double G(int64_t i) const {
    return scale ? dy[i] * double(scale[d.ChannelOf(i)]) : double(dy[i]);
  }
};

template <typename T>
__global__ void GroupNormGradXKernel(GroupNormGradIo<T> io) {
  const GroupNormDims& d = io.d;
  const int64_t k_size = d.group_size();
  for (int64_t j = blockIdx.x; j < d.n * d.groups; j += gridDim.x) {
    const int64_t ni = j / d.groups, g = j % d.groups;
    const double m = io.mean[j];
    const double rstd = 1.0 / sqrt(double(io.var[j]) + io.eps);
    double sg = 0, sgx = 0;
    for (int64_t k = threadIdx.x; k < k_size; k += blockDim.x) {
      const int64_t i = d.At(ni, g, k);
      const double gi = io.G(i);
      sg += gi;
      sgx += gi * (io.x[i] - m) * rstd;
    }
    sg = cuda::BlockReduce(sg, cuda::SumOp(), 0.0) / k_size;
    sgx = cuda::BlockReduce(sgx, cuda::SumOp(), 0.0) / k_size;
    for (int64_t k = threadIdx.x; k < k_size; k += blockDim.x) {
      const int64_t i = d.At(ni, g, k);
      io.dx[i] =
          static_cast<T>(rstd * (io.G(i) - sg - (io.x[i] - m) * rstd * sgx));
    }
  }
}

template <typename T>
__global__ void GroupNormParamGradKernel(GroupNormGradIo<T> io) {
  const GroupNormDims& d = io.d;
  for (int64_t ch = blockIdx.x; ch < d.c; ch += gridDim.x) {
    double sx = 0, sb = 0;
    for (int64_t k = threadIdx.x; k < d.n * d.s; k += blockDim.x) {
      const int64_t i = d.OfChannel(ch, k), j = d.GroupOf(i);
      sx += double(io.dy[i]) * (io.x[i] - double(io.mean[j])) /
            sqrt(double(io.var[j]) + io.eps);
      sb += io.dy[i];
    }
    sx = cuda::BlockReduce(sx, cuda::SumOp(), 0.0);
    sb = cuda::BlockReduce(sb, cuda::SumOp(), 0.0);
    if (threadIdx.x == 0) {
      if (io.dscale) io.dscale[ch] = static_cast<T>(sx);
      if (io.dbias) io.dbias[ch] = static_cast<T>(sb);
    }
  }
}

unsigned Blocks(int64_t n) {
  return static_cast<unsigned>(
      std::min<int64_t>(std::max<int64_t>(n, 1), 65535));
}

template <typename T>
const T* Optional(const ExecutionContext& ctx, const char* slot) {
  return ctx.HasInput(slot) ? ctx.Input(slot).data<T>() : nullptr;
}

template <typename T>
void GroupNormKernel(const ExecutionContext& ctx) {
  const GroupNormDims d = ReadGroupNormDims(ctx);
  const Tensor& x = ctx.Input("X");
  const Shape stats({d.n, d.groups});
  GroupNormIo<T> io{d,
                    ctx.Attr<float>("epsilon"),
                    x.data<T>(),
                    Optional<T>(ctx, "Scale"),
                    Optional<T>(ctx, "Bias"),
                    ctx.Output("Mean")->mutable_data<T>(stats, ctx.place()),
                    ctx.Output("Variance")->mutable_data<T>(stats, ctx.place()),
                    cuda::OutputLike<T>(ctx, "Y", x)};
  if (d.n * d.groups == 0) return;
  const auto& dev = cuda::Dev(ctx);
  GroupNormForwardKernel<T>
      <<<Blocks(d.n * d.groups), cuda::kThreads, 0, dev.stream()>>>(io);
  cuda::CheckLaunch();
}

template <typename T>
T* OptionalGrad(const ExecutionContext& ctx, const char* slot) {
  if (!ctx.HasOutput(GradSlot(slot))) return nullptr;
  return cuda::OutputLike<T>(ctx, GradSlot(slot), ctx.Input(slot));
}

template <typename T>
void GroupNormGradKernel(const ExecutionContext& ctx) {
  const GroupNormDims d = ReadGroupNormDims(ctx);
  GroupNormGradIo<T> io{d,
                        ctx.Attr<float>("epsilon"),
                        ctx.Input("X").data<T>(),
                        Optional<T>(ctx, "Scale"),
                        ctx.Input("Mean").data<T>(),
                        ctx.Input("Variance").data<T>(),
                        ctx.Input(GradSlot("Y")).data<T>(),
                        OptionalGrad<T>(ctx, "X"),
                        OptionalGrad<T>(ctx, "Scale"),
                        OptionalGrad<T>(ctx, "Bias")};
  const auto& dev = cuda::Dev(ctx);
  if (io.dx && d.n * d.groups > 0) {
    GroupNormGradXKernel<T>
        <<<Blocks(d.n * d.groups), cuda::kThreads, 0, dev.stream()>>>(io);
    cuda::CheckLaunch();
  }
  if ((io.dscale || io.dbias) && d.c > 0) {
    GroupNormParamGradKernel<T>
        <<<Blocks(d.c), cuda::kThreads, 0, dev.stream()>>>(io);
    cuda::CheckLaunch();
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(group_norm, kCUDA, GroupNormKernel);
REGISTER_FLOAT_KERNELS(group_norm_grad, kCUDA, GroupNormGradKernel);

}  // namespace ops
}  // namespace fluid
