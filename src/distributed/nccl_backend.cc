#include "src/distributed/nccl_backend.h"

#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <vector>

#include "src/framework/cuda_check.h"
#include "src/framework/hash.h"

#define FLUID_NCCL_CHECK(call)                                      \
  do {                                                              \
    ncclResult_t fluid_nccl_rc_ = (call);                           \
    if (fluid_nccl_rc_ != ncclSuccess) {                            \
      FLUID_THROW(::fluid::ErrorCode::kAborted, #call,              \
                  " failed: ", ncclGetErrorString(fluid_nccl_rc_)); \
    }                                                               \
  } while (0)

namespace fluid {
namespace {

ncclDataType_t NcclType(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kBFloat16:
      return ncclBfloat16;
    case DataType::kBool:
      return ncclUint8;
  }
  FLUID_THROW(ErrorCode::kInvalidArgument, "no NCCL type for dtype ",
              DataTypeName(dtype));
}

ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAvg:
      return ncclAvg;
    case ReduceOp::kMax:
      return ncclMax;
  }
  FLUID_THROW(ErrorCode::kInvalidArgument, "unknown reduce op");
}

class NcclBackend final : public CommBackend {
 public:
  NcclBackend(std::unique_ptr<CommBackend> host, int device)
      : host_(std::move(host)), device_(device) {
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    if (host_->rank() == 0) FLUID_NCCL_CHECK(ncclGetUniqueId(&id));
    host_->Broadcast(&id, sizeof(id), 0);
    FLUID_CUDA_CHECK(cudaSetDevice(device_));
    FLUID_NCCL_CHECK(
        ncclCommInitRank(&comm_, host_->size(), id, host_->rank()));
    FLUID_CUDA_CHECK(
        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }

  ~NcclBackend() override {
    cudaSetDevice(device_);
    if (stream_ != nullptr) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::string name() const override { return "nccl"; }

  void AllReduce(void* data, int64_t count, DataType dtype,
                 ReduceOp op) override {
    host_->AllReduce(data, count, dtype, op);
  }
  void Broadcast(void* data, int64_t bytes, int root) override {
    host_->Broadcast(data, bytes, root);
  }
  void AllGather(const void* send, void* recv, int64_t bytes) override {
    host_->AllGather(send, recv, bytes);
  }
  void ReduceScatter(const void* send, void* recv, int64_t count,
                     DataType dtype, ReduceOp op) override {
    host_->ReduceScatter(send, recv, count, dtype, op);
  }
  // Host memory only: sparse rows are gathered on the host.
  void AllGatherV(const void* send, void* recv,
                  const std::vector<int64_t>& bytes) override {
    host_->AllGatherV(send, recv, bytes);
  }
  void Barrier() override { host_->Barrier(); }
  // The collective check runs on the host transport before each NCCL call
  // (the worker issues one collective at a time and waits for it).
  void CheckExchange(int64_t* values, int count, const char* what,
                     int64_t bytes) override {
    host_->CheckExchange(values, count, what, bytes);
  }
  // The host transport splits, and a NCCL communicator of the group's own
  // is made over the part (its unique id broadcast there) on this device.
  std::unique_ptr<CommBackend> Split(int color, int key) override {
    return std::make_unique<NcclBackend>(host_->Split(color, key), device_);
  }
  void Abort(int code) override {
    if (comm_ != nullptr) ncclCommAbort(comm_);
    comm_ = nullptr;
    host_->Abort(code);
  }

  bool HandlesDeviceMemory() const override { return true; }

  void DeviceAllReduce(void* data, int64_t count, DataType dtype, ReduceOp op,
                       int device) override {
    CheckDevice(device);
    FLUID_NCCL_CHECK(ncclAllReduce(data, data, static_cast<size_t>(count),
                                   NcclType(dtype), NcclOp(op), comm_,
                                   stream_));
    Finish();
  }
  void DeviceBroadcast(void* data, int64_t bytes, int root,
                       int device) override {
    CheckDevice(device);
    FLUID_NCCL_CHECK(ncclBroadcast(data, data, static_cast<size_t>(bytes),
                                   ncclChar, root, comm_, stream_));
    Finish();
  }
  void DeviceAllGather(const void* send, void* recv, int64_t bytes,
                       int device) override {
    CheckDevice(device);
    FLUID_NCCL_CHECK(ncclAllGather(send, recv, static_cast<size_t>(bytes),
                                   ncclChar, comm_, stream_));
    Finish();
  }
  void DeviceReduceScatter(const void* send, void* recv, int64_t count,
                           DataType dtype, ReduceOp op, int device) override {
    CheckDevice(device);
    FLUID_NCCL_CHECK(ncclReduceScatter(send, recv, static_cast<size_t>(count),
                                       NcclType(dtype), NcclOp(op), comm_,
                                       stream_));
    Finish();
  }

 private:
  void CheckDevice(int device) const {
    FLUID_ENFORCE(device == device_, "NCCL communicator is on cuda:", device_,
                  " but the tensor is on cuda:", device);
    FLUID_ENFORCE_CODE(comm_ != nullptr, ErrorCode::kAborted,
                       "NCCL communicator was aborted");
  }
  void Finish() { FLUID_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

  std::unique_ptr<CommBackend> host_;
  int device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// Ranks (other than the first) whose GPU another rank also uses, as
// "r and s share <bus id> on <host>"; empty when every GPU is distinct.
std::string SharedDevices(CommBackend* host, int device) {
  char bus[64] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device) != cudaSuccess) {
    cudaGetLastError();
    std::snprintf(bus, sizeof(bus), "device %d", device);
  }
  char hostname[256] = {0};
  gethostname(hostname, sizeof(hostname) - 1);
  const std::string where = std::string(bus) + " on " + hostname;
  uint64_t mine = Fnv1a64(where);
  std::vector<uint64_t> all(host->size());
  host->AllGather(&mine, all.data(), sizeof(mine));
  std::map<uint64_t, int> first;
  for (int r = 0; r < host->size(); ++r) {
    auto it = first.find(all[r]);
    if (it == first.end()) {
      first[all[r]] = r;
    } else if (r == host->rank() || it->second == host->rank()) {
      std::ostringstream os;
      os << "ranks " << it->second << " and " << r << " share GPU " << where;
      return os.str();
    } else {
      std::ostringstream os;
      os << "ranks " << it->second << " and " << r << " share a GPU";
      return os.str();
    }
  }
  return "";
}

}  // namespace

std::unique_ptr<CommBackend> MakeDeviceBackend(
    std::unique_ptr<CommBackend> host, int device, std::string* why) {
  why->clear();
  const std::string shared = SharedDevices(host.get(), device);
  // Every rank sees the same gathered ids, so every rank decides alike.
  if (!shared.empty()) {
    *why = shared +
           "; NCCL needs one GPU per rank, so device tensors are "
           "reduced over " +
           host->name() + " through host memory";
  } else {
    try {
      return std::make_unique<NcclBackend>(std::move(host), device);
    } catch (const Error& e) {
      // NCCL failed the same way everywhere or the job cannot continue:
      // NcclBackend consumed `host`, so there is nothing to fall back to.
      FLUID_RETHROW(e, "starting NCCL: ", e.what());
    }
  }
  if (host->rank() == 0) std::fprintf(stderr, "fluid: %s\n", why->c_str());
  return host;
}

}  // namespace fluid
