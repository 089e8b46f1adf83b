#include "src/distributed/mpi_backend.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "src/distributed/launcher.h"
#include "src/distributed/mpi_membership.h"

namespace fluid {

namespace {

bool g_we_initialized = false;
std::mutex g_init_mu;

void Check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  FLUID_THROW(ErrorCode::kAborted, what, " failed: ", std::string(msg, len));
}

MPI_Datatype MpiType(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return MPI_FLOAT;
    case DataType::kFloat64:
      return MPI_DOUBLE;
    case DataType::kInt32:
      return MPI_INT32_T;
    case DataType::kInt64:
      return MPI_INT64_T;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return MPI_UINT16_T;  // reduced by the wire reductions below
    case DataType::kBool:
      return MPI_UINT8_T;
  }
  return MPI_BYTE;
}

// User-defined reductions over 16-bit wire values (MPI has no bfloat16 or
// half type): each pair of values is widened to float32, combined, and
// rounded back to the wire format.
template <uint16_t (*kEncode)(float), float (*kDecode)(uint16_t), bool kMax>
void WireReduce(void* in, void* inout, int* len, MPI_Datatype*) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = kDecode(a[i]), y = kDecode(b[i]);
    b[i] = kEncode(kMax ? std::max(x, y) : x + y);
  }
}

// MPI counts are ints: larger buffers go in chunks.
constexpr int64_t kMaxChunk = INT_MAX / 8;

// The name of an MPI thread level, for messages.
const char* ThreadLevelName(int level) {
  if (level == MPI_THREAD_SINGLE) return "MPI_THREAD_SINGLE";
  if (level == MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  if (level == MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  if (level == MPI_THREAD_MULTIPLE) return "MPI_THREAD_MULTIPLE";
  return "unknown";
}

// A backend over one MPI communicator: the world (which says farewell
// through MpiMembership), or a group split from it (which it owns and
// frees; a group's collectives are not counted by the membership watcher,
// so a rank that leaves while the others wait in a group collective is
// not named by it).
class MpiBackend : public CommBackend {
 public:
  MpiBackend() : MpiBackend(MPI_COMM_WORLD) {}
  explicit MpiBackend(MPI_Comm comm) : comm_(comm) {
    Check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    Check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    // Errors come back as codes, which become exceptions naming the call.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    if (comm_ == MPI_COMM_WORLD)
      membership_ = std::make_unique<MpiMembership>(MPI_COMM_WORLD);
  }
  // Says farewell: see MpiMembership. Runs when the communicator shuts down,
  // after its queue has drained.
  ~MpiBackend() override {
    membership_.reset();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (leaders_ != MPI_COMM_NULL) MPI_Comm_free(&leaders_);
    if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
    if (comm_ != MPI_COMM_WORLD) MPI_Comm_free(&comm_);
    for (MPI_Op& op : wire_ops_)
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
  }

  // A group's communicator runs collectives on a worker thread of its own,
  // concurrently with the world's: MPI must allow calls from several
  // threads at once.
  std::unique_ptr<CommBackend> Split(int color, int key) override {
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    FLUID_ENFORCE_CODE(provided >= MPI_THREAD_MULTIPLE,
                       ErrorCode::kUnimplemented,
                       "groups of ranks (tensor parallelism) need "
                       "MPI_THREAD_MULTIPLE, since each group's collectives "
                       "run on a thread of their own; this MPI provides ",
                       ThreadLevelName(provided));
    MPI_Comm group = MPI_COMM_NULL;
    {
      Counted counted(membership_.get(), "split", 0);
      Check(MPI_Comm_split(comm_, color, key, &group), "MPI_Comm_split");
    }
    return std::make_unique<MpiBackend>(group);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }

  void AllReduce(void* data, int64_t count, DataType dtype,
                 ReduceOp op) override {
    MPI_Op mop = ReduceOpOf(dtype, op);
    char* p = static_cast<char*>(data);
    const size_t elem = SizeOf(dtype);
    Counted counted(membership_.get(), "allreduce", count * elem);
    ReduceChunks(p, count, elem, MpiType(dtype), mop);
    if (op == ReduceOp::kAvg) DivideInPlace(data, count, dtype, size_);
  }

  // The 16-bit values go around a ring (ReduceScatterGather): Open MPI's
  // allreduce of a user-defined reduction reduced to one rank and
  // broadcast, which halved the bytes but not the time.
  void AllReduceCompressed(float* data, int64_t count, WireFormat wire,
                           ReduceOp op) override {
    FLUID_ENFORCE(wire != WireFormat::kNative,
                  "AllReduceCompressed needs a 16-bit wire format");
    if (static_cast<int64_t>(wire_.size()) < count) wire_.resize(count);
    EncodeWire(wire, data, wire_.data(), count);
    MPI_User_function* reduce = WireFunction(wire, op);
    {
      Counted counted(membership_.get(), "allreduce", count * 2);
      if (algorithm_ == AllReduceAlgorithm::kHierarchical) {
        FLUID_ENFORCE(count <= INT_MAX, "a compressed bucket of ", count,
                      " values is too large");
        const int n = static_cast<int>(count);
        Check(MPI_Reduce(local_rank_ == 0 ? MPI_IN_PLACE : wire_.data(),
                         wire_.data(), n, MPI_UINT16_T, WireOp(wire, op), 0,
                         node_),
              "MPI_Reduce (within the host)");
        if (leaders_ != MPI_COMM_NULL)
          ReduceScatterGather(count, reduce, leaders_);
        Check(MPI_Bcast(wire_.data(), n, MPI_UINT16_T, 0, node_),
              "MPI_Bcast (within the host)");
      } else {
        ReduceScatterGather(count, reduce, comm_);
      }
    }
    DecodeWire(wire, wire_.data(), data, count);
    if (op == ReduceOp::kAvg)
      DivideInPlace(data, count, DataType::kFloat32, size_);
  }

  void SetAllReduceAlgorithm(AllReduceAlgorithm algorithm) override {
    if (algorithm == AllReduceAlgorithm::kHierarchical &&
        node_ == MPI_COMM_NULL) {
      // The ranks sharing this rank's memory (its host), and one leader
      // (the lowest rank) per host; made once, by every rank alike.
      Check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_,
                                MPI_INFO_NULL, &node_),
            "MPI_Comm_split_type");
      Check(MPI_Comm_rank(node_, &local_rank_), "MPI_Comm_rank");
      Check(MPI_Comm_split(comm_, local_rank_ == 0 ? 0 : MPI_UNDEFINED, rank_,
                           &leaders_),
            "MPI_Comm_split");
      MPI_Comm_set_errhandler(node_, MPI_ERRORS_RETURN);
      if (leaders_ != MPI_COMM_NULL)
        MPI_Comm_set_errhandler(leaders_, MPI_ERRORS_RETURN);
    }
    algorithm_ = algorithm;
  }
  AllReduceAlgorithm allreduce_algorithm() const override { return algorithm_; }

  void Broadcast(void* data, int64_t bytes, int root) override {
    Counted counted(membership_.get(), "broadcast", bytes);
    char* p = static_cast<char*>(data);
    for (int64_t done = 0; done < bytes; done += kMaxChunk) {
      int n = static_cast<int>(std::min(kMaxChunk, bytes - done));
      Check(MPI_Bcast(p + done, n, MPI_BYTE, root, comm_), "MPI_Bcast");
    }
  }

  void AllGather(const void* send, void* recv, int64_t bytes) override {
    FLUID_ENFORCE(bytes <= INT_MAX, "allgather block of ", bytes,
                  " bytes is too large");
    Counted counted(membership_.get(), "allgather", bytes * size_);
    const bool in_place = send == static_cast<char*>(recv) + rank_ * bytes;
    Check(
        MPI_Allgather(in_place ? MPI_IN_PLACE : send, static_cast<int>(bytes),
                      MPI_BYTE, recv, static_cast<int>(bytes), MPI_BYTE, comm_),
        "MPI_Allgather");
  }

  void ReduceScatter(const void* send, void* recv, int64_t count,
                     DataType dtype, ReduceOp op) override {
    FLUID_ENFORCE(count <= INT_MAX, "reduce-scatter block of ", count,
                  " elements is too large");
    Counted counted(membership_.get(), "reducescatter",
                    count * size_ * static_cast<int64_t>(SizeOf(dtype)));
    Check(
        MPI_Reduce_scatter_block(send, recv, static_cast<int>(count),
                                 MpiType(dtype), ReduceOpOf(dtype, op), comm_),
        "MPI_Reduce_scatter_block");
    if (op == ReduceOp::kAvg) DivideInPlace(recv, count, dtype, size_);
  }

  void AllGatherV(const void* send, void* recv,
                  const std::vector<int64_t>& bytes) override {
    std::vector<int> counts(size_), displs(size_);
    int64_t offset = 0;
    for (int r = 0; r < size_; ++r) {
      FLUID_ENFORCE(bytes[r] <= INT_MAX && offset <= INT_MAX, "allgatherv of ",
                    bytes[r], " bytes at offset ", offset, " is too large");
      counts[r] = static_cast<int>(bytes[r]);
      displs[r] = static_cast<int>(offset);
      offset += bytes[r];
    }
    Counted counted(membership_.get(), "allgatherv", offset);
    Check(MPI_Allgatherv(send, counts[rank_], MPI_BYTE, recv, counts.data(),
                         displs.data(), MPI_BYTE, comm_),
          "MPI_Allgatherv");
  }

  // One flat MPI_Allreduce over the ranks, whatever the algorithm set.
  // For the membership watcher it is part of the collective it checks.
  void CheckExchange(int64_t* values, int count, const char* what,
                     int64_t bytes) override {
    if (membership_ != nullptr) membership_->EnterCheck(what, bytes);
    const int rc =
        MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_INT64_T, MPI_MAX, comm_);
    if (membership_ != nullptr) membership_->Exit();
    Check(rc, "MPI_Allreduce (collective check)");
  }

  void Barrier() override {
    Counted counted(membership_.get(), "barrier", 0);
    Check(MPI_Barrier(comm_), "MPI_Barrier");
  }

  void Abort(int code) override { MPI_Abort(MPI_COMM_WORLD, code); }

 private:
  // Marks one collective for the membership watcher, for its duration.
  class Counted {
   public:
    Counted(MpiMembership* m, const char* what, int64_t bytes) : m_(m) {
      if (m_ != nullptr) m_->Enter(what, bytes);
    }
    ~Counted() {
      if (m_ != nullptr) m_->Exit();
    }

   private:
    MpiMembership* m_;
  };

  // An in-place allreduce of `count` elements of `elem` bytes at `p`, in
  // chunks MPI's int counts can hold, by the algorithm set.
  void ReduceChunks(char* p, int64_t count, size_t elem, MPI_Datatype type,
                    MPI_Op op) {
    const bool hier = algorithm_ == AllReduceAlgorithm::kHierarchical;
    for (int64_t done = 0; done < count; done += kMaxChunk) {
      int n = static_cast<int>(std::min(kMaxChunk, count - done));
      if (hier) {
        HierarchicalAllReduce(p + done * elem, n, type, op);
      } else {
        Check(MPI_Allreduce(MPI_IN_PLACE, p + done * elem, n, type, op, comm_),
              "MPI_Allreduce");
      }
    }
  }

  // An allreduce of the first `count` 16-bit values of wire_ over `comm`,
  // zero-padded to one block per rank: a ring reduce-scatter (each step
  // sends one block to the next rank while receiving one from the previous,
  // so both directions of every link stay busy) and a ring allgather.
  // Every block is reduced in one fixed order, so all ranks end with the
  // same bits.
  void ReduceScatterGather(int64_t count, MPI_User_function* reduce,
                           MPI_Comm comm) {
    int n = 1, r = 0;
    Check(MPI_Comm_size(comm, &n), "MPI_Comm_size");
    Check(MPI_Comm_rank(comm, &r), "MPI_Comm_rank");
    if (n == 1) return;
    const int64_t block = (count + n - 1) / n;
    FLUID_ENFORCE(block <= INT_MAX, "a compressed bucket of ", count,
                  " values is too large");
    if (static_cast<int64_t>(wire_.size()) < block * (n + 1))
      wire_.resize(block * (n + 1));  // grows once, keeps the values
    std::fill(wire_.begin() + count, wire_.begin() + block * n, uint16_t{0});
    uint16_t* in = wire_.data() + block * n;
    int b = static_cast<int>(block);
    MPI_Datatype type = MPI_UINT16_T;
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    auto at = [&](int k) { return wire_.data() + ((k % n + n) % n) * block; };
    for (int step = 0; step < n - 1; ++step) {
      Check(MPI_Sendrecv(at(r - step), b, type, next, 0, in, b, type, prev, 0,
                         comm, MPI_STATUS_IGNORE),
            "MPI_Sendrecv (reduce-scatter)");
      reduce(in, at(r - step - 1), &b, &type);
    }
    // Rank r now holds block r + 1 reduced; pass the blocks on around.
    for (int step = 0; step < n - 1; ++step) {
      Check(MPI_Sendrecv(at(r + 1 - step), b, type, next, 1, at(r - step), b,
                         type, prev, 1, comm, MPI_STATUS_IGNORE),
            "MPI_Sendrecv (allgather)");
    }
  }

  // The MPI reduction of `dtype` values for `op`: MPI's own, or for the
  // 16-bit float dtypes (which MPI lacks) the wire reduction of that format.
  MPI_Op ReduceOpOf(DataType dtype, ReduceOp op) {
    if (dtype == DataType::kBFloat16) return WireOp(WireFormat::kBf16, op);
    if (dtype == DataType::kFloat16) return WireOp(WireFormat::kFp16, op);
    return op == ReduceOp::kMax ? MPI_MAX : MPI_SUM;
  }

  // The reduction of 16-bit `wire` values for `op`: the function, and the
  // MPI_Op made of it on first use.
  static int WireIndex(WireFormat wire, ReduceOp op) {
    return (wire == WireFormat::kFp16 ? 2 : 0) + (op == ReduceOp::kMax ? 1 : 0);
  }
  static MPI_User_function* WireFunction(WireFormat wire, ReduceOp op) {
    static MPI_User_function* const kFunctions[4] = {
        WireReduce<FloatToBf16, Bf16ToFloat, false>,
        WireReduce<FloatToBf16, Bf16ToFloat, true>,
        WireReduce<FloatToFp16, Fp16ToFloat, false>,
        WireReduce<FloatToFp16, Fp16ToFloat, true>};
    return kFunctions[WireIndex(wire, op)];
  }
  MPI_Op WireOp(WireFormat wire, ReduceOp op) {
    MPI_Op& slot = wire_ops_[WireIndex(wire, op)];
    if (slot == MPI_OP_NULL)
      Check(MPI_Op_create(WireFunction(wire, op), /*commute=*/1, &slot),
            "MPI_Op_create");
    return slot;
  }

  // Reduce to the host's leader, allreduce among the leaders, broadcast
  // from the leader: every rank ends with the leaders' result, bit for bit.
  void HierarchicalAllReduce(char* p, int n, MPI_Datatype type, MPI_Op op) {
    Check(MPI_Reduce(local_rank_ == 0 ? MPI_IN_PLACE : p, p, n, type, op, 0,
                     node_),
          "MPI_Reduce (within the host)");
    if (leaders_ != MPI_COMM_NULL) {
      Check(MPI_Allreduce(MPI_IN_PLACE, p, n, type, op, leaders_),
            "MPI_Allreduce (between hosts)");
    }
    Check(MPI_Bcast(p, n, type, 0, node_), "MPI_Bcast (within the host)");
  }

  MPI_Comm comm_ = MPI_COMM_WORLD;
  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<MpiMembership> membership_;  // the world's only
  std::atomic<AllReduceAlgorithm> algorithm_{AllReduceAlgorithm::kFlat};
  MPI_Comm node_ = MPI_COMM_NULL;  // this rank's host
  int local_rank_ = 0;             // in node_
  MPI_Comm leaders_ = MPI_COMM_NULL;
  std::vector<uint16_t> wire_;  // AllReduceCompressed's 16-bit values
  MPI_Op wire_ops_[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
};

}  // namespace

bool LaunchedByMpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr ||
         std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

void EnsureMpiInitialized() {
  // A rank outliving its launcher would keep training (and checkpointing)
  // unseen: stop with it.
  if (LaunchedByMpi()) WatchLauncher();
  std::lock_guard<std::mutex> lock(g_init_mu);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  FLUID_ENFORCE_CODE(!finalized, ErrorCode::kAborted,
                     "MPI was already finalised in this process");
  if (initialized) {
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    FLUID_ENFORCE_CODE(provided >= MPI_THREAD_SERIALIZED,
                       ErrorCode::kUnimplemented,
                       "MPI was initialised by another library with thread "
                       "level ",
                       provided,
                       "; collectives run on a worker thread and need at "
                       "least MPI_THREAD_SERIALIZED (mpi4py: set "
                       "mpi4py.rc.thread_level = 'multiple')");
    return;
  }
  // A launch that cannot train (srun --mpi=pmi2 with no PMI-2 client, a
  // PMIx rank that is not Slurm's, more ranks on a node than CPUs allotted)
  // is refused before MPI starts: MPI_Init would abort the process or
  // start a job that must not train.
  CheckLaunch(DetectLaunch(), 0);
  int provided = MPI_THREAD_SINGLE;
  Check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided),
        "MPI_Init_thread");
  g_we_initialized = true;
  FLUID_ENFORCE_CODE(provided >= MPI_THREAD_SERIALIZED,
                     ErrorCode::kUnimplemented,
                     "this MPI provides thread level ", provided,
                     "; at least MPI_THREAD_SERIALIZED is needed");
}

void FinalizeMpiIfOwned() {
  std::lock_guard<std::mutex> lock(g_init_mu);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (g_we_initialized && !finalized) MPI_Finalize();
}

std::unique_ptr<CommBackend> MakeMpiBackend() {
  EnsureMpiInitialized();
  return std::make_unique<MpiBackend>();
}

}  // namespace fluid
