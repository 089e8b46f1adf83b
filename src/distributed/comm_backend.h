// CommBackend: blocking collectives over one group of ranks, the layer a
// transport (MPI, NCCL, threads in one process) implements. A backend is
// used from one thread at a time (the Communicator's worker); it never sees
// tensors, only memory, counts and element types.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/framework/types.h"
#include "src/framework/wire_format.h"

namespace fluid {

enum class ReduceOp { kSum, kAvg, kMax };

// How an allreduce spans hosts. kFlat: one collective over all ranks.
// kHierarchical: a reduce within each host (shared memory), an allreduce
// among one leader per host (the network), a broadcast within each host.
enum class AllReduceAlgorithm { kFlat, kHierarchical };
const char* AllReduceAlgorithmName(AllReduceAlgorithm algorithm);

const char* ReduceOpName(ReduceOp op);
ReduceOp ParseReduceOp(const std::string& name);

class CommBackend {
 public:
  virtual ~CommBackend() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;

  // In place over `count` elements. kAvg is a sum followed by a division by
  // size(), done identically on every rank.
  virtual void AllReduce(void* data, int64_t count, DataType dtype,
                         ReduceOp op) = 0;
  // The same over float32 values that travel as 16-bit `wire` values
  // (gradient compression): every rank's contribution is rounded to `wire`,
  // partial results are added in float32 and rounded to `wire` again before
  // they travel on, and the result is cast back to float32 (kAvg divides
  // it there). Bitwise identical across ranks, like AllReduce. This
  // implementation gathers every rank's 16-bit values and adds them in rank
  // order; transports with a reduction of their own override it.
  virtual void AllReduceCompressed(float* data, int64_t count, WireFormat wire,
                                   ReduceOp op);
  virtual void Broadcast(void* data, int64_t bytes, int root) = 0;
  // recv holds size() blocks of `bytes`, rank r's block at r * bytes.
  // `send` may be this rank's own block of recv (in place).
  virtual void AllGather(const void* send, void* recv, int64_t bytes) = 0;
  // `send` holds size() blocks of `count` elements; `recv` receives the
  // reduction over all ranks of block rank(). kAvg divides by size(). Each
  // block is reduced in one place, so the ranks that gather the blocks
  // afterwards hold the same bits. This implementation reduces every block
  // (an AllReduce of a copy: twice the bytes); transports with a
  // reduce-scatter of their own override it.
  virtual void ReduceScatter(const void* send, void* recv, int64_t count,
                             DataType dtype, ReduceOp op);
  // Rank r sends bytes[r] bytes (bytes[rank()] from `send`); recv receives
  // every rank's block in rank order, back to back. Every rank passes the
  // same `bytes`. This implementation pads each block to the largest and
  // calls AllGather; transports with a variable-count gather override it.
  virtual void AllGatherV(const void* send, void* recv,
                          const std::vector<int64_t>& bytes);
  virtual void Barrier() = 0;
  // The collective check's exchange (see communicator.h): `count` (a few)
  // values in host memory replaced by their maximum over the ranks. Every
  // rank makes this same call before a collective, whatever that
  // collective is; `what` ("allreduce") and `bytes` name the collective it
  // precedes, for messages about ranks that never join. This
  // implementation is AllReduce(kMax); transports override it with their
  // cheapest small reduction.
  virtual void CheckExchange(int64_t* values, int count, const char* what,
                             int64_t bytes) {
    AllReduce(values, count, DataType::kInt64, ReduceOp::kMax);
  }
  // Collective: every rank sets the same algorithm at the same point of its
  // collectives. Backends without a hierarchy run kFlat whatever is set.
  virtual void SetAllReduceAlgorithm(AllReduceAlgorithm algorithm) {}
  virtual AllReduceAlgorithm allreduce_algorithm() const {
    return AllReduceAlgorithm::kFlat;
  }
  // Ends the job on every rank (used when this rank cannot continue). Never
  // returns on a real transport.
  virtual void Abort(int code) = 0;

  // Collective over this backend's ranks: a new backend over the ranks
  // that pass the same `color` (>= 0), ranked by `key`, ties by rank here
  // (MPI_Comm_split's rule). It is independent of this one (its own
  // transport channel, used from its own thread) and may outlive it.
  // This implementation throws kUnimplemented naming the backend.
  virtual std::unique_ptr<CommBackend> Split(int color, int key);

  // Backends that move device memory themselves (NCCL) return true and
  // implement the Device* calls, whose pointers are on CUDA device `device`.
  // For the others the Communicator stages device tensors through host
  // memory and calls the host collectives above.
  virtual bool HandlesDeviceMemory() const { return false; }
  virtual void DeviceAllReduce(void* data, int64_t count, DataType dtype,
                               ReduceOp op, int device);
  virtual void DeviceBroadcast(void* data, int64_t bytes, int root, int device);
  virtual void DeviceAllGather(const void* send, void* recv, int64_t bytes,
                               int device);
  virtual void DeviceReduceScatter(const void* send, void* recv, int64_t count,
                                   DataType dtype, ReduceOp op, int device);

 private:
  std::vector<uint16_t> wire_send_, wire_recv_;  // AllReduceCompressed's
  std::vector<char> scatter_;                    // ReduceScatter's copy
  std::vector<char> gather_send_, gather_recv_;  // AllGatherV's
};

// Divides `count` elements of `dtype` at `data` by `n` (the avg of kAvg).
void DivideInPlace(void* data, int64_t count, DataType dtype, int n);

}  // namespace fluid
