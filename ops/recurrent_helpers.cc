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

BatchLayout MakeBatchLayout(const LoD& lod, bool reverse,
                            const std::string& what) {
  BatchLayout l;
  l.count = LoDCount(lod);
  const std::vector<int64_t> len = LoDLengths(lod);
  for (int64_t i = 0; i < l.count; ++i) {
    FLUID_ENFORCE(len[i] > 0, what, " holds an empty sequence (sequence ", i,
                  " of offsets ", LoDToString(lod),
                  "): every sequence must have at least one row");
    l.steps = std::max(l.steps, len[i]);
    l.total += len[i];
  }
  std::vector<int64_t> order(l.count);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&len](int64_t a, int64_t b) { return len[a] > len[b]; });
  l.index.reserve(l.steps + 1 + l.count + l.total);
  l.index.push_back(0);
  for (int64_t t = 0; t < l.steps; ++t) {
    int64_t running = 0;
    while (running < l.count && len[order[running]] > t) ++running;
    l.index.push_back(l.index.back() + running);
  }
  l.index.insert(l.index.end(), order.begin(), order.end());
  for (int64_t t = 0; t < l.steps; ++t) {
    for (int64_t k = 0; k < l.Rows(t); ++k) {
      const int64_t s = order[k];
      l.index.push_back(lod[s] + (reverse ? len[s] - 1 - t : t));
    }
  }
  return l;
}

}  // namespace ops
}  // namespace fluid
