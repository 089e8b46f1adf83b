// shard_view: Out = a view (no copy) of this rank's block of X along dim 0,
// X holding `nranks` blocks. A sharded optimizer updates its block through
// the view, so a later c_allgather into X needs no copy out of the shard.
#include "ops/collective_helpers.h"

namespace fluid {
namespace ops {
namespace {

void ShardViewKernel(const ExecutionContext& ctx) {
  const int nranks = ctx.Attr<int32_t>("nranks");
  Communicator* comm = CommunicatorOf(ctx);
  CheckRanks(comm, nranks, "shard_view");
  const Tensor& x = ctx.Input("X");
  const int64_t block = x.shape()[0] / nranks;
  Tensor view = x.Slice(block * comm->rank(), block * (comm->rank() + 1));
  ctx.Output("Out")->ShareDataWith(view);
}

}  // namespace

REGISTER_OP(shard_view)
    .Doc("Out = a view (no copy) of this rank's block of X along dim 0.")
    .Input("X", "nranks blocks along dim 0")
    .Output("Out", "block rank of X, sharing its memory")
    .Attr<int32_t>("nranks", 1, "the number of ranks (blocks of X)")
    .InRange(1, kNoUpperBound)
    .Attr<int32_t>("ring_id", 0, RingIdDoc())
    .SetInferShape([](InferShapeContext* ctx) {
      BlockInferShape(ctx, "shard_view");
    })
    .AnyPlaceKernel(ShardViewKernel);

}  // namespace ops
}  // namespace fluid
