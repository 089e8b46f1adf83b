#include "src/distributed/sparse_allreduce.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "src/framework/selected_rows.h"

namespace fluid {

namespace {

// Every rank's row count, then every rank's rows (rank order).
std::vector<int64_t> GatherRows(CommBackend* b,
                                const std::vector<int64_t>& rows,
                                std::vector<int64_t>* counts) {
  const int64_t mine = static_cast<int64_t>(rows.size());
  counts->assign(b->size(), 0);
  b->AllGather(&mine, counts->data(), sizeof(int64_t));
  std::vector<int64_t> bytes(b->size());
  for (int r = 0; r < b->size(); ++r)
    bytes[r] = (*counts)[r] * static_cast<int64_t>(sizeof(int64_t));
  std::vector<int64_t> all(
      std::accumulate(counts->begin(), counts->end(), int64_t{0}));
  b->AllGatherV(rows.data(), all.data(), bytes);
  return all;
}

template <typename T>
void SumCopies(const RowMerge& m, const T* values, int64_t width, T* out) {
  std::fill_n(out, m.size() * width, T(0));
  for (int64_t k = 0; k < m.size(); ++k)
    for (int64_t c = m.offsets[k]; c < m.offsets[k + 1]; ++c)
      for (int64_t j = 0; j < width; ++j)
        out[k * width + j] += values[m.order[c] * width + j];
}

// Gathers every rank's values and sums the copies of each row.
template <typename T>
void SparsePath(CommBackend* b, const SparseReduceInput& in,
                const std::vector<int64_t>& counts, const RowMerge& m,
                SparseReduceOutput* out) {
  const int64_t row_bytes = in.width * static_cast<int64_t>(sizeof(T));
  std::vector<int64_t> bytes(counts.size());
  int64_t total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    bytes[r] = counts[r] * row_bytes;
    total += counts[r];
  }
  std::vector<T> all(total * in.width);
  b->AllGatherV(in.values, all.data(), bytes);
  out->wire_bytes += bytes[b->rank()];
  SumCopies(m, all.data(), in.width, out->values.data<T>());
}

// Adds this rank's rows into a dense table, allreduces it, and reads the
// merged rows back.
template <typename T>
void DensePath(CommBackend* b, const SparseReduceInput& in, ReduceOp op,
               const RowMerge& m, SparseReduceOutput* out) {
  const int64_t w = in.width;
  std::vector<T> dense(in.height * w, T(0));
  const T* v = static_cast<const T*>(in.values);
  for (size_t i = 0; i < in.rows->size(); ++i)
    for (int64_t j = 0; j < w; ++j)
      dense[(*in.rows)[i] * w + j] += v[i * w + j];
  b->AllReduce(dense.data(), in.height * w, in.dtype,
               op == ReduceOp::kAvg ? ReduceOp::kSum : op);
  out->wire_bytes += in.height * w * static_cast<int64_t>(sizeof(T));
  T* o = out->values.data<T>();
  for (int64_t k = 0; k < m.size(); ++k)
    std::copy_n(dense.data() + m.unique_rows[k] * w, w, o + k * w);
  out->dense = true;
}

template <typename T>
void Reduce(CommBackend* b, const SparseReduceInput& in, ReduceOp op,
            double dense_ratio, SparseReduceOutput* out) {
  std::vector<int64_t> counts;
  const std::vector<int64_t> all_rows = GatherRows(b, *in.rows, &counts);
  out->wire_bytes = static_cast<int64_t>(in.rows->size() * sizeof(int64_t));
  for (size_t i = 0; i < all_rows.size(); ++i)
    FLUID_ENFORCE(all_rows[i] >= 0 && all_rows[i] < in.height,
                  "sparse allreduce: row ", all_rows[i],
                  " outside the table's [0, ", in.height, ")");
  RowMerge m;
  m.Build(all_rows);
  out->rows = m.unique_rows;
  out->values.mutable_data<T>(Shape{std::max<int64_t>(m.size(), 1), in.width});
  out->values.Resize(Shape{m.size(), in.width});
  const double gathered = static_cast<double>(all_rows.size());
  if (gathered > dense_ratio * static_cast<double>(in.height)) {
    DensePath<T>(b, in, op, m, out);
  } else {
    SparsePath<T>(b, in, counts, m, out);
  }
  if (op == ReduceOp::kAvg)
    DivideInPlace(out->values.data<T>(), m.size() * in.width, in.dtype,
                  b->size());
}

}  // namespace

void SparseAllReduce(CommBackend* b, const SparseReduceInput& in, ReduceOp op,
                     double dense_ratio, SparseReduceOutput* out) {
  FLUID_ENFORCE(op == ReduceOp::kSum || op == ReduceOp::kAvg,
                "sparse allreduce sums or averages, not ", ReduceOpName(op));
  switch (in.dtype) {
    case DataType::kFloat32:
      return Reduce<float>(b, in, op, dense_ratio, out);
    case DataType::kFloat64:
      return Reduce<double>(b, in, op, dense_ratio, out);
    default:
      FLUID_THROW(ErrorCode::kInvalidArgument,
                  "sparse allreduce of float32 or float64 values, got ",
                  DataTypeName(in.dtype));
  }
}

}  // namespace fluid
