#include "src/distributed/communicator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sstream>

#include "src/distributed/job_control.h"
#include "src/distributed/sparse_allreduce.h"
#include "src/distributed/stall_watchdog.h"
#include "src/framework/device.h"
#include "src/framework/hash.h"
#include "src/framework/memory.h"

namespace fluid {

namespace {

CollectiveDesc Desc(CollectiveKind kind, int32_t dtype = -1, int64_t count = 0,
                    int32_t op = -1) {
  CollectiveDesc d;
  d.kind = kind;
  d.dtype = dtype;
  d.count = count;
  d.op = op;
  return d;
}

bool CheckFromEnvironment() {
  const char* v = std::getenv("FLUID_COLLECTIVE_CHECK");
  if (v == nullptr || *v == '\0') return true;
  const std::string s = v;
  if (s == "1" || s == "on") return true;
  if (s == "0" || s == "off") return false;
  FLUID_THROW(ErrorCode::kInvalidArgument, "FLUID_COLLECTIVE_CHECK=", Quote(s),
              ": expected 0 or off (no check of the ranks' collectives), 1 "
              "or on (the default)");
}

// One rank's collective as the ranks exchange it on a mismatch: plain
// values, no padding.
struct CheckedDesc {
  int64_t seq = 0;
  int64_t count = 0;
  int64_t step = 0;  // where it was issued: not compared
  int32_t index = 0;
  int32_t kind = 0;
  int32_t dtype = -1;
  int32_t op = -1;
  int32_t root = -1;
  int32_t wire = 0;
  int32_t device = 0;
  int32_t check = 0;  // the sender checks every collective
  int32_t micro_batch = -1;
  int32_t unused = 0;
};
static_assert(sizeof(CheckedDesc) == 64, "CheckedDesc must have no padding");

// What the ranks compare: everything but where it was issued.
uint64_t Signature(const CheckedDesc& d) {
  const int64_t fields[] = {d.seq,  d.count, d.kind,   d.dtype, d.op,
                            d.root, d.wire,  d.device, d.check, d.micro_batch};
  return Fnv1a64(fields, sizeof(fields));
}

CollectiveDesc ToDesc(const CheckedDesc& d) {
  CollectiveDesc c;
  c.kind = static_cast<CollectiveKind>(d.kind);
  c.dtype = d.dtype;
  c.count = d.count;
  c.op = d.op;
  c.root = d.root;
  c.wire = d.wire;
  c.device = d.device;
  c.micro_batch = d.micro_batch;
  return c;
}

// Each distinct value of `key` with the ranks that have it, in the order of
// their first rank: "rank 0 X, ranks 1-3 Y".
template <typename Key>
std::string ByRanks(const std::vector<CheckedDesc>& all, Key key) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    const std::string k = key(all[r]);
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&k](const auto& g) { return g.first == k; });
    if (it == groups.end()) {
      groups.push_back({k, {r}});
    } else {
      it->second.push_back(r);
    }
  }
  std::ostringstream os;
  for (size_t i = 0; i < groups.size() && i < 8; ++i)
    os << (i ? ", " : "") << FormatRankList(groups[i].second) << " "
       << groups[i].first;
  if (groups.size() > 8) os << ", ...";
  return os.str();
}

// The message of a mismatch, the same on every rank.
std::string DescribeMismatch(const std::vector<CheckedDesc>& all) {
  bool same_check = true, same_seq = true;
  for (const CheckedDesc& d : all) {
    same_check = same_check && d.check == all[0].check;
    same_seq = same_seq && d.seq == all[0].seq;
  }
  std::ostringstream os;
  if (!same_check) {
    os << "ranks disagree on the collective check (FLUID_COLLECTIVE_CHECK): "
       << ByRanks(all,
                  [](const CheckedDesc& d) {
                    return std::string(d.check ? "on" : "off");
                  })
       << "; set it alike on every rank (mpirun -x FLUID_COLLECTIVE_CHECK)";
    return os.str();
  }
  if (same_seq) {
    os << "collective #" << all[0].seq
       << " differs across ranks: " << ByRanks(all, [](const CheckedDesc& d) {
            return DescribeCollective(ToDesc(d));
          });
  } else {
    os << "the ranks are at different collectives: "
       << ByRanks(all, [](const CheckedDesc& d) {
            return "#" + std::to_string(d.seq) + " " +
                   DescribeCollective(ToDesc(d));
          });
  }
  os << " (a collective issued on some ranks only, or in another order)";
  return os.str();
}

}  // namespace

void CommHandle::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

bool CommHandle::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void CommHandle::Finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

Communicator::Communicator(std::unique_ptr<CommBackend> backend)
    : Communicator(std::move(backend), CheckFromEnvironment()) {}

Communicator::Communicator(std::unique_ptr<CommBackend> backend,
                           bool check_collectives)
    : backend_(std::move(backend)), check_(check_collectives) {
  FLUID_ENFORCE(backend_ != nullptr, "Communicator needs a backend");
  rank_ = backend_->rank();
  size_ = backend_->size();
  backend_name_ = backend_->name();
  if (rank_ == 0) {
    std::random_device random;
    job_token_ = static_cast<int64_t>(
        ((static_cast<uint64_t>(random()) << 32) ^ random()) >> 1);
  }
  worker_ = std::thread([this] { Loop(); });
}

Communicator::~Communicator() {
  Shutdown();
  // The rings' transports go before this one's (MPI frees a split
  // communicator before the world's is done with).
  std::lock_guard<std::mutex> lock(groups_mu_);
  groups_.clear();
}

void Communicator::Shutdown() {
  ShutdownGroups();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !worker_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (watchdog_) watchdog_->Stop();
}

void Communicator::StartStallWatchdog(std::unique_ptr<ProgressChannel> channel,
                                      StallConfig config,
                                      std::function<void()> end_job,
                                      RingChannels ring_channels) {
  FLUID_ENFORCE(watchdog_ == nullptr, "the stall watchdog is already running");
  std::lock_guard<std::mutex> lock(groups_mu_);
  ring_channels_ = std::move(ring_channels);
  stall_end_job_ = end_job;
  StallScope scope;
  scope.others = [this] { return ActivityBesides(0); };
  watchdog_ = std::make_unique<StallWatchdog>(
      rank_, size_, &recorder_, std::move(channel), config, std::move(end_job),
      std::move(scope));
}

void Communicator::ConfigureStallWatchdog(StallConfig config) {
  if (watchdog_) watchdog_->Configure(config);
  // A ring made after this reads the config from watchdog_ under the same
  // lock, so no ring keeps an older one.
  std::lock_guard<std::mutex> lock(groups_mu_);
  for (auto& ring : groups_) ring.second.comm->ConfigureStallWatchdog(config);
}

void Communicator::BeginStep() {
  recorder_.BeginStep();
  std::lock_guard<std::mutex> lock(groups_mu_);
  for (auto& ring : groups_) ring.second.comm->BeginStep();
}

CommHandlePtr Communicator::Enqueue(const CollectiveDesc& desc, int64_t bytes,
                                    Work work, Exchange exchange) {
  auto handle = std::make_shared<CommHandle>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    FLUID_ENFORCE_CODE(!stopping_, ErrorCode::kAborted,
                       "collective issued after the communicator shut down");
    const int64_t seq = recorder_.Issue(desc, bytes);
    queue_.push_back(
        Pending{std::move(work), handle, seq, desc, std::move(exchange)});
  }
  cv_.notify_one();
  return handle;
}

CommHandlePtr Communicator::EnqueueDense(const CollectiveDesc& desc,
                                         int64_t bytes,
                                         DenseCollective collective) {
  return Enqueue(desc, bytes,
                 [this, c = std::move(collective)](CommBackend* b, int64_t*) {
                   RunDense(b, c);
                 });
}

void Communicator::RunDense(CommBackend* b, const DenseCollective& c) {
  const void* send = c.in.raw_data();
  void* recv = const_cast<void*>(c.out.raw_data());
  const Place place = c.in.place();
  if (place.is_cpu()) return c.host(b, send, recv);
  if (c.ready) c.ready();
  SetCurrentDevice(place.device);
  if (b->HandlesDeviceMemory()) return c.device(b, send, recv, place.device);
  const bool in_place = send == recv && c.in.bytes() == c.out.bytes();
  if (in_place && size_ == 1) return;  // one rank's result is its input
  // One staging area: the receive buffer, then the send buffer unless the
  // collective works in place.
  const size_t recv_bytes = c.out.bytes();
  char* host =
      static_cast<char*>(Staging(recv_bytes + (in_place ? 0 : c.in.bytes())));
  char* host_send = in_place ? host : host + recv_bytes;
  CopyBytes(Place::CPU(), host_send, place, send, c.in.bytes());
  c.host(b, host_send, host);
  CopyBytes(c.out.place(), recv, Place::CPU(), host, recv_bytes);
}

void Communicator::Loop() {
  for (;;) {
    Pending item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and drained
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    std::exception_ptr error;
    int64_t bytes = -1;
    recorder_.Start(item.seq);
    try {
      CheckCollective(item);
      item.work(backend_.get(), &bytes);
    } catch (...) {
      error = std::current_exception();
    }
    if (bytes >= 0) recorder_.SetBytes(item.seq, bytes);
    recorder_.Finish(item.seq, error == nullptr);
    // The work holds the collective's tensors (their buffers are shared):
    // drop them before the handle lets a waiter go on, so that a buffer
    // freed right after its c_wait (stage 3's gathered parameters) is freed
    // then, not whenever this thread next gets to run.
    item.work = nullptr;
    item.handle->Finish(error);
  }
}

void Communicator::CheckCollective(const Pending& item) {
  FLUID_ENFORCE_CODE(
      mismatch_.empty(), ErrorCode::kAborted, "collective #", item.seq,
      " not run: the ranks' collectives no longer match: ", mismatch_);
  const int extra = item.exchange ? static_cast<int>(item.exchange->size()) : 0;
  if (size_ == 1 || (exchanged_ && !check_)) {
    if (extra > 0 && size_ > 1)
      backend_->CheckExchange(item.exchange->data(), extra,
                              CollectiveKindName(item.desc.kind), 0);
    return;
  }
  CheckedDesc mine;
  mine.seq = item.seq;
  mine.count = item.desc.count;
  mine.kind = static_cast<int32_t>(item.desc.kind);
  mine.dtype = item.desc.dtype;
  mine.op = item.desc.op;
  mine.root = item.desc.root;
  mine.wire = item.desc.wire;
  mine.device = item.desc.device;
  mine.micro_batch = item.desc.micro_batch;
  mine.check = check_ ? 1 : 0;
  FlightRecorder::Record rec;
  if (recorder_.Get(item.seq, &rec)) {
    mine.step = rec.step;
    mine.index = rec.index;
  }
  // max(signature) and ~min(signature): equal to the signature and its
  // complement on every rank exactly when all ranks agree. The third value
  // is rank 0's token (the others send -1): the job's name when the
  // launcher gives none. The item's exchange words follow.
  const auto sig = static_cast<int64_t>(Signature(mine));
  constexpr int kMaxExchange = 29;
  FLUID_ENFORCE(extra <= kMaxExchange, "a collective's exchange of ", extra,
                " words; at most ", kMaxExchange);
  int64_t words[3 + kMaxExchange] = {sig, ~sig, rank_ == 0 ? job_token_ : -1};
  if (extra > 0)
    std::copy(item.exchange->begin(), item.exchange->end(), words + 3);
  backend_->CheckExchange(words, 3 + extra, CollectiveKindName(item.desc.kind),
                          rec.bytes);
  if (extra > 0)
    std::copy(words + 3, words + 3 + extra, item.exchange->begin());
  if (!exchanged_ && !recorder_.has_job_id() && words[2] >= 0) {
    char job[32];
    std::snprintf(job, sizeof(job), "fluid-%016llx",
                  static_cast<unsigned long long>(words[2]));
    recorder_.SetJobId(job);
  }
  exchanged_ = true;
  if (words[0] == ~words[1]) return;
  // They differ: every rank saw the same maximum and minimum, so every rank
  // gathers the descriptors here.
  std::vector<CheckedDesc> all(size_);
  backend_->AllGather(&mine, all.data(), sizeof(CheckedDesc));
  mismatch_ = DescribeMismatch(all);
  // The process's communicator in a job (it has a flight recorder file)
  // says so at once, on every rank, whatever its caller does with the
  // error: a thread that issued a collective on one rank only may not be
  // the one that ends the job.
  if (recorder_.dump_path()[0] != '\0') {
    const std::string reason = "collective mismatch: " + mismatch_;
    std::string line =
        "fluid: rank " + std::to_string(rank_) + ": " + mismatch_;
    if (recorder_.Dump(reason.c_str())) {
      line += "; flight recorder written to " +
              std::string(recorder_.dump_path()) +
              " (tools/flight_report.py reads every rank's)";
    }
    WriteErrorLine(line);
  }
  FLUID_THROW(ErrorCode::kAborted, mismatch_);
}

CollectiveDesc Communicator::DescOf(CollectiveKind kind, const Tensor& t,
                                    int32_t op) const {
  CollectiveDesc d = Desc(kind, static_cast<int32_t>(t.dtype()), t.numel(), op);
  d.device = !t.place().is_cpu() && backend_->HandlesDeviceMemory();
  return d;
}

void* Communicator::Staging(size_t bytes) {
  int64_t words = static_cast<int64_t>((bytes + 7) / 8);
  if (!staging_.initialized() || staging_.numel() < words)
    return staging_.mutable_data<double>(Shape{words}, Place::CPU());
  return staging_.data<double>();
}

CommHandlePtr Communicator::AllReduceAsync(const Tensor& tensor, ReduceOp op,
                                           ReadyFn ready, WireFormat wire) {
  FLUID_ENFORCE(tensor.initialized(), "allreduce of a tensor with no data");
  if (wire != WireFormat::kNative) {
    FLUID_ENFORCE(tensor.dtype() == DataType::kFloat32,
                  "gradient compression (", WireFormatName(wire),
                  ") applies to float32 tensors, got ",
                  DataTypeName(tensor.dtype()));
    FLUID_ENFORCE_CODE(
        tensor.place().is_cpu() || !backend_->HandlesDeviceMemory(),
        ErrorCode::kUnimplemented, "gradient compression (",
        WireFormatName(wire), ") is not implemented on the ", backend_name_,
        " transport, which reduces device memory itself; use none");
  }
  const int64_t wire_bytes =
      wire == WireFormat::kNative
          ? static_cast<int64_t>(tensor.bytes())
          : tensor.numel() * static_cast<int64_t>(WireBytes(wire));
  if (size_ > 1) allreduce_wire_bytes_ += wire_bytes;
  CollectiveDesc desc =
      DescOf(CollectiveKind::kAllReduce, tensor, static_cast<int32_t>(op));
  desc.wire = static_cast<int32_t>(wire);
  const int64_t n = tensor.numel();
  const DataType dtype = tensor.dtype();
  DenseCollective c{tensor, tensor, std::move(ready), nullptr, nullptr};
  c.host = [this, n, dtype, op, wire](CommBackend* b, const void*, void* data) {
    if (wire == WireFormat::kNative) {
      b->AllReduce(data, n, dtype, op);
    } else if (size_ > 1) {
      b->AllReduceCompressed(static_cast<float*>(data), n, wire, op);
    }
  };
  c.device = [n, dtype, op](CommBackend* b, const void*, void* data,
                            int device) {
    b->DeviceAllReduce(data, n, dtype, op, device);
  };
  return EnqueueDense(desc, wire_bytes, std::move(c));
}

CommHandlePtr Communicator::BroadcastAsync(const Tensor& tensor, int root,
                                           ReadyFn ready, int32_t micro_batch) {
  FLUID_ENFORCE(tensor.initialized(), "broadcast of a tensor with no data");
  FLUID_ENFORCE(root >= 0 && root < size_, "broadcast root ", root,
                " out of range for ", size_, " ranks");
  CollectiveDesc desc = DescOf(CollectiveKind::kBroadcast, tensor);
  desc.root = root;
  desc.micro_batch = micro_batch;
  return EnqueueDense(desc, static_cast<int64_t>(tensor.bytes()),
                      BroadcastOf(tensor, root, std::move(ready)));
}

CommHandlePtr Communicator::AllGatherAsync(const Tensor& in, const Tensor& out,
                                           ReadyFn ready) {
  FLUID_ENFORCE(in.initialized() && out.initialized(),
                "allgather of a tensor with no data");
  FLUID_ENFORCE(out.bytes() == in.bytes() * static_cast<size_t>(size_),
                "allgather output holds ", out.bytes(), " bytes, needs ",
                in.bytes() * size_);
  FLUID_ENFORCE(in.place() == out.place(), "allgather from ",
                in.place().ToString(), " into ", out.place().ToString(),
                ": both tensors must be in one place");
  const int64_t block = static_cast<int64_t>(in.bytes());
  DenseCollective c{in, out, std::move(ready), nullptr, nullptr};
  c.host = [block](CommBackend* b, const void* send, void* recv) {
    b->AllGather(send, recv, block);
  };
  c.device = [block](CommBackend* b, const void* send, void* recv, int device) {
    b->DeviceAllGather(send, recv, block, device);
  };
  return EnqueueDense(DescOf(CollectiveKind::kAllGather, in),
                      static_cast<int64_t>(out.bytes()), std::move(c));
}

CommHandlePtr Communicator::ReduceScatterAsync(const Tensor& in,
                                               const Tensor& out, ReduceOp op,
                                               ReadyFn ready, WireFormat wire) {
  FLUID_ENFORCE(in.initialized() && out.initialized(),
                "reduce-scatter of a tensor with no data");
  FLUID_ENFORCE(in.dtype() == out.dtype(), "reduce-scatter from ",
                DataTypeName(in.dtype()), " into ", DataTypeName(out.dtype()));
  FLUID_ENFORCE(in.numel() == out.numel() * size_, "reduce-scatter input has ",
                in.numel(), " elements, needs ", size_, " x ", out.numel());
  FLUID_ENFORCE(in.place() == out.place(), "reduce-scatter from ",
                in.place().ToString(), " into ", out.place().ToString(),
                ": both tensors must be in one place");
  if (wire != WireFormat::kNative) {
    FLUID_ENFORCE(in.dtype() == DataType::kFloat32, "gradient compression (",
                  WireFormatName(wire), ") applies to float32 tensors, got ",
                  DataTypeName(in.dtype()));
    FLUID_ENFORCE_CODE(in.place().is_cpu(), ErrorCode::kUnimplemented,
                       "a compressed (", WireFormatName(wire),
                       ") reduce-scatter takes host tensors; ",
                       in.place().ToString(), " is not one (use none)");
  }
  const int64_t n = out.numel();
  const DataType dtype = out.dtype();
  const int64_t wire_bytes =
      wire == WireFormat::kNative
          ? static_cast<int64_t>(in.bytes())
          : in.numel() * static_cast<int64_t>(WireBytes(wire));
  if (size_ > 1) allreduce_wire_bytes_ += wire_bytes;
  DenseCollective c{in, out, std::move(ready), nullptr, nullptr};
  c.host = [this, n, dtype, op, wire](CommBackend* b, const void* send,
                                      void* recv) {
    if (wire == WireFormat::kNative)
      return b->ReduceScatter(send, recv, n, dtype, op);
    CompressedReduceScatter(b, static_cast<const float*>(send),
                            static_cast<float*>(recv), n, op, wire);
  };
  c.device = [n, dtype, op](CommBackend* b, const void* send, void* recv,
                            int device) {
    b->DeviceReduceScatter(send, recv, n, dtype, op, device);
  };
  CollectiveDesc desc =
      DescOf(CollectiveKind::kReduceScatter, out, static_cast<int32_t>(op));
  desc.wire = static_cast<int32_t>(wire);
  return EnqueueDense(desc, wire_bytes, std::move(c));
}

void Communicator::CompressedReduceScatter(CommBackend* b, const float* send,
                                           float* recv, int64_t n, ReduceOp op,
                                           WireFormat wire) {
  const int64_t total = n * size_;
  if (static_cast<int64_t>(wire_in_.size()) < total) wire_in_.resize(total);
  if (static_cast<int64_t>(wire_out_.size()) < n) wire_out_.resize(n);
  EncodeWire(wire, send, wire_in_.data(), total);
  // Summed in 16 bits (each addition in float32), averaged in float32.
  b->ReduceScatter(
      wire_in_.data(), wire_out_.data(), n,
      wire == WireFormat::kBf16 ? DataType::kBFloat16 : DataType::kFloat16,
      op == ReduceOp::kMax ? ReduceOp::kMax : ReduceOp::kSum);
  DecodeWire(wire, wire_out_.data(), recv, n);
  if (op == ReduceOp::kAvg) DivideInPlace(recv, n, DataType::kFloat32, size_);
}

// What the worker needs of a sparse allreduce: this rank's rows and values
// as they were when it was issued, and where the result goes.
struct Communicator::SparseCollective {
  std::vector<int64_t> rows;
  Tensor values;  // shares the buffer until done
  int64_t height = 0, width = 0;
  Shape shape;  // of the values, [rows, ...]
  ReduceOp op = ReduceOp::kSum;
  double dense_ratio = 0;
  ReadyFn ready;
  SelectedRows* out = nullptr;
};

CommHandlePtr Communicator::SparseAllReduceAsync(const SelectedRows& in,
                                                 SelectedRows* out, ReduceOp op,
                                                 double dense_ratio,
                                                 ReadyFn ready) {
  FLUID_ENFORCE(out != nullptr, "sparse allreduce into nothing");
  auto c = std::make_shared<SparseCollective>();
  c->rows = in.rows();
  c->values = in.value();
  c->height = in.height();
  c->width = in.row_width();
  c->shape = c->values.shape();
  if (c->shape.rank() == 0) c->shape = Shape{0, 1};
  c->op = op;
  c->dense_ratio = dense_ratio;
  c->ready = std::move(ready);
  c->out = out;
  // The rows differ across ranks (a rank may have none, and then no row
  // width either); the table's height and type must not.
  const CollectiveDesc desc = Desc(CollectiveKind::kSparseAllReduce,
                                   static_cast<int32_t>(c->values.dtype()),
                                   c->height, static_cast<int32_t>(op));
  // What the gather of rows and values will send; the dense fallback
  // sends the table instead, and the worker records that when it runs.
  const int64_t offered =
      static_cast<int64_t>(c->rows.size() * sizeof(int64_t)) +
      static_cast<int64_t>(c->values.initialized() ? c->values.bytes() : 0);
  return Enqueue(desc, offered, [this, c](CommBackend* b, int64_t* bytes) {
    *bytes = RunSparse(b, *c);
  });
}

int64_t Communicator::RunSparse(CommBackend* b, const SparseCollective& c) {
  Tensor host = c.values;
  const bool on_device = !c.values.place().is_cpu();
  if (on_device && c.values.initialized()) {
    if (c.ready) c.ready();
    host = Tensor();
    host.CopyFrom(c.values, Place::CPU());
  }
  SparseReduceInput in{&c.rows, c.rows.empty() ? nullptr : host.raw_data(),
                       c.width, c.height, c.values.dtype()};
  SparseReduceOutput result;
  SparseAllReduce(b, in, c.op, c.dense_ratio, &result);
  if (size_ > 1) allreduce_wire_bytes_ += result.wire_bytes;
  Shape out_shape = c.shape;
  out_shape[0] = static_cast<int64_t>(result.rows.size());
  result.values.Resize(out_shape);
  c.out->set_height(c.height);
  *c.out->mutable_rows() = std::move(result.rows);
  if (on_device) {
    Tensor device_values;
    device_values.CopyFrom(result.values, c.values.place());
    *c.out->mutable_value() = device_values;
  } else {
    *c.out->mutable_value() = result.values;
  }
  return result.wire_bytes;
}

CommHandlePtr Communicator::BarrierAsync() {
  return Enqueue(Desc(CollectiveKind::kBarrier), 0,
                 [](CommBackend* b, int64_t*) { b->Barrier(); });
}

void Communicator::SetAllReduceAlgorithm(AllReduceAlgorithm algorithm) {
  Enqueue(
      Desc(CollectiveKind::kSetAlgorithm, -1, static_cast<int64_t>(algorithm)),
      0,
      [algorithm](CommBackend* b, int64_t*) {
        b->SetAllReduceAlgorithm(algorithm);
      })
      ->Wait();
}

std::vector<uint64_t> Communicator::AllGatherValue(uint64_t value) {
  Tensor in, out;
  in.mutable_data<int64_t>(Shape{1})[0] = static_cast<int64_t>(value);
  out.mutable_data<int64_t>(Shape{size_});
  AllGather(in, out);
  std::vector<uint64_t> values(size_);
  for (int r = 0; r < size_; ++r)
    values[r] = static_cast<uint64_t>(out.data<int64_t>()[r]);
  return values;
}

void Communicator::Abort(int code) { backend_->Abort(code); }

}  // namespace fluid
