// c_wait: blocks until the collective behind Handle has finished; Out (the
// tensor that collective writes) is then complete.
#include "ops/collective_helpers.h"

namespace fluid {
namespace ops {
namespace {

void WaitKernel(const ExecutionContext& ctx) {
  Variable* var = ctx.InputVar("Handle");
  FLUID_ENFORCE(var->HasValue(), "c_wait: handle '", ctx.InputName("Handle"),
                "' holds no collective: no c_allreduce was issued for it");
  CommHandlePtr& handle = *var->GetMutable<CommHandlePtr>();
  FLUID_ENFORCE(handle != nullptr, "c_wait: handle '", ctx.InputName("Handle"),
                "' was already waited for");
  CommHandlePtr h = std::move(handle);
  handle.reset();
  h->Wait();
}

}  // namespace

REGISTER_OP(c_wait)
    .Doc("Waits for an asynchronous collective to finish.")
    .Input("Handle", "the collective to wait for")
    .OptionalOutput("Out", "the tensor the collective writes")
    .AnyDtypeKernel(WaitKernel);

}  // namespace ops
}  // namespace fluid
