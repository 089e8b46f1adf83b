// What the reduce_* ops' CPU kernels (reduce_op.cc) and CUDA kernels
// (reduce_op.cu) share: the map between X's elements and Out's, the
// per-element math of each reduction and of its gradient, and the host-side
// checks (defined once in reduce_op.cc). Free of Eigen so that nvcc can
// compile the CUDA kernels that include it.
//
// Out's element o reduces the `count` elements of X that share o's index
// over the kept dims; X's offset of the r-th of them is Base(o) + Offset(r).
#pragma once

#include <cstdint>
#include <type_traits>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd };

// Sums and products accumulate in double (float inputs) or int64 (integer
// inputs); a max or a min is exact in either.
template <typename T>
using ReduceAcc =
    std::conditional_t<std::is_integral<T>::value, int64_t, double>;

// Adjacent kept dims are merged into one, and so are adjacent reduced
// dims: reducing the last dim of [N, C] or the rows of [R, C] leaves one
// dim of each kind.
struct ReduceIndex {
  int x_rank = 0;
  int64_t x_dims[Shape::kMaxRank] = {0};
  // For each dim of X, the stride of Out's element index along it (0 for a
  // reduced dim).
  int64_t out_strides[Shape::kMaxRank] = {0};
  int kept_rank = 0;
  int64_t kept_dims[Shape::kMaxRank] = {0};
  int64_t kept_strides[Shape::kMaxRank] = {0};  // X's strides
  int reduced_rank = 0;
  int64_t reduced_dims[Shape::kMaxRank] = {0};
  int64_t reduced_strides[Shape::kMaxRank] = {0};  // X's strides
  int64_t outs = 1;                                // Out's element count
  int64_t count = 1;  // X's elements per element of Out

  // X's offset of the first element reduced into Out's element o.
  FLUID_HOSTDEVICE int64_t Base(int64_t o) const {
    int64_t at = 0;
    for (int d = kept_rank - 1; d >= 0; --d) {
      at += (o % kept_dims[d]) * kept_strides[d];
      o /= kept_dims[d];
    }
    return at;
  }
  // X's offset of the r-th element of a group from its first.
  FLUID_HOSTDEVICE int64_t Offset(int64_t r) const {
    int64_t at = 0;
    for (int d = reduced_rank - 1; d >= 0; --d) {
      at += (r % reduced_dims[d]) * reduced_strides[d];
      r /= reduced_dims[d];
    }
    return at;
  }
  // Out's element that X's element i is reduced into.
  FLUID_HOSTDEVICE int64_t OutOf(int64_t i) const {
    int64_t o = 0;
    for (int d = x_rank - 1; d >= 0; --d) {
      o += (i % x_dims[d]) * out_strides[d];
      i /= x_dims[d];
    }
    return o;
  }
};

// The accumulator before a group's first element (`first`): 0 for a sum
// or a mean, 1 for a product, the first element for a max or a min (so
// that every thread of a CUDA block may start from it).
template <ReduceKind kKind, typename A>
FLUID_HOSTDEVICE A ReduceStart(A first) {
  if (kKind == ReduceKind::kMax || kKind == ReduceKind::kMin) return first;
  return kKind == ReduceKind::kProd ? A(1) : A(0);
}

// The accumulator after one more element (or another partial result).
template <ReduceKind kKind, typename A>
FLUID_HOSTDEVICE A ReduceCombine(A acc, A v) {
  if (kKind == ReduceKind::kProd) return acc * v;
  if (kKind == ReduceKind::kMax) return v > acc ? v : acc;
  if (kKind == ReduceKind::kMin) return v < acc ? v : acc;
  return acc + v;
}

// Out's value from the accumulator of `count` elements.
template <ReduceKind kKind, typename T>
FLUID_HOSTDEVICE T ReduceFinish(ReduceAcc<T> acc, int64_t count) {
  if (kKind == ReduceKind::kMean) acc /= static_cast<ReduceAcc<T>>(count);
  return static_cast<T>(acc);
}

// Out's element o of the reduction `kKind` of X (count >= 1 for a mean, a
// max or a min; checked by MakeReduceIndex).
template <ReduceKind kKind, typename T>
FLUID_HOSTDEVICE T ReduceOne(const ReduceIndex& index, const T* x, int64_t o) {
  using A = ReduceAcc<T>;
  const T* g = x + index.Base(o);
  A acc = ReduceStart<kKind, A>(index.count > 0 ? static_cast<A>(g[0]) : A(0));
  if (index.reduced_rank == 1) {  // one stride: no index arithmetic
    const int64_t stride = index.reduced_strides[0];
    for (int64_t r = 0; r < index.count; ++r)
      acc = ReduceCombine<kKind, A>(acc, static_cast<A>(g[r * stride]));
  } else {
    for (int64_t r = 0; r < index.count; ++r)
      acc = ReduceCombine<kKind, A>(acc, static_cast<A>(g[index.Offset(r)]));
  }
  return ReduceFinish<kKind, T>(acc, index.count);
}

// For reduce_prod's gradient, per element of Out: how many of its X
// elements are zero, and the product of the others.
template <typename T>
struct ProdStats {
  int64_t zeros = 0;
  ReduceAcc<T> nonzero = 1;
};

template <typename T>
FLUID_HOSTDEVICE ProdStats<T> ProdStatsOf(const ReduceIndex& index, const T* x,
                                          int64_t o) {
  ProdStats<T> s;
  const T* g = x + index.Base(o);
  for (int64_t r = 0; r < index.count; ++r) {
    const ReduceAcc<T> v = static_cast<ReduceAcc<T>>(g[index.Offset(r)]);
    if (v == 0) {
      ++s.zeros;
    } else {
      s.nonzero *= v;
    }
  }
  return s;
}

// X@GRAD's element i. A sum passes Out@GRAD on, a mean divides it by the
// count; a max or a min passes it to every element equal to the result
// (all tied elements get the whole of it, as Fluid does); a product
// multiplies it by the product of the other elements, computed from the
// zero count so that a zero element gets the product of the rest.
template <ReduceKind kKind, typename T>
struct ReduceGradAt {
  ReduceIndex index;
  const T* x = nullptr;
  const T* out = nullptr;               // max, min
  const T* dout = nullptr;              // Out@GRAD
  const ProdStats<T>* stats = nullptr;  // prod

  FLUID_HOSTDEVICE T operator()(int64_t i) const {
    const int64_t o = index.OutOf(i);
    const double g = static_cast<double>(dout[o]);
    if (kKind == ReduceKind::kSum) return dout[o];
    if (kKind == ReduceKind::kMean)
      return static_cast<T>(g / static_cast<double>(index.count));
    if (kKind == ReduceKind::kMax || kKind == ReduceKind::kMin)
      return x[i] == out[o] ? dout[o] : T(0);
    const ProdStats<T> s = stats[o];
    const double xi = static_cast<double>(x[i]);
    if (xi != 0) {
      return s.zeros == 0 ? static_cast<T>(g * (s.nonzero / xi)) : T(0);
    }
    return s.zeros == 1 ? static_cast<T>(g * s.nonzero) : T(0);
  }
};

// The index for reducing `x` by the op's attrs (dim, reduce_all), checked:
// each dim in [-rank, rank), none twice, and a mean, max or min of no
// elements refused.
ReduceIndex MakeReduceIndex(const ExecutionContext& ctx, const Tensor& x);

// reduce_*_grad's Out@GRAD, checked to hold one element per element of
// Out.
const Tensor& GetReduceOutGrad(const ExecutionContext& ctx,
                               const ReduceIndex& index);

}  // namespace ops
}  // namespace fluid
