// CUDA kernels for pool2d and pool2d_grad (schemas in pool2d_op.cc).
//
// Windows are clipped to the image as on the CPU: padding never wins a max
// and, with `exclusive`, never counts in an average. The forward pass is one
// thread per output, visiting the window's taps in row-major order; a max
// takes the first maximum (later taps win only when strictly greater) and
// an average divides the sum by the same count as the CPU.
//
// The gradients gather rather than scatter: one thread per input pixel adds
// the shares of the windows that contain it, in increasing (oh, ow) order,
// which is the order in which the CPU kernel adds them. The max-pool
// gradient first recomputes each window's first maximum from X (as the CPU
// does; Out is not read), so ties go to the same element. No atomics: the
// results are the same bits run to run.
//
// bfloat16 and float16 compare, sum and divide in float (ComputeType) and
// round once when stored.
#include <algorithm>

#include "ops/cuda/cuda_helpers.cuh"
#include "ops/half_math.h"
#include "ops/pool_geometry.h"

namespace fluid {
namespace ops {
namespace {

using math::ConvGeometry;

// The window of output (oh, ow), clipped to the image: rows [h0, h1),
// columns [w0, w1). Never empty: paddings are smaller than the window.
struct Window {
  int64_t h0, h1, w0, w1;
};

__device__ __forceinline__ int64_t Min(int64_t a, int64_t b) {
  return a < b ? a : b;
}

__device__ __forceinline__ Window WindowAt(const ConvGeometry& g, int64_t oh,
                                           int64_t ow) {
  const int64_t h0 = oh * g.stride_h - g.pad_h;
  const int64_t w0 = ow * g.stride_w - g.pad_w;
  return {h0 > 0 ? h0 : 0, Min(h0 + g.kernel_h, g.in_h), w0 > 0 ? w0 : 0,
          Min(w0 + g.kernel_w, g.in_w)};
}

// The pixel count an average over `win` divides by.
template <typename T>
__device__ __forceinline__ T Count(const ConvGeometry& g, bool exclusive,
                                   int64_t oh, int64_t ow) {
  const Window win = WindowAt(g, oh, ow);
  return static_cast<T>(exclusive ? (win.h1 - win.h0) * (win.w1 - win.w0)
                                  : PaddedWindowArea(g, oh, ow));
}

// The in-plane index of the first maximum of `win` in plane `x`.
template <typename T>
__device__ __forceinline__ int64_t ArgMax(const T* x, int64_t width,
                                          const Window& win) {
  int64_t best = win.h0 * width + win.w0;
  ComputeType<T> best_v = ToCompute(x[best]);
  for (int64_t h = win.h0; h < win.h1; ++h)
    for (int64_t w = win.w0; w < win.w1; ++w) {
      const ComputeType<T> v = ToCompute(x[h * width + w]);
      if (v > best_v) {
        best = h * width + w;
        best_v = v;
      }
    }
  return best;
}

// Output index i = (plane * Ho + oh) * Wo + ow.
template <typename T>
struct PoolForward {
  ConvGeometry g;
  bool is_max, exclusive;
  const T* x;
  T* y;
  __device__ void operator()(int64_t i) const {
    const int64_t ow = i % g.out_w;
    const int64_t t = i / g.out_w;
    const int64_t oh = t % g.out_h, plane = t / g.out_h;
    const T* xp = x + plane * g.in_h * g.in_w;
    const Window win = WindowAt(g, oh, ow);
    if (is_max) {
      y[i] = xp[ArgMax(xp, g.in_w, win)];
      return;
    }
    using C = ComputeType<T>;
    C sum = 0;
    for (int64_t h = win.h0; h < win.h1; ++h)
      for (int64_t w = win.w0; w < win.w1; ++w)
        sum += ToCompute(xp[h * g.in_w + w]);
    y[i] = FromCompute<T>(sum / Count<C>(g, exclusive, oh, ow));
  }
};

// The in-plane index of each window's first maximum.
template <typename T>
struct MaxIndex {
  ConvGeometry g;
  const T* x;
  int64_t* index;
  __device__ void operator()(int64_t i) const {
    const int64_t ow = i % g.out_w;
    const int64_t t = i / g.out_w;
    const int64_t oh = t % g.out_h, plane = t / g.out_h;
    index[i] = ArgMax(x + plane * g.in_h * g.in_w, g.in_w, WindowAt(g, oh, ow));
  }
};

// The outputs [lo, hi) along one axis whose windows contain input position
// `pos`: o * stride - pad <= pos < o * stride - pad + kernel.
__device__ __forceinline__ void Covering(int64_t pos, int64_t kernel,
                                         int64_t stride, int64_t pad,
                                         int64_t out, int64_t* lo,
                                         int64_t* hi) {
  const int64_t t = pos + pad;  // >= 0
  *lo = t < kernel ? 0 : (t - kernel) / stride + 1;
  *hi = Min(t / stride + 1, out);
}

// Input pixel i = (plane * H + h) * W + w; dx overwritten. Max pooling
// routes a window's gradient to its first maximum (`index`, from MaxIndex);
// average pooling gives every pixel of the window an equal share.
template <typename T>
struct PoolBackward {
  ConvGeometry g;
  bool is_max, exclusive;
  const int64_t* index;  // max pooling only
  const T* dy;
  T* dx;
  __device__ void operator()(int64_t i) const {
    const int64_t w = i % g.in_w;
    const int64_t t = i / g.in_w;
    const int64_t h = t % g.in_h, plane = t / g.in_h;
    int64_t oh0, oh1, ow0, ow1;
    Covering(h, g.kernel_h, g.stride_h, g.pad_h, g.out_h, &oh0, &oh1);
    Covering(w, g.kernel_w, g.stride_w, g.pad_w, g.out_w, &ow0, &ow1);
    const int64_t out_base = plane * g.out_h * g.out_w;
    const int64_t self = h * g.in_w + w;
    using C = ComputeType<T>;
    C acc = C(0);
    for (int64_t oh = oh0; oh < oh1; ++oh)
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        const int64_t o = out_base + oh * g.out_w + ow;
        if (is_max) {
          if (index[o] == self) acc += ToCompute(dy[o]);
        } else {
          acc += ToCompute(dy[o]) / Count<C>(g, exclusive, oh, ow);
        }
      }
    dx[i] = FromCompute<T>(acc);
  }
};

template <typename T>
void Pool2dKernel(const ExecutionContext& ctx) {
  T* yd = cuda::OutputData<T>(ctx, "Out");
  const PoolArgs p = ReadPoolArgs(ctx);
  const ConvGeometry& g = p.geometry;
  cuda::ForEach(
      cuda::Dev(ctx), p.planes * g.out_h * g.out_w,
      PoolForward<T>{g, p.attrs.is_max, p.attrs.exclusive, p.x.data<T>(), yd});
}

template <typename T>
void Pool2dGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const PoolArgs p = ReadPoolArgs(ctx);
  T* dxd = dx->mutable_data<T>(ctx.place());
  const ConvGeometry& g = p.geometry;
  const int64_t outputs = p.planes * g.out_h * g.out_w;
  const auto& dev = cuda::Dev(ctx);
  const int64_t* index = nullptr;
  if (p.attrs.is_max && outputs > 0) {
    int64_t* idx = static_cast<int64_t*>(
        dev.Workspace(sizeof(int64_t) * static_cast<size_t>(outputs)));
    cuda::ForEach(dev, outputs, MaxIndex<T>{g, p.x.data<T>(), idx});
    index = idx;
  }
  cuda::ForEach(dev, p.planes * g.in_h * g.in_w,
                PoolBackward<T>{g, p.attrs.is_max, p.attrs.exclusive, index,
                                ctx.Input(GradSlot("Out")).data<T>(), dxd});
}

}  // namespace

REGISTER_FLOAT_KERNELS(pool2d, kCUDA, Pool2dKernel);
REGISTER_FLOAT_KERNELS(pool2d_grad, kCUDA, Pool2dGradKernel);
REGISTER_HALF_KERNELS(pool2d, kCUDA, Pool2dKernel);
REGISTER_HALF_KERNELS(pool2d_grad, kCUDA, Pool2dGradKernel);

}  // namespace ops
}  // namespace fluid
