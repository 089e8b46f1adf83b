// What the collective ops share: finding the run's communicator.
#pragma once

#include "src/distributed/communicator.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

inline Communicator* CommunicatorOf(const ExecutionContext& ctx) {
  Communicator* comm = ctx.device_context().communicator();
  FLUID_ENFORCE_CODE(comm != nullptr, ErrorCode::kUnimplemented, "op '",
                     ctx.type(),
                     "' needs a communicator: run the job with MPIExecutor "
                     "or under mpirun");
  return comm;
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
