// delete_var: frees the memory of every X (Fluid's delete_var). The vars
// stay in the scope, empty, so that the programs bound to them can write
// them again; a tensor that shares its buffer with others (a view) drops
// only its own hold on it. Parameter sharding (stage 3) frees a bucket's
// gathered parameters with it after their last reader in the forward pass
// and again after the backward pass, and a gradient bucket once its shard
// is reduce-scattered. Not differentiable.
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {
namespace {

void DeleteVarKernel(const ExecutionContext& ctx) {
  for (size_t i = 0; i < ctx.InputSize("X"); ++i) {
    Variable* v = ctx.InputVar("X", i);
    if (v != nullptr && v->IsTensor()) *v->GetMutableTensor() = Tensor();
  }
}

}  // namespace

REGISTER_OP(delete_var)
    .Doc("Frees the memory of every X; the vars stay, empty.")
    .DuplicableInput("X", "the vars to free")
    .AnyPlaceKernel(DeleteVarKernel);

}  // namespace ops
}  // namespace fluid
