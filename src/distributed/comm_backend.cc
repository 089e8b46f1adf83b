#include "src/distributed/comm_backend.h"

#include <algorithm>
#include <cstring>

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
// The 16-bit floats divide in float32 and round once.
template <typename T>
void DivideHalf(T* p, int64_t n, int by) {
  const float d = static_cast<float>(by);
  for (int64_t i = 0; i < n; ++i) p[i] = FromFloat<T>(ToFloat(p[i]) / d);
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
    case DataType::kFloat16:
      return DivideHalf(static_cast<float16*>(data), count, n);
    case DataType::kBFloat16:
      return DivideHalf(static_cast<bfloat16*>(data), count, n);
    case DataType::kBool:
      break;
  }
  FLUID_THROW(ErrorCode::kInvalidArgument, "cannot average a bool tensor");
}

void CommBackend::AllGatherV(const void* send, void* recv,
                             const std::vector<int64_t>& bytes) {
  FLUID_ENFORCE(static_cast<int>(bytes.size()) == size(), "allgatherv needs ",
                size(), " block sizes, got ", bytes.size());
  const int64_t block = *std::max_element(bytes.begin(), bytes.end());
  gather_send_.assign(block, 0);
  gather_recv_.resize(block * size());
  if (bytes[rank()] > 0) std::memcpy(gather_send_.data(), send, bytes[rank()]);
  AllGather(gather_send_.data(), gather_recv_.data(), block);
  char* out = static_cast<char*>(recv);
  for (int r = 0; r < size(); ++r) {
    if (bytes[r] > 0)
      std::memcpy(out, gather_recv_.data() + r * block, bytes[r]);
    out += bytes[r];
  }
}

void CommBackend::AllReduceCompressed(float* data, int64_t count,
                                      WireFormat wire, ReduceOp op) {
  FLUID_ENFORCE(wire != WireFormat::kNative,
                "AllReduceCompressed needs a 16-bit wire format");
  const int n = size();
  if (static_cast<int64_t>(wire_send_.size()) < count) wire_send_.resize(count);
  if (static_cast<int64_t>(wire_recv_.size()) < count * n)
    wire_recv_.resize(count * n);
  EncodeWire(wire, data, wire_send_.data(), count);
  AllGather(wire_send_.data(), wire_recv_.data(),
            count * static_cast<int64_t>(sizeof(uint16_t)));
  DecodeWire(wire, wire_recv_.data(), data, count);
  for (int r = 1; r < n; ++r) {
    const uint16_t* block = wire_recv_.data() + r * count;
    for (int64_t i = 0; i < count; ++i) {
      const float v = wire == WireFormat::kBf16 ? Bf16ToFloat(block[i])
                                                : Fp16ToFloat(block[i]);
      data[i] = op == ReduceOp::kMax ? std::max(data[i], v) : data[i] + v;
    }
  }
  // The result travels back in the wire format too.
  EncodeWire(wire, data, wire_send_.data(), count);
  DecodeWire(wire, wire_send_.data(), data, count);
  if (op == ReduceOp::kAvg) DivideInPlace(data, count, DataType::kFloat32, n);
}

void CommBackend::ReduceScatter(const void* send, void* recv, int64_t count,
                                DataType dtype, ReduceOp op) {
  const size_t block = count * SizeOf(dtype);
  if (scatter_.size() < block * size()) scatter_.resize(block * size());
  std::memcpy(scatter_.data(), send, block * size());
  AllReduce(scatter_.data(), count * size(), dtype, op);
  std::memcpy(recv, scatter_.data() + block * rank(), block);
}

std::unique_ptr<CommBackend> CommBackend::Split(int color, int key) {
  FLUID_THROW(ErrorCode::kUnimplemented, "the ", name(),
              " backend cannot split into groups (color ", color, ", key ", key,
              ")");
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

void CommBackend::DeviceReduceScatter(const void*, void*, int64_t, DataType,
                                      ReduceOp, int) {
  FLUID_THROW(ErrorCode::kUnimplemented, "the ", name(),
              " backend does not reduce-scatter device memory");
}

}  // namespace fluid
