// What the CPU and CUDA kernels of batch_norm share: the layout of X, the
// attrs, and the exchange of per-channel sums with the other ranks when the
// statistics are synchronised (sync_stats). Defined once, in
// batch_norm_op.cc, so the CUDA sources need not include the communicator.
//
// Free of Eigen: the CUDA kernels include it.
#pragma once

#include <cstdint>

#include "src/framework/operator.h"

namespace fluid {

class Communicator;

namespace ops {

// X viewed as [n, c, hw]: NCHW images or [N, C] rows (hw = 1).
struct BatchNormDims {
  int64_t n, c, hw;
  int64_t per_channel() const { return n * hw; }
};
BatchNormDims BatchNormDimsOf(const Shape& x);

// Whether the kernel normalises with the running statistics (is_test or
// use_global_stats) instead of the batch's.
bool UsesGlobalStats(const ExecutionContext& ctx);

// The communicator the batch statistics are reduced over: null unless
// sync_stats is set and the run has more than one rank.
Communicator* StatsCommunicator(const ExecutionContext& ctx);

// The number of ranks of `comm`; 1 when it is null.
int RankCount(Communicator* comm);

// The number of values each channel's statistics cover: `local` summed over
// the ranks of `comm` (or `local` itself when comm is null).
int64_t GlobalCount(Communicator* comm, int64_t local);

// Sums `t` (host or device memory of this kernel's place) over the ranks of
// `comm`, in place; nothing when comm is null.
void SumOverRanks(const ExecutionContext& ctx, Communicator* comm, Tensor* t);

}  // namespace ops
}  // namespace fluid
