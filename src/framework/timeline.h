// Timeline: a per-process record of what the ranks did and when, written
// as a Chrome trace-event JSON file (Perfetto and chrome://tracing open
// it): the executor's ops, the communicator's collectives, the exposed
// waits, data loading and checkpoints, one track each.
//
// Recording is cheap and formats nothing: an event is a fixed-size record
// (name pointer, times, bytes, a few integers) appended to a log of chunks
// that grows a chunk (4096 events) at a time; op output shapes go to a
// second log of integers. Text is made only when the trace is written.
//
// Each log has one writer: the thread that runs programs (ops, steps, data,
// checkpoints) writes the main lane, the communicator's worker the
// collective lane. Readers (Format, possibly from a signal handler while
// the job aborts) see every event whose append completed: the count is
// published after the event, and chunks never move. Names are pointers to
// strings that live as long as the process (op schemas' type names,
// literals).
//
// The process's timeline (CurrentTimeline) is what the executor and the
// communicator record into; null when tracing is off, and then each
// recording site costs a load and a branch. src/distributed/timeline_
// session.h starts and ends it for a job and merges the ranks' traces.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace fluid {

class OperatorBase;

// Monotonic nanoseconds (CLOCK_MONOTONIC), the same clock as the flight
// recorder's.
int64_t TimelineNs();

// The tracks of one rank, in the order a viewer shows them.
enum class TimelineTrack : int16_t {
  kSteps = 1,    // each program run, with its step
  kOps,          // each op, with its output shapes and bytes
  kWaits,        // c_wait ops: time the step waited for a collective
  kCollectives,  // each collective from start to end (queued since enqueue)
  kData,         // loading batches, copying feeds
  kCheckpoints,  // saving and loading checkpoints
};
const char* TimelineTrackName(TimelineTrack track);

struct TimelineEvent {
  const char* name = nullptr;        // lives as long as the process
  int64_t begin_ns = 0, end_ns = 0;  // TimelineNs
  int64_t bytes = 0;
  int64_t step = 0;
  // Ops: the first of `count` integers in the shape log (per output: rank,
  // then dims). Collectives: the enqueue time, and `count` the collective's
  // number within its step (its gradient bucket for allreduces).
  int64_t extra = 0;
  int64_t seq = 0;  // collectives: the communicator's sequence number
  int32_t count = 0;
  TimelineTrack track = TimelineTrack::kOps;
};

// A log of T that only its one writer appends to; see the file comment.
template <typename T>
class TimelineLog {
 public:
  static constexpr size_t kChunk = 4096;
  static constexpr size_t kMaxChunks = 1 << 14;  // 64 M entries

  TimelineLog() {
    for (auto& c : chunks_) c.store(nullptr, std::memory_order_relaxed);
  }
  ~TimelineLog() {
    for (auto& c : chunks_) delete[] c.load(std::memory_order_relaxed);
  }
  TimelineLog(const TimelineLog&) = delete;
  TimelineLog& operator=(const TimelineLog&) = delete;

  // Room for the next entry, or null when the log is full (counted in
  // dropped()). Publish makes it visible.
  T* Next() {
    const size_t n = size_.load(std::memory_order_relaxed) + pending_;
    const size_t c = n / kChunk;
    if (c >= kMaxChunks) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    T* chunk = chunks_[c].load(std::memory_order_relaxed);
    if (chunk == nullptr) {
      chunk = new T[kChunk];
      chunks_[c].store(chunk, std::memory_order_release);
    }
    ++pending_;
    return &chunk[n % kChunk];
  }
  void Publish() {
    size_.store(size_.load(std::memory_order_relaxed) + pending_,
                std::memory_order_release);
    pending_ = 0;
  }
  // Where the next Next() entry lands (for the shape log's offsets).
  size_t next_index() const {
    return size_.load(std::memory_order_relaxed) + pending_;
  }

  size_t size() const { return size_.load(std::memory_order_acquire); }
  const T& at(size_t i) const {
    return chunks_[i / kChunk].load(std::memory_order_acquire)[i % kChunk];
  }
  int64_t dropped() const { return dropped_.load(); }

 private:
  std::atomic<T*> chunks_[kMaxChunks];
  std::atomic<size_t> size_{0};
  std::atomic<int64_t> dropped_{0};
  size_t pending_ = 0;  // writer only
};

// Where formatted text goes: a string, or a file descriptor (no allocation,
// for a signal handler).
class TimelineSink {
 public:
  virtual ~TimelineSink() = default;
  virtual void Write(const char* data, size_t size) = 0;
};

// How a rank's clock maps onto rank 0's: rank 0's time = local + offset_ns,
// known within +- uncertainty_ns. `origin_ns` (rank 0's clock) is the
// trace's time 0.
struct ClockSync {
  int64_t offset_ns = 0;
  int64_t uncertainty_ns = 0;
  int64_t origin_ns = 0;
};

class Timeline {
 public:
  Timeline(int rank, int size, ClockSync clock);
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const ClockSync& clock() const { return clock_; }

  // Main lane (the thread that runs programs).
  // The step the next events belong to (the communicator's numbering).
  void SetStep(int64_t step) { step_.store(step, std::memory_order_relaxed); }
  int64_t step() const { return step_.load(std::memory_order_relaxed); }
  // An op that ran from `begin_ns` until now: its type, output shapes and
  // the bytes of its outputs.
  void RecordOp(const OperatorBase& op, int64_t begin_ns);
  void RecordSpan(TimelineTrack track, const char* name, int64_t begin_ns,
                  int64_t end_ns, int64_t bytes);

  // Collective lane (the communicator's worker).
  struct Collective {
    const char* kind;
    int64_t bytes, step, seq;
    int32_t index;  // within its step
    int64_t enqueue_ns, start_ns, end_ns;
  };
  // Called by every communicator's worker (a job with rings has several):
  // serialised, since the collectives' log has one writer at a time.
  void RecordCollective(const Collective& c);

  // Events recorded so far (published ones), both lanes.
  size_t num_events() const;
  int64_t dropped() const;

  // This rank's events as trace-event JSON objects, comma-separated, with
  // the metadata naming its process ("rank R", pid R + 1) and tracks; no
  // allocation, so that a signal handler may call it with a file sink.
  void Format(TimelineSink* sink) const;
  std::string Format() const;

 private:
  void FormatEvent(const TimelineEvent& e, TimelineSink* sink) const;
  // The trace's process id: rank + 1 (viewers treat pid 0 as the kernel's
  // idle task).
  int pid() const { return rank_ + 1; }

  int rank_, size_;
  ClockSync clock_;
  std::atomic<int64_t> step_{0};
  TimelineLog<TimelineEvent> main_, comm_;
  std::mutex comm_mu_;           // RecordCollective's writers
  TimelineLog<int64_t> shapes_;  // main lane
};

// The opening and closing text around the ranks' fragments (Format) that
// makes one trace file; `note` (may be null) is kept in its metadata.
void WriteTraceHead(TimelineSink* sink);
void WriteTraceTail(TimelineSink* sink, int ranks, const char* note);

// The process's timeline (null: tracing is off). Setting it does not wait
// for recorders that loaded the old value: see StopTimeline.
Timeline* CurrentTimeline();
void SetCurrentTimeline(Timeline* timeline);

// Records a span of the main lane from construction to destruction when the
// process has a timeline.
class TimelineScope {
 public:
  TimelineScope(TimelineTrack track, const char* name)
      : timeline_(CurrentTimeline()), track_(track), name_(name) {
    if (timeline_ != nullptr) begin_ns_ = TimelineNs();
  }
  ~TimelineScope() {
    if (timeline_ != nullptr)
      timeline_->RecordSpan(track_, name_, begin_ns_, TimelineNs(), bytes_);
  }
  TimelineScope(const TimelineScope&) = delete;
  TimelineScope& operator=(const TimelineScope&) = delete;
  void set_bytes(int64_t bytes) { bytes_ = bytes; }
  bool active() const { return timeline_ != nullptr; }

 private:
  Timeline* timeline_;
  TimelineTrack track_;
  const char* name_;
  int64_t begin_ns_ = 0, bytes_ = 0;
};

}  // namespace fluid
