// What the collective ops share: finding the run's communicator (or the
// ring of it the op names), checking the rank count a program was planned
// for, the shape of one rank's block.
#pragma once

#include <string>

#include "src/distributed/communicator.h"
#include "src/distributed/launcher.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// The doc of every collective op's `ring_id` attr.
inline const char* RingIdDoc() {
  return "the ranks it runs over: 0 all of them, r > 0 the group made as "
         "ring r (Communicator::CreateGroup)";
}

// The communicator the op runs over: the run's, or, for an op with a
// `ring_id` attr, that ring of it (0: the run's itself).
inline Communicator* CommunicatorOf(const ExecutionContext& ctx) {
  Communicator* comm = ctx.device_context().communicator();
  if (comm != nullptr) {
    if (ctx.op().attrs().count("ring_id") == 0) return comm;
    return comm->Group(ctx.Attr<int32_t>("ring_id"));
  }
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

// The program was transpiled for `nranks` ranks (of the op's ring);
// running it on another count would split tensors into the wrong number of
// blocks.
inline void CheckRanks(Communicator* comm, int nranks, const char* op) {
  FLUID_ENFORCE(comm->size() == nranks, op, " was planned for ", nranks,
                " ranks and runs on ", comm->size());
}

// X's shape with dim 0 divided by nranks (one rank's block).
inline Shape BlockShape(const Shape& x, int nranks, const char* op) {
  FLUID_ENFORCE(nranks >= 1, op, ": nranks must be >= 1, got ", nranks);
  FLUID_ENFORCE(x.rank() >= 1, op, ": X must have at least one dim");
  Shape out = x;
  if (x[0] >= 0) {
    FLUID_ENFORCE(x[0] % nranks == 0, op, ": dim 0 of X (", x[0],
                  ") is not a multiple of nranks (", nranks, ")");
    out[0] = x[0] / nranks;
  }
  return out;
}

// Out = one block of X along dim 0, same dtype.
inline void BlockInferShape(InferShapeContext* ctx, const char* op) {
  Shape out =
      BlockShape(ctx->GetInputShape("X"), ctx->Attr<int32_t>("nranks"), op);
  ctx->SetOutputShape("Out", out);
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
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
