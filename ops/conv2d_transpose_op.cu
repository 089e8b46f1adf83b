// CUDA kernels for conv2d_transpose and conv2d_transpose_grad (schemas in
// conv2d_transpose_op.cc): cuBLAS GEMMs and im2col / col2im in the
// context's workspace, a chunk of images at a time, each step once per
// group of channels.
//
// A chunk's input X [nb, C_in, H W] is first laid side by side as
// [C_in, nb H W]. Forward: col [K = C_out / groups kh kw, nb H W] =
// W_g^T X_g, then col2im folds each image's columns into its output planes,
// gathering for each output pixel the entries copied from it, one thread
// per pixel (no atomics). Backward: im2col of dY into the same wide layout;
// dX_g = W_g col (through the workspace into X's layout) and
// dW_g (+)= X_g col^T, the chunks adding into dW in order: every result is
// the same bits run to run.
#include <algorithm>
#include <string>

#include "ops/conv2d_transpose_op.h"
#include "ops/cuda/dense_helpers.cuh"
#include "ops/cuda/im2col.cuh"
#include "src/framework/math/int_math.h"

namespace fluid {
namespace ops {
namespace {

using math::ConvGeometry;

// Workspace elements a chunk may use (128 MiB of floats), as conv2d's.
constexpr int64_t kChunkElements = int64_t{1} << 25;

// Offsets padded to 32 elements, so each part of the workspace is aligned
// for cuBLAS.
int64_t Aligned(int64_t elements) { return (elements + 31) / 32 * 32; }

// x [images, m, cols] -> xt [m, images * cols].
template <typename T>
struct SideBySide {
  const T* x;
  int64_t m, images, cols;
  T* xt;
  __device__ void operator()(int64_t i) const {
    const int64_t ld = images * cols;
    const int64_t o = i / ld, rest = i - o * ld;
    const int64_t j = rest / cols, p = rest - j * cols;
    xt[i] = x[(j * m + o) * cols + p];
  }
};

// tmp [rows, images * cols] -> its rows of y [images, m, cols] (y points
// at the first of them).
template <typename T>
struct ScatterRows {
  const T* tmp;
  int64_t rows, images, cols, m;
  T* y;
  __device__ void operator()(int64_t i) const {
    const int64_t ld = images * cols;
    const int64_t o = i / ld, rest = i - o * ld;
    const int64_t j = rest / cols, p = rest - j * cols;
    y[(j * m + o) * cols + p] = tmp[i];
  }
};

// Images per chunk when each needs `per_image` workspace elements; even
// chunks.
int64_t ChunkImages(int64_t per_image, int64_t batch) {
  const int64_t per = std::clamp<int64_t>(
      kChunkElements / std::max<int64_t>(per_image, 1), 1, batch);
  return CeilDiv(batch, CeilDiv(batch, per));
}

// The chunk's X as [C_in, nb P]: itself for one image, else gathered into
// `buffer`.
template <typename T>
const T* Gathered(const CUDADeviceContext& dev, const T* x, int64_t m,
                  int64_t nb, int64_t p, T* buffer) {
  if (nb == 1) return x;
  cuda::ForEach(dev, m * nb * p, SideBySide<T>{x, m, nb, p, buffer});
  return buffer;
}

template <typename T>
void TransposeKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  Tensor* out = ctx.Output("Output");
  const ConvLayout l =
      MakeTransposeLayout(ctx, "conv2d_transpose", out->shape());
  T* yd = out->mutable_data<T>(ctx.place());
  const ConvGeometry& g = l.g;
  const int64_t n = x.shape()[0], mg = l.group_filters, m = mg * l.groups;
  const int64_t k = g.ColRows(), p = g.ColCols(), in_size = m * p;
  if (n == 0 || l.image == 0) return;
  const auto& dev = cuda::Dev(ctx);
  const int64_t per = ChunkImages((k + m) * p, n);
  const int64_t xt_offset = Aligned(per * k * p);
  T* col = static_cast<T*>(
      dev.Workspace(sizeof(T) * static_cast<size_t>(xt_offset + per * m * p)));
  T* xt_buffer = col + xt_offset;
  for (int64_t i0 = 0; i0 < n; i0 += per) {
    const int64_t nb = std::min(per, n - i0), ld = nb * p;
    const T* xt =
        Gathered(dev, x.data<T>() + i0 * in_size, m, nb, p, xt_buffer);
    for (int64_t gi = 0; gi < l.groups; ++gi) {
      // col [K, nb P] = W_g [mg, K]^T * X_g [mg, nb P]
      cuda::GemmAnyK(dev, true, false, k, ld, mg, T(1),
                     w.data<T>() + gi * mg * k, xt + gi * mg * ld, T(0), col);
      cuda::ForEach(dev, nb * g.InputSize(),
                    Col2Im<T, T>{g, col, yd + i0 * l.image + gi * g.InputSize(),
                                 k, p, ld, p, l.image});
    }
  }
}

template <typename T>
void TransposeGradKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  const Tensor& dy = ctx.Input(GradSlot("Output"));
  T* dxd = cuda::OutputData<T>(ctx, GradSlot("Input"));
  T* dwd = cuda::OutputData<T>(ctx, GradSlot("Filter"));
  if (dxd == nullptr && dwd == nullptr) return;
  const ConvLayout l =
      MakeTransposeLayout(ctx, "conv2d_transpose_grad", dy.shape());
  const ConvGeometry& g = l.g;
  const int64_t n = x.shape()[0], mg = l.group_filters, m = mg * l.groups;
  const int64_t k = g.ColRows(), p = g.ColCols(), in_size = m * p;
  const auto& dev = cuda::Dev(ctx);
  if (n == 0 || p == 0) {
    if (dwd != nullptr)
      cuda::ZeroAsync(dev, dwd, sizeof(T) * static_cast<size_t>(m * k));
    if (dxd != nullptr)
      cuda::ZeroAsync(dev, dxd, sizeof(T) * static_cast<size_t>(n * in_size));
    return;
  }
  // The workspace: the column matrix, the gathered X, dX's product.
  const int64_t per = ChunkImages((k + m + mg) * p, n);
  const int64_t xt_offset = Aligned(per * k * p);
  const int64_t tmp_offset = xt_offset + Aligned(per * m * p);
  T* col = static_cast<T*>(dev.Workspace(
      sizeof(T) * static_cast<size_t>(tmp_offset + per * mg * p)));
  T* xt_buffer = col + xt_offset;
  T* tmp = col + tmp_offset;
  for (int64_t i0 = 0; i0 < n; i0 += per) {
    const int64_t nb = std::min(per, n - i0), ld = nb * p;
    const T* xt = dwd == nullptr ? nullptr
                                 : Gathered(dev, x.data<T>() + i0 * in_size, m,
                                            nb, p, xt_buffer);
    for (int64_t gi = 0; gi < l.groups; ++gi) {
      cuda::ForEach(
          dev, nb * k * p,
          Im2Col<T>{g, dy.data<T>() + i0 * l.image + gi * g.InputSize(), col, k,
                    p, ld, p, l.image});
      // dW_g [mg, K] (+)= X_g [mg, nb P] * col [K, nb P]^T
      if (dwd != nullptr)
        cuda::GemmAnyK(dev, false, true, mg, k, ld, T(1), xt + gi * mg * ld,
                       col, i0 != 0 ? T(1) : T(0), dwd + gi * mg * k);
      if (dxd == nullptr) continue;
      // dX_g [mg, nb P] = W_g [mg, K] * col [K, nb P], to its rows of dX
      const T* wg = w.data<T>() + gi * mg * k;
      T* target = dxd + i0 * in_size + gi * mg * p;
      if (nb == 1) {
        cuda::GemmAnyK(dev, false, false, mg, p, k, T(1), wg, col, T(0),
                       target);
        continue;
      }
      cuda::GemmAnyK(dev, false, false, mg, ld, k, T(1), wg, col, T(0), tmp);
      cuda::ForEach(dev, mg * ld, ScatterRows<T>{tmp, mg, nb, p, m, target});
    }
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(conv2d_transpose, kCUDA, TransposeKernel);
REGISTER_FLOAT_KERNELS(conv2d_transpose_grad, kCUDA, TransposeGradKernel);

}  // namespace ops
}  // namespace fluid
