// CudaMatchesCpu for the 16-bit types: the op and each of its grad ops on
// both places, fed the same bfloat16 / float16 values (the output
// gradients random values of the type), compared with the default
// tolerance of the type (tests/testing/cuda_op_check.h).
#pragma once

#include <string>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/half_tensors.h"

namespace fluid {
namespace testing {

// `inputs` are float32 values, rounded to `dtype` for both places.
inline ::testing::AssertionResult HalfCudaMatchesCpu(const proto::OpDesc& op,
                                                     const TensorMap& inputs,
                                                     DataType dtype,
                                                     uint64_t seed = 4321) {
  TensorMap feeds;
  for (const auto& kv : inputs) feeds[kv.first] = Converted(kv.second, dtype);
  CudaCheckOptions forward_only;
  forward_only.grad = false;
  auto r = CudaMatchesCpu(op, feeds, forward_only);
  if (!r) return r;
  const TensorMap out = RunOp(op, feeds, 1, Place::CPU());
  TensorMap dout;
  for (const auto& kv : out)
    dout[kv.first] = RandomOf(dtype, kv.second.shape(), seed++);
  for (const GradRun& g : GradRuns(op, feeds, out, dout)) {
    const TensorMap cpu = RunOp(g.op, g.feeds, 1, Place::CPU());
    const TensorMap cuda = RunOp(g.op, g.feeds, 1, Place::CUDA(0));
    for (const auto& kv : cpu) {
      r = TensorsClose(kv.second, cuda.at(kv.first), -1,
                       g.op.type() + " output '" + kv.first + "'");
      if (!r) return r;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace testing
}  // namespace fluid
