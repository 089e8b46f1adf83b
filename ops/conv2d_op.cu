// CUDA kernels for conv2d and conv2d_grad (schemas in conv2d_op.cc): im2col
// into the context's workspace, then cuBLAS. With groups, every step below
// runs once per group of channels, against that group's filters; a grouped
// forward product goes through the workspace to its rows of Output.
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
//
// The 16-bit types (bfloat16, float16) take the same steps with their
// GEMMs through cublasGemmEx (ops/cuda/half_gemm.cuh), summed in float32:
// dcol is kept in float32 and col2im sums it in float32 before rounding,
// and dW accumulates over the chunks in float32, rounded once at the end.
#include <algorithm>
#include <string>

#include "ops/conv_geometry.h"
#include "ops/cuda/dense_helpers.cuh"
#include "ops/cuda/half_gemm.cuh"
#include "ops/cuda/im2col.cuh"
#include "ops/half_math.h"
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

// One group's outputs of a chunk, tmp [images, mg, P], into their rows
// of y [images, M, P] (y points at the group's first row).
template <typename T>
struct ScatterGroup {
  const T* tmp;
  T* y;
  int64_t group_rows, rows;  // mg P, M P
  __device__ void operator()(int64_t i) const {
    const int64_t j = i / group_rows;
    y[j * rows + (i - j * group_rows)] = tmp[i];
  }
};

// `batch` products C_b [m, n] = A [m, k] * B_b [k, n], B_b `stride_b`
// elements apart (A shared), C_b m n apart.
template <typename T>
void SharedProducts(const CUDADeviceContext& dev, int64_t batch, int64_t m,
                    int64_t n, int64_t k, const T* a, const T* b,
                    int64_t stride_b, T* c) {
  if constexpr (IsHalfType<T>::value) {
    cuda::HalfBatchedGemm(dev, false, false, batch, m, n, k, 1.0f, a, 0, b,
                          stride_b, c, m * n);
  } else {
    cuda::BatchedGemmAnyK(dev, false, false, batch, m, n, k, T(1), a, 0, b,
                          stride_b, c);
  }
}

template <typename T>
void Conv2dKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  T* yd = cuda::OutputData<T>(ctx, "Output");
  const ConvLayout l = MakeLayout(ctx, "conv2d");
  const ConvGeometry& g = l.g;
  const int64_t n = x.shape()[0], m = w.shape()[0], mg = l.group_filters;
  const int64_t k = g.ColRows(), p = g.ColCols();
  const int64_t in_size = l.image, out_size = m * p;
  if (n == 0 || m == 0 || p == 0) return;
  const auto& dev = cuda::Dev(ctx);
  const T* xd = x.data<T>();
  const T* wd = w.data<T>();
  if (g.IsPointwise() && l.groups == 1) {
    SharedProducts(dev, n, m, p, k, wd, xd, in_size, yd);
    return;
  }
  // Grouped: each group's product goes to tmp, then to its rows of Output.
  const bool grouped = l.groups > 1;
  const int64_t per = ChunkImages(k * p + (grouped ? mg * p : 0), n);
  const int64_t tmp_offset = Aligned(per * k * p);
  T* col = static_cast<T*>(dev.Workspace(
      sizeof(T) *
      static_cast<size_t>(tmp_offset + (grouped ? per * mg * p : 0))));
  T* tmp = col + tmp_offset;
  for (int64_t i0 = 0; i0 < n; i0 += per) {
    const int64_t nb = std::min(per, n - i0);
    for (int64_t gi = 0; gi < l.groups; ++gi) {
      const T* xg = xd + i0 * in_size + gi * g.InputSize();
      T* target = grouped ? tmp : yd + i0 * out_size;
      const T* b = xg;
      int64_t b_stride = in_size;
      if (!g.IsPointwise()) {
        cuda::ForEach(dev, nb * k * p,
                      Im2Col<T>{g, xg, col, k, p, p, k * p, in_size});
        b = col;
        b_stride = k * p;
      }
      SharedProducts(dev, nb, mg, p, k, wd + gi * mg * k, b, b_stride, target);
      if (grouped)
        cuda::ForEach(dev, nb * mg * p,
                      ScatterGroup<T>{tmp, yd + i0 * out_size + gi * mg * p,
                                      mg * p, out_size});
    }
  }
}

// What one chunk's backward pass reads and writes: `nb` images from `i0`,
// their output gradient as [M, nb P] and the column buffer (T for im2col,
// ComputeType<T> for dcol). For the 16-bit types dW accumulates in float32 in
// `dw_acc` (rounded into dw after the last chunk); else straight in dw.
template <typename T>
struct GradChunk {
  using Acc = ComputeType<T>;
  const T *x, *w, *dyt;
  T *dx, *dw;
  void* col;
  float* dw_acc;
  int64_t i0, nb;
};

// C [m, n] = op(A) op(B) (+ C when `add`), C of TC (T, or float for dW).
template <typename T, typename TC>
void ChunkProduct(const CUDADeviceContext& dev, bool ta, bool tb, int64_t m,
                  int64_t n, int64_t k, const T* a, const T* b, bool add,
                  TC* c) {
  if constexpr (IsHalfType<T>::value) {
    cuda::HalfGemm<T, TC>(dev, ta, tb, m, n, k, 1.0f, a, b, add ? 1.0f : 0.0f,
                          c);
  } else {
    cuda::GemmAnyK(dev, ta, tb, m, n, k, T(1), a, b, add ? T(1) : T(0), c);
  }
}

// Adds one group's share of a chunk to dW and writes its dX.
template <typename T>
void GroupBackward(const CUDADeviceContext& dev, const ConvLayout& l,
                   const GradChunk<T>& c, int64_t gi) {
  using Acc = typename GradChunk<T>::Acc;
  const ConvGeometry& g = l.g;
  const int64_t k = g.ColRows(), p = g.ColCols(), mg = l.group_filters;
  const int64_t ld = c.nb * p;
  const int64_t offset = c.i0 * l.image + gi * g.InputSize();
  const T* dytg = c.dyt + gi * mg * ld;
  const T* wg = c.w + gi * mg * k;
  // One pointwise image is its own column matrix.
  const bool direct = c.nb == 1 && g.IsPointwise();
  if (c.dw != nullptr) {
    const T* cols = c.x + offset;
    if (!direct) {
      T* col = static_cast<T*>(c.col);
      cuda::ForEach(dev, c.nb * k * p,
                    Im2Col<T>{g, c.x + offset, col, k, p, ld, p, l.image});
      cols = col;
    }
    // dW_g [mg, K] (+)= dY_g [mg, nb P] * col [K, nb P]^T
    if constexpr (IsHalfType<T>::value) {
      ChunkProduct(dev, false, true, mg, k, ld, dytg, cols, c.i0 != 0,
                   c.dw_acc + gi * mg * k);
    } else {
      ChunkProduct(dev, false, true, mg, k, ld, dytg, cols, c.i0 != 0,
                   c.dw + gi * mg * k);
    }
  }
  if (c.dx == nullptr) return;
  if (direct) {
    ChunkProduct(dev, true, false, k, p, mg, wg, dytg, false, c.dx + offset);
    return;
  }
  // dcol [K, nb P] = W_g [mg, K]^T * dY_g [mg, nb P], in the column buffer
  // (the dW product above, earlier on the stream, is done with it).
  Acc* dcol = static_cast<Acc*>(c.col);
  ChunkProduct(dev, true, false, k, ld, mg, wg, dytg, false, dcol);
  cuda::ForEach(dev, c.nb * g.InputSize(),
                Col2Im<T, Acc>{g, dcol, c.dx + offset, k, p, ld, p, l.image});
}

template <typename T>
void Conv2dGradKernel(const ExecutionContext& ctx) {
  using Acc = typename GradChunk<T>::Acc;
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  const Tensor& dy = ctx.Input(GradSlot("Output"));
  T* dxd = cuda::OutputData<T>(ctx, GradSlot("Input"));
  T* dwd = cuda::OutputData<T>(ctx, GradSlot("Filter"));
  if (dxd == nullptr && dwd == nullptr) return;
  const ConvLayout l = MakeLayout(ctx, "conv2d_grad");
  const ConvGeometry& g = l.g;
  const int64_t n = x.shape()[0], m = w.shape()[0];
  const int64_t k = g.ColRows(), p = g.ColCols();
  const int64_t in_size = l.image, out_size = m * p;
  const auto& dev = cuda::Dev(ctx);
  if (n == 0 || p == 0) {
    // No output position: no image contributes to dW, and dX is 0.
    if (dwd != nullptr)
      cuda::ZeroAsync(dev, dwd, sizeof(T) * static_cast<size_t>(m * k));
    if (dxd != nullptr)
      cuda::ZeroAsync(dev, dxd, sizeof(T) * static_cast<size_t>(n * in_size));
    return;
  }
  const T* dyd = dy.data<T>();
  const int64_t per = ChunkImages((k + m) * p, n);
  // The workspace: the column buffer, the gathered dY, the float32 dW.
  const bool acc_dw = IsHalfType<T>::value && dwd != nullptr;
  const size_t col_bytes =
      sizeof(Acc) * static_cast<size_t>(Aligned(per * k * p));
  const size_t dyt_bytes =
      sizeof(T) * static_cast<size_t>(Aligned(m * per * p));
  char* base = static_cast<char*>(dev.Workspace(
      col_bytes + dyt_bytes + (acc_dw ? sizeof(float) * m * k : 0)));
  T* dyt_buffer = reinterpret_cast<T*>(base + col_bytes);
  float* dw_acc =
      acc_dw ? reinterpret_cast<float*>(base + col_bytes + dyt_bytes) : nullptr;
  GradChunk<T> c{x.data<T>(), w.data<T>(), nullptr, dxd, dwd,
                 base,        dw_acc,      0,       0};
  for (c.i0 = 0; c.i0 < n; c.i0 += per) {
    c.nb = std::min(per, n - c.i0);
    // The chunk's dY as [M, nb P]; one image's is already.
    c.dyt = dyd + c.i0 * out_size;
    if (c.nb > 1) {
      cuda::ForEach(dev, m * c.nb * p,
                    SideBySide<T>{c.dyt, m, c.nb, p, dyt_buffer});
      c.dyt = dyt_buffer;
    }
    for (int64_t gi = 0; gi < l.groups; ++gi) GroupBackward(dev, l, c, gi);
  }
  if (dw_acc != nullptr)
    cuda::ForEach(dev, m * k, cuda::RoundFloats<T>{dw_acc, dwd});
}

}  // namespace

REGISTER_FLOAT_KERNELS(conv2d, kCUDA, Conv2dKernel);
REGISTER_HALF_KERNELS(conv2d, kCUDA, Conv2dKernel);
REGISTER_FLOAT_KERNELS(conv2d_grad, kCUDA, Conv2dGradKernel);
REGISTER_HALF_KERNELS(conv2d_grad, kCUDA, Conv2dGradKernel);

}  // namespace ops
}  // namespace fluid
