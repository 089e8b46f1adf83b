// CUDA kernels for bilinear_interp and nearest_interp and their gradients
// (schemas in interpolate_op.cc), by the taps of interpolate_op.h.
//
// Forward: one thread per output pixel. Backward: one thread per input row
// of a plane; it zeroes the row, then walks the output rows in order and
// adds in those that read its row (no atomics: each dX element is written
// by one thread, in a fixed order, so results are the same bits run to
// run). OutSize, when given, is read back to the host to size Out.
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/interpolate_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct BilinearForward {
  InterpShape s;
  T rh, rw;
  const T* x;
  T* y;
  __device__ void operator()(int64_t i) const {
    const int64_t l = i % s.out_w, t = i / s.out_w;
    const int64_t k = t % s.out_h, q = t / s.out_h;
    const LinearTap<T> r = BilinearTap<T>(k, s.in_h, rh, s.half_pixel);
    const LinearTap<T> c = BilinearTap<T>(l, s.in_w, rw, s.half_pixel);
    const T* lo = x + (q * s.in_h + r.lo) * s.in_w;
    const T* hi = x + (q * s.in_h + r.hi) * s.in_w;
    const T top = lo[c.lo] + c.lambda * (lo[c.hi] - lo[c.lo]);
    const T bottom = hi[c.lo] + c.lambda * (hi[c.hi] - hi[c.lo]);
    y[i] = top + r.lambda * (bottom - top);
  }
};

template <typename T>
struct BilinearBackward {
  InterpShape s;
  T rh, rw;
  const T* dy;
  T* dx;
  __device__ void operator()(int64_t i) const {
    const int64_t row = i % s.in_h, q = i / s.in_h;
    T* d = dx + (q * s.in_h + row) * s.in_w;
    for (int64_t j = 0; j < s.in_w; ++j) d[j] = T(0);
    for (int64_t k = 0; k < s.out_h; ++k) {
      const LinearTap<T> r = BilinearTap<T>(k, s.in_h, rh, s.half_pixel);
      T wy = T(0);
      if (r.lo == row) wy += T(1) - r.lambda;
      if (r.hi == row) wy += r.lambda;
      if (r.lo != row && r.hi != row) continue;
      const T* g = dy + (q * s.out_h + k) * s.out_w;
      for (int64_t l = 0; l < s.out_w; ++l) {
        const LinearTap<T> c = BilinearTap<T>(l, s.in_w, rw, s.half_pixel);
        const T v = wy * g[l];
        d[c.lo] += (T(1) - c.lambda) * v;
        d[c.hi] += c.lambda * v;
      }
    }
  }
};

template <typename T>
struct NearestForward {
  InterpShape s;
  float rh, rw;
  const T* x;
  T* y;
  __device__ void operator()(int64_t i) const {
    const int64_t l = i % s.out_w, t = i / s.out_w;
    const int64_t k = t % s.out_h, q = t / s.out_h;
    const int64_t r = NearestIndex(k, s.in_h, rh, s.align_corners);
    const int64_t c = NearestIndex(l, s.in_w, rw, s.align_corners);
    y[i] = x[(q * s.in_h + r) * s.in_w + c];
  }
};

template <typename T>
struct NearestBackward {
  InterpShape s;
  float rh, rw;
  const T* dy;
  T* dx;
  __device__ void operator()(int64_t i) const {
    const int64_t row = i % s.in_h, q = i / s.in_h;
    T* d = dx + (q * s.in_h + row) * s.in_w;
    for (int64_t j = 0; j < s.in_w; ++j) d[j] = T(0);
    for (int64_t k = 0; k < s.out_h; ++k) {
      if (NearestIndex(k, s.in_h, rh, s.align_corners) != row) continue;
      const T* g = dy + (q * s.out_h + k) * s.out_w;
      for (int64_t l = 0; l < s.out_w; ++l)
        d[NearestIndex(l, s.in_w, rw, s.align_corners)] += g[l];
    }
  }
};

// Sizes Out, reading OutSize back from the device when it is given.
InterpShape PrepareOutput(const ExecutionContext& ctx) {
  if (!ctx.HasInput("OutSize")) return PrepareInterpOutput(ctx, nullptr);
  const Tensor& t = ctx.Input("OutSize");
  FLUID_ENFORCE(t.numel() == 2, ctx.op().type(), ": OutSize '",
                ctx.InputName("OutSize"), "' holds ", t.numel(),
                " values; 2 expected (out_h, out_w)");
  int32_t size[2];
  FLUID_CUDA_CHECK(cudaMemcpy(size, t.data<int32_t>(), sizeof(size),
                              cudaMemcpyDeviceToHost));
  return PrepareInterpOutput(ctx, size);
}

template <typename T, template <typename> class F, typename R>
void Launch(const ExecutionContext& ctx, const InterpShape& s, int64_t count,
            R rh, R rw, const T* in, T* out) {
  if (count > 0) cuda::ForEach(cuda::Dev(ctx), count, F<T>{s, rh, rw, in, out});
}

template <typename T>
void BilinearKernel(const ExecutionContext& ctx) {
  const InterpShape s = PrepareOutput(ctx);
  Launch<T, BilinearForward>(ctx, s, s.planes * s.out_h * s.out_w,
                             InterpRatio<T>(s.in_h, s.out_h, s.align_corners),
                             InterpRatio<T>(s.in_w, s.out_w, s.align_corners),
                             ctx.Input("X").data<T>(),
                             cuda::OutputData<T>(ctx, "Out"));
}

template <typename T>
void BilinearGradKernel(const ExecutionContext& ctx) {
  T* dx = cuda::OutputData<T>(ctx, GradSlot("X"));
  if (dx == nullptr) return;
  const InterpShape s = GradInterpShape(ctx);
  Launch<T, BilinearBackward>(ctx, s, s.planes * s.in_h,
                              InterpRatio<T>(s.in_h, s.out_h, s.align_corners),
                              InterpRatio<T>(s.in_w, s.out_w, s.align_corners),
                              ctx.Input(GradSlot("Out")).data<T>(), dx);
}

template <typename T>
void NearestKernel(const ExecutionContext& ctx) {
  const InterpShape s = PrepareOutput(ctx);
  Launch<T, NearestForward>(
      ctx, s, s.planes * s.out_h * s.out_w,
      InterpRatio<float>(s.in_h, s.out_h, s.align_corners),
      InterpRatio<float>(s.in_w, s.out_w, s.align_corners),
      ctx.Input("X").data<T>(), cuda::OutputData<T>(ctx, "Out"));
}

template <typename T>
void NearestGradKernel(const ExecutionContext& ctx) {
  T* dx = cuda::OutputData<T>(ctx, GradSlot("X"));
  if (dx == nullptr) return;
  const InterpShape s = GradInterpShape(ctx);
  Launch<T, NearestBackward>(
      ctx, s, s.planes * s.in_h,
      InterpRatio<float>(s.in_h, s.out_h, s.align_corners),
      InterpRatio<float>(s.in_w, s.out_w, s.align_corners),
      ctx.Input(GradSlot("Out")).data<T>(), dx);
}

}  // namespace

REGISTER_FLOAT_KERNELS(bilinear_interp, kCUDA, BilinearKernel);
REGISTER_FLOAT_KERNELS(bilinear_interp_grad, kCUDA, BilinearGradKernel);
REGISTER_FLOAT_KERNELS(nearest_interp, kCUDA, NearestKernel);
REGISTER_FLOAT_KERNELS(nearest_interp_grad, kCUDA, NearestGradKernel);

}  // namespace ops
}  // namespace fluid
