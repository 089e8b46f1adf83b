// How the kernels of the ops between the matrix ops (elementwise,
// activations, scale, dropout, pooling, sum, the norms) handle the 16-bit
// float types of mixed precision: a 16-bit value is loaded as float, the
// math runs in float (sums accumulate in float) and the result is rounded
// once, when stored. For float32 and float64 the compute type is the
// element type itself, so a kernel written with ToCompute / FromCompute is
// the same code for them as before. Shared by the CPU kernels and (through
// FLUID_HOSTDEVICE) the CUDA ones.
#pragma once

#if defined(__F16C__) && !defined(__CUDACC__)
#include <immintrin.h>
#endif

#include "ops/hostdevice.h"
#include "src/framework/float16.h"
#include "src/framework/op_registry.h"

namespace fluid {
namespace ops {

// The type a kernel computes in for elements of type T.
template <typename T>
struct ComputeTypeOf {
  using type = T;
};
template <>
struct ComputeTypeOf<bfloat16> {
  using type = float;
};
template <>
struct ComputeTypeOf<float16> {
  using type = float;
};
template <typename T>
using ComputeType = typename ComputeTypeOf<T>::type;

// An element as its compute type (exact: every 16-bit value is a float).
template <typename T>
FLUID_HOSTDEVICE ComputeType<T> ToCompute(T v) {
  return static_cast<ComputeType<T>>(v);
}

// A computed value stored as T (rounded to nearest even for 16-bit T).
template <typename T>
FLUID_HOSTDEVICE T FromCompute(ComputeType<T> v) {
  return static_cast<T>(v);
}

#if defined(__F16C__) && !defined(__CUDACC__)
// On x86 CPUs with F16C, float16 converts by one instruction each way
// instead of float16.h's portable bit manipulation: the same values
// (IEEE round to nearest even, subnormals kept), several times faster.
template <>
inline float ToCompute<float16>(float16 v) {
  return _cvtsh_ss(v.x);
}
template <>
inline float16 FromCompute<float16>(float v) {
  return float16::FromBits(
      static_cast<uint16_t>(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT)));
}
#endif

}  // namespace ops
}  // namespace fluid

// The bfloat16 and float16 instances of a kernel template at a place, as
// REGISTER_FLOAT_KERNELS registers float and double:
// REGISTER_HALF_KERNELS(relu, kCUDA, ReluKernel).
#define REGISTER_HALF_KERNELS(type, place_kind, kernel_template) \
  REGISTER_KERNEL(type, place_kind, fluid::bfloat16,             \
                  kernel_template<fluid::bfloat16>);             \
  REGISTER_KERNEL(type, place_kind, fluid::float16,              \
                  kernel_template<fluid::float16>)
