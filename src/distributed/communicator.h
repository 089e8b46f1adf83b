// Communicator: runs collectives on one background thread, in the order they
// were issued. Every rank runs the same program, so every rank issues the
// same collectives in the same order, which is all the matching a transport
// needs.
//
// The collective check makes sure of it: before each collective the worker
// exchanges with the other ranks a 64-bit signature of what the collective
// is (its number, kind, element type, element count, reduce op, root, wire
// format; a CollectiveDesc) in one small allreduce of the signature's
// maximum and minimum, the same call on every rank whatever collective
// follows. When they differ (a collective issued on some ranks only, from
// another thread, or with other sizes) the ranks gather each other's
// descriptors and the collective fails on every rank with one message,
// "collective #15 differs across ranks: rank 0 allgather int64 x 1, rank 1
// allreduce(avg) float32 x 4096 ...", instead of running mismatched
// collectives (a hang, or garbage); every later collective fails too, and
// the flight recorder is written. On by default; FLUID_COLLECTIVE_CHECK=0
// in every rank's environment turns it off (the ranks compare the setting
// on their first collective, so that ranks that disagree fail there rather
// than hang).
//
// An op enqueues a collective and gets a CommHandle; waiting on the handle
// blocks until that collective (and so every earlier one) has finished and
// rethrows its error, if any. Tensors passed in are held (their buffers are
// shared) until the collective completes. The enqueue functions are
// thread-safe. Destruction drains the queue and joins the worker.
//
// Groups of ranks (rings, for tensor parallelism): ring 0 is this
// communicator; ring r > 0 is a Communicator of its own over some of its
// ranks, made by CreateGroup and owned by this one.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/distributed/comm_backend.h"
#include "src/distributed/flight_recorder.h"
#include "src/framework/selected_rows.h"
#include "src/framework/tensor.h"

namespace fluid {

class ProgressChannel;
class StallWatchdog;
struct StallConfig;
struct ProcessActivity;

class CommHandle {
 public:
  // Blocks until the collective is done; rethrows its error.
  void Wait();
  bool done() const;
  // A received tensor message (RecvTensorAsync): the tensor, complete once
  // Wait has returned; null for every other collective.
  Tensor* received() const { return received_.get(); }

 private:
  friend class Communicator;
  void Finish(std::exception_ptr error);
  std::shared_ptr<Tensor> received_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

using CommHandlePtr = std::shared_ptr<CommHandle>;

class Communicator {
 public:
  // The collective check on unless FLUID_COLLECTIVE_CHECK is 0 or off (an
  // error when it holds anything but 0, 1, off or on).
  explicit Communicator(std::unique_ptr<CommBackend> backend);
  Communicator(std::unique_ptr<CommBackend> backend, bool check_collectives);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& backend_name() const { return backend_name_; }
  bool checks_collectives() const { return check_; }

  // Tensors may live in host or device memory. For device tensors `ready`
  // (when given) runs on the worker before the collective touches the
  // memory: it waits for the kernels that produce it (see
  // CUDADeviceContext::ReadyFence). A backend that cannot move device
  // memory gets it staged through a host buffer the worker reuses.
  //
  // A `wire` format other than kNative sends a float32 tensor's values as
  // 16-bit values (see CommBackend::AllReduceCompressed); a transport that
  // moves device memory itself (NCCL) does not compress, and says so.
  using ReadyFn = std::function<void()>;
  CommHandlePtr AllReduceAsync(const Tensor& tensor, ReduceOp op,
                               ReadyFn ready = nullptr,
                               WireFormat wire = WireFormat::kNative);
  // `micro_batch` (>= 0) tags a pipeline's send or receive: the ranks
  // compare it, and the flight recorder and stall messages name it.
  CommHandlePtr BroadcastAsync(const Tensor& tensor, int root,
                               ReadyFn ready = nullptr,
                               int32_t micro_batch = -1);
  // `out` must hold size() times `in`'s elements, rank r's at r * numel.
  // Both in host memory or both on one device.
  CommHandlePtr AllGatherAsync(const Tensor& in, const Tensor& out,
                               ReadyFn ready = nullptr);
  // `in` holds size() blocks of out's elements; `out` receives the
  // reduction over all ranks of block rank(). Same dtype, one place. A
  // `wire` format other than kNative sends float32 host tensors' values as
  // 16-bit values: each rank's are rounded to `wire`, reduced by the
  // transport's 16-bit reduce-scatter (added in float32, rounded to `wire`)
  // and widened back into `out` (kAvg divides there, in float32).
  CommHandlePtr ReduceScatterAsync(const Tensor& in, const Tensor& out,
                                   ReduceOp op, ReadyFn ready = nullptr,
                                   WireFormat wire = WireFormat::kNative);
  CommHandlePtr BarrierAsync();
  // A tensor message on a ring of two ranks (a pipeline's send_v2 and
  // recv_v2), one collective (one check, one flight recorder entry) that
  // moves a header (dtype, shape, the count of sequence offsets; in the
  // collective check's exchange), the offsets if any, then the values. The
  // sender passes its tensor; the receiver learns the shape from the header,
  // checks it with `accept` on the worker (which throws to refuse it: the
  // handle's error), allocates the tensor at `place` there and receives into
  // it; it is the handle's received() once Wait returns. `fence`, when given,
  // makes the receiver's ready fence after that allocation (device memory: the
  // kernels that used the memory before it was freed must be done). Both sides
  // tag the message with the sender's rank as root, the value's dtype and the
  // micro-batch; the ranks compare those, not the element count, which the
  // receiver does not know beforehand. A ring of two ranks only.
  using AcceptFn = std::function<void(DataType dtype, const Shape& shape)>;
  using FenceFn = std::function<ReadyFn()>;
  CommHandlePtr SendTensorAsync(const Tensor& x, ReadyFn ready,
                                int32_t micro_batch);
  CommHandlePtr RecvTensorAsync(int root, DataType dtype, Place place,
                                AcceptFn accept, FenceFn fence,
                                int32_t micro_batch);
  // Sparse rows summed (kSum) or averaged (kAvg) over the ranks into `out`
  // (c_sparse_allreduce; src/distributed/sparse_allreduce.h has the rule
  // and the dense fallback past `dense_ratio`). `in`'s rows and values are
  // taken when the call is made; `out` (which may be `in`) is written by
  // the worker and must not be touched until the handle is done. The same
  // on every rank, bit for bit. Its bytes count in allreduce_wire_bytes().
  CommHandlePtr SparseAllReduceAsync(const SelectedRows& in, SelectedRows* out,
                                     ReduceOp op, double dense_ratio,
                                     ReadyFn ready = nullptr);

  void AllReduce(const Tensor& t, ReduceOp op) {
    AllReduceAsync(t, op)->Wait();
  }
  void Broadcast(const Tensor& t, int root) { BroadcastAsync(t, root)->Wait(); }
  void AllGather(const Tensor& in, const Tensor& out) {
    AllGatherAsync(in, out)->Wait();
  }
  void ReduceScatter(const Tensor& in, const Tensor& out, ReduceOp op) {
    ReduceScatterAsync(in, out, op)->Wait();
  }
  void Barrier() { BarrierAsync()->Wait(); }
  // Sets the backend's allreduce algorithm, in order with the collectives
  // already issued. Collective (see CommBackend::SetAllReduceAlgorithm).
  void SetAllReduceAlgorithm(AllReduceAlgorithm algorithm);
  AllReduceAlgorithm allreduce_algorithm() const {
    return backend_->allreduce_algorithm();
  }

  // Bytes of tensor data this rank has handed to the transport's
  // allreduces and reduce-scatters so far, in their wire format (halved by
  // compression), and to its sparse allreduces (rows and values, or the
  // dense table).
  int64_t allreduce_wire_bytes() const { return allreduce_wire_bytes_.load(); }

  // Gathers one value per rank; for small control exchanges.
  std::vector<uint64_t> AllGatherValue(uint64_t value);

  // Time callers spent blocked in waits (c_wait, synchronous collectives):
  // communication the computation did not hide.
  double exposed_wait_seconds() const { return exposed_wait_ns_.load() * 1e-9; }
  void AddExposedWait(int64_t ns) { exposed_wait_ns_ += ns; }

  // Ends the whole job (all ranks) with `code`; used by edges that cannot
  // continue. Does not return on a real transport.
  void Abort(int code);

  // Collective over this communicator, run on its worker in order with the
  // collectives issued before it, and waited for: the ranks that pass the
  // same `color` (>= 0) form ring `ring_id` (> 0), ranked in it by `key`,
  // ties by their rank here. The ring is a Communicator of its own (its own
  // worker thread, collective check and flight recorder; a stall watchdog
  // of its own when this one's was started with ring channels, see
  // StartStallWatchdog), owned by this one and shut down before it. A ring_id
  // already made with the same color returns that ring and issues nothing
  // (every rank takes that path alike, since all make the same calls); another
  // color is an error. Calls are serialised; the rings' transports must allow
  // collectives on several threads at once (MPI_THREAD_MULTIPLE; see
  // CommBackend::Split).
  // `label` says what the ring is for in the stall watchdog's messages
  // ("pipeline stages 0 -> 1, activations").
  Communicator* CreateGroup(int ring_id, int color, int key,
                            const std::string& label = "");
  // Ring `ring_id`: this communicator for 0, else the one CreateGroup made;
  // an unknown ring is an error naming it. Thread-safe (ops call it from
  // the executor's thread while the worker runs).
  Communicator* Group(int ring_id);

  // Drains the queue and joins the worker, the rings' first; idempotent.
  // Collectives issued afterwards are errors.
  void Shutdown();

  // Stall detection (see stall_watchdog.h and flight_recorder.h): every
  // collective is recorded, with its kind and the bytes it moves (see
  // FlightRecorder::Record), and so is the timeline's; a step of the
  // program begins with BeginStep (in the rings too).
  // The watchdog runs once started (over `channel`) until Shutdown. With
  // `ring_channels`, given a ring id and the ring's members' world ranks
  // (this communicator's ranks must then be the world's), every ring of 2
  // or more ranks made afterwards gets a watchdog of its own over the
  // channel it returns (none when it returns null), with this one's
  // config and `end_job`, stopped when the ring shuts down.
  using RingChannels = std::function<std::unique_ptr<ProgressChannel>(
      int ring_id, const std::vector<int>& world_ranks)>;
  FlightRecorder* flight_recorder() { return &recorder_; }
  void BeginStep();
  void StartStallWatchdog(std::unique_ptr<ProgressChannel> channel,
                          StallConfig config, std::function<void()> end_job,
                          RingChannels ring_channels = nullptr);
  // This one's and the rings' watchdogs; no-op without one.
  void ConfigureStallWatchdog(StallConfig config);
  bool has_stall_watchdog() const { return watchdog_ != nullptr; }

 private:
  // What runs on the worker. It may set `*bytes` to what the collective
  // handed to the transport when only running it tells (a sparse
  // allreduce's rows choose its path); the recorder then keeps that.
  using Work = std::function<void(CommBackend* b, int64_t* bytes)>;
  // Words that ride with the collective check's exchange (a tensor
  // message's header): each rank's in, their maximum over the ranks out,
  // before the work runs; exchanged alone when the check is off.
  using Exchange = std::shared_ptr<std::vector<int64_t>>;
  struct Pending {
    Work work;
    CommHandlePtr handle;
    int64_t seq = 0;  // in recorder_
    CollectiveDesc desc;
    Exchange exchange;
  };
  // One dense collective from `in` into `out` (the same tensor when it
  // works in place), both in one place, and the two calls that run it:
  // `host` on host buffers (the tensors' own, or the staging area when the
  // transport cannot move device memory), `device` on device buffers the
  // transport moves itself (NCCL).
  struct DenseCollective {
    Tensor in, out;
    ReadyFn ready;
    std::function<void(CommBackend* b, const void* send, void* recv)> host;
    std::function<void(CommBackend* b, const void* send, void* recv,
                       int device)>
        device;
  };
  // Records the collective `desc` moving `bytes` in the flight recorder
  // (and so the timeline), and queues `work` for the worker.
  CommHandlePtr Enqueue(const CollectiveDesc& desc, int64_t bytes, Work work,
                        Exchange exchange = nullptr);
  CommHandlePtr EnqueueDense(const CollectiveDesc& desc, int64_t bytes,
                             DenseCollective collective);
  // Worker-only: the recipe every dense collective shares (host memory,
  // the transport's device path, or device memory staged through host).
  void RunDense(CommBackend* b, const DenseCollective& c);
  // Worker-only: the sparse allreduce of SparseAllReduceAsync; returns the
  // bytes it handed to the transport.
  struct SparseCollective;
  int64_t RunSparse(CommBackend* b, const SparseCollective& c);
  void Loop();
  // Worker-only: the collective check of `item` (see above); throws when
  // the ranks' collectives differ, or differed before.
  void CheckCollective(const Pending& item);
  // What the collective check compares of a collective on `t`: kind,
  // dtype, element count, reduce op (-1: none) and whether it takes the
  // transport's device path.
  CollectiveDesc DescOf(CollectiveKind kind, const Tensor& t,
                        int32_t op = -1) const;
  // A broadcast of `t` from `root`, in place.
  static DenseCollective BroadcastOf(const Tensor& t, int root, ReadyFn ready);
  // Worker-only: ReduceScatterAsync's compressed form, on host memory.
  void CompressedReduceScatter(CommBackend* b, const float* send, float* recv,
                               int64_t n, ReduceOp op, WireFormat wire);
  // Worker-only: host memory for staging `bytes` of device data.
  void* Staging(size_t bytes);
  // The ring `ring_id` made with `color`; null when there is none; an
  // error when it was made with another color.
  Communicator* ExistingGroup(int ring_id, int color);
  void ShutdownGroups();
  // Starts `ring`'s stall watchdog (ring `ring_id`, whose ranks are world
  // ranks `world_ranks`). Called with groups_mu_ held.
  void StartRingWatchdog(Communicator* ring, int ring_id,
                         std::vector<int> world_ranks,
                         const std::string& label);
  // The progress of this communicator and its rings but ring `ring_id`
  // (0: this one), and a ring among them in a collective; for watchdogs.
  ProcessActivity ActivityBesides(int ring_id);
  // Writes the process's flight recorder and ring `ring_id`'s (next to it,
  // in ring-<id>/) as a ring's watchdog ends the job; returns the paths.
  std::string DumpWithRing(int ring_id, const char* reason);

  struct Ring {
    int color = 0;
    std::unique_ptr<Communicator> comm;
  };

  std::unique_ptr<CommBackend> backend_;
  int rank_;
  int size_;
  std::string backend_name_;
  bool check_ = true;
  // Worker-only: the first exchange is done (it happens whatever check_
  // is); the message of a mismatch, after which nothing more runs.
  bool exchanged_ = false;
  std::string mismatch_;
  int64_t job_token_ = 0;  // rank 0's names the job when the launcher's not
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  std::atomic<int64_t> exposed_wait_ns_{0};
  std::atomic<int64_t> allreduce_wire_bytes_{0};
  Tensor staging_;  // touched by the worker only
  // Worker-only: a compressed reduce-scatter's 16-bit values.
  std::vector<uint16_t> wire_in_, wire_out_;
  FlightRecorder recorder_;
  std::unique_ptr<StallWatchdog> watchdog_;
  RingChannels ring_channels_;           // set once, by StartStallWatchdog
  std::function<void()> stall_end_job_;  // the rings' watchdogs'
  std::mutex create_mu_;                 // one CreateGroup at a time
  std::mutex groups_mu_;                 // guards groups_
  std::map<int, Ring> groups_;
  std::thread worker_;
};

}  // namespace fluid
