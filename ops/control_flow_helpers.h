// What the control-flow ops (while_op.cc, array_ops.cc) share: zero tensors
// and in-place sums of gradients, done on the host whatever the place (these
// ops move little data; a device tensor makes a round trip).
#pragma once

#include <cstring>

#include "src/framework/tensor.h"

namespace fluid {
namespace ops {

// A tensor of `dtype` and `shape` filled with zeros, at `place`.
inline Tensor ZerosAt(DataType dtype, const Shape& shape, const Place& place) {
  Tensor host(dtype, shape);
  std::memset(host.raw_mutable_data(Place::CPU()), 0, host.bytes());
  if (place.is_cpu()) return host;
  Tensor out;
  out.CopyFrom(host, place);
  return out;
}

template <typename T>
void AddHost(const Tensor& src, Tensor* dst) {
  const T* s = src.data<T>();
  T* d = dst->mutable_data<T>();
  for (int64_t k = 0; k < dst->numel(); ++k) d[k] += s[k];
}

// *dst += src, elementwise; `what` names the sum in errors. Both must have
// one shape and dtype (float32, float64, int32 or int64).
inline void AccumulateInto(const Tensor& src, Tensor* dst,
                           const std::string& what) {
  FLUID_ENFORCE(src.shape() == dst->shape() && src.dtype() == dst->dtype(),
                what, ": cannot add a ", DataTypeName(src.dtype()), " ",
                src.shape(), " gradient to a ", DataTypeName(dst->dtype()), " ",
                dst->shape(), " one");
  const Place place = dst->place();
  Tensor s, d;
  s.CopyFrom(src, Place::CPU());
  d.CopyFrom(*dst, Place::CPU());
  switch (d.dtype()) {
    case DataType::kFloat32:
      AddHost<float>(s, &d);
      break;
    case DataType::kFloat64:
      AddHost<double>(s, &d);
      break;
    case DataType::kInt32:
      AddHost<int32_t>(s, &d);
      break;
    case DataType::kInt64:
      AddHost<int64_t>(s, &d);
      break;
    default:
      FLUID_THROW(ErrorCode::kUnimplemented, what, ": gradients of dtype ",
                  DataTypeName(d.dtype()),
                  " are not summed here (float32 or float64)");
  }
  Tensor out;
  out.CopyFrom(d, place);
  *dst = std::move(out);
}

}  // namespace ops
}  // namespace fluid
