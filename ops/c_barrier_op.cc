// c_barrier: returns when every rank has reached it.
#include "ops/collective_helpers.h"

namespace fluid {
namespace ops {
namespace {

void BarrierKernel(const ExecutionContext& ctx) {
  CommunicatorOf(ctx)->Barrier();
}

}  // namespace

REGISTER_OP(c_barrier)
    .Doc("Blocks until every rank has reached it.")
    .Attr<int32_t>("ring_id", 0, RingIdDoc())
    .InRange(0, kNoUpperBound)
    .AnyPlaceKernel(BarrierKernel);

}  // namespace ops
}  // namespace fluid
