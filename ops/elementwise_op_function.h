// Paddle-style broadcasting shared by the elementwise binary ops
// (elementwise_add, elementwise_mul).
//
// Y lines up with a contiguous run of X's dims starting at `axis` (-1 means
// rank(X) - rank(Y)); Y's trailing size-1 dims are dropped first, so a conv
// bias Y[C, 1, 1] against X[N, C, H, W] at axis 1 is the same as Y[C]. X is
// then viewed as [pre, n, post] and Y as [n]:
//
//   Out[i, j, k] = f(X[i, j, k], Y[j])
//
// and the gradient of Y reduces over i and k. Every kernel here works on raw
// pointers with Eigen maps and never allocates: the cases are split so that
// the common ones (same shape, one scalar, X[N, D] + Y[D], X[N, C, H, W] +
// Y[C]) each run as contiguous vectorised loops, parallel over the
// executor's pool when the tensor is large.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>

#include "ops/broadcast_dims.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Out takes X's shape once Y is known to broadcast onto it.
inline void ElementwiseInferShape(InferShapeContext* ctx) {
  GetBroadcastDims(ctx->op_type(), ctx->InputName("X"), ctx->GetInputShape("X"),
                   ctx->InputName("Y"), ctx->GetInputShape("Y"),
                   ctx->Attr<int32_t>("axis"));
  FLUID_ENFORCE(ctx->GetInputDtype("X") == ctx->GetInputDtype("Y"),
                ctx->op_type(), ": X '", ctx->InputName("X"), "' is ",
                ctx->GetInputDtype("X"), " but Y '", ctx->InputName("Y"),
                "' is ", ctx->GetInputDtype("Y"));
  ctx->ShareShape("X", "Out");
}

inline void ElementwiseGradInferShape(InferShapeContext* ctx) {
  ctx->ShareShape("X", GradSlot("X"));
  ctx->ShareShape("Y", GradSlot("Y"));
}

struct AddFunctor {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a + b;
  }
};

struct MulFunctor {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a * b;
  }
};

// out[i, j, k] = f(x[i, j, k], y[j]). `out` may alias `x`.
template <typename T, typename F>
void ElementwiseCompute(const CPUDeviceContext& dev, const BroadcastDims& d,
                        const T* x, const T* y, T* out, F f) {
  const int64_t pre = d.pre, n = d.n, post = d.post;
  if (d.same_shape()) {
    ParallelFor(dev, n, 1.0, [&](int64_t b, int64_t e) {
      ArrayMap<T>(out + b, e - b) =
          f(ConstArrayMap<T>(x + b, e - b), ConstArrayMap<T>(y + b, e - b));
    });
  } else if (n == 1) {
    // One Y value for all of X: X[N, D] + Y[1].
    const T y0 = y[0];
    const int64_t total = pre * post;
    ParallelFor(dev, total, 1.0, [&](int64_t b, int64_t e) {
      ArrayMap<T>(out + b, e - b) = f(ConstArrayMap<T>(x + b, e - b), y0);
    });
  } else if (post == 1) {
    // Each row of X meets all of Y: X[N, D] + Y[D].
    ConstArrayMap<T> yv(y, n);
    ParallelFor(dev, pre, static_cast<double>(n), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        ArrayMap<T>(out + i * n, n) = f(ConstArrayMap<T>(x + i * n, n), yv);
    });
  } else {
    // Each Y element meets a contiguous run of `post`: X[N, C, H, W] + Y[C].
    ParallelFor(dev, pre * n, static_cast<double>(post),
                [&](int64_t b, int64_t e) {
                  for (int64_t s = b; s < e; ++s)
                    ArrayMap<T>(out + s * post, post) =
                        f(ConstArrayMap<T>(x + s * post, post), y[s % n]);
                });
  }
}

// dy[j] = sum over i, k of dout[i, j, k] (times x[i, j, k] when kTimesX).
// Work is split over j, so each thread owns its outputs: no partial sums to
// allocate or combine, and the result does not depend on the thread count.
template <typename T, bool kTimesX>
void ReduceToY(const CPUDeviceContext& dev, const BroadcastDims& d,
               const T* dout, const T* x, T* dy) {
  const int64_t pre = d.pre, n = d.n, post = d.post;
  if (d.same_shape()) {
    ParallelFor(dev, n, 1.0, [&](int64_t b, int64_t e) {
      ArrayMap<T> out(dy + b, e - b);
      ConstArrayMap<T> g(dout + b, e - b);
      if constexpr (kTimesX) {
        out = g * ConstArrayMap<T>(x + b, e - b);
      } else {
        out = g;
      }
    });
  } else if (n == 1) {
    ConstArrayMap<T> g(dout, pre * post);
    if constexpr (kTimesX) {
      dy[0] = (g * ConstArrayMap<T>(x, pre * post)).sum();
    } else {
      dy[0] = g.sum();
    }
  } else if (post == 1) {
    // Column sums of the [pre, n] matrix, a block of columns per thread.
    ParallelFor(dev, n, static_cast<double>(pre), [&](int64_t b, int64_t e) {
      ArrayMap<T> acc(dy + b, e - b);
      acc.setZero();
      for (int64_t i = 0; i < pre; ++i) {
        ConstArrayMap<T> g(dout + i * n + b, e - b);
        if constexpr (kTimesX) {
          acc += g * ConstArrayMap<T>(x + i * n + b, e - b);
        } else {
          acc += g;
        }
      }
    });
  } else {
    ParallelFor(dev, n, static_cast<double>(pre * post),
                [&](int64_t b, int64_t e) {
                  for (int64_t j = b; j < e; ++j) {
                    T s = T(0);
                    for (int64_t i = 0; i < pre; ++i) {
                      const int64_t off = (i * n + j) * post;
                      ConstArrayMap<T> g(dout + off, post);
                      if constexpr (kTimesX) {
                        s += (g * ConstArrayMap<T>(x + off, post)).sum();
                      } else {
                        s += g.sum();
                      }
                    }
                    dy[j] = s;
                  }
                });
  }
}

// dst = src, elementwise, for gradients that pass straight through.
template <typename T>
void CopyElements(const CPUDeviceContext& dev, const T* src, T* dst,
                  int64_t n) {
  if (src == dst) return;
  ParallelFor(dev, n, 1.0, [&](int64_t b, int64_t e) {
    std::memcpy(dst + b, src + b, static_cast<size_t>(e - b) * sizeof(T));
  });
}

}  // namespace ops
}  // namespace fluid
