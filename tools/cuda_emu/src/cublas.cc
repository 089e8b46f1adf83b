// cuBLAS GEMMs of the CUDA emulation, column-major as cuBLAS:
//   C_b = alpha * op(A_b) op(B_b) + beta * C_b,  b in [0, batch)
// op(A) is m x k, op(B) k x n, C m x n, element (i, j) of a matrix X with
// leading dimension ldx at X[i + j * ldx]. The argument checks are
// cuBLAS's (CUBLAS_STATUS_INVALID_VALUE); every matrix read or written must
// lie in device memory. Each C element sums its k products in the compute
// type (the element type for Sgemm/Dgemm, float for cublasGemmEx with
// CUBLAS_COMPUTE_32F) in increasing k; beta == 0 writes C without reading
// it. 16-bit elements (CUDA_R_16F, CUDA_R_16BF) are widened to float
// exactly and C is rounded to its type once, to nearest even, as cuBLAS
// does.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <type_traits>
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

template <typename TA, typename TC>
bool Overlaps(const TA* a, size_t an, long long alo, const TC* c, size_t cn,
              long long clo) {
  const char* x = reinterpret_cast<const char*>(a) + alo;
  const char* y = reinterpret_cast<const char*>(c) + clo;
  return x < y + cn && y < x + an;
}

// The 16-bit element types, as stored (their bits).
struct Half {
  uint16_t bits;
};
struct BHalf {
  uint16_t bits;
};

float FloatOfBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

uint32_t BitsOfFloat(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

// Widening to the compute type: exact.
float Widen(float v) { return v; }
double Widen(double v) { return v; }
float Widen(BHalf v) {
  return FloatOfBits(static_cast<uint32_t>(v.bits) << 16);
}
float Widen(Half v) {
  const uint32_t sign = static_cast<uint32_t>(v.bits & 0x8000u) << 16;
  const uint32_t exp = (v.bits >> 10) & 0x1fu, man = v.bits & 0x3ffu;
  if (exp == 0x1f) return FloatOfBits(sign | 0x7f800000u | (man << 13));
  if (exp != 0) return FloatOfBits(sign | ((exp + 112) << 23) | (man << 13));
  const float mag = static_cast<float>(man) * 5.9604644775390625e-8f;  // 2^-24
  return sign ? -mag : mag;
}

// Narrowing from the compute type: to nearest, ties to even.
template <typename T>
T Narrow(float v);
template <typename T>
T Narrow(double v) {
  return static_cast<T>(v);
}
template <>
float Narrow<float>(float v) {
  return v;
}
template <>
BHalf Narrow<BHalf>(float v) {
  const uint32_t u = BitsOfFloat(v);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return BHalf{static_cast<uint16_t>((u >> 16) | 0x40u)};
  return BHalf{static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}
template <>
Half Narrow<Half>(float v) {
  const uint32_t u = BitsOfFloat(v);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return Half{static_cast<uint16_t>(sign | 0x7e00u)};
  if (abs >= 0x47800000u) return Half{static_cast<uint16_t>(sign | 0x7c00u)};
  const int exp = static_cast<int>(abs >> 23) - 127;
  const uint32_t man = (abs & 0x7fffffu) | 0x800000u;
  // Shift the 24-bit significand to the half's precision, rounding to
  // nearest even; a carry moves into the exponent (to infinity at the top).
  const int shift = exp < -14 ? -exp - 14 + 13 : 13;
  if (shift > 24) return Half{sign};
  uint32_t kept = man >> shift;
  const uint32_t rest = man & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1u))) ++kept;
  if (exp < -14) return Half{static_cast<uint16_t>(sign | kept)};
  const uint32_t h = (static_cast<uint32_t>(exp + 15) << 10) + kept - 0x400u;
  return Half{static_cast<uint16_t>(sign | h)};
}

// A and B of element type TA, C of TC, summed in S.
template <typename TA, typename TC, typename S>
cublasStatus_t Gemm(const char* api, cublasHandle_t handle,
                    cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const S* alpha, const TA* A, int lda,
                    long long stride_a, const TA* B, int ldb,
                    long long stride_b, const S* beta, TC* C, int ldc,
                    long long stride_c, int batch) {
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
  const S al = *alpha, be = *beta;
  const bool reads_ab = k > 0 && al != S(0);
  if (!CheckMatrix<TC>(api, "C", C, m, n, ldc, stride_c, batch))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  if (reads_ab &&
      (!CheckMatrix<TA>(api, "A", A, a_rows, a_cols, lda, stride_a, batch) ||
       !CheckMatrix<TA>(api, "B", B, b_rows, b_cols, ldb, stride_b, batch)))
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
    const size_t an = Extent<TA>(a_rows, a_cols, lda, stride_a, batch, &alo);
    const size_t bn = Extent<TA>(b_rows, b_cols, ldb, stride_b, batch, &blo);
    const size_t cn = Extent<TC>(m, n, ldc, stride_c, batch, &clo);
    if (Overlaps(A, an, alo, C, cn, clo) || Overlaps(B, bn, blo, C, cn, clo))
      Report(
          "%s: C overlaps an input (A %p, B %p, C %p): the result is "
          "undefined",
          api, static_cast<const void*>(A), static_cast<const void*>(B),
          static_cast<void*>(C));
  }

  std::vector<S> acc(static_cast<size_t>(m));
  for (int b = 0; b < batch; ++b) {
    const TA* a = A + stride_a * b;
    const TA* bm = B + stride_b * b;
    TC* c = C + stride_c * b;
    for (int j = 0; j < n; ++j) {
      TC* cj = c + static_cast<long long>(j) * ldc;
      if (!reads_ab) {
        for (int i = 0; i < m; ++i)
          cj[i] = Narrow<TC>(be == S(0) ? S(0) : be * Widen(cj[i]));
        continue;
      }
      auto b_at = [&](int l) -> S {
        return Widen(nb ? bm[l + static_cast<long long>(j) * ldb]
                        : bm[j + static_cast<long long>(l) * ldb]);
      };
      if (na) {
        std::fill(acc.begin(), acc.end(), S(0));
        for (int l = 0; l < k; ++l) {
          const S bl = b_at(l);
          const TA* al_col = a + static_cast<long long>(l) * lda;
          S* out = acc.data();
          for (int i = 0; i < m; ++i) out[i] += Widen(al_col[i]) * bl;
        }
      } else {
        for (int i = 0; i < m; ++i) {
          const TA* ai = a + static_cast<long long>(i) * lda;
          S s = S(0);
          if (nb) {
            const TA* bj = bm + static_cast<long long>(j) * ldb;
            for (int l = 0; l < k; ++l) s += Widen(ai[l]) * Widen(bj[l]);
          } else {
            for (int l = 0; l < k; ++l) s += Widen(ai[l]) * b_at(l);
          }
          acc[static_cast<size_t>(i)] = s;
        }
      }
      if (be == S(0)) {
        for (int i = 0; i < m; ++i)
          cj[i] = Narrow<TC>(al * acc[static_cast<size_t>(i)]);
      } else {
        for (int i = 0; i < m; ++i)
          cj[i] =
              Narrow<TC>(al * acc[static_cast<size_t>(i)] + be * Widen(cj[i]));
      }
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

// cublasGemmEx and its strided-batched form: A and B of one type, C of
// that type or float, alpha and beta floats (CUBLAS_COMPUTE_32F). Other
// combinations cuBLAS has are not emulated: CUBLAS_STATUS_NOT_SUPPORTED,
// reported.
cublasStatus_t GemmEx(const char* api, cublasHandle_t handle,
                      cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                      int k, const void* alpha, const void* A,
                      cudaDataType_t a_type, int lda, long long stride_a,
                      const void* B, cudaDataType_t b_type, int ldb,
                      long long stride_b, const void* beta, void* C,
                      cudaDataType_t c_type, int ldc, long long stride_c,
                      int batch, cublasComputeType_t compute) {
  const bool ab16 = a_type == CUDA_R_16BF || a_type == CUDA_R_16F;
  const bool supported = compute == CUBLAS_COMPUTE_32F && a_type == b_type &&
                         (a_type == CUDA_R_32F || ab16) &&
                         (c_type == a_type || (ab16 && c_type == CUDA_R_32F));
  if (!supported) {
    Report("%s: types A %d, B %d, C %d with compute type %d are not emulated",
           api, static_cast<int>(a_type), static_cast<int>(b_type),
           static_cast<int>(c_type), static_cast<int>(compute));
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  const float* al = static_cast<const float*>(alpha);
  const float* be = static_cast<const float*>(beta);
  auto run = [&](auto ab, auto c) {
    using TA = std::remove_const_t<std::remove_pointer_t<decltype(ab)>>;
    using TC = std::remove_pointer_t<decltype(c)>;
    return Gemm<TA, TC, float>(api, handle, ta, tb, m, n, k, al,
                               static_cast<const TA*>(A), lda, stride_a,
                               static_cast<const TA*>(B), ldb, stride_b, be,
                               static_cast<TC*>(C), ldc, stride_c, batch);
  };
  if (a_type == CUDA_R_32F)
    return run(static_cast<const float*>(nullptr),
               static_cast<float*>(nullptr));
  if (a_type == CUDA_R_16BF) {
    return c_type == CUDA_R_32F ? run(static_cast<const BHalf*>(nullptr),
                                      static_cast<float*>(nullptr))
                                : run(static_cast<const BHalf*>(nullptr),
                                      static_cast<BHalf*>(nullptr));
  }
  return c_type == CUDA_R_32F ? run(static_cast<const Half*>(nullptr),
                                    static_cast<float*>(nullptr))
                              : run(static_cast<const Half*>(nullptr),
                                    static_cast<Half*>(nullptr));
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
  return cuda_emu::Gemm<float, float, float>("cublasSgemm", handle, transa,
                                             transb, m, n, k, alpha, A, lda, 0,
                                             B, ldb, 0, beta, C, ldc, 0, 1);
}

cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k,
                           const double* alpha, const double* A, int lda,
                           const double* B, int ldb, const double* beta,
                           double* C, int ldc) {
  return cuda_emu::Gemm<double, double, double>(
      "cublasDgemm", handle, transa, transb, m, n, k, alpha, A, lda, 0, B, ldb,
      0, beta, C, ldc, 0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
    int m, int n, int k, const float* alpha, const float* A, int lda,
    long long int strideA, const float* B, int ldb, long long int strideB,
    const float* beta, float* C, int ldc, long long int strideC,
    int batchCount) {
  return cuda_emu::Gemm<float, float, float>(
      "cublasSgemmStridedBatched", handle, transa, transb, m, n, k, alpha, A,
      lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batchCount);
}

cublasStatus_t cublasDgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
    int m, int n, int k, const double* alpha, const double* A, int lda,
    long long int strideA, const double* B, int ldb, long long int strideB,
    const double* beta, double* C, int ldc, long long int strideC,
    int batchCount) {
  return cuda_emu::Gemm<double, double, double>(
      "cublasDgemmStridedBatched", handle, transa, transb, m, n, k, alpha, A,
      lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batchCount);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k,
                            const void* alpha, const void* A,
                            cudaDataType_t Atype, int lda, const void* B,
                            cudaDataType_t Btype, int ldb, const void* beta,
                            void* C, cudaDataType_t Ctype, int ldc,
                            cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo) {
  (void)algo;  // every algorithm computes the same sums here
  return cuda_emu::GemmEx("cublasGemmEx", handle, transa, transb, m, n, k,
                          alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C,
                          Ctype, ldc, 0, 1, computeType);
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
    int m, int n, int k, const void* alpha, const void* A, cudaDataType_t Atype,
    int lda, long long int strideA, const void* B, cudaDataType_t Btype,
    int ldb, long long int strideB, const void* beta, void* C,
    cudaDataType_t Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  (void)algo;
  return cuda_emu::GemmEx("cublasGemmStridedBatchedEx", handle, transa, transb,
                          m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
                          strideB, beta, C, Ctype, ldc, strideC, batchCount,
                          computeType);
}

}  // extern "C"
