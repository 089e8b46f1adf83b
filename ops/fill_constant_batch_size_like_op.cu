// CUDA kernels for fill_constant_batch_size_like (schema in
// fill_constant_batch_size_like_op.cc).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/dtype_visit.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct FillValue {
  T* out;
  T value;
  __device__ void operator()(int64_t i) const { out[i] = value; }
};

template <typename T>
void Fill(const ExecutionContext& ctx, Tensor* out, float value) {
  FillValue<T> f;
  f.out = out->mutable_data<T>(ctx.place());
  f.value = static_cast<T>(value);
  cuda::ForEach(cuda::Dev(ctx), out->numel(), f);
}

// Registered for every dtype of Input (which it does not read); Out's
// dtype is the attr's.
void FillBatchSizeLikeKernel(const ExecutionContext& ctx) {
  Tensor* out = ctx.Output("Out");
  const float value = ctx.Attr<float>("value");
  switch (DtypeAttr(ctx.Attr<int32_t>("dtype"), ctx.type(), "dtype")) {
    case DataType::kFloat32:
      return Fill<float>(ctx, out, value);
    case DataType::kFloat64:
      return Fill<double>(ctx, out, value);
    case DataType::kInt32:
      return Fill<int32_t>(ctx, out, value);
    case DataType::kInt64:
      return Fill<int64_t>(ctx, out, value);
    case DataType::kFloat16:
      return Fill<float16>(ctx, out, value);
    case DataType::kBFloat16:
      return Fill<bfloat16>(ctx, out, value);
    case DataType::kBool:
      break;
  }
  FLUID_THROW(ErrorCode::kInvalidArgument, ctx.type(),
              ": dtype bool is not supported here");
}

}  // namespace

REGISTER_KERNEL(fill_constant_batch_size_like, kCUDA, float,
                FillBatchSizeLikeKernel);
REGISTER_KERNEL(fill_constant_batch_size_like, kCUDA, double,
                FillBatchSizeLikeKernel);
REGISTER_KERNEL(fill_constant_batch_size_like, kCUDA, int32_t,
                FillBatchSizeLikeKernel);
REGISTER_KERNEL(fill_constant_batch_size_like, kCUDA, int64_t,
                FillBatchSizeLikeKernel);

}  // namespace ops
}  // namespace fluid
