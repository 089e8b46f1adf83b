// One of each collective the communicator runs, for the tests of what the
// flight recorder and the timeline keep of them: its kind and the bytes it
// moves.
#pragma once

#include <cstring>
#include <vector>

#include "src/distributed/communicator.h"
#include "src/framework/selected_rows.h"

namespace fluid {
namespace testing {

struct ExpectedCollective {
  CollectiveKind kind;
  int64_t bytes;
};

inline Tensor Zeros(DataType dtype, int64_t n) {
  Tensor t(dtype, Shape{n});
  std::memset(t.raw_mutable_data(), 0, t.bytes());
  return t;
}

// Rows 1 and 3 of a table of 10 rows of 2 float32 values.
inline SelectedRows TwoRows() {
  SelectedRows rows;
  rows.set_height(10);
  *rows.mutable_rows() = {1, 3};
  Tensor values = Zeros(DataType::kFloat32, 4);
  values.Resize(Shape{2, 2});
  *rows.mutable_value() = values;
  return rows;
}

// Issues each collective on `comm` (every rank the same, in order; each
// waited before the next) and returns what each moves, in issue order.
inline std::vector<ExpectedCollective> IssueEachCollective(Communicator* comm) {
  const int64_t n = comm->size();
  std::vector<ExpectedCollective> expected;
  Tensor f = Zeros(DataType::kFloat32, 6);
  comm->AllReduce(f, ReduceOp::kSum);
  expected.push_back({CollectiveKind::kAllReduce, 6 * 4});
  // Compressed: 2 bytes a value on the wire.
  comm->AllReduceAsync(f, ReduceOp::kSum, nullptr, WireFormat::kBf16)->Wait();
  expected.push_back({CollectiveKind::kAllReduce, 6 * 2});
  Tensor ids = Zeros(DataType::kInt64, 3);
  comm->Broadcast(ids, 0);
  expected.push_back({CollectiveKind::kBroadcast, 3 * 8});
  // The whole gathered tensor: n blocks of 2 float32.
  Tensor block = Zeros(DataType::kFloat32, 2);
  Tensor gathered = Zeros(DataType::kFloat32, 2 * n);
  comm->AllGather(block, gathered);
  expected.push_back({CollectiveKind::kAllGather, n * 2 * 4});
  // The whole scattered tensor: n blocks of 3 float64.
  Tensor scattered = Zeros(DataType::kFloat64, 3 * n);
  Tensor shard = Zeros(DataType::kFloat64, 3);
  comm->ReduceScatter(scattered, shard, ReduceOp::kAvg);
  expected.push_back({CollectiveKind::kReduceScatter, n * 3 * 8});
  // Gathered rows: this rank's 2 row ids and 2 x 2 float32 values.
  SelectedRows sparse_out;
  comm->SparseAllReduceAsync(TwoRows(), &sparse_out, ReduceOp::kSum, 1.0)
      ->Wait();
  expected.push_back({CollectiveKind::kSparseAllReduce, 2 * 8 + 2 * 2 * 4});
  // The dense fallback: the row ids, then the whole 10 x 2 table.
  comm->SparseAllReduceAsync(TwoRows(), &sparse_out, ReduceOp::kSum, 0.0)
      ->Wait();
  expected.push_back({CollectiveKind::kSparseAllReduce, 2 * 8 + 10 * 2 * 4});
  comm->Barrier();
  expected.push_back({CollectiveKind::kBarrier, 0});
  return expected;
}

}  // namespace testing
}  // namespace fluid
