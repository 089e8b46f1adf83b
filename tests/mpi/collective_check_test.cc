// A collective issued on some ranks only, under mpirun: the collective
// check (src/distributed/communicator.h) fails it at once on every rank,
// naming each rank's collective, where the ranks used to wait in
// mismatched collectives until the stall watchdog ended the job (300 s by
// default; 120 s here). One scenario per process, since a mismatch leaves
// the process's communicator stopped:
//
//   mpirun -np N collective_check_test kinds|thread FLIGHT_DIR
//
// kinds:  rank 0 gathers a value (allgather int64 x 1) where the other
//         ranks average a gradient (allreduce(avg) float32 x 4096);
// thread: rank 0 issues that gather from a second thread while its main
//         thread trains (allreduces), as a check_consistency() on another
//         thread would.
//
// Every rank must get the error (exit 0 when it did, 1 when not) and leave
// its flight recorder, stamped with the job and the mismatch.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "src/distributed/global_communicator.h"
#include "src/distributed/stall_watchdog.h"

namespace fluid {
namespace {

Tensor Gradient(int64_t n, float value) {
  Tensor t(DataType::kFloat32, Shape{n});
  float* p = static_cast<float*>(t.raw_mutable_data());
  for (int64_t i = 0; i < n; ++i) p[i] = value;
  return t;
}

// The error of `collective` (empty: none).
template <typename Fn>
std::string ErrorOf(Fn collective) {
  try {
    collective();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

int Fail(int rank, const std::string& why) {
  std::fprintf(stderr, "collective_check_test: rank %d: FAILED: %s\n", rank,
               why.c_str());
  return 1;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int Run(const std::string& scenario, const std::string& flight_dir) {
  Communicator* comm = GlobalCommunicator();
  const int rank = comm->rank(), size = comm->size();
  if (size < 2) return Fail(rank, "needs at least 2 ranks");
  // The stall watchdog would end a hang after 120 s; the check must not
  // need it.
  comm->ConfigureStallWatchdog(StallConfig{60, 120});
  comm->flight_recorder()->SetDumpPath(flight_dir, rank, size);

  const auto start = std::chrono::steady_clock::now();
  std::string error, side_error;
  if (scenario == "kinds") {
    error = ErrorOf([&] {
      if (rank == 0) {
        comm->AllGatherValue(1);
      } else {
        comm->AllReduce(Gradient(4096, 1), ReduceOp::kAvg);
      }
    });
  } else if (scenario == "thread") {
    std::thread side;
    for (int step = 0; step < 100000 && error.empty(); ++step) {
      if (rank == 0 && step == 5) {
        const int64_t issued = comm->flight_recorder()->issued();
        side = std::thread(
            [&] { side_error = ErrorOf([&] { comm->AllGatherValue(1); }); });
        while (comm->flight_recorder()->issued() == issued)
          std::this_thread::yield();
      }
      error = ErrorOf(
          [&] { comm->AllReduce(Gradient(4096, step), ReduceOp::kAvg); });
    }
    if (side.joinable()) side.join();
    if (rank == 0) {
      if (!Has(side_error, "differs across ranks: rank 0 allgather int64 x 1"))
        return Fail(rank, "the other thread's gather got: " + side_error);
      if (!Has(error, "not run: the ranks' collectives no longer match"))
        return Fail(rank, "the main thread got: " + error);
    }
  } else {
    return Fail(rank, "unknown scenario '" + scenario + "'");
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const std::string others = size == 2 ? "rank 1" : FormatRankList([&] {
    std::vector<int> r;
    for (int i = 1; i < size; ++i) r.push_back(i);
    return r;
  }());
  if (!Has(error, "differs across ranks: rank 0 allgather int64 x 1, " +
                      others + " allreduce(avg) float32 x 4096"))
    return Fail(rank, "expected an error naming both collectives, got: '" +
                          error + "'");
  // Well before the stall timeout (120 s): the check, not the watchdog.
  if (took > 60) return Fail(rank, "took " + std::to_string(took) + " s");
  std::ifstream in(flight_dir + "/flight-rank-" + std::to_string(rank) +
                   ".txt");
  std::stringstream text;
  text << in.rdbuf();
  // This job's file (the directory may hold an earlier run's).
  const char* job = std::getenv("PMIX_NAMESPACE");
  if (job == nullptr) job = std::getenv("OMPI_MCA_ess_base_jobid");
  if (!Has(text.str(), "\njob " + std::string(job ? job : "")) ||
      !Has(text.str(), "\nreason collective mismatch: collective #"))
    return Fail(rank, "flight recorder file: " + text.str());
  std::fprintf(stderr, "collective_check_test: rank %d: ok in %.1f s: %s\n",
               rank, took, error.c_str());
  return 0;
}

}  // namespace
}  // namespace fluid

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr,
                 "usage: collective_check_test kinds|thread FLIGHT_DIR\n");
    return 2;
  }
  int rc = 1;
  try {
    rc = fluid::Run(argv[1], argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collective_check_test: %s\n", e.what());
  }
  fluid::ShutdownGlobalCommunicator();
  return rc;
}
