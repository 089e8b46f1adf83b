#include "src/framework/cpu_team.h"

#include <algorithm>
#include <exception>
#include <mutex>

#ifdef _OPENMP
#include <omp.h>
#else
#include <unsupported/Eigen/CXX11/Tensor>
#endif

namespace fluid {

void RunOnTeam(const CPUDeviceContext& dev, int64_t n, int64_t grain,
               const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks =
      std::min<int64_t>(dev.num_threads(), (n + grain - 1) / grain);
  // Chunk t of `chunks`; the first exception a chunk throws is kept and
  // rethrown on the calling thread once every chunk has ended (one leaving
  // a thread of the team would end the process).
  std::exception_ptr error;
  std::mutex error_mu;
  auto run_chunk = [&](int64_t t) {
    const int64_t b = n * t / chunks;
    const int64_t e = n * (t + 1) / chunks;
    if (b >= e) return;
    try {
      fn(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!error) error = std::current_exception();
    }
  };
#ifdef _OPENMP
  if (chunks <= 1 || omp_in_parallel()) {
    fn(0, n);
    return;
  }
  const int team = static_cast<int>(chunks);
#pragma omp parallel num_threads(team)
  {
    // The team may be smaller than asked (OMP_THREAD_LIMIT): its members
    // share the chunks, whose bounds stay those of `chunks`.
    for (int64_t t = omp_get_thread_num(); t < chunks;
         t += omp_get_num_threads())
      run_chunk(t);
  }
#else
  if (chunks <= 1 || dev.eigen_device() == nullptr) {
    fn(0, n);
    return;
  }
  Eigen::Barrier done(static_cast<unsigned>(chunks - 1));
  for (int64_t t = 1; t < chunks; ++t)
    dev.eigen_device()->enqueue_with_barrier(&done, run_chunk, t);
  run_chunk(0);  // the caller takes the first chunk
  done.Wait();
#endif
  if (error) std::rethrow_exception(error);
}

const char* CpuTeamKind() {
#ifdef _OPENMP
  return "openmp";
#else
  return "eigen";
#endif
}

}  // namespace fluid
