// The values an assign_value op holds, for its CPU (assign_value_op.cc) and
// CUDA (assign_value_op.cu) kernels; defined in assign_value_op.cc. Free of
// Eigen so that nvcc can compile it.
#pragma once

#include <vector>

#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// The attr holding the values of dtype T (fp32_values, int32_values or
// int64_values).
template <typename T>
const std::vector<T>& AssignValues(const ExecutionContext& ctx);

template <>
const std::vector<float>& AssignValues<float>(const ExecutionContext& ctx);
template <>
const std::vector<int32_t>& AssignValues<int32_t>(const ExecutionContext& ctx);
template <>
const std::vector<int64_t>& AssignValues<int64_t>(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
