// The threads a CPU kernel's parallel loops run on. With oneDNN (built on
// OpenMP) they run on the calling thread's OpenMP team, the threads
// oneDNN's products already run on, so that one set of threads serves
// both: with a pool of its own beside OpenMP's, each kind of thread waited
// for cores the other held (OpenMP's spin after each product), and bf16
// training at two threads ran no faster than at one. Without OpenMP the
// loops run on the context's Eigen pool.
#pragma once

#include <cstdint>
#include <functional>

#include "src/framework/device_context.h"

namespace fluid {

// Calls fn(begin, end) over [0, n) in at most dev.num_threads() contiguous
// chunks of at least `grain` items, in parallel, and returns when all are
// done. Chunk boundaries depend on n, grain and the thread count only.
// Inside another parallel loop it calls fn(0, n) on the calling thread.
// An exception from fn reaches the caller (the first one thrown), after
// every chunk has ended.
void RunOnTeam(const CPUDeviceContext& dev, int64_t n, int64_t grain,
               const std::function<void(int64_t, int64_t)>& fn);

// Whether RunOnTeam uses OpenMP ("openmp") or the Eigen pool ("eigen").
const char* CpuTeamKind();

}  // namespace fluid
