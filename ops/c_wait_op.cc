// c_wait: blocks until the collective behind Handle has finished; Out (the
// tensor that collective writes) is then complete. A receive's (recv_v2
// with a Handle) tensor is put in Out here.
#include <chrono>

#include "ops/collective_helpers.h"

namespace fluid {
namespace ops {
namespace {

void WaitKernel(const ExecutionContext& ctx) {
  Variable* var = ctx.InputVar("Handle");
  // A handle that lives across runs holds nothing on the first run, or
  // after whatever read the parameters between runs waited for it.
  const bool idle_ok = ctx.Attr<bool>("idle_ok");
  if (idle_ok &&
      (!var->HasValue() || *var->GetMutable<CommHandlePtr>() == nullptr))
    return;
  FLUID_ENFORCE(var->HasValue(), "c_wait: handle '", ctx.InputName("Handle"),
                "' holds no collective: no c_allreduce was issued for it");
  CommHandlePtr& handle = *var->GetMutable<CommHandlePtr>();
  FLUID_ENFORCE(handle != nullptr, "c_wait: handle '", ctx.InputName("Handle"),
                "' was already waited for");
  CommHandlePtr h = std::move(handle);
  handle.reset();
  const auto start = std::chrono::steady_clock::now();
  h->Wait();
  // A receive's tensor (recv_v2 with a Handle) goes in Out now.
  if (h->received() != nullptr && ctx.HasOutput("Out"))
    *ctx.Output("Out") = std::move(*h->received());
  CommunicatorOf(ctx)->AddExposedWait(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now() - start)
          .count());
}

}  // namespace

REGISTER_OP(c_wait)
    .Doc("Waits for an asynchronous collective to finish.")
    .Input("Handle", "the collective to wait for")
    .OptionalOutput("Out", "the tensor the collective writes")
    .Attr<bool>("idle_ok", false,
                "no collective in flight on Handle is fine (a handle kept "
                "across runs: the previous run's gather)")
    .AnyPlaceKernel(WaitKernel);

}  // namespace ops
}  // namespace fluid
