// NCCL allreduce bandwidth in the nccl-tests convention: our c_allreduce op
// on a CUDA place (executor -> communicator -> NCCL) against ncclAllReduce
// called directly on its own communicator and stream, on the same bytes,
// 1 KiB to 256 MiB, float32 sum, interleaved per size. Each rank uses the
// GPU of its node-local rank.
//
//   mpirun -np N nccl_allreduce_bw [--iters N] [--max-mb M]
//
// algbw = bytes / time; busbw = algbw * 2 (n - 1) / n (0 for one rank,
// where the ratio of times still measures the op's overhead); #wrong counts
// elements that differ from the expected sum. Needs a GPU per rank.
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "benchmarks/bandwidth_table.h"
#include "src/distributed/global_communicator.h"
#include "src/framework/device.h"
#include "src/framework/executor.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"

namespace fluid {
namespace {

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

#define CHECK_CUDA(x)                                                     \
  do {                                                                    \
    cudaError_t rc = (x);                                                 \
    if (rc != cudaSuccess)                                                \
      FLUID_THROW(ErrorCode::kAborted, #x, ": ", cudaGetErrorString(rc)); \
  } while (0)
#define CHECK_NCCL(x)                                                     \
  do {                                                                    \
    ncclResult_t rc = (x);                                                \
    if (rc != ncclSuccess)                                                \
      FLUID_THROW(ErrorCode::kAborted, #x, ": ", ncclGetErrorString(rc)); \
  } while (0)

int64_t CountWrong(const float* device, int64_t count, float want) {
  std::vector<float> host(count);
  CHECK_CUDA(cudaMemcpy(host.data(), device, count * sizeof(float),
                        cudaMemcpyDeviceToHost));
  int64_t wrong = 0;
  for (float v : host) wrong += v != want;
  return wrong;
}

int Main(int argc, char** argv) {
  int iters = 20;
  double max_mb = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--iters")
      iters = std::stoi(argv[i + 1]);
    else if (k == "--max-mb")
      max_mb = std::stod(argv[i + 1]);
  }
  FLUID_ENFORCE_CODE(CudaDeviceCount() > 0, ErrorCode::kUnimplemented,
                     "nccl_allreduce_bw needs a CUDA device");
  const int device = LocalRankDevice();
  const Place place = Place::CUDA(device);
  Communicator* comm = GlobalCommunicator(place);
  const int n = comm->size(), rank = comm->rank();
  FLUID_ENFORCE(comm->backend_name() == "nccl", "the communicator fell back ",
                "to ", comm->backend_name(), " (ranks share a GPU?)");

  // The reference: a communicator and stream of its own.
  ncclUniqueId id;
  if (rank == 0) CHECK_NCCL(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  CHECK_CUDA(cudaSetDevice(device));
  ncclComm_t raw_comm;
  CHECK_NCCL(ncclCommInitRank(&raw_comm, n, id, rank));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  if (rank == 0) {
    std::printf(
        "# fluid c_allreduce on %s (NCCL) vs ncclAllReduce, %d "
        "rank(s), float32 sum\n",
        place.ToString().c_str(), n);
    bench::PrintBandwidthHeader();
  }
  const int64_t max_bytes = static_cast<int64_t>(max_mb * (1 << 20));
  for (int64_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
    const int64_t count = bytes / 4;
    proto::ProgramDesc p = NewProgram();
    AddVarDesc(p.mutable_blocks(0), "x", DataType::kFloat32, Shape{count},
               true);
    *p.mutable_blocks(0)->add_ops() =
        MakeOp("c_allreduce", {{"X", {"x"}}}, {{"Out", {"x"}}},
               {{"reduce_type", std::string("sum")}});
    Executor exe(place);
    exe.mutable_device_context()->set_communicator(comm);
    Scope scope;
    Tensor ones;
    float* op = ones.mutable_data<float>(Shape{count});
    std::fill(op, op + count, 1.0f);
    Tensor* x = scope.Var("x")->GetMutableTensor();
    auto prepared = exe.Prepare(p, &scope);
    float* raw = nullptr;
    CHECK_CUDA(cudaMalloc(&raw, bytes));
    const int reps =
        std::max(1, std::min(iters, static_cast<int>((4LL << 30) / bytes)));
    // Sums of ones stay exact: n^reps is small for the rank counts here.
    double want = 1;
    for (int r = 0; r < reps; ++r) want *= n;
    double t_op = 1e30, t_raw = 1e30;
    int64_t wrong_op = 0, wrong_raw = 0;
    for (int round = 0; round < 5; ++round) {
      x->CopyFrom(ones, place);
      comm->Barrier();
      double t = Now();
      for (int r = 0; r < reps; ++r) exe.Run(prepared.get());
      comm->Barrier();
      t_op = std::min(t_op, (Now() - t) / reps);
      wrong_op = CountWrong(x->data<float>(), count, float(want));

      CHECK_CUDA(
          cudaMemcpy(raw, ones.data<float>(), bytes, cudaMemcpyHostToDevice));
      MPI_Barrier(MPI_COMM_WORLD);
      t = Now();
      for (int r = 0; r < reps; ++r) {
        CHECK_NCCL(ncclAllReduce(raw, raw, count, ncclFloat32, ncclSum,
                                 raw_comm, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
      }
      MPI_Barrier(MPI_COMM_WORLD);
      t_raw = std::min(t_raw, (Now() - t) / reps);
      wrong_raw = CountWrong(raw, count, float(want));
    }
    CHECK_CUDA(cudaFree(raw));
    if (rank == 0)
      bench::PrintBandwidthRow(bytes, count, n, t_op, wrong_op, t_raw,
                               wrong_raw);
  }
  ncclCommDestroy(raw_comm);
  cudaStreamDestroy(stream);
  return 0;
}

}  // namespace
}  // namespace fluid

int main(int argc, char** argv) {
  int rc = 1;
  try {
    rc = fluid::Main(argc, argv);
  } catch (const fluid::Error& e) {
    std::fprintf(stderr, "nccl_allreduce_bw: error: %s\n", e.what());
  }
  fluid::ShutdownGlobalCommunicator();
  return rc;
}
