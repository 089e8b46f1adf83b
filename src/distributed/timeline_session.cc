#include "src/distributed/timeline_session.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "src/framework/enforce.h"

namespace fluid {

namespace {

std::unique_ptr<Timeline> g_owned;  // the thread that runs programs
// What DumpTimeline writes: set while a timeline records.
std::atomic<Timeline*> g_dump_target{nullptr};
std::atomic<bool> g_dumping{false};
// The thread writing the dump (its kernel id) and whether it is done: a
// SIGTERM from the launcher that lands on another thread while the dump is
// written (AbortJob waits for the others' parts) waits for it rather than
// let the process end under it.
std::atomic<long> g_dumper{0};
std::atomic<bool> g_dumped{false};
char g_path[1024];
char g_part_prefix[1024];  // "<path>.rank-"
char g_copy_buf[16 << 10];

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

// Buffered writes to a file descriptor; no allocation (its buffer is one
// static block, as only one dump or merge writes at a time).
class FdSink : public TimelineSink {
 public:
  explicit FdSink(int fd) : fd_(fd) {}
  ~FdSink() override { Flush(); }
  void Write(const char* data, size_t size) override {
    while (size > 0) {
      if (len_ == sizeof(buf_)) Flush();
      const size_t n = std::min(size, sizeof(buf_) - len_);
      std::memcpy(buf_ + len_, data, n);
      len_ += n;
      data += n;
      size -= n;
    }
  }
  bool Flush() {
    ok_ = ok_ && WriteAll(fd_, buf_, len_);
    len_ = 0;
    return ok_;
  }

 private:
  int fd_;
  static char buf_[64 << 10];
  size_t len_ = 0;
  bool ok_ = true;
};
char FdSink::buf_[64 << 10];

// Appends `s` and then `v` (if >= 0) to `out` (capacity `cap`), no
// allocation; false when it does not fit.
bool JoinPath(char* out, size_t cap, const char* s, int64_t v,
              const char* suffix) {
  size_t n = 0;
  auto put = [&](char c) {
    if (n + 1 >= cap) return false;
    out[n++] = c;
    return true;
  };
  for (; *s != '\0'; ++s)
    if (!put(*s)) return false;
  if (v >= 0) {
    char digits[24];
    int k = 0;
    do {
      digits[k++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (k > 0)
      if (!put(digits[--k])) return false;
  }
  for (; *suffix != '\0'; ++suffix)
    if (!put(*suffix)) return false;
  out[n] = '\0';
  return true;
}

// Writes `fill` into `path` by way of `path`.tmp and a rename, so that a
// reader never sees half a file.
template <typename Fill>
bool WriteFileAtomically(const char* path, Fill fill) {
  char tmp[1100];
  if (!JoinPath(tmp, sizeof(tmp), path, -1, ".tmp")) return false;
  const int fd = ::open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok;
  {
    FdSink sink(fd);
    fill(&sink);
    ok = sink.Flush();
  }
  ok = (::close(fd) == 0) && ok;
  if (ok && ::rename(tmp, path) == 0) return true;
  const int saved = errno;  // what failed, for the caller's message
  ::unlink(tmp);
  errno = saved;
  return false;
}

void CopyFileInto(const char* path, TimelineSink* sink) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  for (;;) {
    ssize_t n = ::read(fd, g_copy_buf, sizeof(g_copy_buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sink->Write(g_copy_buf, static_cast<size_t>(n));
  }
  ::close(fd);
}

// Rank 0 on an abort: waits up to about 0.3 s for the other ranks' parts.
void AwaitParts(int size) {
  char part[1100];
  for (int tries = 0; tries < 30; ++tries) {
    bool all = true;
    for (int r = 1; r < size && all; ++r)
      all = JoinPath(part, sizeof(part), g_part_prefix, r, ".part") &&
            ::access(part, F_OK) == 0;
    if (all) return;
    timespec ts{0, 10 * 1000 * 1000};
    ::nanosleep(&ts, nullptr);
  }
}

}  // namespace

ClockSync AlignClocks(Communicator* comm, int rounds) {
  FLUID_ENFORCE(comm != nullptr, "AlignClocks: null communicator");
  Tensor in, out;
  int64_t* send = in.mutable_data<int64_t>(Shape{2});
  out.mutable_data<int64_t>(Shape{2 * comm->size()});
  int64_t lo = std::numeric_limits<int64_t>::min();
  int64_t hi = std::numeric_limits<int64_t>::max();
  int64_t prev_enter = 0, prev_return = 0;
  ClockSync sync;
  for (int k = 0; k <= rounds; ++k) {
    const int64_t enter = TimelineNs();
    send[0] = enter;
    send[1] = prev_return;
    comm->AllGather(in, out);
    const int64_t returned = TimelineNs();
    const int64_t* got = out.data<int64_t>();
    // Rank 0 entered before this rank returned, and returned (last round)
    // after this rank entered.
    lo = std::max(lo, got[0] - returned);
    if (k > 0) hi = std::min(hi, got[1] - prev_enter);
    if (k == 0) sync.origin_ns = got[0];
    prev_enter = enter;
    prev_return = returned;
  }
  if (comm->rank() != 0 && rounds > 0) {
    sync.offset_ns = lo + (hi - lo) / 2;
    sync.uncertainty_ns = std::max<int64_t>(0, (hi - lo) / 2);
  }
  return sync;
}

void StartTimeline(Communicator* comm, const std::string& path) {
  FLUID_ENFORCE(!path.empty(), "--timeline needs a file name");
  FLUID_ENFORCE(g_owned == nullptr, "a timeline is already recording");
  FLUID_ENFORCE(path.size() + 32 < sizeof(g_path), "--timeline path is ",
                path.size(), " bytes long; at most ", sizeof(g_path) - 32);
  const int rank = comm != nullptr ? comm->rank() : 0;
  const int size = comm != nullptr ? comm->size() : 1;
  std::memcpy(g_path, path.c_str(), path.size() + 1);
  if (rank == 0) {
    // Written now the way the trace will be (FILE.tmp, then a rename onto
    // FILE), so that a path that cannot take it (a directory, /proc/...,
    // a read-only or missing directory) is refused before training rather
    // than after; and FILE, until the trace replaces it, is a readable
    // trace without events that says why.
    errno = 0;
    const bool ok = WriteFileAtomically(g_path, [size](TimelineSink* sink) {
      WriteTraceHead(sink);
      WriteTraceTail(sink, size, kTimelinePlaceholderNote);
    });
    FLUID_ENFORCE(ok, "--timeline: cannot write '", path,
                  "' (it is written as '", path,
                  ".tmp', then renamed): ", std::strerror(errno));
  }
  ClockSync sync;
  sync.origin_ns = TimelineNs();
  if (comm != nullptr) sync = AlignClocks(comm);
  JoinPath(g_part_prefix, sizeof(g_part_prefix), g_path, -1, ".rank-");
  g_owned = std::make_unique<Timeline>(rank, size, sync);
  if (comm != nullptr) g_owned->SetStep(comm->flight_recorder()->step());
  g_dumped.store(false);
  g_dumping.store(false);
  g_dump_target.store(g_owned.get());
  SetCurrentTimeline(g_owned.get());
}

bool TimelineStarted() { return g_owned != nullptr; }

std::string FinishTimeline(Communicator* comm) {
  if (g_owned == nullptr) return "";
  SetCurrentTimeline(nullptr);
  // Past this collective the worker has recorded its last event.
  if (comm != nullptr) comm->Barrier();
  const std::string mine = g_owned->Format();
  const int rank = comm != nullptr ? comm->rank() : 0;
  const int size = comm != nullptr ? comm->size() : 1;
  const std::vector<uint64_t> lengths =
      comm != nullptr ? comm->AllGatherValue(mine.size())
                      : std::vector<uint64_t>{mine.size()};
  const uint64_t longest = *std::max_element(lengths.begin(), lengths.end());
  const int64_t words = static_cast<int64_t>((longest + 7) / 8);
  Tensor in, out;
  char* send = reinterpret_cast<char*>(in.mutable_data<int64_t>(Shape{words}));
  std::memcpy(send, mine.data(), mine.size());
  out.mutable_data<int64_t>(Shape{words * size});
  if (comm == nullptr) {
    out.CopyFrom(in, Place::CPU());
  } else if (words > 0) {
    comm->AllGather(in, out);
  }
  g_dump_target.store(nullptr);
  g_owned.reset();
  if (rank != 0) return "";
  const char* all = reinterpret_cast<const char*>(out.data<int64_t>());
  const bool ok = WriteFileAtomically(g_path, [&](TimelineSink* sink) {
    WriteTraceHead(sink);
    for (int r = 0; r < size; ++r) sink->Write(all + r * words * 8, lengths[r]);
    WriteTraceTail(sink, size, "complete");
  });
  FLUID_ENFORCE(ok, "--timeline: cannot write '", g_path,
                "': ", std::strerror(errno));
  return g_path;
}

void DumpTimeline(const char* reason, bool wait_for_others) {
  const Timeline* t = g_dump_target.load();
  if (t == nullptr) return;
  const long me = ::syscall(SYS_gettid);
  // SIGTERM (the launcher ending the job) goes to another thread while
  // this one writes: that one then waits for the file (below).
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &term, &old);
  bool idle = false;
  if (!g_dumping.compare_exchange_strong(idle, true)) {
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    // Another thread writes it: wait (up to 3 s) unless this is that
    // thread, interrupted by a signal.
    for (int i = 0; i < 300 && g_dumper.load() != me && !g_dumped.load(); ++i) {
      timespec ts{0, 10 * 1000 * 1000};
      ::nanosleep(&ts, nullptr);
    }
    return;
  }
  g_dumper.store(me);
  if (t->rank() != 0) {
    char part[1100];
    if (JoinPath(part, sizeof(part), g_part_prefix, t->rank(), ".part"))
      WriteFileAtomically(part, [t](TimelineSink* sink) { t->Format(sink); });
  } else {
    if (wait_for_others) AwaitParts(t->size());
    WriteFileAtomically(g_path, [t, reason](TimelineSink* sink) {
      WriteTraceHead(sink);
      t->Format(sink);
      char part[1100];
      for (int r = 1; r < t->size(); ++r) {
        if (!JoinPath(part, sizeof(part), g_part_prefix, r, ".part")) continue;
        CopyFileInto(part, sink);
        ::unlink(part);
      }
      WriteTraceTail(sink, t->size(), reason);
    });
  }
  g_dumped.store(true);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace fluid
