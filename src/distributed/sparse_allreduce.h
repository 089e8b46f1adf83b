// The sum (or average) of sparse rows over the ranks, as the
// communicator's worker runs it for c_sparse_allreduce (Communicator::
// SparseAllReduceAsync). Blocking collectives on one backend, the same
// sequence on every rank:
//
//  1. every rank's row count (one allgather of an int64);
//  2. every rank's row ids (an allgatherv);
//  3. if all ranks' rows together (repeats included) fit in `dense_ratio`
//     of the table's height: every rank's values (an allgatherv), and the
//     copies of each row summed, rows ascending, copies in rank order and
//     within a rank in list order; otherwise (dense fallback) each rank's
//     rows added into a dense [height, width] table, one allreduce of it,
//     and the rows any rank touched read back from it;
//  4. kAvg divides by the rank count, as the dense allreduce does.
//
// Every rank ends with the same rows (ascending, no repeats) and the same
// values, bit for bit. Why a fallback: the gather moves every rank's rows
// to every rank, a volume that grows with the rank count, while a ring
// allreduce moves about twice the table per rank whatever the count; and
// the merge and the optimizer's row-wise update cost less than a dense
// pass only while few rows are touched.
#pragma once

#include <cstdint>
#include <vector>

#include "src/distributed/comm_backend.h"
#include "src/framework/tensor.h"

namespace fluid {

struct SparseReduceInput {
  const std::vector<int64_t>* rows;
  const void* values;  // host memory, rows->size() x width of dtype
  int64_t width;
  int64_t height;
  DataType dtype;
};

struct SparseReduceOutput {
  std::vector<int64_t> rows;
  Tensor values;       // host memory, [rows.size(), width]
  int64_t wire_bytes;  // what this rank handed to the transport
  bool dense = false;  // the dense fallback ran
};

void SparseAllReduce(CommBackend* b, const SparseReduceInput& in, ReduceOp op,
                     double dense_ratio, SparseReduceOutput* out);

}  // namespace fluid
