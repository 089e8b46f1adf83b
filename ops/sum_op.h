// What sum's CPU kernel (sum_op.cc) and CUDA kernel (sum_op.cu) check on the
// host, defined once in sum_op.cc (for every dtype sum has kernels of).
// Free of Eigen so that nvcc can compile the CUDA kernel that includes it.
#pragma once

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// Checks that every input X holds as many elements as `out` (Out, whose
// elements are at `out_data`) and returns how many of the inputs are Out
// itself (an in-place accumulation). Inputs that partly overlap Out (views
// at other offsets of one buffer) are not supported.
template <typename T>
int CheckSumInputs(const ExecutionContext& ctx, const Tensor& out,
                   const T* out_data);

// True when some input X holds sparse rows (SelectedRows).
bool AnySparseInput(const ExecutionContext& ctx);

// Out = the inputs' sparse rows concatenated, in input order (a sum of
// SelectedRows lists every row of every term; the optimizer merges them).
// Every input must hold sparse rows of one height and row width. Copies
// synchronously: on a device, call it once the inputs are written.
void ConcatSparseInputs(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
