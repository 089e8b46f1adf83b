// FlightRecorder: the last 256 collectives of one communicator, kept in a
// fixed ring (nothing is allocated per collective), and written to a file
// when the job aborts, so that the ranks' files side by side show who was
// where when it stopped (tools/flight_report.py reads them).
//
// The communicator's issuing thread calls Issue, its worker Start and
// Finish; the trainer and MPIExecutor call BeginStep. Everything a reader
// needs is in atomics: the stall watchdog's thread reads the counters while
// collectives run, and Dump may run in a signal handler (SIGTERM from
// mpirun, a fatal signal), where it takes no lock and allocates nothing.
// A slot being rewritten while it is dumped is detected and left out.
//
// One recorder per process is the dump target (SetFlightDumpTarget, done
// for the process's communicator): DumpFlightRecorder writes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace fluid {

class Timeline;

enum class CollectiveKind : int32_t {
  kOther = 0,
  kAllReduce,
  kBroadcast,
  kAllGather,
  kBarrier,
  kReduceScatter,
  kSparseAllReduce,
  kSetAlgorithm,  // SetAllReduceAlgorithm: collective where it sets up hier
  kSplit,         // Communicator::CreateGroup: a group of ranks is made
};
const char* CollectiveKindName(CollectiveKind kind);

// What a collective is, as every rank must issue it. The communicator
// compares it across ranks before each collective runs (the collective
// check, see communicator.h); the flight recorder keeps it. Plain values.
struct CollectiveDesc {
  CollectiveKind kind = CollectiveKind::kOther;
  int32_t dtype = -1;  // DataType; -1: none
  // Elements of the tensor (allreduce, broadcast), of one rank's block
  // (allgather, reducescatter); rows of the table (sparse allreduce); the
  // algorithm (set algorithm); the ring id (split); -1: a tensor message,
  // whose header gives its shape (Communicator::SendTensorAsync).
  int64_t count = 0;
  int32_t op = -1;     // ReduceOp; -1: none
  int32_t root = -1;   // broadcast's root; -1: none
  int32_t wire = 0;    // WireFormat the values travel in
  int32_t device = 0;  // 1: on the transport's own device path (NCCL)
  // The pipeline micro-batch it carries (send_v2 / recv_v2); -1: none.
  // Compared like the rest: ranks at different micro-batches disagree.
  int32_t micro_batch = -1;
};
// "allreduce(avg) float32 x 4096", "broadcast int64 x 3 from rank 0",
// "allreduce(sum) float32 x 512 as bf16", "barrier",
// "broadcast float32 message from rank 0 (micro-batch 2)".
std::string DescribeCollective(const CollectiveDesc& desc);

// Monotonic nanoseconds (CLOCK_MONOTONIC), the recorder's time base.
int64_t MonotonicNs();

class FlightRecorder {
 public:
  static constexpr int kCapacity = 256;
  enum State : int32_t { kIssued = 1, kRunning, kDone, kFailed };

  // What one collective was and when it happened.
  struct Record {
    int64_t seq = 0;      // 1, 2, ...; 0: empty slot
    CollectiveDesc desc;  // what it is: kind, dtype, count, ...
    // What it moves: the tensor (allreduce, in its wire format; broadcast),
    // the whole gathered or scattered tensor (allgather's output,
    // reducescatter's input), the rows and values this rank handed to the
    // transport (sparse allreduce; the dense table when it fell back).
    int64_t bytes = 0;
    int64_t step = 0;   // MPIExecutor steps begun before it was issued
    int32_t index = 0;  // 1, 2, ... within its step
    State state = kIssued;
    int64_t issue_ns = 0, start_ns = 0, end_ns = 0;  // MonotonicNs; 0: not yet
  };

  FlightRecorder() = default;
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // Issuing thread: records a collective and returns its sequence number.
  // Calls are serialised by the caller (the communicator's queue lock).
  int64_t Issue(const CollectiveDesc& desc, int64_t bytes);
  int64_t Issue(CollectiveKind kind, int64_t bytes) {
    CollectiveDesc desc;
    desc.kind = kind;
    return Issue(desc, bytes);
  }
  // Worker thread.
  void Start(int64_t seq);
  // What collective `seq` moved, when only running it told (before
  // Finish, which hands the record to the timeline).
  void SetBytes(int64_t seq, int64_t bytes);
  void Finish(int64_t seq, bool ok);
  // A step of the program begins (numbers the collectives it issues).
  void BeginStep();
  // Shows that the rank is alive and working outside collectives.
  void Beat() { progress_.fetch_add(1, std::memory_order_relaxed); }

  int64_t issued() const { return issued_.load(); }
  int64_t started() const { return started_.load(); }
  int64_t finished() const { return finished_.load(); }
  int64_t step() const { return step_.load(); }
  // Changes on every event above: the watchdog's measure of progress.
  int64_t progress() const { return progress_.load(); }
  // The record of collective `seq`, if it is still in the ring (and was
  // not being rewritten while it was read).
  bool Get(int64_t seq, Record* out) const;

  // Where Dump writes: `dir`/flight-rank-<rank>.txt. `dir` is made if it
  // is missing; when it cannot be, the working directory is used. Returns
  // the path chosen.
  std::string SetDumpPath(const std::string& dir, int rank, int size);
  // Like SetDumpPath, for the directory chosen when nobody named one
  // (DefaultFlightDir): `dir` is made by the first Dump, so that a job
  // that never aborts leaves no directory behind.
  void SetDefaultDumpPath(const std::string& dir, int rank, int size);
  const char* dump_path() const { return path_; }
  // A line that Dump writes into the file's header (the watchdog's view
  // of the other ranks, say). Copied; cut at 1 KiB.
  void SetNote(const std::string& note);
  // The job this rank belongs to (the launcher's job id), written into the
  // file's header as "job <id>" so that tools/flight_report.py can leave
  // out the files of earlier jobs in the same directory. Characters other
  // than letters, digits and ".-_:" become '_'; cut at 127.
  void SetJobId(const std::string& job);
  bool has_job_id() const { return job_set_.load() != 0; }
  // Writes the ring to the dump path, oldest first, with `reason`. Async-
  // signal-safe. False when no path is set or the file cannot be written.
  bool Dump(const char* reason) const;

 private:
  void RecordInTimeline(int64_t seq, Timeline* timeline) const;

  struct Slot {
    std::atomic<int64_t> seq{0};
    std::atomic<int32_t> kind{0};
    std::atomic<int32_t> index{0};
    std::atomic<int32_t> state{0};
    std::atomic<int32_t> dtype{-1};
    std::atomic<int32_t> op{-1};
    std::atomic<int32_t> root{-1};
    std::atomic<int32_t> wire{0};
    std::atomic<int32_t> device{0};
    std::atomic<int32_t> micro_batch{-1};
    std::atomic<int64_t> count{0};
    std::atomic<int64_t> bytes{0};
    std::atomic<int64_t> step{0};
    std::atomic<int64_t> issue_ns{0};
    std::atomic<int64_t> start_ns{0};
    std::atomic<int64_t> end_ns{0};
  };
  Slot& SlotOf(int64_t seq) { return ring_[seq % kCapacity]; }

  Slot ring_[kCapacity];
  std::atomic<int64_t> issued_{0}, started_{0}, finished_{0};
  std::atomic<int64_t> step_{0}, progress_{0};
  int32_t step_index_ = 0;  // issuing thread only
  int rank_ = 0, size_ = 1;
  char path_[1024] = {0};
  char dir_to_make_[1024] = {0};  // made by Dump (SetDefaultDumpPath)
  char note_[1024] = {0};
  std::atomic<int> note_busy_{0};
  char job_[128] = {0};
  std::atomic<int> job_set_{0};
};

// The directory a rank writes its flight recorder to when neither the
// trainer's flags nor MPIExecutor name one: fluid-flight-<job> under
// $TMPDIR (else /tmp), <job> being `job_id` (the launcher's id of the job,
// the same on every rank; letters, digits and ".-_" kept, anything else
// '_'), or, without one, "ppid<N>" of the process's parent (the launcher's
// daemon, which the ranks of one host share). Never the working directory.
std::string DefaultFlightDir(const std::string& job_id);

// The recorder DumpFlightRecorder writes (null: none), and the SIGTERM
// handler that writes it before the process ends (installed once; a handler
// installed before it still runs after).
void SetFlightDumpTarget(FlightRecorder* recorder);
// Writes the target's file (see FlightRecorder::Dump); async-signal-safe.
// The path written, or null.
const char* DumpFlightRecorder(const char* reason);

}  // namespace fluid
