#include "src/framework/math/blas.h"

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>

namespace fluid {
namespace math {

namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <typename T>
void GemmSerial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                T alpha, const T* a, const T* b, T beta, T* c) {
  Eigen::Map<RowMat<T>> cm(c, m, n);
  Eigen::Map<const RowMat<T>> am(a, trans_a ? k : m, trans_a ? m : k);
  Eigen::Map<const RowMat<T>> bm(b, trans_b ? n : k, trans_b ? k : n);
  if (beta == T(0)) {
    cm.setZero();
  } else if (beta != T(1)) {
    cm *= beta;
  }
  if (!trans_a && !trans_b) {
    cm.noalias() += alpha * am * bm;
  } else if (trans_a && !trans_b) {
    cm.noalias() += alpha * am.transpose() * bm;
  } else if (!trans_a && trans_b) {
    cm.noalias() += alpha * am * bm.transpose();
  } else {
    cm.noalias() += alpha * am.transpose() * bm.transpose();
  }
}

template <typename T>
void GemmPool(Eigen::ThreadPoolDevice* pool, bool trans_a, bool trans_b,
              int64_t m, int64_t n, int64_t k, T alpha, const T* a, const T* b,
              T beta, T* c) {
  using Index = Eigen::Index;
  Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor>> at(
      a, trans_a ? k : m, trans_a ? m : k);
  Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor>> bt(
      b, trans_b ? n : k, trans_b ? k : n);
  Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor>> ct(c, m, n);
  Eigen::array<Eigen::IndexPair<Index>, 1> dims = {
      Eigen::IndexPair<Index>(trans_a ? 0 : 1, trans_b ? 1 : 0)};
  if (beta == T(0) && alpha == T(1)) {
    ct.device(*pool) = at.contract(bt, dims);
  } else if (beta == T(0)) {
    ct.device(*pool) = at.contract(bt, dims) * alpha;
  } else {
    ct.device(*pool) = ct * beta + at.contract(bt, dims) * alpha;
  }
}

}  // namespace

template <typename T>
void Gemm(const CPUDeviceContext& dev, bool trans_a, bool trans_b, int64_t m,
          int64_t n, int64_t k, T alpha, const T* a, const T* b, T beta,
          T* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    Eigen::Map<RowMat<T>> cm(c, m, n);
    if (beta == T(0)) {
      cm.setZero();
    } else {
      cm *= beta;
    }
    return;
  }
  // Small products are not worth waking the pool for.
  constexpr int64_t kParallelFlops = 1 << 18;
  if (dev.eigen_device() != nullptr && m * n * k >= kParallelFlops) {
    GemmPool(dev.eigen_device(), trans_a, trans_b, m, n, k, alpha, a, b, beta,
             c);
  } else {
    GemmSerial(trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
  }
}

template void Gemm<float>(const CPUDeviceContext&, bool, bool, int64_t,
                          int64_t, int64_t, float, const float*, const float*,
                          float, float*);
template void Gemm<double>(const CPUDeviceContext&, bool, bool, int64_t,
                           int64_t, int64_t, double, const double*,
                           const double*, double, double*);

}  // namespace math
}  // namespace fluid
