#include "ops/recurrent_helpers.h"

#include <algorithm>
#include <numeric>

#include "src/framework/enforce.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

RecurrentAct ParseRecurrentAct(const std::string& op, const std::string& attr,
                               const std::string& value) {
  if (value == "sigmoid") return RecurrentAct::kSigmoid;
  if (value == "tanh") return RecurrentAct::kTanh;
  if (value == "relu") return RecurrentAct::kRelu;
  if (value == "identity") return RecurrentAct::kIdentity;
  FLUID_THROW(ErrorCode::kInvalidArgument, op, ": attr '", attr, "' is '",
              value, "'; expected sigmoid, tanh, relu or identity");
}

void CheckRecurrentState(InferShapeContext* ctx, const std::string& slot,
                         int64_t width, const LoD& lod) {
  if (!ctx->HasInput(slot)) return;
  const Shape s = ctx->GetInputShape(slot);
  const bool rows_ok =
      !ctx->IsRuntime() || (s.rank() >= 1 && s[0] == LoDCount(lod));
  FLUID_ENFORCE(
      s.rank() == 2 && (s[1] < 0 || width < 0 || s[1] == width) && rows_ok,
      ctx->op_type(), ": ", slot, " ", Quote(ctx->InputName(slot)),
      " has shape ", s, "; it must be [sequences, ", width,
      "] (one row per sequence of the input, offsets ", LoDToString(lod), ")");
}

DataType RecurrentComputeDtype(InferShapeContext* ctx,
                               const std::vector<std::string>& same,
                               const std::vector<std::string>& float32) {
  const DataType x = ctx->GetInputDtype("Input");
  const DataType compute = IsHalfDtype(x) ? DataType::kFloat32 : x;
  auto check = [&](const std::string& slot, DataType want) {
    if (!ctx->HasInput(slot)) return;
    const DataType got = ctx->GetInputDtype(slot);
    FLUID_ENFORCE(got == want, ctx->op_type(), ": ", slot, " ",
                  Quote(ctx->InputName(slot)), " is ", DataTypeName(got),
                  " but must be ", DataTypeName(want), " for Input ",
                  Quote(ctx->InputName("Input")), " of ", DataTypeName(x),
                  IsHalfDtype(x) ? " (16-bit kernels keep their state and "
                                   "bias in float32)"
                                 : "");
  };
  for (const std::string& slot : same) check(slot, x);
  for (const std::string& slot : float32) check(slot, compute);
  return compute;
}

const BatchLayout& ThreadBatchLayout(const ExecutionContext& ctx,
                                     const LoD& lod, bool reverse) {
  thread_local BatchLayout l;
  l.count = LoDCount(lod);
  l.steps = 0;
  l.total = 0;
  auto len = [&lod](int64_t s) { return lod[s + 1] - lod[s]; };
  for (int64_t i = 0; i < l.count; ++i) {
    FLUID_ENFORCE(
        len(i) > 0, ctx.type(), ": Input ", Quote(ctx.InputName("Input")),
        " holds an empty sequence (sequence ", i, " of offsets ",
        LoDToString(lod), "): every sequence must have at least one row");
    l.steps = std::max(l.steps, len(i));
    l.total += len(i);
  }
  // index = offsets (steps + 1) | order (count) | rows (total).
  l.index.resize(l.steps + 1 + l.count + l.total);
  int64_t* offsets = l.index.data();
  int64_t* order = offsets + l.steps + 1;
  int64_t* rows = order + l.count;
  std::iota(order, order + l.count, int64_t{0});
  std::stable_sort(order, order + l.count,
                   [&len](int64_t a, int64_t b) { return len(a) > len(b); });
  offsets[0] = 0;
  int64_t running = l.count;
  for (int64_t t = 0; t < l.steps; ++t) {
    while (running > 0 && len(order[running - 1]) <= t) --running;
    offsets[t + 1] = offsets[t] + running;
  }
  for (int64_t t = 0; t < l.steps; ++t) {
    for (int64_t k = 0; k < l.Rows(t); ++k) {
      const int64_t s = order[k];
      *rows++ = lod[s] + (reverse ? len(s) - 1 - t : t);
    }
  }
  return l;
}

}  // namespace ops
}  // namespace fluid
