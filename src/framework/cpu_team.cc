#include "src/framework/cpu_team.h"

#include <algorithm>

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
#ifdef _OPENMP
  if (chunks <= 1 || omp_in_parallel()) {
    fn(0, n);
    return;
  }
#pragma omp parallel num_threads(static_cast <int>(chunks))
  {
    // The team may be smaller than asked (OMP_THREAD_LIMIT): each member
    // takes its share of what the team has.
    const int64_t t = omp_get_thread_num();
    const int64_t c = omp_get_num_threads();
    const int64_t b = n * t / c;
    const int64_t e = n * (t + 1) / c;
    if (b < e) fn(b, e);
  }
#else
  if (chunks <= 1 || dev.eigen_device() == nullptr) {
    fn(0, n);
    return;
  }
  auto chunk = [&](int64_t t) {
    const int64_t b = n * t / chunks;
    const int64_t e = n * (t + 1) / chunks;
    if (b < e) fn(b, e);
  };
  Eigen::Barrier done(static_cast<unsigned>(chunks - 1));
  for (int64_t t = 1; t < chunks; ++t)
    dev.eigen_device()->enqueue_with_barrier(&done, chunk, t);
  chunk(0);  // the caller takes the first chunk
  done.Wait();
#endif
}

const char* CpuTeamKind() {
#ifdef _OPENMP
  return "openmp";
#else
  return "eigen";
#endif
}

}  // namespace fluid
