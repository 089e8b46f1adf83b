// Calling a generic function with a value of the C++ type a DataType names,
// for kernels whose output dtype is chosen at run time (cast). Free of
// Eigen so that nvcc can compile it.
#pragma once

#include <cstdint>

#include "src/framework/types.h"

namespace fluid {
namespace ops {

// f(T{}) for the T of `dtype`.
template <typename F>
void VisitDtype(DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kFloat32:
      f(float{});
      return;
    case DataType::kFloat64:
      f(double{});
      return;
    case DataType::kInt32:
      f(int32_t{});
      return;
    case DataType::kInt64:
      f(int64_t{});
      return;
    case DataType::kFloat16:
      f(float16{});
      return;
    case DataType::kBFloat16:
      f(bfloat16{});
      return;
    case DataType::kBool:
      break;
  }
  FLUID_THROW(ErrorCode::kInvalidArgument, "dtype ", DataTypeName(dtype),
              " is not supported here");
}

// The dtype held by the int attr `name` (DataType's numbering); an error
// naming the op and the attr when it is none.
inline DataType DtypeAttr(int32_t value, const std::string& op,
                          const std::string& name) {
  FLUID_ENFORCE(value >= 0 && value <= kMaxDataType, op, ": attr ", name, " ",
                value,
                " is no dtype (0 float32, 1 float64, 2 int32, 3 int64, "
                "4 float16, 5 bfloat16, 6 bool)");
  return static_cast<DataType>(value);
}

}  // namespace ops
}  // namespace fluid
