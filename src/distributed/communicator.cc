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

// What the next Enqueue on this thread records: set by the collective
// functions just before they enqueue (work queued otherwise is kOther).
thread_local CollectiveDesc t_next_desc;
thread_local int64_t t_next_bytes = 0;

void NextCollective(const CollectiveDesc& desc, int64_t bytes) {
  t_next_desc = desc;
  t_next_bytes = bytes;
}

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
};
static_assert(sizeof(CheckedDesc) == 56, "CheckedDesc must have no padding");

// What the ranks compare: everything but where it was issued.
uint64_t Signature(const CheckedDesc& d) {
  const int64_t fields[] = {d.seq,  d.count, d.kind,   d.dtype, d.op,
                            d.root, d.wire,  d.device, d.check};
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

Communicator::~Communicator() { Shutdown(); }

void Communicator::Shutdown() {
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
                                      std::function<void()> end_job) {
  FLUID_ENFORCE(watchdog_ == nullptr, "the stall watchdog is already running");
  watchdog_ = std::make_unique<StallWatchdog>(
      rank_, size_, &recorder_, std::move(channel), config, std::move(end_job));
}

void Communicator::ConfigureStallWatchdog(StallConfig config) {
  if (watchdog_) watchdog_->Configure(config);
}

CommHandlePtr Communicator::Enqueue(std::function<void(CommBackend*)> work) {
  auto handle = std::make_shared<CommHandle>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    FLUID_ENFORCE_CODE(!stopping_, ErrorCode::kAborted,
                       "collective issued after the communicator shut down");
    const int64_t seq = recorder_.Issue(t_next_desc, t_next_bytes);
    queue_.push_back(Pending{std::move(work), handle, seq, t_next_desc});
  }
  NextCollective(CollectiveDesc(), 0);
  cv_.notify_one();
  return handle;
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
    recorder_.Start(item.seq);
    try {
      CheckCollective(item);
      item.work(backend_.get());
    } catch (...) {
      error = std::current_exception();
    }
    recorder_.Finish(item.seq, error == nullptr);
    item.handle->Finish(error);
  }
}

void Communicator::CheckCollective(const Pending& item) {
  FLUID_ENFORCE_CODE(
      mismatch_.empty(), ErrorCode::kAborted, "collective #", item.seq,
      " not run: the ranks' collectives no longer match: ", mismatch_);
  if (size_ == 1 || (exchanged_ && !check_)) return;
  CheckedDesc mine;
  mine.seq = item.seq;
  mine.count = item.desc.count;
  mine.kind = static_cast<int32_t>(item.desc.kind);
  mine.dtype = item.desc.dtype;
  mine.op = item.desc.op;
  mine.root = item.desc.root;
  mine.wire = item.desc.wire;
  mine.device = item.desc.device;
  mine.check = check_ ? 1 : 0;
  FlightRecorder::Record rec;
  if (recorder_.Get(item.seq, &rec)) {
    mine.step = rec.step;
    mine.index = rec.index;
  }
  // max(signature) and ~min(signature): equal to the signature and its
  // complement on every rank exactly when all ranks agree. The third value
  // is rank 0's token (the others send -1): the job's name when the
  // launcher gives none.
  const auto sig = static_cast<int64_t>(Signature(mine));
  int64_t words[3] = {sig, ~sig, rank_ == 0 ? job_token_ : -1};
  backend_->CheckExchange(words, 3, CollectiveKindName(item.desc.kind),
                          rec.bytes);
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
  Tensor t = tensor;  // shares the buffer until the collective is done
  CollectiveDesc desc =
      DescOf(CollectiveKind::kAllReduce, t, static_cast<int32_t>(op));
  desc.wire = static_cast<int32_t>(wire);
  NextCollective(desc, wire_bytes);
  return Enqueue([this, t, op, ready, wire](CommBackend* b) {
    void* data = const_cast<void*>(t.raw_data());
    auto reduce = [&](void* host) {
      if (wire == WireFormat::kNative) {
        b->AllReduce(host, t.numel(), t.dtype(), op);
      } else if (size_ > 1) {
        b->AllReduceCompressed(static_cast<float*>(host), t.numel(), wire, op);
      }
    };
    if (t.place().is_cpu()) return reduce(data);
    if (ready) ready();
    SetCurrentDevice(t.place().device);
    if (b->HandlesDeviceMemory()) {
      b->DeviceAllReduce(data, t.numel(), t.dtype(), op, t.place().device);
      return;
    }
    if (size_ == 1) return;  // one rank's reduction is its own value
    void* host = Staging(t.bytes());
    CopyBytes(Place::CPU(), host, t.place(), data, t.bytes());
    reduce(host);
    CopyBytes(t.place(), data, Place::CPU(), host, t.bytes());
  });
}

CommHandlePtr Communicator::BroadcastAsync(const Tensor& tensor, int root,
                                           ReadyFn ready) {
  FLUID_ENFORCE(tensor.initialized(), "broadcast of a tensor with no data");
  FLUID_ENFORCE(root >= 0 && root < size_, "broadcast root ", root,
                " out of range for ", size_, " ranks");
  Tensor t = tensor;
  CollectiveDesc desc = DescOf(CollectiveKind::kBroadcast, t);
  desc.root = root;
  NextCollective(desc, static_cast<int64_t>(t.bytes()));
  return Enqueue([this, t, root, ready](CommBackend* b) {
    void* data = const_cast<void*>(t.raw_data());
    const int64_t bytes = static_cast<int64_t>(t.bytes());
    if (t.place().is_cpu()) {
      b->Broadcast(data, bytes, root);
      return;
    }
    if (ready) ready();
    SetCurrentDevice(t.place().device);
    if (b->HandlesDeviceMemory()) {
      b->DeviceBroadcast(data, bytes, root, t.place().device);
      return;
    }
    if (size_ == 1) return;
    void* host = Staging(t.bytes());
    CopyBytes(Place::CPU(), host, t.place(), data, t.bytes());
    b->Broadcast(host, bytes, root);
    CopyBytes(t.place(), data, Place::CPU(), host, t.bytes());
  });
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
  Tensor i = in, o = out;
  NextCollective(DescOf(CollectiveKind::kAllGather, i),
                 static_cast<int64_t>(o.bytes()));
  return Enqueue([this, i, o, ready](CommBackend* b) {
    const int64_t bytes = static_cast<int64_t>(i.bytes());
    void* recv = const_cast<void*>(o.raw_data());
    if (i.place().is_cpu()) {
      b->AllGather(i.raw_data(), recv, bytes);
      return;
    }
    if (ready) ready();
    SetCurrentDevice(i.place().device);
    if (b->HandlesDeviceMemory()) {
      b->DeviceAllGather(i.raw_data(), recv, bytes, i.place().device);
      return;
    }
    // One staging area: the send block at the end, after the receive blocks.
    char* host = static_cast<char*>(Staging(o.bytes() + i.bytes()));
    CopyBytes(Place::CPU(), host + o.bytes(), i.place(), i.raw_data(),
              i.bytes());
    b->AllGather(host + o.bytes(), host, bytes);
    CopyBytes(o.place(), recv, Place::CPU(), host, o.bytes());
  });
}

CommHandlePtr Communicator::ReduceScatterAsync(const Tensor& in,
                                               const Tensor& out, ReduceOp op,
                                               ReadyFn ready) {
  FLUID_ENFORCE(in.initialized() && out.initialized(),
                "reduce-scatter of a tensor with no data");
  FLUID_ENFORCE(in.dtype() == out.dtype(), "reduce-scatter from ",
                DataTypeName(in.dtype()), " into ", DataTypeName(out.dtype()));
  FLUID_ENFORCE(in.numel() == out.numel() * size_, "reduce-scatter input has ",
                in.numel(), " elements, needs ", size_, " x ", out.numel());
  FLUID_ENFORCE(in.place() == out.place(), "reduce-scatter from ",
                in.place().ToString(), " into ", out.place().ToString(),
                ": both tensors must be in one place");
  Tensor i = in, o = out;
  NextCollective(
      DescOf(CollectiveKind::kReduceScatter, o, static_cast<int32_t>(op)),
      static_cast<int64_t>(i.bytes()));
  return Enqueue([this, i, o, op, ready](CommBackend* b) {
    void* recv = const_cast<void*>(o.raw_data());
    if (i.place().is_cpu()) {
      b->ReduceScatter(i.raw_data(), recv, o.numel(), o.dtype(), op);
      return;
    }
    if (ready) ready();
    SetCurrentDevice(i.place().device);
    if (b->HandlesDeviceMemory()) {
      b->DeviceReduceScatter(i.raw_data(), recv, o.numel(), o.dtype(), op,
                             i.place().device);
      return;
    }
    // One staging area: the input blocks, then the output block.
    char* host = static_cast<char*>(Staging(i.bytes() + o.bytes()));
    CopyBytes(Place::CPU(), host, i.place(), i.raw_data(), i.bytes());
    b->ReduceScatter(host, host + i.bytes(), o.numel(), o.dtype(), op);
    CopyBytes(o.place(), recv, Place::CPU(), host + i.bytes(), o.bytes());
  });
}

CommHandlePtr Communicator::SparseAllReduceAsync(const SelectedRows& in,
                                                 SelectedRows* out, ReduceOp op,
                                                 double dense_ratio,
                                                 ReadyFn ready) {
  FLUID_ENFORCE(out != nullptr, "sparse allreduce into nothing");
  auto rows = std::make_shared<std::vector<int64_t>>(in.rows());
  const Tensor values = in.value();  // shares the buffer until done
  const int64_t height = in.height(), width = in.row_width();
  Shape shape = values.shape();
  if (shape.rank() == 0) shape = Shape{0, 1};
  // The rows differ across ranks (a rank may have none, and then no row
  // width either); the table's height and type must not.
  NextCollective(
      Desc(CollectiveKind::kSparseAllReduce,
           static_cast<int32_t>(values.dtype()), height,
           static_cast<int32_t>(op)),
      static_cast<int64_t>(values.initialized() ? values.bytes() : 0));
  return Enqueue([this, rows, values, height, width, shape, op, dense_ratio,
                  ready, out](CommBackend* b) {
    Tensor host = values;
    if (!values.place().is_cpu() && values.initialized()) {
      if (ready) ready();
      host = Tensor();
      host.CopyFrom(values, Place::CPU());
    }
    SparseReduceInput in{rows.get(), rows->empty() ? nullptr : host.raw_data(),
                         width, height, values.dtype()};
    SparseReduceOutput result;
    SparseAllReduce(b, in, op, dense_ratio, &result);
    if (size_ > 1) allreduce_wire_bytes_ += result.wire_bytes;
    Shape out_shape = shape;
    out_shape[0] = static_cast<int64_t>(result.rows.size());
    result.values.Resize(out_shape);
    out->set_height(height);
    *out->mutable_rows() = std::move(result.rows);
    if (values.place().is_cpu()) {
      *out->mutable_value() = result.values;
    } else {
      Tensor on_device;
      on_device.CopyFrom(result.values, values.place());
      *out->mutable_value() = on_device;
    }
  });
}

CommHandlePtr Communicator::BarrierAsync() {
  NextCollective(Desc(CollectiveKind::kBarrier), 0);
  return Enqueue([](CommBackend* b) { b->Barrier(); });
}

void Communicator::SetAllReduceAlgorithm(AllReduceAlgorithm algorithm) {
  NextCollective(
      Desc(CollectiveKind::kSetAlgorithm, -1, static_cast<int64_t>(algorithm)),
      0);
  Enqueue([algorithm](CommBackend* b) {
    b->SetAllReduceAlgorithm(algorithm);
  })->Wait();
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
