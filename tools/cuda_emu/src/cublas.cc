// cuBLAS GEMMs of the CUDA emulation, column-major as cuBLAS:
//   C_b = alpha * op(A_b) op(B_b) + beta * C_b,  b in [0, batch)
// op(A) is m x k, op(B) k x n, C m x n, element (i, j) of a matrix X with
// leading dimension ldx at X[i + j * ldx]. The argument checks are
// cuBLAS's (CUBLAS_STATUS_INVALID_VALUE); every matrix read or written must
// lie in device memory. Each C element sums its k products in the element
// type in increasing k; beta == 0 writes C without reading it.
#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>
#include <vector>

#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "internal.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasAtomicsMode_t atomics = CUBLAS_ATOMICS_NOT_ALLOWED;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  int device = 0;
};

namespace cuda_emu {
namespace {

std::mutex g_mu;
std::set<const cublasContext*>& Live() {
  static auto* live = new std::set<const cublasContext*>();
  return *live;
}

bool Valid(cublasHandle_t h) {
  std::lock_guard<std::mutex> lock(g_mu);
  return h != nullptr && Live().count(h) != 0;
}

bool ValidOp(cublasOperation_t op) {
  return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

// Bytes spanned by `batch` matrices of rows x cols (leading dimension ld),
// `stride` elements apart; offset of the lowest byte in *lo.
template <typename T>
size_t Extent(int rows, int cols, int ld, long long stride, int batch,
              long long* lo) {
  const long long one = static_cast<long long>(ld) * (cols - 1) + rows;
  long long first = 0, last = one;  // elements, [first, last)
  if (batch > 1) {
    const long long span = stride * (batch - 1);
    first = std::min<long long>(0, span);
    last = std::max<long long>(one, span + one);
  }
  *lo = first * static_cast<long long>(sizeof(T));
  return static_cast<size_t>(last - first) * sizeof(T);
}

template <typename T>
bool CheckMatrix(const char* api, const char* what, const T* p, int rows,
                 int cols, int ld, long long stride, int batch) {
  long long lo;
  const size_t bytes = Extent<T>(rows, cols, ld, stride, batch, &lo);
  return CheckDeviceRange(reinterpret_cast<const char*>(p) + lo, bytes, api,
                          what);
}

template <typename T>
bool Overlaps(const T* a, size_t an, long long alo, const T* c, size_t cn,
              long long clo) {
  const char* x = reinterpret_cast<const char*>(a) + alo;
  const char* y = reinterpret_cast<const char*>(c) + clo;
  return x < y + cn && y < x + an;
}

template <typename T>
cublasStatus_t Gemm(const char* api, cublasHandle_t handle,
                    cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const T* alpha, const T* A, int lda,
                    long long stride_a, const T* B, int ldb, long long stride_b,
                    const T* beta, T* C, int ldc, long long stride_c,
                    int batch) {
  if (!Valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!ValidOp(ta) || !ValidOp(tb) || m < 0 || n < 0 || k < 0 || batch < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  const bool na = ta == CUBLAS_OP_N, nb = tb == CUBLAS_OP_N;
  const int a_rows = na ? m : k, a_cols = na ? k : m;
  const int b_rows = nb ? k : n, b_cols = nb ? n : k;
  if (lda < std::max(1, a_rows) || ldb < std::max(1, b_rows) ||
      ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (!IsValidStream(handle->stream)) {
    Report("%s: the handle's stream %p is no longer a live stream", api,
           static_cast<void*>(handle->stream));
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const T al = *alpha, be = *beta;
  const bool reads_ab = k > 0 && al != T(0);
  if (!CheckMatrix(api, "C", C, m, n, ldc, stride_c, batch))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  if (reads_ab &&
      (!CheckMatrix(api, "A", A, a_rows, a_cols, lda, stride_a, batch) ||
       !CheckMatrix(api, "B", B, b_rows, b_cols, ldb, stride_b, batch)))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  if (batch > 1) {
    const long long c_one = static_cast<long long>(ldc) * (n - 1) + m;
    const long long s = stride_c < 0 ? -stride_c : stride_c;
    if (s < c_one)
      Report(
          "%s: the %d C matrices overlap (strideC %lld, each spans %lld "
          "elements): their results race",
          api, batch, stride_c, c_one);
  }
  if (reads_ab) {
    long long alo, blo, clo;
    const size_t an = Extent<T>(a_rows, a_cols, lda, stride_a, batch, &alo);
    const size_t bn = Extent<T>(b_rows, b_cols, ldb, stride_b, batch, &blo);
    const size_t cn = Extent<T>(m, n, ldc, stride_c, batch, &clo);
    if (Overlaps(A, an, alo, C, cn, clo) || Overlaps(B, bn, blo, C, cn, clo))
      Report(
          "%s: C overlaps an input (A %p, B %p, C %p): the result is "
          "undefined",
          api, static_cast<const void*>(A), static_cast<const void*>(B),
          static_cast<void*>(C));
  }

  std::vector<T> acc(static_cast<size_t>(m));
  for (int b = 0; b < batch; ++b) {
    const T* a = A + stride_a * b;
    const T* bm = B + stride_b * b;
    T* c = C + stride_c * b;
    for (int j = 0; j < n; ++j) {
      T* cj = c + static_cast<long long>(j) * ldc;
      if (!reads_ab) {
        for (int i = 0; i < m; ++i) cj[i] = be == T(0) ? T(0) : be * cj[i];
        continue;
      }
      auto b_at = [&](int l) -> T {
        return nb ? bm[l + static_cast<long long>(j) * ldb]
                  : bm[j + static_cast<long long>(l) * ldb];
      };
      if (na) {
        std::fill(acc.begin(), acc.end(), T(0));
        for (int l = 0; l < k; ++l) {
          const T bl = b_at(l);
          const T* al_col = a + static_cast<long long>(l) * lda;
          T* out = acc.data();
          for (int i = 0; i < m; ++i) out[i] += al_col[i] * bl;
        }
      } else {
        for (int i = 0; i < m; ++i) {
          const T* ai = a + static_cast<long long>(i) * lda;
          T s = T(0);
          if (nb) {
            const T* bj = bm + static_cast<long long>(j) * ldb;
            for (int l = 0; l < k; ++l) s += ai[l] * bj[l];
          } else {
            for (int l = 0; l < k; ++l) s += ai[l] * b_at(l);
          }
          acc[static_cast<size_t>(i)] = s;
        }
      }
      if (be == T(0)) {
        for (int i = 0; i < m; ++i) cj[i] = al * acc[static_cast<size_t>(i)];
      } else {
        for (int i = 0; i < m; ++i)
          cj[i] = al * acc[static_cast<size_t>(i)] + be * cj[i];
      }
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace
}  // namespace cuda_emu

extern "C" {

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  auto* h = new cublasContext();
  h->device = cuda_emu::CurrentDevice();
  std::lock_guard<std::mutex> lock(cuda_emu::g_mu);
  cuda_emu::Live().insert(h);
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  {
    std::lock_guard<std::mutex> lock(cuda_emu::g_mu);
    if (handle == nullptr || cuda_emu::Live().erase(handle) == 0)
      return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!cuda_emu::Valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!cuda_emu::IsValidStream(stream)) {
    cuda_emu::Report("cublasSetStream: %p is not a live stream",
                     static_cast<void*>(stream));
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream) {
  if (!cuda_emu::Valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle,
                                    cublasAtomicsMode_t mode) {
  if (!cuda_emu::Valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_ATOMICS_NOT_ALLOWED && mode != CUBLAS_ATOMICS_ALLOWED)
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->atomics = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle,
                                    cublasAtomicsMode_t* mode) {
  if (!cuda_emu::Valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->atomics;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode(cublasHandle_t handle,
                                    cublasPointerMode_t mode) {
  if (!cuda_emu::Valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_POINTER_MODE_HOST) {
    cuda_emu::Report(
        "cublasSetPointerMode: only the host pointer mode is "
        "emulated");
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  handle->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode(cublasHandle_t handle,
                                    cublasPointerMode_t* mode) {
  if (!cuda_emu::Valid(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k,
                           const float* alpha, const float* A, int lda,
                           const float* B, int ldb, const float* beta, float* C,
                           int ldc) {
  return cuda_emu::Gemm<float>("cublasSgemm", handle, transa, transb, m, n, k,
                               alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k,
                           const double* alpha, const double* A, int lda,
                           const double* B, int ldb, const double* beta,
                           double* C, int ldc) {
  return cuda_emu::Gemm<double>("cublasDgemm", handle, transa, transb, m, n, k,
                                alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0,
                                1);
}

cublasStatus_t cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
    int m, int n, int k, const float* alpha, const float* A, int lda,
    long long int strideA, const float* B, int ldb, long long int strideB,
    const float* beta, float* C, int ldc, long long int strideC,
    int batchCount) {
  return cuda_emu::Gemm<float>("cublasSgemmStridedBatched", handle, transa,
                               transb, m, n, k, alpha, A, lda, strideA, B, ldb,
                               strideB, beta, C, ldc, strideC, batchCount);
}

cublasStatus_t cublasDgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
    int m, int n, int k, const double* alpha, const double* A, int lda,
    long long int strideA, const double* B, int ldb, long long int strideB,
    const double* beta, double* C, int ldc, long long int strideC,
    int batchCount) {
  return cuda_emu::Gemm<double>("cublasDgemmStridedBatched", handle, transa,
                                transb, m, n, k, alpha, A, lda, strideA, B, ldb,
                                strideB, beta, C, ldc, strideC, batchCount);
}

}  // extern "C"
