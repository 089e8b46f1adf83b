#include "src/distributed/stall_watchdog.h"

#include <mpi.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "src/distributed/job_control.h"
#include "src/distributed/timeline_session.h"

namespace fluid {

namespace {

// MpiMembership's farewell is 7301; ring r's reports go on kProgressTag + r
// (the ranks of one ring id are in one group each, so a tag per ring id
// keeps every ring's reports apart).
constexpr int kProgressTag = 7302;

double SecondsBetween(int64_t from_ns, int64_t to_ns) {
  return (to_ns - from_ns) * 1e-9;
}

bool MpiUsable() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

// The watchdog's channel. Why MPI point-to-point on the world communicator:
// - MPI is initialised with MPI_THREAD_MULTIPLE (Open MPI 4.1 provides it),
//   so this thread may call MPI while the communicator's worker is blocked
//   in a collective; its own MPI_Test calls drive its messages.
// - Point-to-point messages on a tag of their own never match a collective
//   (MpiMembership's farewell relies on the same).
// - A duplicated communicator (MPI_Comm_dup) is made collectively: every
//   rank making its communicator would wait there for all the others, and a
//   rank that never makes one (a script that leaves early) would hang them
//   where the farewell has to reach them.
// - A TCP side channel needs its addresses exchanged (over MPI anyway), a
//   port of its own between hosts, and its own failure handling: MPI
//   already reaches every rank over the fabric the job uses.
// At most one send per peer is in flight: a frozen peer never takes its
// messages, and they must not pile up. A ring's channel sends peer p's
// reports to world rank world_ranks[p] (on the world communicator too: a
// ring's own communicator is busy in the very collective that stalls).
class MpiProgressChannel : public ProgressChannel {
 public:
  MpiProgressChannel(int tag, std::vector<int> world_ranks)
      : tag_(tag),
        world_ranks_(std::move(world_ranks)),
        sends_(world_ranks_.size(), MPI_REQUEST_NULL),
        out_(world_ranks_.size()) {
    Post();
  }
  ~MpiProgressChannel() override {
    if (!MpiUsable()) return;
    if (recv_ != MPI_REQUEST_NULL) {
      MPI_Cancel(&recv_);
      MPI_Wait(&recv_, MPI_STATUS_IGNORE);
    }
    // A send a frozen peer never took completes (or not) on its own.
    for (MPI_Request& r : sends_)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  }

  void Send(int peer, const ProgressReport& report) override {
    MPI_Request& req = sends_[peer];
    if (req != MPI_REQUEST_NULL) {
      int done = 0;
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (!done) return;
    }
    out_[peer] = report;
    MPI_Isend(&out_[peer], sizeof(ProgressReport), MPI_BYTE, world_ranks_[peer],
              tag_, MPI_COMM_WORLD, &req);
  }

  bool Poll(ProgressReport* report) override {
    int done = 0;
    MPI_Test(&recv_, &done, MPI_STATUS_IGNORE);
    if (!done) return false;
    *report = in_;
    Post();
    return true;
  }

 private:
  void Post() {
    MPI_Irecv(&in_, sizeof(ProgressReport), MPI_BYTE, MPI_ANY_SOURCE, tag_,
              MPI_COMM_WORLD, &recv_);
  }

  const int tag_;
  const std::vector<int> world_ranks_;  // of each peer
  std::vector<MPI_Request> sends_;
  std::vector<ProgressReport> out_;  // each live until its send completes
  MPI_Request recv_ = MPI_REQUEST_NULL;
  ProgressReport in_;
};

std::string Bytes(int64_t b) {
  char buf[32];
  if (b >= (1 << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / 1048576.0);
  } else if (b >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", b / 1024.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%lld bytes", static_cast<long long>(b));
  }
  return buf;
}

std::string Secs(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f s", s);
  return buf;
}

// "collective 1234 (allreduce, 1.6 MiB, #2 of step 57)" for the collective
// `seq` that `r` describes.
std::string Collective(int64_t seq, const ProgressReport& r) {
  std::ostringstream os;
  os << "collective " << seq << " ("
     << CollectiveKindName(static_cast<CollectiveKind>(r.kind)) << ", "
     << Bytes(r.bytes) << ", ";
  if (r.micro_batch > 0) os << "micro-batch " << r.micro_batch - 1 << ", ";
  if (r.coll_step > 0) {
    os << "#" << r.index << " of step " << r.coll_step << ")";
  } else {
    os << "#" << r.index << " before the first step)";
  }
  return os.str();
}

// A live rank reports every few seconds at most; a frozen one has been
// silent about as long as it has stood still.
bool Frozen(const RankView& v) {
  return v.silent_s >= std::max(1.0, 0.8 * v.idle_s);
}

// "ring 2", "the world communicator".
std::string RingName(int ring) {
  return ring > 0 ? "ring " + std::to_string(ring)
                  : std::string("the world communicator");
}

// A live rank waiting in another ring's collective: that ring's watchdog
// names whom it waits for.
bool Away(const RankView& v, double threshold_s) {
  return v.heard && v.last.elsewhere > 0 && v.silent_s < threshold_s / 2;
}

// Where stuck rank `v` (world rank `rank`) is (as of its last report, for
// a frozen one).
std::string Whereabouts(int rank, const RankView& v) {
  std::ostringstream os;
  os << "rank " << rank << " ";
  if (!v.heard) {
    os << "has never reported (stuck before making its communicator?)";
    return os.str();
  }
  const ProgressReport& r = v.last;
  if (v.last.elsewhere > 0 && !Frozen(v)) {
    os << "has waited " << Secs(v.idle_s) << " in a collective of "
       << RingName(v.last.elsewhere - 1) << " (whose stall is the cause?)";
    return os.str();
  }
  std::ostringstream at;
  if (r.started > r.finished) {
    at << "in " << Collective(r.started, r);
  } else {
    at << "in step " << r.step << ", outside any collective";
    if (r.finished > 0) at << ", after " << Collective(r.finished, r);
  }
  if (Frozen(v)) {
    os << "has been silent for " << Secs(v.silent_s)
       << " (process stopped or frozen); last reported " << at.str();
  } else {
    os << "is " << at.str() << "; no progress for " << Secs(v.idle_s)
       << ", process alive (its main thread is hung?)";
  }
  return os.str();
}

// "rank 3", "ranks 0, 2" of ranks here, by their world ranks.
std::string WorldList(const std::vector<int>& ranks, const StallScope& scope) {
  std::vector<int> world;
  for (int r : ranks) world.push_back(scope.WorldRank(r));
  std::sort(world.begin(), world.end());
  return FormatRankList(world);
}

}  // namespace

std::string FormatRankList(const std::vector<int>& ranks) {
  std::ostringstream os;
  os << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    os << (i ? ", " : "") << ranks[i];
    if (j > i + 1) {
      os << "-" << ranks[j];
    } else if (j == i + 1) {
      os << ", " << ranks[j];
    }
    i = j + 1;
  }
  return os.str();
}

std::unique_ptr<ProgressChannel> MakeMpiProgressChannel() {
  if (!MpiUsable()) return nullptr;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<int> world(size);
  for (int r = 0; r < size; ++r) world[r] = r;
  return MakeMpiProgressChannel(0, world);
}

std::unique_ptr<ProgressChannel> MakeMpiProgressChannel(
    int ring, const std::vector<int>& world_ranks) {
  if (!MpiUsable()) return nullptr;
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE || world_ranks.size() < 2) return nullptr;
  return std::make_unique<MpiProgressChannel>(kProgressTag + ring, world_ranks);
}

double AwayGraceSeconds(double threshold_s) {
  return std::max(2.0, threshold_s / 4);
}

StallVerdict JudgeStall(const std::vector<RankView>& views,
                        double threshold_s) {
  StallVerdict v;
  const int n = static_cast<int>(views.size());
  // Waiting ranks are the live ones in a collective (reports come at a
  // tenth of the shortest limit at least): a frozen rank's last report may
  // be a few collectives old.
  auto in_collective = [&](int r) {
    const ProgressReport& p = views[r].last;
    return views[r].heard && !p.leaving && p.started > p.finished &&
           views[r].silent_s < threshold_s / 2;
  };
  for (int r = 0; r < n; ++r) {
    if (in_collective(r) && views[r].waited_s >= threshold_s)
      v.collective = std::max(v.collective, views[r].last.started);
  }
  if (v.collective == 0) return v;
  // A rank that left cannot join k: MpiMembership ends that job, naming it.
  for (const RankView& rv : views)
    if (rv.heard && rv.last.leaving) return StallVerdict();
  int live = 0;
  for (int r = 0; r < n; ++r) {
    const RankView& rv = views[r];
    if (rv.heard && rv.last.leaving) continue;
    ++live;
    if (in_collective(r) && rv.last.started == v.collective) {
      v.waiting.push_back(r);
      if (rv.waited_s >= v.waited_s) {
        v.waited_s = rv.waited_s;
        v.where = rv.last;
      }
    }
    const bool behind = !rv.heard || rv.last.started < v.collective;
    const double still = Away(rv, threshold_s)
                             ? threshold_s + AwayGraceSeconds(threshold_s)
                             : threshold_s;
    if (rv.idle_s >= still && (behind || rv.silent_s >= threshold_s))
      v.stuck.push_back(r);
  }
  // Nobody stuck: either someone is slow but moving (no stall), or every
  // rank is in k and the transport does not finish it.
  if (v.stuck.empty() && static_cast<int>(v.waiting.size()) != live) {
    return StallVerdict();
  }
  for (int r = 0; r < n && v.speaker < 0; ++r) {
    if (views[r].heard && views[r].last.leaving) continue;
    if (!std::count(v.stuck.begin(), v.stuck.end(), r)) v.speaker = r;
  }
  return v;
}

std::string DescribeStall(const StallVerdict& v,
                          const std::vector<RankView>& views, bool ending,
                          double limit_s, const StallScope& scope) {
  std::ostringstream os;
  std::string k = Collective(v.collective, v.where);
  if (scope.ring > 0) {
    std::vector<int> all(views.size());
    for (size_t r = 0; r < views.size(); ++r) all[r] = static_cast<int>(r);
    k += " on ring " + std::to_string(scope.ring) + " (" +
         (scope.label.empty() ? "" : scope.label + "; ") +
         WorldList(all, scope) + ")";
  }
  std::vector<int> waiting;
  for (int r : v.waiting)
    if (!std::count(v.stuck.begin(), v.stuck.end(), r)) waiting.push_back(r);
  os << (ending ? "stall: " : "stall warning: ");
  if (v.stuck.empty()) {
    os << "all " << views.size() << " ranks have waited in " << k << " for "
       << Secs(v.waited_s)
       << " and none is behind: the transport does not complete it";
  } else {
    os << WorldList(v.stuck, scope)
       << (v.stuck.size() == 1 ? " holds" : " hold") << " up " << k
       << ", in which " << WorldList(waiting, scope)
       << (waiting.size() == 1 ? " has" : " have") << " waited "
       << Secs(v.waited_s) << ": ";
    for (size_t i = 0; i < v.stuck.size() && i < 8; ++i) {
      os << (i ? "; " : "")
         << Whereabouts(scope.WorldRank(v.stuck[i]), views[v.stuck[i]]);
    }
    if (v.stuck.size() > 8) os << "; ...";
  }
  if (ending) {
    os << "; ending the job (--stall-timeout " << limit_s << ")";
  } else {
    os << " (--stall-warn " << limit_s << ")";
  }
  return os.str();
}

StallWatchdog::StallWatchdog(int rank, int size, const FlightRecorder* recorder,
                             std::unique_ptr<ProgressChannel> channel,
                             StallConfig config, std::function<void()> end_job,
                             StallScope scope)
    : rank_(rank),
      size_(size),
      recorder_(recorder),
      channel_(std::move(channel)),
      end_job_(std::move(end_job)),
      scope_(std::move(scope)),
      config_(config),
      peers_(size) {
  thread_ = std::thread([this] { Loop(); });
}

StallWatchdog::~StallWatchdog() { Stop(); }

void StallWatchdog::Configure(StallConfig config) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    config_ = config;
  }
  cv_.notify_all();
}

StallConfig StallWatchdog::config() const {
  std::lock_guard<std::mutex> lock(mu_);
  return config_;
}

void StallWatchdog::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

double StallWatchdog::PeriodSeconds() const {
  const StallConfig c = config();
  double shortest = 0;
  for (double s : {c.warn_s, c.timeout_s})
    if (s > 0 && (shortest == 0 || s < shortest)) shortest = s;
  if (shortest == 0) return 2.0;
  return std::min(2.0, std::max(0.1, shortest / 10));
}

void StallWatchdog::Loop() {
  pthread_setname_np(pthread_self(), "fluid-watchdog");  // for top -H, gdb
  start_ns_ = last_look_ns_ = MonotonicNs();
  own_changed_ns_ = start_ns_;
  for (;;) {
    const double period = PeriodSeconds();
    {
      std::unique_lock<std::mutex> lock(mu_);
      const auto look = std::chrono::duration<double>(
          std::min(0.5, std::max(0.05, period / 2)));
      if (cv_.wait_for(lock, look, [this] { return stop_; })) break;
    }
    const int64_t now = MonotonicNs();
    const StallConfig c = config();
    if (c.warn_s <= 0 && c.timeout_s <= 0) {  // off: no traffic either
      last_look_ns_ = now;
      continue;
    }
    // This process was itself stopped or starved (SIGSTOP then SIGCONT, a
    // loaded node): its own waits and what it knows of the others are as
    // old as the gap, so it judges nothing until fresh reports are in.
    const double gap = SecondsBetween(last_look_ns_, now);
    if (gap > 2 + 4 * period)
      quiet_until_ns_ = now + static_cast<int64_t>((gap + 2 * period) * 1e9);
    last_look_ns_ = now;
    Receive(now);
    if (SecondsBetween(last_send_ns_, now) >= period) {
      SendReports();
      last_send_ns_ = now;
    }
    if (now >= quiet_until_ns_) Judge(now);
  }
  ProgressReport bye = OwnReport(MonotonicNs());
  bye.leaving = 1;
  for (int p = 0; p < size_; ++p)
    if (p != rank_) channel_->Send(p, bye);
}

void StallWatchdog::Receive(int64_t now) {
  ProgressReport r;
  while (channel_->Poll(&r)) {
    if (r.rank < 0 || r.rank >= size_ || r.rank == rank_) continue;
    Peer& p = peers_[r.rank];
    if (!p.heard || p.last.progress != r.progress) p.changed_ns = now;
    p.heard = true;
    p.heard_ns = now;
    p.last = r;
  }
}

void StallWatchdog::SendReports() {
  const ProgressReport mine = OwnReport(MonotonicNs());
  for (int p = 0; p < size_; ++p) {
    // A peer that said farewell listens no more.
    if (p != rank_ && !peers_[p].last.leaving) channel_->Send(p, mine);
  }
}

ProgressReport StallWatchdog::OwnReport(int64_t now) const {
  ProgressReport r;
  r.rank = rank_;
  r.progress = recorder_->progress();
  r.finished = recorder_->finished();
  r.started = recorder_->started();
  r.issued = recorder_->issued();
  r.step = recorder_->step();
  if (scope_.others) {
    const ProcessActivity others = scope_.others();
    r.progress += others.progress;
    r.elsewhere = others.in_ring + 1;
  }
  FlightRecorder::Record rec;
  const int64_t seq = r.started > r.finished ? r.started : r.finished;
  if (recorder_->Get(seq, &rec)) {
    r.kind = static_cast<int32_t>(rec.desc.kind);
    r.index = rec.index;
    r.bytes = rec.bytes;
    r.coll_step = rec.step;
    r.micro_batch = rec.desc.micro_batch + 1;
    if (r.started > r.finished && rec.start_ns > 0)
      r.waited_ms = (now - rec.start_ns) / 1000000;
  }
  return r;
}

std::vector<RankView> StallWatchdog::Views(int64_t now) {
  std::vector<RankView> views(size_);
  for (int r = 0; r < size_; ++r) {
    RankView& v = views[r];
    if (r == rank_) {
      v.heard = true;
      v.last = OwnReport(now);
      if (v.last.progress != own_progress_) {
        own_progress_ = v.last.progress;
        own_changed_ns_ = now;
      }
      v.idle_s = SecondsBetween(own_changed_ns_, now);
    } else if (peers_[r].heard) {
      const Peer& p = peers_[r];
      v.heard = true;
      v.last = p.last;
      v.silent_s = SecondsBetween(p.heard_ns, now);
      v.idle_s = SecondsBetween(p.changed_ns, now);
    } else {
      v.silent_s = v.idle_s = SecondsBetween(start_ns_, now);
    }
    if (v.last.started > v.last.finished)
      v.waited_s = v.last.waited_ms * 1e-3 + v.silent_s;
  }
  return views;
}

void StallWatchdog::Judge(int64_t now) {
  const StallConfig c = config();
  if (ended_ || (c.warn_s <= 0 && c.timeout_s <= 0)) return;
  const std::vector<RankView> views = Views(now);
  if (c.timeout_s > 0) {
    const StallVerdict v = JudgeStall(views, c.timeout_s);
    // The speaker ends the job; should it not (its view differs), any
    // other rank does a little later.
    const double grace = std::max(2.0, c.timeout_s / 4);
    if (v.collective > 0 &&
        (v.speaker == rank_ || v.waited_s >= c.timeout_s + grace)) {
      EndJob(DescribeStall(v, views, true, c.timeout_s, scope_));
      return;
    }
  }
  if (c.warn_s > 0) {
    const StallVerdict v = JudgeStall(views, c.warn_s);
    if (v.collective > 0 && v.collective != warned_ && v.speaker == rank_) {
      warned_ = v.collective;
      WriteErrorLine(Prefix() +
                     DescribeStall(v, views, false, c.warn_s, scope_));
    }
  }
}

std::string StallWatchdog::Prefix() const {
  return "fluid: rank " + std::to_string(scope_.WorldRank(rank_)) + ": ";
}

void StallWatchdog::EndJob(const std::string& line) {
  std::string dumped;
  if (scope_.dump) {
    dumped = scope_.dump(line.c_str());
  } else if (recorder_->Dump(line.c_str())) {
    dumped = recorder_->dump_path();
  }
  if (!dumped.empty()) {
    WriteErrorLine(Prefix() + "flight recorder written to " + dumped +
                   " (every rank writes its own as the job ends; "
                   "tools/flight_report.py reads them)");
  }
  WriteErrorLine(Prefix() + line);
  ended_ = true;
  // What the timeline holds so far, before the job goes (rank 0 writes
  // the file, the others their parts; see timeline_session.h).
  DumpTimeline(line.c_str(), /*wait_for_others=*/false);
  // MPI_Abort waits for the launcher; with the host mpirun runs on cut
  // off it never returns, and this rank must still end.
  char grace[16];
  std::snprintf(grace, sizeof(grace), "%.0f", kAbortGraceSeconds);
  ArmExitDeadline(kAbortGraceSeconds, 1,
                  Prefix() + "the job has not ended " + grace +
                      " s after the stall ended it (mpirun cannot be "
                      "reached: a lost host or a cut network?); exiting");
  end_job_();
  DisarmExitDeadline();  // an end_job that returns (tests)
}

}  // namespace fluid
