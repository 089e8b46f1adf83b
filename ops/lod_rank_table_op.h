// What the ops of a loop over sequences share (lod_rank_table_op.cc,
// lod_tensor_to_array_op.cc, shrink_rnn_memory_op.cc): the rank table an
// input holds, and row copies on the host. These ops move little data: a
// device tensor makes a round trip through the host, as the control-flow
// ops' do (ops/control_flow_helpers.h).
#pragma once

#include <cstring>
#include <string>

#include "ops/op_helpers.h"
#include "src/framework/lod_rank_table.h"

namespace fluid {
namespace ops {

// The table input `slot` holds; an error names the var when it holds none
// (a var lod_rank_table did not write).
inline const LoDRankTable& RankTableInput(const ExecutionContext& ctx,
                                          const std::string& slot) {
  const Variable* var = ctx.InputVar(slot);
  FLUID_ENFORCE(var != nullptr && var->HasValue() && !var->IsTensor() &&
                    !var->IsSelectedRows(),
                ctx.type(), ": ", slot, " '", ctx.InputName(slot),
                "' holds no rank table; it must be the output of "
                "lod_rank_table (fluid.layers.lod_rank_table)");
  return var->Get<LoDRankTable>();
}

// The loop step input `slot` holds: one int64 (or int32) >= 0.
inline int64_t StepInput(const ExecutionContext& ctx, const std::string& slot) {
  const Tensor& i = ctx.Input(slot);
  FLUID_ENFORCE(i.numel() == 1 && (i.dtype() == DataType::kInt64 ||
                                   i.dtype() == DataType::kInt32),
                ctx.type(), ": ", slot, " '", ctx.InputName(slot),
                "' must be one int64 (or int32), is ", DataTypeName(i.dtype()),
                " ", i.shape());
  Tensor host;
  host.CopyFrom(i, Place::CPU());
  const int64_t v = host.dtype() == DataType::kInt64
                        ? host.data<int64_t>()[0]
                        : static_cast<int64_t>(host.data<int32_t>()[0]);
  FLUID_ENFORCE(v >= 0, ctx.type(), ": ", slot, " '", ctx.InputName(slot),
                "' is ", v, "; a loop step is >= 0");
  return v;
}

// Bytes of one row (dim 0) of `t`.
inline size_t RowBytes(const Tensor& t) {
  const int64_t rows = t.shape().rank() > 0 ? t.shape()[0] : 0;
  return rows > 0 ? t.bytes() / rows : 0;
}

// `shape` with dim 0 set to `rows`.
inline Shape ShapeWithRows(const Shape& shape, int64_t rows) {
  Shape out = shape;
  out[0] = rows;
  return out;
}

// Rows [src_row, src_row + n) of host tensor `src` into rows
// [dst_row, dst_row + n) of host tensor `dst` (rows of one shape).
inline void CopyHostRows(const Tensor& src, int64_t src_row, Tensor* dst,
                         int64_t dst_row, int64_t n) {
  const size_t rb = RowBytes(src);
  if (n <= 0 || rb == 0) return;
  std::memcpy(
      static_cast<char*>(dst->raw_mutable_data(Place::CPU())) + dst_row * rb,
      static_cast<const char*>(src.raw_data()) + src_row * rb, n * rb);
}

// A host tensor of `dtype` and `shape` filled with zeros.
inline Tensor HostZeros(DataType dtype, const Shape& shape) {
  Tensor t(dtype, shape);
  std::memset(t.raw_mutable_data(Place::CPU()), 0, t.bytes());
  return t;
}

// The rank-table input must come with a tensor X of that many sequences
// of those lengths: checks X's LoD against `table` (errors name the op).
inline void CheckLoDMatchesTable(const ExecutionContext& ctx, const LoD& lod,
                                 const LoDRankTable& table) {
  FLUID_ENFORCE(!lod.empty(), ctx.type(), ": X '", ctx.InputName("X"),
                "' has no LoD; it must be a batch of sequences (lod_level=1)");
  const std::vector<int64_t> lengths = LoDLengths(lod);
  FLUID_ENFORCE(lengths.size() == table.items.size(), ctx.type(), ": X '",
                ctx.InputName("X"), "' holds ", lengths.size(),
                " sequences but RankTable '", ctx.InputName("RankTable"),
                "' ranks ", table.items.size());
  for (const LoDRankItem& it : table.items)
    FLUID_ENFORCE(it.index >= 0 &&
                      it.index < static_cast<int64_t>(lengths.size()) &&
                      lengths[it.index] == it.length,
                  ctx.type(), ": RankTable '", ctx.InputName("RankTable"),
                  "' gives sequence ", it.index, " length ", it.length,
                  " but X '", ctx.InputName("X"), "' has LoD ",
                  LoDToString(lod), "; the table must rank X's sequences");
}

}  // namespace ops
}  // namespace fluid
