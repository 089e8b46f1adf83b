// CUDA kernels for conv2d and conv2d_grad (schemas in conv2d_op.cc): im2col
// into the context's workspace, then cuBLAS.
//
// Forward: each image's column matrix [K = C kh kw, P = Ho Wo] is unfolded
// into the workspace, a chunk of images at a time, and one strided-batched
// GEMM computes Y_j = W [M, K] * col_j for the chunk, written straight into
// Output's [N, M, P] layout. A 1x1 kernel with unit stride and no padding
// needs no unfolding: an image [C, H W] is its own column matrix.
//
// Backward: a chunk of images is unfolded side by side into one wide column
// matrix [K, nb P] and its output gradient gathered to [M, nb P], so that
// dW += dY col^T is one GEMM per chunk (chunks add into dW in order) and
// dcol = W^T dY another; col2im then gathers, for each input pixel, the
// column entries that were copied from it, in the CPU kernel's order. No
// atomics: every result is the same bits run to run.
#include <algorithm>

#include "ops/conv_geometry.h"
#include "ops/cuda/dense_helpers.cuh"
#include "src/framework/math/int_math.h"

namespace fluid {
namespace ops {
namespace {

using math::ConvGeometry;

// Workspace elements a chunk of images may use (128 MiB of floats): large
// enough that the GEMMs are wide, bounded so that big batches of big images
// do not claim the whole device.
constexpr int64_t kChunkElements = int64_t{1} << 25;

// Images per chunk when each needs `per_image` workspace elements; the
// chunks come out even (64 images at most 18 a chunk go as 4 of 16).
int64_t ChunkImages(int64_t per_image, int64_t batch) {
  int64_t per = std::clamp<int64_t>(
      kChunkElements / std::max<int64_t>(per_image, 1), 1, batch);
  return CeilDiv(batch, CeilDiv(batch, per));
}

// Element offsets padded to 32 elements (at least 128 bytes), so that every
// part of the workspace starts aligned for cuBLAS.
int64_t Aligned(int64_t elements) { return (elements + 31) / 32 * 32; }

// Unfolds `images` consecutive images x [images, C, H, W] into column
// matrices: entry (r, p) of image j, r = (c kh + ki) kw + kj and
// p = oh Wo + ow, goes to col[j * image_offset + r * ld + p]; it is the
// pixel tap (ki, kj) of channel c sees at output (oh, ow), or 0 in the
// padding. One thread per entry.
template <typename T>
struct Im2Col {
  ConvGeometry g;
  const T* x;
  T* col;
  int64_t rows, cols, ld, image_offset;  // rows = K, cols = P
  __device__ void operator()(int64_t i) const {
    const int64_t p = i % cols;
    const int64_t t = i / cols;
    const int64_t r = t % rows, j = t / rows;
    const int64_t ow = p % g.out_w, oh = p / g.out_w;
    const int64_t kj = r % g.kernel_w, t2 = r / g.kernel_w;
    const int64_t ki = t2 % g.kernel_h, c = t2 / g.kernel_h;
    const int64_t h = oh * g.stride_h - g.pad_h + ki * g.dilation_h;
    const int64_t w = ow * g.stride_w - g.pad_w + kj * g.dilation_w;
    T v = T(0);
    if (h >= 0 && h < g.in_h && w >= 0 && w < g.in_w)
      v = x[((j * g.channels + c) * g.in_h + h) * g.in_w + w];
    col[j * image_offset + r * ld + p] = v;
  }
};

// The adjoint of Im2Col (same layout parameters): each pixel of dx
// [images, C, H, W] is the sum of the column entries copied from it,
// gathered over the kernel taps (ki, kj) in increasing order, the order in
// which the CPU's col2im adds them. One thread per pixel, each writing its
// own: no atomics.
template <typename T>
struct Col2Im {
  ConvGeometry g;
  const T* col;
  T* dx;
  int64_t rows, cols, ld, image_offset;
  __device__ void operator()(int64_t i) const {
    const int64_t w = i % g.in_w;
    int64_t t = i / g.in_w;
    const int64_t h = t % g.in_h;
    t /= g.in_h;
    const int64_t c = t % g.channels, j = t / g.channels;
    const T* cj = col + j * image_offset;
    T acc = T(0);
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      // h = oh * stride_h - pad_h + ki * dilation_h for some output row oh?
      const int64_t th = h + g.pad_h - ki * g.dilation_h;
      if (th < 0) break;  // and for every larger ki
      if (th % g.stride_h != 0) continue;
      const int64_t oh = th / g.stride_h;
      if (oh >= g.out_h) continue;
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        const int64_t tw = w + g.pad_w - kj * g.dilation_w;
        if (tw < 0) break;
        if (tw % g.stride_w != 0) continue;
        const int64_t ow = tw / g.stride_w;
        if (ow >= g.out_w) continue;
        const int64_t r = (c * g.kernel_h + ki) * g.kernel_w + kj;
        acc += cj[r * ld + oh * g.out_w + ow];
      }
    }
    dx[i] = acc;
  }
};

// dy [images, M, P] -> dyt [M, images * P]: the output gradient of a chunk
// side by side, matching the wide column matrix.
template <typename T>
struct SideBySide {
  const T* dy;
  int64_t m, images, cols;
  T* dyt;
  __device__ void operator()(int64_t i) const {
    const int64_t ld = images * cols;
    const int64_t o = i / ld, rest = i - o * ld;
    const int64_t j = rest / cols, p = rest - j * cols;
    dyt[i] = dy[(j * m + o) * cols + p];
  }
};

template <typename T>
void Conv2dKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  T* yd = cuda::OutputData<T>(ctx, "Output");
  const ConvGeometry g =
      MakeGeometry(ReadConvAttrs(ctx, "conv2d"), x.shape(), w.shape());
  const int64_t n = x.shape()[0], m = w.shape()[0];
  const int64_t k = g.ColRows(), p = g.ColCols();
  const int64_t in_size = g.InputSize(), out_size = m * p;
  if (n == 0 || m == 0 || p == 0) return;
  const auto& dev = cuda::Dev(ctx);
  const T* xd = x.data<T>();
  const T* wd = w.data<T>();
  if (g.IsPointwise()) {
    cuda::BatchedGemmAnyK(dev, false, false, n, m, p, k, T(1), wd, 0, xd,
                          in_size, yd);
    return;
  }
  const int64_t per = ChunkImages(k * p, n);
  T* col = static_cast<T*>(dev.Workspace(sizeof(T) * per * k * p));
  for (int64_t i0 = 0; i0 < n; i0 += per) {
    const int64_t nb = std::min(per, n - i0);
    cuda::ForEach(dev, nb * k * p,
                  Im2Col<T>{g, xd + i0 * in_size, col, k, p, p, k * p});
    cuda::BatchedGemmAnyK(dev, false, false, nb, m, p, k, T(1), wd, 0, col,
                          k * p, yd + i0 * out_size);
  }
}

template <typename T>
void Conv2dGradKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  const Tensor& dy = ctx.Input(GradSlot("Output"));
  T* dxd = cuda::OutputData<T>(ctx, GradSlot("Input"));
  T* dwd = cuda::OutputData<T>(ctx, GradSlot("Filter"));
  if (dxd == nullptr && dwd == nullptr) return;
  const ConvGeometry g =
      MakeGeometry(ReadConvAttrs(ctx, "conv2d_grad"), x.shape(), w.shape());
  const int64_t n = x.shape()[0], m = w.shape()[0];
  const int64_t k = g.ColRows(), p = g.ColCols();
  const int64_t in_size = g.InputSize(), out_size = m * p;
  const auto& dev = cuda::Dev(ctx);
  if (n == 0 || p == 0) {
    // No output position: no image contributes to dW, and dX is 0.
    if (dwd != nullptr)
      cuda::ZeroAsync(dev, dwd, sizeof(T) * static_cast<size_t>(m * k));
    if (dxd != nullptr)
      cuda::ZeroAsync(dev, dxd, sizeof(T) * static_cast<size_t>(n * in_size));
    return;
  }
  const T* xd = x.data<T>();
  const T* wd = w.data<T>();
  const T* dyd = dy.data<T>();
  const int64_t per = ChunkImages((k + m) * p, n);
  const int64_t dyt_offset = Aligned(per * k * p);
  T* col = static_cast<T*>(
      dev.Workspace(sizeof(T) * static_cast<size_t>(dyt_offset + m * per * p)));
  T* dyt_buffer = col + dyt_offset;
  for (int64_t i0 = 0; i0 < n; i0 += per) {
    const int64_t nb = std::min(per, n - i0), ld = nb * p;
    const T* xc = xd + i0 * in_size;
    // The chunk's dY as [M, nb P]; one image's is already.
    const T* dyt = dyd + i0 * out_size;
    if (nb > 1) {
      cuda::ForEach(dev, m * ld, SideBySide<T>{dyt, m, nb, p, dyt_buffer});
      dyt = dyt_buffer;
    }
    // One pointwise image is its own column matrix.
    const bool direct = nb == 1 && g.IsPointwise();
    if (dwd != nullptr) {
      const T* cols = xc;
      if (!direct) {
        cuda::ForEach(dev, nb * k * p, Im2Col<T>{g, xc, col, k, p, ld, p});
        cols = col;
      }
      // dW [M, K] (+)= dY [M, nb P] * col [K, nb P]^T
      cuda::GemmAnyK(dev, false, true, m, k, ld, T(1), dyt, cols,
                     i0 == 0 ? T(0) : T(1), dwd);
    }
    if (dxd != nullptr) {
      T* dxc = dxd + i0 * in_size;
      if (direct) {
        cuda::GemmAnyK(dev, true, false, k, p, m, T(1), wd, dyt, T(0), dxc);
        continue;
      }
      // dcol [K, nb P] = W [M, K]^T * dY [M, nb P], in the column buffer
      // (the dW product above, earlier on the stream, is done with it).
      cuda::GemmAnyK(dev, true, false, k, ld, m, T(1), wd, dyt, T(0), col);
      cuda::ForEach(dev, nb * in_size, Col2Im<T>{g, col, dxc, k, p, ld, p});
    }
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(conv2d, kCUDA, Conv2dKernel);
REGISTER_FLOAT_KERNELS(conv2d_grad, kCUDA, Conv2dGradKernel);

}  // namespace ops
}  // namespace fluid
