// StallWatchdog: notices a rank that stops making progress (a process
// stopped by SIGSTOP, a frozen node, a hung file system, a deadlock) while
// the others wait for it in a collective, says which rank and where, and
// ends the job instead of letting it wait forever in silence.
//
// Every rank's watchdog thread sends every peer, a few times per warning
// period, a ProgressReport: the collectives it has issued, entered and
// finished (from its FlightRecorder), its step, how long it has waited in
// the collective it is in, and a progress counter that moves on every
// collective event and step. A rank that is stuck sends nothing new: if it
// is frozen, nothing at all; if its main thread hangs, the same counters.
//
// Stuck, in collective k: some rank has entered k and waited in it for S
// seconds, and the rank has shown no progress for S seconds and either has
// not entered k or has been silent for S seconds (frozen inside k). A rank
// that is slow but moving (a long first step, a long checkpoint write) is
// not stuck until it stands still for S. After `warn` seconds the speaker
// logs one line naming the stuck ranks and where each is; after `timeout`
// seconds it writes its flight recorder, logs one line and ends the job.
// The speaker is the lowest rank not itself stuck, so that the job still
// hears of it when rank 0 is the one frozen. All ranks in k and none stuck
// for `timeout` seconds (the transport does not finish k) also ends it.
//
// A communicator's rings (groups of ranks, see Communicator::CreateGroup)
// have watchdogs of their own over their members (a StallScope): a rank
// that waits in a ring's collective is seen by that ring's watchdog only.
// Their lines name ranks by world rank and say which ring. A rank counts
// as moving when any communicator of its process moves; one that waits in
// another ring's collective (for some rank there) is named here only a
// grace later, so that the ring holding the rank truly behind speaks first.
//
// The channel (ProgressChannel) is a seam: MPI point-to-point in a job, an
// in-process fake in tests. Thread-safe: Configure may be called while it
// runs; Stop joins the thread (also in the destructor).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/distributed/flight_recorder.h"

namespace fluid {

// What one rank tells the others; plain bytes on the wire.
struct ProgressReport {
  int32_t rank = 0;
  int32_t leaving = 0;  // 1: this rank's communicator is shutting down
  int64_t issued = 0, started = 0, finished = 0;
  int64_t step = 0;
  int64_t progress = 0;
  int64_t waited_ms = 0;  // in collective `started` so far (0: in none)
  // The collective `started` is (or was last).
  int32_t kind = 0;
  int32_t index = 0;
  int64_t bytes = 0;
  int64_t coll_step = 0;
  // 1 + the ring (0: the world) in whose collective this rank is, on
  // another communicator of its process; 0: none (see StallScope).
  int32_t elsewhere = 0;
  int32_t micro_batch = 0;  // 1 + the pipeline micro-batch; 0: none
};

// Sends and receives ProgressReports; used by the watchdog thread only.
class ProgressChannel {
 public:
  virtual ~ProgressChannel() = default;
  // Must not block: a report a peer has not taken yet may be dropped.
  virtual void Send(int peer, const ProgressReport& report) = 0;
  // Takes one report that has arrived; false when none has.
  virtual bool Poll(ProgressReport* report) = 0;
};

// A channel over MPI_COMM_WORLD point-to-point messages on a tag of its
// own (see stall_watchdog.cc for why not a duplicated communicator or a
// socket). Null when MPI lacks MPI_THREAD_MULTIPLE: the watchdog is then
// off.
std::unique_ptr<ProgressChannel> MakeMpiProgressChannel();
// The same for ring `ring` (> 0): peer p is world rank world_ranks[p], and
// the ring's tag is its own, so that the rings' watchdogs (and the
// world's) never take each other's reports. Null as above, or for a ring
// of fewer than 2 ranks.
std::unique_ptr<ProgressChannel> MakeMpiProgressChannel(
    int ring, const std::vector<int>& world_ranks);

struct StallConfig {
  double warn_s = 60;      // 0: no warning
  double timeout_s = 300;  // 0: never ends the job
};

// What a process's other communicators are doing, for one watchdog of
// several (the world's and each ring's).
struct ProcessActivity {
  int64_t progress = 0;  // their progress counters, summed
  int32_t in_ring = -1;  // a ring (0: the world) one of them is in a
                         // collective of; -1: none
};

// The ranks a watchdog watches: the world's (ring 0, the default), or a
// ring's, whose lines name ranks by world rank and the ring.
struct StallScope {
  int ring = 0;
  std::string label;  // what the ring is for; "" when it says nothing
  std::vector<int> world_ranks;  // of each rank here, ascending; empty: same
  // The process's other communicators; called on the watchdog's thread,
  // must be thread-safe and quick. Null: there are none.
  std::function<ProcessActivity()> others;
  // Writes this rank's flight recorders as the job ends with `reason` and
  // returns what it wrote ("" when nothing). Null: the watchdog's
  // recorder's own Dump.
  std::function<std::string(const char* reason)> dump;

  // World rank of rank `r` here.
  int WorldRank(int r) const {
    return r >= 0 && r < static_cast<int>(world_ranks.size()) ? world_ranks[r]
                                                              : r;
  }
};

// One rank as the judging rank sees it.
struct RankView {
  bool heard = false;  // a report has arrived (always true for oneself)
  ProgressReport last;
  double silent_s = 0;  // since the last report arrived
  double idle_s = 0;    // since `last.progress` last changed
  double waited_s = 0;  // in collective `last.started`, now (0: in none)
};

struct StallVerdict {
  int64_t collective = 0;  // 0: no stall
  ProgressReport where;    // a waiting rank's report: what k is
  double waited_s = 0;     // the longest wait in k
  std::vector<int> waiting;
  std::vector<int> stuck;  // empty with collective > 0: nobody behind
  int speaker = -1;
};

// "rank 3", "ranks 0, 2, 5-9" (ranks ascending).
std::string FormatRankList(const std::vector<int>& ranks);

// The stall, if any, whose ranks have waited at least `threshold_s`. A
// live rank in another ring's collective (ProgressReport::elsewhere) is
// stuck here only after AwayGraceSeconds more.
StallVerdict JudgeStall(const std::vector<RankView>& views, double threshold_s);
double AwayGraceSeconds(double threshold_s);
// One line naming the stuck ranks, the collective, and where each stuck
// rank is (without the "fluid: rank R: " prefix); ranks by world rank,
// with the ring when `scope` is one.
std::string DescribeStall(const StallVerdict& verdict,
                          const std::vector<RankView>& views, bool ending,
                          double limit_s,
                          const StallScope& scope = StallScope());

class StallWatchdog {
 public:
  // `recorder` (this rank's, outliving the watchdog) is read, never
  // written. `end_job` is called once, after the final line, to end the
  // job; it should not return. `rank` and `size` are the communicator's
  // (the ring's, for a ring's watchdog; see StallScope).
  StallWatchdog(int rank, int size, const FlightRecorder* recorder,
                std::unique_ptr<ProgressChannel> channel, StallConfig config,
                std::function<void()> end_job, StallScope scope = StallScope());
  ~StallWatchdog();
  StallWatchdog(const StallWatchdog&) = delete;
  StallWatchdog& operator=(const StallWatchdog&) = delete;

  void Configure(StallConfig config);
  StallConfig config() const;
  // Tells the peers this rank is leaving, then joins the thread.
  // Idempotent.
  void Stop();

 private:
  void Loop();
  void Receive(int64_t now_ns);
  void SendReports();
  ProgressReport OwnReport(int64_t now_ns) const;
  std::vector<RankView> Views(int64_t now_ns);
  void Judge(int64_t now_ns);
  // Writes the flight recorders and the final line, then ends the job.
  void EndJob(const std::string& line);
  // "fluid: rank W: " for this rank's world rank W.
  std::string Prefix() const;
  // Seconds between reports and between looks, from the config.
  double PeriodSeconds() const;

  const int rank_, size_;
  const FlightRecorder* recorder_;
  std::unique_ptr<ProgressChannel> channel_;
  std::function<void()> end_job_;
  const StallScope scope_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  StallConfig config_;
  bool stop_ = false;
  // Watchdog thread only.
  struct Peer {
    bool heard = false;
    ProgressReport last;
    int64_t heard_ns = 0, changed_ns = 0;
  };
  std::vector<Peer> peers_;
  int64_t start_ns_ = 0;
  int64_t own_progress_ = -1, own_changed_ns_ = 0;
  int64_t warned_ = 0;  // the collective last warned about
  int64_t last_send_ns_ = 0;
  int64_t last_look_ns_ = 0;
  int64_t quiet_until_ns_ = 0;
  bool ended_ = false;  // the job is being ended: say nothing more
  std::thread thread_;
};

}  // namespace fluid
