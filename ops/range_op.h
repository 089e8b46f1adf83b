// What range's and linspace's CPU kernels (range_op.cc, linspace_op.cc)
// and CUDA kernels (range_op.cu, linspace_op.cu) share: the checked
// element count, computed on the host (defined in range_op.cc). Free of
// Eigen so that nvcc can compile the CUDA kernels that include it.
#pragma once

#include <cstdint>
#include <string>

#include "src/framework/attribute.h"

namespace fluid {
namespace ops {

// range's length: ceil(|end - start| / |step|), with start, end and step
// read as the dtype's values (whole numbers for int32 and int64). The
// step must be nonzero and point from start towards end (or start ==
// end, an empty range); an error names `out`.
int64_t RangeLength(const AttributeMap& attrs, const std::string& out);

// linspace's num, checked >= 1.
int64_t LinspaceLength(const AttributeMap& attrs, const std::string& out);

}  // namespace ops
}  // namespace fluid
