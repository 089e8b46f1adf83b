// CUDA side of the Paddle-style broadcasting of the elementwise binary ops
// (see elementwise_op_function.h for the semantics): X is
// viewed as [pre, n, post] and Y as [n] (ops/broadcast_dims.h), and
//
//   Out[i, j, k] = f(X[i, j, k], Y[j])
//   dY[j] = sum over i, k of dOut[i, j, k] (times X[i, j, k] for mul;
//           Op::Dy(X[i, j, k], Y[j], dOut[i, j, k]) for the functors of
//           elementwise_functors.h).
//
// The reductions are deterministic: every sum is taken in a fixed order that
// depends only on the shapes, so a run reproduces the previous one bit for
// bit. Included only by ops/*.cu.
//
// bfloat16 and float16 elements are loaded as float, combined in float and
// rounded once when stored; the terms of dY are float and summed in float
// (ComputeType, ops/half_math.h). For float and double nothing changes.
#pragma once

#include <algorithm>

#include "ops/broadcast_dims.h"
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/elementwise_functors.h"
#include "ops/half_math.h"

namespace fluid {
namespace ops {
namespace cuda {

struct AddOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return FromCompute<T>(ToCompute(a) + ToCompute(b));
  }
};
struct MulOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return FromCompute<T>(ToCompute(a) * ToCompute(b));
  }
};

// The four layouts of the forward, split as on the CPU so that the common
// ones avoid 64-bit divisions per element.
template <typename T, typename F>
struct BroadcastSame {  // X and Y of one shape
  const T* x;
  const T* y;
  T* out;
  F f;
  __device__ void operator()(int64_t i) const { out[i] = f(x[i], y[i]); }
};
template <typename T, typename F>
struct BroadcastScalar {  // one Y value for all of X
  const T* x;
  const T* y;
  T* out;
  F f;
  __device__ void operator()(int64_t i) const { out[i] = f(x[i], y[0]); }
};
template <typename T, typename F>
struct BroadcastRows {  // X [pre, n], Y [n]
  const T* x;
  const T* y;
  T* out;
  int64_t n;
  F f;
  __device__ void operator()(int64_t i) const { out[i] = f(x[i], y[i % n]); }
};
template <typename T, typename F>
struct BroadcastMiddle {  // X [pre, n, post], Y [n]
  const T* x;
  const T* y;
  T* out;
  int64_t n, post;
  F f;
  __device__ void operator()(int64_t i) const {
    out[i] = f(x[i], y[(i / post) % n]);
  }
};

// out[i, j, k] = f(x[i, j, k], y[j]). `out` may alias `x`.
template <typename T, typename F>
void ElementwiseCompute(const CUDADeviceContext& dev, const BroadcastDims& d,
                        const T* x, const T* y, T* out, F f) {
  const int64_t total = d.pre * d.n * d.post;
  if (d.same_shape()) {
    ForEach(dev, total, BroadcastSame<T, F>{x, y, out, f});
  } else if (d.n == 1) {
    ForEach(dev, total, BroadcastScalar<T, F>{x, y, out, f});
  } else if (d.post == 1) {
    ForEach(dev, total, BroadcastRows<T, F>{x, y, out, d.n, f});
  } else {
    ForEach(dev, total, BroadcastMiddle<T, F>{x, y, out, d.n, d.post, f});
  }
}

// The forward kernel of an elementwise op: Out = f(X, Y), Y broadcast onto
// X at the `axis` attr.
template <typename T, typename F>
void ElementwiseForward(const ExecutionContext& ctx, F f) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  BroadcastDims d = GetBroadcastDims(ctx, x, y);
  T* out = OutputData<T>(ctx, "Out");
  ElementwiseCompute<T>(Dev(ctx), d, x.data<T>(), y.data<T>(), out, f);
}

// One term of dY: dout[i], or dout[i] * x[i] when kTimesX.
template <typename T, bool kTimesX>
struct GradTerm {
  const T* dout;
  const T* x;
  __device__ ComputeType<T> operator()(int64_t i) const {
    if constexpr (kTimesX) {
      return ToCompute(dout[i]) * ToCompute(x[i]);
    } else {
      return ToCompute(dout[i]);
    }
  }
};

template <typename T, typename Term>
struct SameShapeGrad {
  Term term;
  T* dy;
  __device__ void operator()(int64_t i) const {
    dy[i] = FromCompute<T>(term(i));
  }
};

// Column sums of a [rows, cols] matrix given by f(r, c): each block owns 32
// adjacent columns (so a warp reads 32 adjacent elements) and one chunk of
// `chunk_rows` rows; its 8 thread rows stride over the chunk and are then
// added in a fixed order. Writes out[chunk * cols + c]. The sums are of
// type T, stored as Out.
constexpr int kColumnWidth = 32;
constexpr int kColumnDepth = 8;

template <typename T, typename F, typename Out>
__global__ void ColumnSumKernel(int64_t rows, int64_t cols, int64_t chunk_rows,
                                F f, Out* out) {
  __shared__ T partial[kColumnDepth][kColumnWidth + 1];
  const int64_t c = blockIdx.x * int64_t{kColumnWidth} + threadIdx.x;
  const int64_t begin = blockIdx.y * chunk_rows;
  const int64_t end = begin + chunk_rows < rows ? begin + chunk_rows : rows;
  T acc = T(0);
  if (c < cols) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kColumnDepth)
      acc += f(r, c);
  }
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    T s = partial[0][threadIdx.x];
    for (int k = 1; k < kColumnDepth; ++k) s += partial[k][threadIdx.x];
    out[blockIdx.y * cols + c] = static_cast<Out>(s);
  }
}

template <typename T>
struct ReadMatrix {
  const T* p;
  int64_t cols;
  __device__ T operator()(int64_t r, int64_t c) const {
    return p[r * cols + c];
  }
};

// Sums of type T, stored as Out.
template <typename T, typename F, typename Out>
void LaunchColumnSum(const CUDADeviceContext& dev, int64_t rows, int64_t cols,
                     int64_t chunk_rows, int64_t chunks, F f, Out* out) {
  dim3 grid(static_cast<unsigned>(CeilDiv(cols, kColumnWidth)),
            static_cast<unsigned>(chunks));
  dim3 block(kColumnWidth, kColumnDepth);
  ColumnSumKernel<T>
      <<<grid, block, 0, dev.stream()>>>(rows, cols, chunk_rows, f, out);
  CheckLaunch();
}

// out[c] = sum over r in [0, rows) of f(r, c), summed in ComputeType<T>.
// Tall matrices are cut into row chunks (a count fixed by the shape) summed
// into the workspace first, then the chunk sums are added.
template <typename T, typename F>
void ColumnSum(const CUDADeviceContext& dev, int64_t rows, int64_t cols, F f,
               T* out) {
  using C = ComputeType<T>;
  if (cols <= 0) return;
  const int64_t col_blocks = CeilDiv(cols, kColumnWidth);
  FLUID_ENFORCE(col_blocks <= INT32_MAX, "column sum over ", cols,
                " columns is too wide");
  // About 2048 blocks in all, each with at least 64 rows.
  const int64_t want = std::max<int64_t>(
      1, std::min<int64_t>(CeilDiv(rows, 64), CeilDiv(2048, col_blocks)));
  const int64_t chunk_rows = std::max<int64_t>(1, CeilDiv(rows, want));
  const int64_t chunks = std::max<int64_t>(1, CeilDiv(rows, chunk_rows));
  if (chunks == 1) {
    LaunchColumnSum<C>(dev, rows, cols, std::max<int64_t>(rows, 1), 1, f, out);
    return;
  }
  C* partial = static_cast<C*>(dev.Workspace(sizeof(C) * chunks * cols));
  LaunchColumnSum<C>(dev, rows, cols, chunk_rows, chunks, f, partial);
  LaunchColumnSum<C>(dev, chunks, cols, chunks, 1, ReadMatrix<C>{partial, cols},
                     out);
}

// out[i] = src[i] rounded to T.
template <typename T>
struct StoreRounded {
  const float* src;
  T* out;
  __device__ void operator()(int64_t i) const {
    out[i] = FromCompute<T>(src[i]);
  }
};

// Row sums of an [rows, cols] matrix given by f(r, c), long rows cut into
// segments of kSegment columns (a count fixed by the shape): the segment
// sums go to the workspace, then each row adds its segments.
constexpr int64_t kSegment = 4096;

template <typename T, typename F>
struct SegmentOf {
  F f;
  int64_t cols, segments;
  __device__ T operator()(int64_t r, int64_t c) const {
    const int64_t row = r / segments;
    const int64_t col = (r % segments) * kSegment + c;
    return col < cols ? f(row, col) : T(0);
  }
};

// RowSum of float terms into 16-bit `out`: the segment sums and the row
// sums in float, in one workspace, the row sums then rounded once.
template <typename T, typename F>
void HalfRowSum(const CUDADeviceContext& dev, int64_t rows, int64_t cols, F f,
                T* out) {
  const int64_t segments =
      std::max<int64_t>(1, (cols + kSegment - 1) / kSegment);
  float* sums = static_cast<float*>(
      dev.Workspace(sizeof(float) * rows * (segments > 1 ? segments + 1 : 1)));
  if (segments == 1) {
    RowReduce<float>(dev, rows, cols, f, SumOp(), 0.0f, sums);
  } else {
    float* partial = sums + rows;
    RowReduce<float>(dev, rows * segments, kSegment,
                     SegmentOf<float, F>{f, cols, segments}, SumOp(), 0.0f,
                     partial);
    RowReduce<float>(dev, rows, segments, ReadMatrix<float>{partial, segments},
                     SumOp(), 0.0f, sums);
  }
  ForEach(dev, rows, StoreRounded<T>{sums, out});
}

// out[0] = the float sum of f(i) over [0, n), rounded once into 16-bit
// `out`: Sum's two-level reduction in float, in one workspace.
template <typename T, typename F>
void HalfSum(const CUDADeviceContext& dev, int64_t n, F f, T* out) {
  const int64_t cols = 4096;
  const int64_t rows = std::max<int64_t>(1, CeilDiv(n, cols));
  float* partial =
      static_cast<float*>(dev.Workspace(sizeof(float) * (rows + 1)));
  RowReduce<float>(dev, rows, cols, FlatAt<float, F>{f, n, cols}, SumOp(), 0.0f,
                   partial);
  RowReduce<float>(dev, 1, rows, ReadAt<float>{partial}, SumOp(), 0.0f,
                   partial + rows);
  ForEach(dev, 1, StoreRounded<T>{partial + rows, out});
}

template <typename T, typename F>
void RowSum(const CUDADeviceContext& dev, int64_t rows, int64_t cols, F f,
            T* out) {
  const int64_t segments =
      std::max<int64_t>(1, (cols + kSegment - 1) / kSegment);
  if (segments == 1) {
    RowReduce<T>(dev, rows, cols, f, SumOp(), T(0), out);
    return;
  }
  T* partial = static_cast<T*>(dev.Workspace(sizeof(T) * rows * segments));
  RowReduce<T>(dev, rows * segments, kSegment,
               SegmentOf<T, F>{f, cols, segments}, SumOp(), T(0), partial);
  RowReduce<T>(dev, rows, segments, ReadMatrix<T>{partial, segments}, SumOp(),
               T(0), out);
}

// dY as a [pre, n] column sum (post == 1).
template <typename T, typename Term>
struct ColumnTerm {
  Term term;
  int64_t n;
  __device__ ComputeType<T> operator()(int64_t i, int64_t j) const {
    return term(i * n + j);
  }
};

// dY[j] as the sum over c = i * post + k of term((i * n + j) * post + k).
template <typename T, typename Term>
struct MiddleTerm {
  Term term;
  int64_t n, post;
  __device__ ComputeType<T> operator()(int64_t j, int64_t c) const {
    const int64_t i = c / post, k = c % post;
    return term((i * n + j) * post + k);
  }
};

// dy[j] = sum over i, k of term(i * n * post + j * post + k), where
// term(flat index into X) is a device functor returning ComputeType<T>.
template <typename T, typename Term>
void ReduceTermToY(const CUDADeviceContext& dev, const BroadcastDims& d,
                   Term term, T* dy) {
  const int64_t pre = d.pre, n = d.n, post = d.post;
  if (d.same_shape()) {
    ForEach(dev, n, SameShapeGrad<T, Term>{term, dy});
  } else if (n == 1) {
    if constexpr (IsHalfType<T>::value) {
      HalfSum(dev, pre * post, term, dy);
    } else {
      Sum<T>(dev, pre * post, term, dy);
    }
  } else if (post == 1) {
    ColumnSum<T>(dev, pre, n, ColumnTerm<T, Term>{term, n}, dy);
  } else {
    const MiddleTerm<T, Term> middle{term, n, post};
    if constexpr (IsHalfType<T>::value) {
      HalfRowSum(dev, n, pre * post, middle, dy);
    } else {
      RowSum<T>(dev, n, pre * post, middle, dy);
    }
  }
}

// dy[j] = sum over i, k of dout[i, j, k] (times x[i, j, k] when kTimesX).
template <typename T, bool kTimesX>
void ReduceToY(const CUDADeviceContext& dev, const BroadcastDims& d,
               const T* dout, const T* x, T* dy) {
  if (!kTimesX && d.same_shape()) {
    CopyAsync(dev, dy, dout, sizeof(T) * d.n);
    return;
  }
  ReduceTermToY<T>(dev, d, GradTerm<T, kTimesX>{dout, x}, dy);
}

// ---- the ops given by a functor of elementwise_functors.h

template <typename Op>
struct DeviceFunctor {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return FromCompute<T>(Op::Forward(ToCompute(a), ToCompute(b)));
  }
};

template <typename T, typename Op>
void ElementwiseKernel(const ExecutionContext& ctx) {
  ElementwiseForward<T>(ctx, DeviceFunctor<Op>());
}

// Op::Dy at flat index i of X: the term dY sums.
template <typename T, typename Op>
struct FunctorDyTerm {
  const T* x;
  const T* y;
  const T* dout;
  int64_t n, post;
  __device__ ComputeType<T> operator()(int64_t i) const {
    return Op::Dy(ToCompute(x[i]), ToCompute(y[(i / post) % n]),
                  ToCompute(dout[i]));
  }
};

template <typename T, typename Op>
struct FunctorDx {
  const T* x;
  const T* y;
  const T* dout;
  T* dx;
  int64_t n, post;
  __device__ void operator()(int64_t i) const {
    dx[i] = FromCompute<T>(Op::Dx(ToCompute(x[i]), ToCompute(y[(i / post) % n]),
                                  ToCompute(dout[i])));
  }
};

// dY first, so that dX may alias X (the stream runs the two in order).
template <typename T, typename Op>
void ElementwiseGradKernel(const ExecutionContext& ctx) {
  const auto& [x, y, dout, d] = ReadElementwiseGradArgs(ctx);
  const auto& dev = Dev(ctx);
  if (Tensor* dy = ctx.Output(GradSlot("Y"))) {
    ReduceTermToY<T>(dev, d,
                     FunctorDyTerm<T, Op>{x.data<T>(), y.data<T>(),
                                          dout.data<T>(), d.n, d.post},
                     dy->mutable_data<T>(ctx.place()));
  }
  if (Tensor* dx = ctx.Output(GradSlot("X"))) {
    ForEach(dev, d.pre * d.n * d.post,
            FunctorDx<T, Op>{x.data<T>(), y.data<T>(), dout.data<T>(),
                             dx->mutable_data<T>(ctx.place()), d.n, d.post});
  }
}

}  // namespace cuda
}  // namespace ops
}  // namespace fluid
