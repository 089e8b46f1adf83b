// Allreduce bandwidth in the nccl-tests convention: our c_allreduce op run
// through the executor against raw MPI_Allreduce on the same bytes, 4 B to
// 64 MiB, float32 sum, interleaved per size.
//
//   mpirun -np 2 allreduce_bw [--iters N] [--max-mb M] [--allreduce
//   flat|hier|auto] [--compression none|bf16|fp16]
//
// algbw = bytes / time; busbw = algbw * 2 (n - 1) / n; #wrong counts
// elements that differ from the expected sum. With --compression the op's
// values travel as 16-bit values (gradient compression) and it averages
// (sums of ones would overflow fp16); bytes stay the float32 bytes, so the
// columns show what compression buys against raw float32 MPI.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "benchmarks/bandwidth_table.h"
#include "src/distributed/global_communicator.h"
#include "src/distributed/topology.h"
#include "src/framework/executor.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "src/framework/wire_format.h"

namespace fluid {
namespace {

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int Main(int argc, char** argv) {
  int iters = 20;
  double max_mb = 64;
  std::string allreduce = "flat";
  std::string compression = "none";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--iters")
      iters = std::stoi(argv[i + 1]);
    else if (k == "--max-mb")
      max_mb = std::stod(argv[i + 1]);
    else if (k == "--allreduce")
      allreduce = argv[i + 1];
    else if (k == "--compression")
      compression = argv[i + 1];
  }
  const bool compressed = ParseWireFormat(compression) != WireFormat::kNative;
  Communicator* comm = GlobalCommunicator();
  const int n = comm->size(), rank = comm->rank();
  const Topology topology = GatherTopology(comm);
  comm->SetAllReduceAlgorithm(ChooseAllReduce(allreduce, topology));
  if (rank == 0) {
    std::printf(
        "# fluid c_allreduce (executor, %s, compression %s) vs "
        "MPI_Allreduce, %d ranks on %s, float32 sum\n",
        AllReduceAlgorithmName(comm->allreduce_algorithm()),
        compression.c_str(), n, topology.Describe().c_str());
    bench::PrintBandwidthHeader();
  }
  const int64_t max_bytes = static_cast<int64_t>(max_mb * (1 << 20));
  for (int64_t bytes = 4; bytes <= max_bytes; bytes *= 4) {
    const int64_t count = bytes / 4;
    // The op: a one-op program on a [count] tensor, in place.
    proto::ProgramDesc p = NewProgram();
    AddVarDesc(p.mutable_blocks(0), "x", DataType::kFloat32, Shape{count},
               true);
    *p.mutable_blocks(0)->add_ops() =
        MakeOp("c_allreduce", {{"X", {"x"}}}, {{"Out", {"x"}}},
               {{"reduce_type", std::string(compressed ? "avg" : "sum")},
                {"compression", compression}});
    Executor exe;
    exe.mutable_device_context()->set_communicator(comm);
    Scope scope;
    Tensor* x = scope.Var("x")->GetMutableTensor();
    float* xp = x->mutable_data<float>(Shape{count});
    auto prepared = exe.Prepare(p, &scope);
    std::vector<float> raw(count);
    const int reps =
        std::max(1, std::min(iters, static_cast<int>((256 << 20) / bytes)));
    double t_op = 1e30, t_raw = 1e30;
    int64_t wrong_op = 0, wrong_raw = 0;
    // Interleaved rounds; the best round of each counts (least noise).
    for (int round = 0; round < 5; ++round) {
      std::fill(xp, xp + count, 1.0f);
      comm->Barrier();
      double t = Now();
      for (int r = 0; r < reps; ++r) exe.Run(prepared.get());
      comm->Barrier();
      t_op = std::min(t_op, (Now() - t) / reps);
      // After reps sums of all-ones: n^reps per element (averages: 1).
      double want = 1;
      for (int r = 0; r < reps; ++r) want *= n;
      const float want_op = compressed ? 1.0f : static_cast<float>(want);
      wrong_op = 0;
      for (int64_t i = 0; i < count; ++i) wrong_op += xp[i] != want_op;

      std::fill(raw.begin(), raw.end(), 1.0f);
      MPI_Barrier(MPI_COMM_WORLD);
      t = Now();
      for (int r = 0; r < reps; ++r)
        MPI_Allreduce(MPI_IN_PLACE, raw.data(), static_cast<int>(count),
                      MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      t_raw = std::min(t_raw, (Now() - t) / reps);
      wrong_raw = 0;
      for (int64_t i = 0; i < count; ++i) wrong_raw += raw[i] != float(want);
    }
    if (rank == 0)
      bench::PrintBandwidthRow(bytes, count, n, t_op, wrong_op, t_raw,
                               wrong_raw);
  }
  return 0;
}

}  // namespace
}  // namespace fluid

int main(int argc, char** argv) {
  int rc = fluid::Main(argc, argv);
  fluid::ShutdownGlobalCommunicator();
  return rc;
}
