#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace cuda {
namespace {

cublasOperation_t Op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

// cuBLAS is column-major: a row-major C = A B is the column-major
// C^T = B^T A^T, so the operands swap and m, n trade places.
cublasStatus_t GemmCall(cublasHandle_t h, bool ta, bool tb, int m, int n, int k,
                        const float* alpha, const float* a, const float* b,
                        const float* beta, float* c) {
  return cublasSgemm(h, Op(tb), Op(ta), n, m, k, alpha, b, tb ? k : n, a,
                     ta ? m : k, beta, c, n);
}
cublasStatus_t GemmCall(cublasHandle_t h, bool ta, bool tb, int m, int n, int k,
                        const double* alpha, const double* a, const double* b,
                        const double* beta, double* c) {
  return cublasDgemm(h, Op(tb), Op(ta), n, m, k, alpha, b, tb ? k : n, a,
                     ta ? m : k, beta, c, n);
}
cublasStatus_t BatchedCall(cublasHandle_t h, bool ta, bool tb, int m, int n,
                           int k, const float* alpha, const float* a,
                           long long sa, const float* b, long long sb,
                           const float* beta, float* c, long long sc,
                           int batch) {
  return cublasSgemmStridedBatched(h, Op(tb), Op(ta), n, m, k, alpha, b,
                                   tb ? k : n, sb, a, ta ? m : k, sa, beta, c,
                                   n, sc, batch);
}
cublasStatus_t BatchedCall(cublasHandle_t h, bool ta, bool tb, int m, int n,
                           int k, const double* alpha, const double* a,
                           long long sa, const double* b, long long sb,
                           const double* beta, double* c, long long sc,
                           int batch) {
  return cublasDgemmStridedBatched(h, Op(tb), Op(ta), n, m, k, alpha, b,
                                   tb ? k : n, sb, a, ta ? m : k, sa, beta, c,
                                   n, sc, batch);
}

void CheckDims(int64_t m, int64_t n, int64_t k) {
  const int64_t limit = INT32_MAX;
  FLUID_ENFORCE(m <= limit && n <= limit && k <= limit, "GEMM dimensions [", m,
                ", ", n, ", ", k, "] exceed cuBLAS's 32-bit limit");
}

template <typename T>
void GemmImpl(const CUDADeviceContext& dev, bool ta, bool tb, int64_t m,
              int64_t n, int64_t k, T alpha, const T* a, const T* b, T beta,
              T* c) {
  if (m == 0 || n == 0) return;
  CheckDims(m, n, k);
  FLUID_CUBLAS_CHECK(GemmCall(dev.cublas(), ta, tb, int(m), int(n), int(k),
                              &alpha, a, b, &beta, c));
}

template <typename T>
void BatchedImpl(const CUDADeviceContext& dev, bool ta, bool tb, int64_t batch,
                 int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                 int64_t sa, const T* b, int64_t sb, T beta, T* c, int64_t sc) {
  if (batch == 0 || m == 0 || n == 0) return;
  CheckDims(m, n, k);
  FLUID_ENFORCE(batch <= INT32_MAX, "GEMM batch ", batch, " too large");
  FLUID_CUBLAS_CHECK(BatchedCall(dev.cublas(), ta, tb, int(m), int(n), int(k),
                                 &alpha, a, sa, b, sb, &beta, c, sc,
                                 int(batch)));
}

}  // namespace

void Gemm(const CUDADeviceContext& dev, bool ta, bool tb, int64_t m, int64_t n,
          int64_t k, float alpha, const float* a, const float* b, float beta,
          float* c) {
  GemmImpl(dev, ta, tb, m, n, k, alpha, a, b, beta, c);
}
void Gemm(const CUDADeviceContext& dev, bool ta, bool tb, int64_t m, int64_t n,
          int64_t k, double alpha, const double* a, const double* b,
          double beta, double* c) {
  GemmImpl(dev, ta, tb, m, n, k, alpha, a, b, beta, c);
}
void BatchedGemm(const CUDADeviceContext& dev, bool ta, bool tb, int64_t batch,
                 int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t sa, const float* b, int64_t sb, float beta, float* c,
                 int64_t sc) {
  BatchedImpl(dev, ta, tb, batch, m, n, k, alpha, a, sa, b, sb, beta, c, sc);
}
void BatchedGemm(const CUDADeviceContext& dev, bool ta, bool tb, int64_t batch,
                 int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                 int64_t sa, const double* b, int64_t sb, double beta,
                 double* c, int64_t sc) {
  BatchedImpl(dev, ta, tb, batch, m, n, k, alpha, a, sa, b, sb, beta, c, sc);
}

void CopyAsync(const CUDADeviceContext& dev, void* dst, const void* src,
               size_t bytes) {
  if (bytes == 0 || dst == src) return;
  FLUID_CUDA_CHECK(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, dev.stream()));
}

void ZeroAsync(const CUDADeviceContext& dev, void* dst, size_t bytes) {
  if (bytes == 0) return;
  FLUID_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, dev.stream()));
}

}  // namespace cuda
}  // namespace ops
}  // namespace fluid
