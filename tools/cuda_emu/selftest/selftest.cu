// Self-test of the CUDA emulation: launch syntax (rewritten), indices,
// barriers, shuffles, atomics, the misuse diagnostics, memory checks and
// cuBLAS against a naive column-major reference. Prints one line per failed
// check; exits non-zero when any failed.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

int failures = 0;

#define CHECK(cond)                                                 \
  do {                                                              \
    if (!(cond)) {                                                  \
      std::printf("FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                   \
    }                                                               \
  } while (0)

template <typename T>
T* DeviceAlloc(size_t n) {
  void* p = nullptr;
  CHECK(cudaMalloc(&p, n * sizeof(T)) == cudaSuccess);
  return static_cast<T*>(p);
}

template <typename T>
std::vector<T> ToHost(const T* d, size_t n) {
  std::vector<T> h(n);
  CHECK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost) ==
        cudaSuccess);
  return h;
}

template <typename T>
T* ToDevice(const std::vector<T>& h) {
  T* d = DeviceAlloc<T>(h.size());
  CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice) ==
        cudaSuccess);
  return d;
}

// ---- indices ----

__global__ void WriteIds(int64_t n, int64_t* out) {
  const int64_t threads = int64_t{blockDim.x} * blockDim.y;
  const int64_t t = threadIdx.y * blockDim.x + threadIdx.x;
  const int64_t b = blockIdx.y * int64_t{gridDim.x} + blockIdx.x;
  const int64_t i = b * threads + t;
  if (i < n) out[i] = i * 10 + (threadIdx.x + threadIdx.y);
}

void TestIndices(cudaStream_t stream) {
  const int64_t n = 3 * 2 * 8 * 4;
  int64_t* d = DeviceAlloc<int64_t>(n);
  WriteIds<<<dim3(3, 2), dim3(8, 4), 0, stream>>>(n, d);
  CHECK(cudaGetLastError() == cudaSuccess);
  std::vector<int64_t> h = ToHost(d, n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = i % 32;
    CHECK(h[i] == i * 10 + (t % 8) + (t / 8));
    if (h[i] != i * 10 + (t % 8) + (t / 8)) break;
  }
  cudaFree(d);
}

// ---- block reduction: shared memory, __syncthreads, shuffles ----

template <typename T>
__device__ T BlockSum(T v) {
  __shared__ T partial[32];
  __shared__ T result;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x + 31) / 32 ? partial[lane] : T(0);
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    if (lane == 0) result = v;
  }
  __syncthreads();
  T out = result;
  __syncthreads();
  return out;
}

template <typename T>
__global__ void RowSums(int64_t rows, int64_t cols, const T* x, T* out) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    T acc = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      acc += x[r * cols + c];
    acc = BlockSum(acc);
    if (threadIdx.x == 0) out[r] = acc;
    // Every thread got the sum.
    if (acc != BlockSum(T(0)) + acc) out[r] = -1;
  }
}

void TestReduction() {
  for (int threads : {32, 64, 256, 1024}) {
    const int64_t rows = 37, cols = 1000;
    std::vector<long long> h(rows * cols);
    for (size_t i = 0; i < h.size(); ++i) h[i] = (i * 7919) % 1001;
    long long* x = ToDevice(h);
    long long* out = DeviceAlloc<long long>(rows);
    RowSums<<<5, threads>>>(rows, cols, x, out);
    CHECK(cudaGetLastError() == cudaSuccess);
    std::vector<long long> got = ToHost(out, rows);
    for (int64_t r = 0; r < rows; ++r) {
      long long want = 0;
      for (int64_t c = 0; c < cols; ++c) want += h[r * cols + c];
      CHECK(got[r] == want);
    }
    cudaFree(x);
    cudaFree(out);
  }
}

// ---- shuffle semantics ----

__global__ void ShuffleDownBy(unsigned delta, int* out) {
  int v = static_cast<int>(threadIdx.x) * 3;
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, v, delta);
}

void TestShuffle() {
  int* d = DeviceAlloc<int>(64);
  for (unsigned delta : {1u, 5u, 16u, 31u}) {
    ShuffleDownBy<<<1, 64>>>(delta, d);
    CHECK(cudaGetLastError() == cudaSuccess);
    std::vector<int> h = ToHost(d, 64);
    for (int t = 0; t < 64; ++t) {
      const int lane = t % 32;
      const int src = lane + static_cast<int>(delta) < 32 ? t + int(delta) : t;
      CHECK(h[t] == src * 3);
    }
  }
  cudaFree(d);
}

// ---- atomics and the last-block pattern ----

__global__ void CountBlocks(unsigned* done, unsigned* last_seen) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(done, 1u) + 1 == gridDim.x;
  __syncthreads();
  if (last && threadIdx.x == 0) *last_seen = blockIdx.x + 1;
}

void TestAtomics() {
  unsigned* d = DeviceAlloc<unsigned>(2);
  CHECK(cudaMemset(d, 0, 2 * sizeof(unsigned)) == cudaSuccess);
  CountBlocks<<<100, 64>>>(d, d + 1);
  std::vector<unsigned> h = ToHost(d, 2);
  CHECK(h[0] == 100);
  CHECK(h[1] != 0);
  cudaFree(d);
}

// ---- misuse ----

__global__ void WritePastEnd(int n, float* p) {
  if (threadIdx.x == 0) p[n] = 1.0f;
}

__global__ void SplitWarp(int* out) {
  int v = threadIdx.x;
  if (threadIdx.x < 16) {
    v = __shfl_down_sync(0xffffffffu, v, 1);
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = v;
}

__global__ void Nothing() {}

void TestMisuse() {
  std::printf("(the cuda_emu diagnostics below are expected)\n");
  float* p = DeviceAlloc<float>(10);
  WritePastEnd<<<1, 32>>>(10, p);
  CHECK(cudaGetLastError() == cudaErrorIllegalAddress);
  CHECK(cudaGetLastError() == cudaSuccess);

  int* q = DeviceAlloc<int>(32);
  SplitWarp<<<1, 32>>>(q);
  CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
  Nothing<<<1, 32>>>();
  CHECK(cudaGetLastError() == cudaSuccess);

  Nothing<<<1, 2048>>>();
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  Nothing<<<dim3(1, 70000), 1>>>();
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);

  std::vector<float> h(10);
  CHECK(cudaMemcpy(p, h.data(), 11 * sizeof(float), cudaMemcpyHostToDevice) ==
        cudaErrorInvalidValue);
  CHECK(cudaMemcpy(h.data(), p, 4, cudaMemcpyHostToDevice) ==
        cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaSuccess);
  cudaFree(p);
  cudaFree(q);
}

// ---- memory ----

void TestMemory() {
  float* p = DeviceAlloc<float>(4);
  std::vector<float> h = ToHost(p, 4);
  CHECK(std::isnan(h[0]));  // new device memory is poisoned
  CHECK(cudaMemsetAsync(p, 0, 4 * sizeof(float), nullptr) == cudaSuccess);
  h = ToHost(p, 4);
  CHECK(h[3] == 0.0f);
  int n = 0;
  CHECK(cudaGetDeviceCount(&n) == cudaSuccess && n >= 1);
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) ==
        cudaSuccess);
  CHECK(sms >= 1);
  char bus[32];
  CHECK(cudaDeviceGetPCIBusId(bus, sizeof(bus), 0) == cudaSuccess);
  CHECK(std::strcmp(bus, "0000:00:00.0") == 0);
  CHECK(cudaSetDevice(n) == cudaErrorInvalidDevice);
  CHECK(cudaGetLastError() == cudaErrorInvalidDevice);
  cudaFree(p);
}

// ---- cuBLAS ----

template <typename T>
void RefGemm(bool ta, bool tb, int m, int n, int k, T alpha, const T* A,
             int lda, const T* B, int ldb, T beta, T* C, int ldc) {
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      long double s = 0;
      for (int l = 0; l < k; ++l) {
        const T a = ta ? A[l + i * lda] : A[i + l * lda];
        const T b = tb ? B[j + l * ldb] : B[l + j * ldb];
        s += static_cast<long double>(a) * b;
      }
      C[i + j * ldc] =
          beta == T(0) ? T(alpha * s) : T(alpha * s + beta * C[i + j * ldc]);
    }
}

cublasStatus_t CallGemm(cublasHandle_t h, cublasOperation_t ta,
                        cublasOperation_t tb, int m, int n, int k,
                        const double* al, const double* A, int lda,
                        long long sa, const double* B, int ldb, long long sb,
                        const double* be, double* C, int ldc, long long sc,
                        int batch) {
  if (batch == 1)
    return cublasDgemm(h, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc);
  return cublasDgemmStridedBatched(h, ta, tb, m, n, k, al, A, lda, sa, B, ldb,
                                   sb, be, C, ldc, sc, batch);
}
cublasStatus_t CallGemm(cublasHandle_t h, cublasOperation_t ta,
                        cublasOperation_t tb, int m, int n, int k,
                        const float* al, const float* A, int lda, long long sa,
                        const float* B, int ldb, long long sb, const float* be,
                        float* C, int ldc, long long sc, int batch) {
  if (batch == 1)
    return cublasSgemm(h, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc);
  return cublasSgemmStridedBatched(h, ta, tb, m, n, k, al, A, lda, sa, B, ldb,
                                   sb, be, C, ldc, sc, batch);
}

template <typename T>
void TestGemm(cublasHandle_t h) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  const double tol = sizeof(T) == 4 ? 1e-5 : 1e-13;
  for (int batch : {1, 3})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (T beta : {T(0), T(0.5)}) {
          const int m = 5, n = 7, k = 4, pad = 2;
          const int ar = ta ? k : m, ac = ta ? m : k;
          const int br = tb ? n : k, bc = tb ? k : n;
          const int lda = ar + pad, ldb = br + pad, ldc = m + pad;
          const long long sa = lda * ac, sb = ldb * bc, sc = ldc * n;
          std::vector<T> A(sa * batch), B(sb * batch), C(sc * batch);
          for (auto& v : A) v = T(u(rng));
          for (auto& v : B) v = T(u(rng));
          for (auto& v : C)
            v = beta == T(0) ? std::numeric_limits<T>::quiet_NaN() : T(u(rng));
          std::vector<T> want = C;
          const T alpha = T(-1.5);
          for (int b = 0; b < batch; ++b)
            RefGemm<T>(ta, tb, m, n, k, alpha, A.data() + b * sa, lda,
                       B.data() + b * sb, ldb, beta, want.data() + b * sc, ldc);
          T* dA = ToDevice(A);
          T* dB = ToDevice(B);
          T* dC = ToDevice(C);
          CHECK(CallGemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                         tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, dA,
                         lda, sa, dB, ldb, sb, &beta, dC, ldc, sc,
                         batch) == CUBLAS_STATUS_SUCCESS);
          std::vector<T> got = ToHost(dC, C.size());
          for (int b = 0; b < batch; ++b)
            for (int j = 0; j < n; ++j)
              for (int i = 0; i < m; ++i) {
                const size_t at = b * sc + i + j * ldc;
                CHECK(std::fabs(double(got[at]) - double(want[at])) <= tol);
              }
          // Padding rows of C are left alone.
          CHECK(std::memcmp(&got[m], &C[m], sizeof(T)) == 0 ||
                (std::isnan(double(got[m])) && std::isnan(double(C[m]))));
          // Leading dimensions below the rows are refused.
          CHECK(CallGemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                         tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, dA,
                         ar - 1, sa, dB, ldb, sb, &beta, dC, ldc, sc,
                         batch) == CUBLAS_STATUS_INVALID_VALUE);
          CHECK(CallGemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                         tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, dA,
                         lda, sa, dB, ldb, sb, &beta, dC, m - 1, sc,
                         batch) == CUBLAS_STATUS_INVALID_VALUE);
          cudaFree(dA);
          cudaFree(dB);
          cudaFree(dC);
        }
  // k = 0 has a zero leading dimension when A is transposed: refused.
  T one = 1, zero = 0;
  T* d = DeviceAlloc<T>(16);
  CHECK(CallGemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 0, &one, d, 0, 0, d, 1, 0,
                 &zero, d, 2, 0, 1) == CUBLAS_STATUS_INVALID_VALUE);
  // Host memory is refused.
  std::vector<T> host(16);
  CHECK(CallGemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, host.data(), 2, 0,
                 d, 2, 0, &zero, d + 8, 2, 0,
                 1) == CUBLAS_STATUS_EXECUTION_FAILED);
  cudaFree(d);
}

// cublasGemmEx: 16-bit operands (their bits), float compute, C of their
// type (rounded once, to nearest even) or float.
void TestGemmEx(cublasHandle_t h) {
  const float one = 1.0f, zero = 0.0f;
  // bf16: 1 + 2^-7 and 2^-9 against ones: the sum 1 + 2^-7 + 2^-9 is below
  // the half-way point, so bf16 C is 1 + 2^-7; float C keeps it all.
  const std::vector<uint16_t> bf_a = {0x3f81, 0x3b00}, bf_b = {0x3f80, 0x3f80};
  // fp16: 1, 2^-10 and 2^-12: fp16 C is 1 + 2^-10.
  const std::vector<uint16_t> h_a = {0x3c00, 0x1400, 0x0c00},
                              h_b = {0x3c00, 0x3c00, 0x3c00};
  struct Case {
    cudaDataType_t type;
    const std::vector<uint16_t>* a;
    const std::vector<uint16_t>* b;
    uint16_t want16;
    float want32;
  };
  const Case cases[] = {{CUDA_R_16BF, &bf_a, &bf_b, 0x3f81, 1.009765625f},
                        {CUDA_R_16F, &h_a, &h_b, 0x3c01, 1.001220703125f}};
  for (const Case& c : cases) {
    const int k = static_cast<int>(c.a->size());
    uint16_t* dA = ToDevice(*c.a);
    uint16_t* dB = ToDevice(*c.b);
    uint16_t* dC = DeviceAlloc<uint16_t>(2);
    float* dF = DeviceAlloc<float>(2);
    // Row k-vector times column k-vector: C [1, 1].
    CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, k, &one, dA, c.type,
                       1, dB, c.type, k, &zero, dC, c.type, 1,
                       CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    CHECK(ToHost(dC, 1)[0] == c.want16);
    CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, k, &one, dA, c.type,
                       1, dB, c.type, k, &zero, dF, CUDA_R_32F, 1,
                       CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    CHECK(ToHost(dF, 1)[0] == c.want32);
    // Two batch entries sharing A and B (stride 0), C one apart; beta = 1
    // adds to the float C.
    CHECK(cublasGemmStridedBatchedEx(
              h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, k, &one, dA, c.type, 1, 0, dB,
              c.type, k, 0, &one, dF, CUDA_R_32F, 1, 1, 2, CUBLAS_COMPUTE_32F,
              CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    CHECK(ToHost(dF, 2)[0] == 2 * c.want32);
    // Mixed 16-bit operand types are not emulated.
    const cudaDataType_t other =
        c.type == CUDA_R_16BF ? CUDA_R_16F : CUDA_R_16BF;
    CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, k, &one, dA, c.type,
                       1, dB, other, k, &zero, dC, c.type, 1,
                       CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_SUPPORTED);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    cudaFree(dF);
  }
}

void TestNccl() {
  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id) == ncclSuccess);
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, 2, id, 0) != ncclSuccess);
  CHECK(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess);
  double* d = ToDevice(std::vector<double>{1, 2, 3});
  double* e = DeviceAlloc<double>(3);
  CHECK(ncclAllReduce(d, d, 3, ncclFloat64, ncclSum, comm, nullptr) ==
        ncclSuccess);
  CHECK(ncclAllGather(d, e, 3, ncclFloat64, comm, nullptr) == ncclSuccess);
  CHECK(ToHost(e, 3)[2] == 3.0);
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
  cudaFree(d);
  cudaFree(e);
}

}  // namespace

int main() {
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream) == cudaSuccess);
  TestIndices(stream);
  TestReduction();
  TestShuffle();
  TestAtomics();
  TestMemory();
  TestMisuse();
  cublasHandle_t h;
  CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasSetStream(h, stream) == CUBLAS_STATUS_SUCCESS);
  TestGemm<float>(h);
  TestGemm<double>(h);
  TestGemmEx(h);
  CHECK(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS);
  TestNccl();
  CHECK(cudaStreamDestroy(stream) == cudaSuccess);
  std::printf("cuda_emu selftest: %s (%d failed checks)\n",
              failures == 0 ? "PASSED" : "FAILED", failures);
  return failures == 0 ? 0 : 1;
}
