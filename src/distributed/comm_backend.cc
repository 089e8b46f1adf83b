#include "src/distributed/comm_backend.h"

namespace fluid {

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kMax:
      return "max";
  }
  return "unknown";
}

const char* AllReduceAlgorithmName(AllReduceAlgorithm algorithm) {
  return algorithm == AllReduceAlgorithm::kHierarchical ? "hier" : "flat";
}

ReduceOp ParseReduceOp(const std::string& name) {
  if (name == "sum") return ReduceOp::kSum;
  if (name == "avg") return ReduceOp::kAvg;
  if (name == "max") return ReduceOp::kMax;
  FLUID_THROW(ErrorCode::kInvalidArgument, "unknown reduce type '", name,
              "'; known: sum, avg, max");
}

namespace {
template <typename T>
void Divide(T* p, int64_t n, int by) {
  const T d = static_cast<T>(by);
  for (int64_t i = 0; i < n; ++i) p[i] /= d;
}
}  // namespace

void DivideInPlace(void* data, int64_t count, DataType dtype, int n) {
  if (n == 1) return;
  switch (dtype) {
    case DataType::kFloat32:
      return Divide(static_cast<float*>(data), count, n);
    case DataType::kFloat64:
      return Divide(static_cast<double*>(data), count, n);
    case DataType::kInt32:
      return Divide(static_cast<int32_t*>(data), count, n);
    case DataType::kInt64:
      return Divide(static_cast<int64_t*>(data), count, n);
  }
}

void CommBackend::DeviceAllReduce(void*, int64_t, DataType, ReduceOp, int) {
  FLUID_THROW(ErrorCode::kUnimplemented, "the ", name(),
              " backend does not reduce device memory");
}

void CommBackend::DeviceBroadcast(void*, int64_t, int, int) {
  FLUID_THROW(ErrorCode::kUnimplemented, "the ", name(),
              " backend does not broadcast device memory");
}

void CommBackend::DeviceAllGather(const void*, void*, int64_t, int) {
  FLUID_THROW(ErrorCode::kUnimplemented, "the ", name(),
              " backend does not gather device memory");
}

}  // namespace fluid
