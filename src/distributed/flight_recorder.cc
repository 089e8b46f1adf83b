#include "src/distributed/flight_recorder.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "src/distributed/comm_backend.h"
#include "src/distributed/timeline_session.h"
#include "src/framework/math/int_math.h"
#include "src/framework/timeline.h"

namespace fluid {

namespace {

// Formats into a fixed buffer with no allocation and no locale, so that a
// signal handler may use it; text past the end is dropped.
class LineBuffer {
 public:
  LineBuffer(char* buf, size_t cap) : buf_(buf), cap_(cap) {}
  LineBuffer& Str(const char* s) {
    while (s != nullptr && *s != '\0' && len_ < cap_) buf_[len_++] = *s++;
    return *this;
  }
  LineBuffer& Int(int64_t v) {
    char text[24];
    const int n = FormatDecimal(v, text);
    for (int i = 0; i < n && len_ < cap_; ++i) buf_[len_++] = text[i];
    return *this;
  }
  size_t size() const { return len_; }

 private:
  char* buf_;
  size_t cap_;
  size_t len_ = 0;
};

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

const char* StateName(int32_t state) {
  switch (state) {
    case FlightRecorder::kIssued:
      return "issued";
    case FlightRecorder::kRunning:
      return "running";
    case FlightRecorder::kDone:
      return "done";
    case FlightRecorder::kFailed:
      return "failed";
  }
  return "unknown";
}

int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Room for the header and 256 records of about 150 bytes each.
char g_dump_buf[64 << 10];
std::atomic<bool> g_dump_busy{false};
std::atomic<FlightRecorder*> g_target{nullptr};
// The recorder whose file has been written: the first reason stands (a
// rank that ends the job for a stall gets SIGTERM from the launcher next).
std::atomic<const FlightRecorder*> g_written{nullptr};
struct sigaction g_previous_term;
bool g_term_installed = false;

void OnTerm(int sig, siginfo_t* info, void* context) {
  DumpFlightRecorder("SIGTERM (the launcher is ending the job)");
  DumpTimeline("SIGTERM (the launcher is ending the job)",
               /*wait_for_others=*/true);
  const struct sigaction& prev = g_previous_term;
  if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction != nullptr) {
    prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler == SIG_IGN) return;
  if (prev.sa_handler != SIG_DFL && prev.sa_handler != nullptr) {
    prev.sa_handler(sig);
    return;
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

const char* CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "allreduce";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kAllGather:
      return "allgather";
    case CollectiveKind::kBarrier:
      return "barrier";
    case CollectiveKind::kReduceScatter:
      return "reducescatter";
    case CollectiveKind::kSparseAllReduce:
      return "sparse_allreduce";
    case CollectiveKind::kSetAlgorithm:
      return "set_allreduce_algorithm";
    case CollectiveKind::kSplit:
      return "split";
    case CollectiveKind::kOther:
      break;
  }
  return "collective";
}

namespace {

// The names of a descriptor's fields, or null where it has none; no
// allocation (Dump uses them).
const char* DtypeNameOf(int32_t dtype) {
  if (dtype < 0 || dtype > static_cast<int32_t>(DataType::kInt64))
    return nullptr;
  return DataTypeName(static_cast<DataType>(dtype));
}

const char* OpNameOf(int32_t op) {
  if (op < 0 || op > static_cast<int32_t>(ReduceOp::kMax)) return nullptr;
  return ReduceOpName(static_cast<ReduceOp>(op));
}

const char* WireNameOf(int32_t wire) {
  if (wire <= 0 || wire > static_cast<int32_t>(WireFormat::kFp16))
    return nullptr;
  return WireFormatName(static_cast<WireFormat>(wire));
}

}  // namespace

std::string DescribeCollective(const CollectiveDesc& d) {
  std::ostringstream os;
  os << CollectiveKindName(d.kind);
  if (d.kind == CollectiveKind::kSetAlgorithm) {
    os << "("
       << AllReduceAlgorithmName(static_cast<AllReduceAlgorithm>(d.count))
       << ")";
    return os.str();
  }
  if (d.kind == CollectiveKind::kSplit) {
    os << " into ring " << d.count;
    return os.str();
  }
  if (const char* op = OpNameOf(d.op)) os << "(" << op << ")";
  if (d.kind == CollectiveKind::kBarrier) return os.str();
  if (const char* dtype = DtypeNameOf(d.dtype)) os << " " << dtype;
  if (d.kind == CollectiveKind::kSparseAllReduce) {
    os << " rows of a table of " << d.count;
  } else if (d.count < 0) {
    os << " message";  // a tensor message: its header gives the shape
  } else {
    os << " x " << d.count;
  }
  if (d.root >= 0) os << " from rank " << d.root;
  if (const char* wire = WireNameOf(d.wire)) os << " as " << wire;
  if (d.device) os << " on the device transport";
  if (d.micro_batch >= 0) os << " (micro-batch " << d.micro_batch << ")";
  return os.str();
}

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t FlightRecorder::Issue(const CollectiveDesc& desc, int64_t bytes) {
  const int64_t seq = issued_.load(std::memory_order_relaxed) + 1;
  Slot& s = SlotOf(seq);
  s.seq.store(-seq);  // being rewritten: readers skip it
  s.kind.store(static_cast<int32_t>(desc.kind), std::memory_order_relaxed);
  s.dtype.store(desc.dtype, std::memory_order_relaxed);
  s.op.store(desc.op, std::memory_order_relaxed);
  s.root.store(desc.root, std::memory_order_relaxed);
  s.wire.store(desc.wire, std::memory_order_relaxed);
  s.device.store(desc.device, std::memory_order_relaxed);
  s.micro_batch.store(desc.micro_batch, std::memory_order_relaxed);
  s.count.store(desc.count, std::memory_order_relaxed);
  s.index.store(++step_index_, std::memory_order_relaxed);
  s.state.store(kIssued, std::memory_order_relaxed);
  s.bytes.store(bytes, std::memory_order_relaxed);
  s.step.store(step_.load(std::memory_order_relaxed),
               std::memory_order_relaxed);
  s.issue_ns.store(MonotonicNs(), std::memory_order_relaxed);
  s.start_ns.store(0, std::memory_order_relaxed);
  s.end_ns.store(0, std::memory_order_relaxed);
  s.seq.store(seq);
  issued_.store(seq);
  progress_.fetch_add(1, std::memory_order_relaxed);
  return seq;
}

void FlightRecorder::Start(int64_t seq) {
  Slot& s = SlotOf(seq);
  if (s.seq.load() == seq) {
    s.start_ns.store(MonotonicNs(), std::memory_order_relaxed);
    s.state.store(kRunning);
  }
  started_.store(seq);
  progress_.fetch_add(1, std::memory_order_relaxed);
}

void FlightRecorder::SetBytes(int64_t seq, int64_t bytes) {
  Slot& s = SlotOf(seq);
  if (s.seq.load() == seq) s.bytes.store(bytes, std::memory_order_relaxed);
}

void FlightRecorder::Finish(int64_t seq, bool ok) {
  Slot& s = SlotOf(seq);
  if (s.seq.load() == seq) {
    s.end_ns.store(MonotonicNs(), std::memory_order_relaxed);
    s.state.store(ok ? kDone : kFailed);
    Timeline* timeline = CurrentTimeline();
    if (timeline != nullptr) RecordInTimeline(seq, timeline);
  }
  finished_.store(seq);
  progress_.fetch_add(1, std::memory_order_relaxed);
}

// The collective as the timeline shows it (worker thread, after Finish).
void FlightRecorder::RecordInTimeline(int64_t seq, Timeline* timeline) const {
  Record r;
  if (!Get(seq, &r)) return;
  timeline->RecordCollective(
      Timeline::Collective{CollectiveKindName(r.desc.kind), r.bytes, r.step,
                           r.seq, r.index, r.issue_ns, r.start_ns, r.end_ns});
}

void FlightRecorder::BeginStep() {
  Timeline* timeline = CurrentTimeline();
  if (timeline != nullptr) timeline->SetStep(step_.load() + 1);
  step_.fetch_add(1);
  step_index_ = 0;
  progress_.fetch_add(1, std::memory_order_relaxed);
}

bool FlightRecorder::Get(int64_t seq, Record* out) const {
  if (seq <= 0) return false;
  const Slot& s = ring_[seq % kCapacity];
  if (s.seq.load() != seq) return false;
  out->seq = seq;
  out->desc.kind = static_cast<CollectiveKind>(s.kind.load());
  out->desc.dtype = s.dtype.load();
  out->desc.op = s.op.load();
  out->desc.root = s.root.load();
  out->desc.wire = s.wire.load();
  out->desc.device = s.device.load();
  out->desc.micro_batch = s.micro_batch.load();
  out->desc.count = s.count.load();
  out->index = s.index.load();
  out->state = static_cast<State>(s.state.load());
  out->bytes = s.bytes.load();
  out->step = s.step.load();
  out->issue_ns = s.issue_ns.load();
  out->start_ns = s.start_ns.load();
  out->end_ns = s.end_ns.load();
  return s.seq.load() == seq;  // not rewritten meanwhile
}

std::string FlightRecorder::SetDumpPath(const std::string& dir, int rank,
                                        int size) {
  std::string chosen = dir.empty() ? "." : dir;
  struct stat st;
  if (::stat(chosen.c_str(), &st) != 0) ::mkdir(chosen.c_str(), 0755);
  if (::stat(chosen.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
      ::access(chosen.c_str(), W_OK) != 0)
    chosen = ".";
  std::string path = chosen + "/flight-rank-" + std::to_string(rank) + ".txt";
  if (path.size() >= sizeof(path_))
    path = "flight-rank-" + std::to_string(rank) + ".txt";
  rank_ = rank;
  size_ = size;
  dir_to_make_[0] = '\0';
  std::memcpy(path_, path.c_str(), path.size() + 1);
  return chosen;
}

void FlightRecorder::SetDefaultDumpPath(const std::string& dir, int rank,
                                        int size) {
  std::string path = dir + "/flight-rank-" + std::to_string(rank) + ".txt";
  const bool fits = path.size() < sizeof(path_);
  if (!fits) path = "flight-rank-" + std::to_string(rank) + ".txt";
  rank_ = rank;
  size_ = size;
  const std::string make = fits ? dir : std::string();
  std::memcpy(dir_to_make_, make.c_str(), make.size() + 1);
  std::memcpy(path_, path.c_str(), path.size() + 1);
}

std::string DefaultFlightDir(const std::string& job_id) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::string job = job_id.empty() ? "ppid" + std::to_string(::getppid())
                                   : job_id.substr(0, 100);
  for (char& c : job) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                       c == '_';
    if (!plain) c = '_';
  }
  return dir + "/fluid-flight-" + job;
}

void FlightRecorder::SetNote(const std::string& note) {
  note_busy_.store(1);
  const size_t n = std::min(note.size(), sizeof(note_) - 1);
  std::memcpy(note_, note.data(), n);
  note_[n] = '\0';
  note_busy_.store(0);
}

void FlightRecorder::SetJobId(const std::string& job) {
  int idle = 0;
  if (job.empty() || !job_set_.compare_exchange_strong(idle, 2)) return;
  const size_t n = std::min(job.size(), sizeof(job_) - 1);
  for (size_t i = 0; i < n; ++i) {
    const char c = job[i];
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                       c == '_' || c == ':';
    job_[i] = plain ? c : '_';
  }
  job_[n] = '\0';
  job_set_.store(1);
}

bool FlightRecorder::Dump(const char* reason) const {
  if (path_[0] == '\0') return false;
  if (g_written.load() == this) return true;
  bool idle = false;
  if (!g_dump_busy.compare_exchange_strong(idle, true)) return false;
  LineBuffer b(g_dump_buf, sizeof(g_dump_buf));
  const int64_t now = MonotonicNs();
  b.Str(
      "# fluid flight recorder: the last collectives of one rank, oldest "
      "first; times in ms before the dump\n");
  b.Str("rank ").Int(rank_).Str(" size ").Int(size_).Str(" pid ");
  b.Int(::getpid()).Str(" unix_ms ").Int(RealtimeNs() / 1000000).Str("\n");
  if (job_set_.load() == 1) b.Str("job ").Str(job_).Str("\n");
  b.Str("reason ").Str(reason).Str("\n");
  b.Str("issued ").Int(issued_.load()).Str(" started ").Int(started_.load());
  b.Str(" finished ").Int(finished_.load()).Str(" step ").Int(step_.load());
  b.Str("\n");
  if (note_busy_.load() == 0 && note_[0] != '\0')
    b.Str("note ").Str(note_).Str("\n");
  const int64_t last = issued_.load();
  for (int64_t seq = last - kCapacity + 1; seq <= last; ++seq) {
    Record r;
    if (!Get(seq, &r)) continue;
    b.Str("seq ").Int(r.seq).Str(" op ").Str(CollectiveKindName(r.desc.kind));
    b.Str(" bytes ").Int(r.bytes).Str(" step ").Int(r.step);
    b.Str(" index ").Int(r.index).Str(" state ").Str(StateName(r.state));
    b.Str(" issued_ms_ago ").Int((now - r.issue_ns) / 1000000);
    b.Str(" started_ms_ago ")
        .Int(r.start_ns ? (now - r.start_ns) / 1000000 : -1);
    b.Str(" ended_ms_ago ").Int(r.end_ns ? (now - r.end_ns) / 1000000 : -1);
    // What the collective is (the fields the ranks must agree on).
    if (const char* dtype = DtypeNameOf(r.desc.dtype)) {
      b.Str(" dtype ").Str(dtype).Str(" count ").Int(r.desc.count);
    }
    if (const char* op = OpNameOf(r.desc.op)) b.Str(" reduce ").Str(op);
    if (r.desc.root >= 0) b.Str(" root ").Int(r.desc.root);
    if (const char* wire = WireNameOf(r.desc.wire)) b.Str(" wire ").Str(wire);
    if (r.desc.device) b.Str(" device 1");
    if (r.desc.micro_batch >= 0) b.Str(" micro_batch ").Int(r.desc.micro_batch);
    b.Str("\n");
  }
  bool ok = false;
  const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  int fd = ::open(path_, flags, 0644);
  if (fd < 0 && dir_to_make_[0] != '\0') {
    ::mkdir(dir_to_make_, 0755);  // async-signal-safe
    fd = ::open(path_, flags, 0644);
  }
  if (fd >= 0) {
    ok = WriteAll(fd, g_dump_buf, b.size());
    ::close(fd);
  }
  if (ok) g_written.store(this);
  g_dump_busy.store(false);
  return ok;
}

void SetFlightDumpTarget(FlightRecorder* recorder) {
  g_target.store(recorder);
  if (recorder == nullptr || g_term_installed) return;
  g_term_installed = true;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = OnTerm;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, &g_previous_term);
}

const char* DumpFlightRecorder(const char* reason) {
  FlightRecorder* r = g_target.load();
  if (r == nullptr || !r->Dump(reason)) return nullptr;
  return r->dump_path();
}

}  // namespace fluid
