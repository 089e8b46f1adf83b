// NCCL of the CUDA emulation: single-rank communicators. Every collective
// over one rank leaves the data as it is (copied when out of place).
#include "nccl.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

#include "cuda_runtime.h"
#include "internal.h"

struct ncclComm {
  int device;
  bool aborted;
};

namespace cuda_emu {
namespace {

std::mutex g_mu;
std::set<const ncclComm*>& Live() {
  static auto* live = new std::set<const ncclComm*>();
  return *live;
}

bool Valid(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(g_mu);
  return comm != nullptr && Live().count(comm) != 0;
}

size_t TypeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
  }
  return 0;
}

const char kIdTag[] = "cuda_emu nccl id";

ncclResult_t Collective(const char* api, const void* send, void* recv,
                        size_t count, ncclDataType_t type, ncclComm_t comm,
                        cudaStream_t stream) {
  if (!Valid(comm)) {
    Report("%s: %p is not a live communicator", api, static_cast<void*>(comm));
    return ncclInvalidArgument;
  }
  if (comm->aborted) return ncclInvalidUsage;
  const size_t size = TypeSize(type);
  if (size == 0) return ncclInvalidArgument;
  if (!IsValidStream(stream)) {
    Report("%s: %p is not a live stream", api, static_cast<void*>(stream));
    return ncclInvalidArgument;
  }
  if (CurrentDevice() != comm->device) {
    Report("%s: the communicator is on device %d, the current device is %d",
           api, comm->device, CurrentDevice());
    return ncclInvalidUsage;
  }
  const size_t bytes = count * size;
  if (bytes == 0) return ncclSuccess;
  if (!CheckDeviceRange(send, bytes, api, "send buffer") ||
      !CheckDeviceRange(recv, bytes, api, "receive buffer"))
    return ncclInvalidArgument;
  if (send != recv) std::memmove(recv, send, bytes);
  return ncclSuccess;
}

}  // namespace
}  // namespace cuda_emu

extern "C" {

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error";
    case ncclSystemError:
      return "unhandled system error";
    case ncclInternalError:
      return "internal error";
    case ncclInvalidArgument:
      return "invalid argument";
    case ncclInvalidUsage:
      return "invalid usage";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
  }
  return "unknown result code";
}

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* unique_id) {
  if (unique_id == nullptr) return ncclInvalidArgument;
  std::memset(unique_id, 0, sizeof(*unique_id));
  std::snprintf(unique_id->internal, sizeof(unique_id->internal), "%s %ld",
                cuda_emu::kIdTag, static_cast<long>(getpid()));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks,
                              ncclUniqueId comm_id, int rank) {
  if (comm == nullptr) return ncclInvalidArgument;
  *comm = nullptr;
  if (std::strncmp(comm_id.internal, cuda_emu::kIdTag,
                   sizeof(cuda_emu::kIdTag) - 1) != 0) {
    cuda_emu::Report(
        "ncclCommInitRank: the unique id was not made by "
        "ncclGetUniqueId");
    return ncclInvalidArgument;
  }
  if (nranks != 1 || rank != 0) {
    cuda_emu::Report(
        "ncclCommInitRank: rank %d of %d: the emulation "
        "supports single-rank communicators only",
        rank, nranks);
    return nranks < 1 || rank < 0 || rank >= nranks ? ncclInvalidArgument
                                                    : ncclInvalidUsage;
  }
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return ncclUnhandledCudaError;
  }
  auto* c = new ncclComm{device, false};
  std::lock_guard<std::mutex> lock(cuda_emu::g_mu);
  cuda_emu::Live().insert(c);
  *comm = c;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  {
    std::lock_guard<std::mutex> lock(cuda_emu::g_mu);
    if (cuda_emu::Live().erase(comm) == 0) return ncclInvalidArgument;
  }
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!cuda_emu::Valid(comm) || count == nullptr) return ncclInvalidArgument;
  *count = 1;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!cuda_emu::Valid(comm) || rank == nullptr) return ncclInvalidArgument;
  *rank = 0;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  if (op < ncclSum || op > ncclAvg) return ncclInvalidArgument;
  return cuda_emu::Collective("ncclAllReduce", sendbuff, recvbuff, count,
                              datatype, comm, stream);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  if (root != 0) {
    cuda_emu::Report("ncclBroadcast: root %d of a single-rank communicator",
                     root);
    return ncclInvalidArgument;
  }
  return cuda_emu::Collective("ncclBroadcast", sendbuff, recvbuff, count,
                              datatype, comm, stream);
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff,
                           size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  return cuda_emu::Collective("ncclAllGather", sendbuff, recvbuff, sendcount,
                              datatype, comm, stream);
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff,
                               size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  if (op < ncclSum || op > ncclAvg) return ncclInvalidArgument;
  return cuda_emu::Collective("ncclReduceScatter", sendbuff, recvbuff,
                              recvcount, datatype, comm, stream);
}

}  // extern "C"
