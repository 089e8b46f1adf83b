// What the collective ops share: finding the run's communicator.
#pragma once

#include "src/distributed/communicator.h"
#include "src/distributed/launcher.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

inline Communicator* CommunicatorOf(const ExecutionContext& ctx) {
  Communicator* comm = ctx.device_context().communicator();
  if (comm != nullptr) return comm;
  // Under a launcher already: the executor is the thing to change.
  if (LauncherWorldSize() > 1)
    FLUID_THROW(ErrorCode::kUnimplemented,
                "this op needs a communicator, and this plain executor has "
                "none although the process is rank ",
                LauncherRank(), " of ", LauncherWorldSize(),
                ": run the program with MPIExecutor "
                "(Python: fluid.MPIExecutor; C++: fluid::MPIExecutor)");
  FLUID_THROW(ErrorCode::kUnimplemented,
              "this op needs a communicator: run the program with "
              "MPIExecutor, under mpirun");
}

// With a Handle output the collective is left in flight for a later c_wait;
// without one the op waits for it here.
inline void HandOffOrWait(const ExecutionContext& ctx, CommHandlePtr handle) {
  if (ctx.HasOutput("Handle")) {
    *ctx.OutputVar("Handle")->GetMutable<CommHandlePtr>() = std::move(handle);
  } else {
    handle->Wait();
  }
}

// Out is normally X itself (in place); otherwise X is copied into Out first.
inline Tensor* InPlaceOutput(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  if (out != &x) out->CopyFrom(x);
  return out;
}

}  // namespace ops
}  // namespace fluid
