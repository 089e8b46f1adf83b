// The comparisons of compare_op.cc (less_than, less_equal, greater_than,
// greater_equal, equal, not_equal) and the logical ops of logical_op.cc, as
// functors both the CPU and the CUDA kernels call. Free of Eigen so that
// nvcc compiles it.
#pragma once

#include "ops/broadcast_dims.h"
#include "ops/hostdevice.h"

namespace fluid {
namespace ops {

struct LessThanFunctor {
  template <typename T>
  FLUID_HOSTDEVICE bool operator()(T a, T b) const {
    return a < b;
  }
};
struct LessEqualFunctor {
  template <typename T>
  FLUID_HOSTDEVICE bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterThanFunctor {
  template <typename T>
  FLUID_HOSTDEVICE bool operator()(T a, T b) const {
    return a > b;
  }
};
struct GreaterEqualFunctor {
  template <typename T>
  FLUID_HOSTDEVICE bool operator()(T a, T b) const {
    return a >= b;
  }
};
struct EqualFunctor {
  template <typename T>
  FLUID_HOSTDEVICE bool operator()(T a, T b) const {
    return a == b;
  }
};
struct NotEqualFunctor {
  template <typename T>
  FLUID_HOSTDEVICE bool operator()(T a, T b) const {
    return a != b;
  }
};

struct LogicalAndFunctor {
  FLUID_HOSTDEVICE bool operator()(bool a, bool b) const { return a && b; }
};
struct LogicalOrFunctor {
  FLUID_HOSTDEVICE bool operator()(bool a, bool b) const { return a || b; }
};
struct LogicalXorFunctor {
  FLUID_HOSTDEVICE bool operator()(bool a, bool b) const { return a != b; }
};

// The checked broadcast of a compare op's Y onto its X (compare_op.cc).
BroadcastDims CompareDims(const ExecutionContext& ctx);
// The checked operands of a binary logical op: X and Y bool, same shape
// (logical_op.cc).
void CheckLogicalOperands(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
