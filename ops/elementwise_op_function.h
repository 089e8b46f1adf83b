// Paddle-style broadcasting shared by the elementwise binary ops
// (elementwise_add, _mul, _sub, _div, _max, _min, _pow).
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
//
// add and mul have gradient kernels of their own (a copy, a product); every
// other op is a functor of elementwise_functors.h run by the generic
// ElementwiseKernel and ElementwiseGradKernel below, so that a new binary op
// is its functor plus its registration.
//
// 16-bit tensors (bfloat16, float16) take the same functors on floats: each
// element is loaded as float, combined, and rounded once when stored; the
// sums of dY accumulate in float (ops/half_math.h).
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "ops/broadcast_dims.h"
#include "ops/elementwise_functors.h"
#include "ops/half_cpu.h"
#include "ops/half_math.h"
#include "ops/op_helpers.h"
#include "src/framework/math/int_math.h"

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

// ElementwiseCompute for 16-bit T: f on floats, one rounding per element.
template <typename T, typename F>
void HalfElementwiseCompute(const CPUDeviceContext& dev, const BroadcastDims& d,
                            const T* x, const T* y, T* out, F f) {
  const int64_t n = d.n, post = d.post;
  auto at = [&](int64_t i, float yv) {
    out[i] = FromCompute<T>(f(ToCompute(x[i]), yv));
  };
  if (d.same_shape()) {
    ParallelFor(dev, n, 1.0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) at(i, ToCompute(y[i]));
    });
  } else if (post == 1) {
    ParallelFor(dev, d.pre, static_cast<double>(n), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        for (int64_t j = 0; j < n; ++j) at(i * n + j, ToCompute(y[j]));
    });
  } else {
    ParallelFor(dev, d.pre * n, static_cast<double>(post),
                [&](int64_t b, int64_t e) {
                  for (int64_t s = b; s < e; ++s) {
                    const float yj = ToCompute(y[s % n]);
                    for (int64_t k = 0; k < post; ++k) at(s * post + k, yj);
                  }
                });
  }
}

// ElementwiseCompute for float and double: Eigen arrays.
template <typename T, typename F>
void EigenElementwiseCompute(const CPUDeviceContext& dev,
                             const BroadcastDims& d, const T* x, const T* y,
                             T* out, F f) {
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

// out[i, j, k] = f(x[i, j, k], y[j]). `out` may alias `x`.
template <typename T, typename F>
void ElementwiseCompute(const CPUDeviceContext& dev, const BroadcastDims& d,
                        const T* x, const T* y, T* out, F f) {
  if constexpr (IsHalfType<T>::value) {
    HalfElementwiseCompute(dev, d, x, y, out, f);
  } else {
    EigenElementwiseCompute(dev, d, x, y, out, f);
  }
}

// dy[j] = the float sum over i, k of term(flat index into X, j), rounded
// once into 16-bit dy. Split over j as ReduceToY. The columns of a [pre, n]
// X are summed a row at a time into a float row of the thread's range of
// columns, so that each row is read contiguously and the additions
// vectorise; each column still sums its rows in order, whatever the split.
template <typename T, typename Term>
void HalfReduceToY(const CPUDeviceContext& dev, const BroadcastDims& d,
                   Term term, T* dy) {
  const int64_t pre = d.pre, n = d.n, post = d.post;
  if (d.same_shape()) {
    ParallelFor(dev, n, 1.0, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) dy[j] = FromCompute<T>(term(j, j));
    });
    return;
  }
  if (post == 1) {
    ParallelFor(dev, n, static_cast<double>(pre), [&](int64_t b, int64_t e) {
      const int64_t len = e - b;
      float* acc = ThreadRow(3, len);
      std::fill(acc, acc + len, 0.0f);
      for (int64_t i = 0; i < pre; ++i) {
        const int64_t row = i * n + b;
        for (int64_t j = 0; j < len; ++j) acc[j] += term(row + j, b + j);
      }
      for (int64_t j = 0; j < len; ++j) dy[b + j] = FromCompute<T>(acc[j]);
    });
    return;
  }
  ParallelFor(dev, n, static_cast<double>(pre * post),
              [&](int64_t b, int64_t e) {
                for (int64_t j = b; j < e; ++j) {
                  float s = 0.0f;
                  for (int64_t i = 0; i < pre; ++i) {
                    const int64_t off = (i * n + j) * post;
                    for (int64_t k = 0; k < post; ++k) s += term(off + k, j);
                  }
                  dy[j] = FromCompute<T>(s);
                }
              });
}

// ReduceToY for float and double. Work is split over j, so each thread owns its
// outputs: no partial sums to allocate or combine, and the result does not
// depend on the thread count.
template <typename T, bool kTimesX>
void EigenReduceToY(const CPUDeviceContext& dev, const BroadcastDims& d,
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

// dy[j] = sum over i, k of dout[i, j, k] (times x[i, j, k] when kTimesX):
// Eigen for float and double, float sums for 16-bit T.
template <typename T, bool kTimesX>
void ReduceToY(const CPUDeviceContext& dev, const BroadcastDims& d,
               const T* dout, const T* x, T* dy) {
  if constexpr (IsHalfType<T>::value) {
    HalfReduceToY(
        dev, d,
        [dout, x](int64_t i, int64_t) {
          const float g = ToCompute(dout[i]);
          return kTimesX ? g * ToCompute(x[i]) : g;
        },
        dy);
  } else {
    EigenReduceToY<T, kTimesX>(dev, d, dout, x, dy);
  }
}

// The forward kernel of an elementwise op: Out = f(X, Y), Y broadcast onto
// X at the `axis` attr. `f` takes Eigen arrays (see ElementwiseCompute).
template <typename T, typename F>
void ElementwiseForward(const ExecutionContext& ctx, F f) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  Tensor* out = ctx.Output("Out");
  BroadcastDims d = GetBroadcastDims(ctx, x, y);
  ElementwiseCompute<T>(ctx.device(), d, x.data<T>(), y.data<T>(),
                        out->mutable_data<T>(), f);
}

// A functor of elementwise_functors.h applied to the Eigen arrays (or the
// one scalar of Y) that ElementwiseCompute hands over, or to two floats (the
// 16-bit path).
template <typename Op>
struct ArrayFunctor {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    if constexpr (std::is_arithmetic_v<A>) {
      return Op::Forward(a, b);
    } else if constexpr (std::is_arithmetic_v<B>) {
      using T = typename A::Scalar;
      return a.unaryExpr([b](T v) { return T(Op::Forward(v, b)); });
    } else {
      using T = typename A::Scalar;
      return a.binaryExpr(b, [](T u, T v) { return T(Op::Forward(u, v)); });
    }
  }
};

template <typename T, typename Op>
void ElementwiseKernel(const ExecutionContext& ctx) {
  ElementwiseForward<T>(ctx, ArrayFunctor<Op>());
}

// dX[i, j, k] = Op::Dx(X, Y[j], dOut) and dY[j] = sum over i, k of
// Op::Dy(X, Y[j], dOut); either may be null. dY is split over j, as in
// ReduceToY, and is written before dX so that dX may alias X.
template <typename T, typename Op>
void ElementwiseGradCompute(const CPUDeviceContext& dev, const BroadcastDims& d,
                            const T* x, const T* y, const T* dout, T* dx,
                            T* dy) {
  using C = ComputeType<T>;
  const int64_t pre = d.pre, n = d.n, post = d.post;
  if (dy != nullptr) {
    if constexpr (IsHalfType<T>::value) {
      HalfReduceToY(
          dev, d,
          [x, y, dout](int64_t i, int64_t j) {
            return Op::Dy(ToCompute(x[i]), ToCompute(y[j]), ToCompute(dout[i]));
          },
          dy);
    } else {
      ParallelFor(dev, n, static_cast<double>(pre * post),
                  [&](int64_t b, int64_t e) {
                    for (int64_t j = b; j < e; ++j) {
                      const T yj = y[j];
                      T s = T(0);
                      for (int64_t i = 0; i < pre; ++i) {
                        const int64_t off = (i * n + j) * post;
                        for (int64_t k = 0; k < post; ++k)
                          s += T(Op::Dy(x[off + k], yj, dout[off + k]));
                      }
                      dy[j] = s;
                    }
                  });
    }
  }
  if (dx != nullptr) {
    // One row of `post` elements per (i, j), all meeting Y[j].
    ParallelFor(
        dev, pre * n, static_cast<double>(post), [&](int64_t b, int64_t e) {
          for (int64_t s = b; s < e; ++s) {
            const C yj = ToCompute(y[s % n]);
            const int64_t off = s * post;
            for (int64_t k = 0; k < post; ++k)
              dx[off + k] = FromCompute<T>(
                  Op::Dx(ToCompute(x[off + k]), yj, ToCompute(dout[off + k])));
          }
        });
  }
}

template <typename T, typename Op>
void ElementwiseGradKernel(const ExecutionContext& ctx) {
  const auto& [x, y, dout, d] = ReadElementwiseGradArgs(ctx);
  Tensor* dx = ctx.Output(GradSlot("X"));
  Tensor* dy = ctx.Output(GradSlot("Y"));
  ElementwiseGradCompute<T, Op>(
      ctx.device(), d, x.data<T>(), y.data<T>(), dout.data<T>(),
      dx != nullptr ? dx->mutable_data<T>() : nullptr,
      dy != nullptr ? dy->mutable_data<T>() : nullptr);
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
