#include "ops/sequence_helpers.h"

namespace fluid {
namespace ops {

LoD SequenceInputLoD(InferShapeContext* ctx, const std::string& slot) {
  if (!ctx->IsRuntime()) return {};
  LoD lod = ctx->InputLoD(slot);
  FLUID_ENFORCE(!lod.empty(), ctx->op_type(), ": ", slot, " ",
                Quote(ctx->InputName(slot)),
                " carries no sequence offsets (LoD): it must be a batch of "
                "sequences (declare the data with lod_level=1 and feed a LoD "
                "tensor, or compute it from one)");
  const Shape s = ctx->GetInputShape(slot);
  FLUID_ENFORCE(s.rank() >= 1, ctx->op_type(), ": ", slot, " ",
                Quote(ctx->InputName(slot)), " is a scalar");
  CheckLoD(lod, s[0],
           ctx->op_type() + ": " + slot + " " + Quote(ctx->InputName(slot)));
  return lod;
}

int64_t RowWidth(const Shape& s) {
  return s.rank() <= 1 ? 1 : s.Product(1, s.rank());
}

}  // namespace ops
}  // namespace fluid
