// The stall watchdog's judgement, its threads over an in-process channel
// (a "frozen" rank is one whose reports stop), and the flight recorder.
#include "src/distributed/stall_watchdog.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "src/distributed/communicator.h"
#include "src/distributed/in_process_backend.h"
#include "src/distributed/job_control.h"
#include "tests/distributed/each_collective.h"
#include "tests/testing/in_process_ranks.h"

namespace fluid {
namespace {

// Rank `r` as the judge sees it: in collective `started` (or past
// `finished`), waiting, silent and idle for the given seconds.
RankView View(int64_t started, int64_t finished, double waited, double silent,
              double idle) {
  RankView v;
  v.heard = true;
  v.last.started = started;
  v.last.finished = finished;
  v.last.issued = started;
  v.last.kind = static_cast<int32_t>(CollectiveKind::kAllReduce);
  v.last.bytes = 4 << 20;
  v.last.index = 2;
  v.last.coll_step = 7;
  v.last.step = 7;
  v.waited_s = started > finished ? waited : 0;
  v.silent_s = silent;
  v.idle_s = idle;
  return v;
}

TEST(JudgeStallTest, NamesTheRankBehindAndRankZeroSpeaks) {
  // Ranks 0 and 2 wait in collective 10; rank 1 is at 9 and silent.
  std::vector<RankView> views = {View(10, 9, 12, 0, 12), View(9, 9, 0, 12, 12),
                                 View(10, 9, 11, 0.2, 11)};
  StallVerdict v = JudgeStall(views, 8);
  EXPECT_EQ(v.collective, 10);
  EXPECT_EQ(v.stuck, std::vector<int>({1}));
  EXPECT_EQ(v.waiting, std::vector<int>({0, 2}));
  EXPECT_EQ(v.speaker, 0);
  const std::string line = DescribeStall(v, views, true, 8);
  EXPECT_NE(line.find("stall: rank 1 holds up collective 10 (allreduce, "
                      "4.0 MiB, #2 of step 7), in which ranks 0, 2 have "
                      "waited 12 s: rank 1 has been silent for 12 s"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("ending the job (--stall-timeout 8)"), std::string::npos);
}

TEST(JudgeStallTest, WhenRankZeroIsStuckTheNextRankSpeaks) {
  // Rank 0 froze inside collective 10 (its last report says so); rank 1
  // waits in 11 (it finished 10 before rank 0 stopped answering).
  std::vector<RankView> views = {View(10, 9, 1, 20, 20),
                                 View(11, 10, 20, 0, 20)};
  StallVerdict v = JudgeStall(views, 8);
  EXPECT_EQ(v.collective, 11);
  EXPECT_EQ(v.stuck, std::vector<int>({0}));
  EXPECT_EQ(v.speaker, 1);
}

TEST(JudgeStallTest, AFrozenRankInsideTheCollectiveIsStuck) {
  std::vector<RankView> views = {View(10, 9, 9, 0, 9), View(10, 9, 9, 9, 9)};
  StallVerdict v = JudgeStall(views, 8);
  EXPECT_EQ(v.collective, 10);
  EXPECT_EQ(v.stuck, std::vector<int>({1}));
  EXPECT_EQ(v.speaker, 0);
}

TEST(JudgeStallTest, ASlowButProgressingRankIsNotStuck) {
  // Rank 1 is outside collectives, alive, and moved 3 s ago: others have
  // waited 20 s, but rank 1 is not stuck until it stands still for 8.
  std::vector<RankView> views = {View(10, 9, 20, 0, 20), View(9, 9, 0, 0.3, 3)};
  EXPECT_EQ(JudgeStall(views, 8).collective, 0);
  // Nobody has waited long enough yet.
  views = {View(10, 9, 5, 0, 5), View(9, 9, 0, 5, 5)};
  EXPECT_EQ(JudgeStall(views, 8).collective, 0);
}

TEST(JudgeStallTest, AHungMainThreadIsStuckThoughAlive) {
  std::vector<RankView> views = {View(10, 9, 20, 0, 20),
                                 View(9, 9, 0, 0.3, 20)};
  StallVerdict v = JudgeStall(views, 8);
  EXPECT_EQ(v.stuck, std::vector<int>({1}));
  EXPECT_NE(DescribeStall(v, views, false, 8).find("process alive"),
            std::string::npos);
}

TEST(JudgeStallTest, AllRanksInTheCollectiveIsTheTransport) {
  std::vector<RankView> views = {View(10, 9, 20, 0, 20),
                                 View(10, 9, 20, 0.2, 20)};
  StallVerdict v = JudgeStall(views, 8);
  EXPECT_EQ(v.collective, 10);
  EXPECT_TRUE(v.stuck.empty());
  EXPECT_NE(DescribeStall(v, views, true, 8).find("none is behind"),
            std::string::npos);
}

TEST(JudgeStallTest, LeavingRanksAreIgnored) {
  std::vector<RankView> views = {View(10, 9, 20, 0, 20), View(9, 9, 0, 20, 20)};
  views[1].last.leaving = 1;
  EXPECT_EQ(JudgeStall(views, 8).collective, 0);
}

// A ring's watchdog names ranks by world rank and says which ring.
TEST(JudgeStallTest, ARingsLineNamesWorldRanksAndTheRing) {
  // Ring 1 of world ranks 4, 6, 7: its rank 1 (world 6) is behind.
  std::vector<RankView> views = {View(10, 9, 12, 0, 12), View(9, 9, 0, 12, 12),
                                 View(10, 9, 11, 0.2, 11)};
  StallVerdict v = JudgeStall(views, 8);
  ASSERT_EQ(v.stuck, std::vector<int>({1}));
  StallScope scope;
  scope.ring = 1;
  scope.world_ranks = {4, 6, 7};
  const std::string line = DescribeStall(v, views, true, 8, scope);
  EXPECT_NE(line.find("stall: rank 6 holds up collective 10 (allreduce, "
                      "4.0 MiB, #2 of step 7) on ring 1 (ranks 4, 6, 7), in "
                      "which ranks 4, 7 have waited 12 s: rank 6 has been "
                      "silent for 12 s"),
            std::string::npos)
      << line;
}

TEST(JudgeStallTest, ARankWaitingInAnotherRingIsStuckOnlyAGraceLater) {
  // Rank 1 is alive and waits in a collective of ring 1 (for a rank
  // there): that ring's watchdog speaks first; this one waits a grace.
  std::vector<RankView> views = {View(10, 9, 9, 0, 9), View(9, 9, 0, 0.2, 9)};
  views[1].last.elsewhere = 2;
  EXPECT_EQ(JudgeStall(views, 8).collective, 0);
  views[0] = View(10, 9, 8 + AwayGraceSeconds(8), 0, 8 + AwayGraceSeconds(8));
  views[1].idle_s = 8 + AwayGraceSeconds(8);
  StallVerdict v = JudgeStall(views, 8);
  EXPECT_EQ(v.stuck, std::vector<int>({1}));
  EXPECT_NE(DescribeStall(v, views, true, 8).find("in a collective of ring 1"),
            std::string::npos);
  // A frozen rank is stuck whatever it last said.
  views = {View(10, 9, 9, 0, 9), View(9, 9, 0, 9, 9)};
  views[1].last.elsewhere = 2;
  EXPECT_EQ(JudgeStall(views, 8).stuck, std::vector<int>({1}));
}

// Ranks as threads: reports go through shared queues; a frozen rank's
// reports are dropped.
struct FakeNet {
  std::mutex mu;
  std::vector<std::deque<ProgressReport>> inbox;
  std::vector<std::atomic<bool>> frozen;
  explicit FakeNet(int n) : inbox(n), frozen(n) {}
};

class FakeChannel : public ProgressChannel {
 public:
  FakeChannel(FakeNet* net, int rank) : net_(net), rank_(rank) {}
  void Send(int peer, const ProgressReport& r) override {
    if (net_->frozen[rank_]) return;
    std::lock_guard<std::mutex> lock(net_->mu);
    net_->inbox[peer].push_back(r);
  }
  bool Poll(ProgressReport* r) override {
    std::lock_guard<std::mutex> lock(net_->mu);
    if (net_->inbox[rank_].empty()) return false;
    *r = net_->inbox[rank_].front();
    net_->inbox[rank_].pop_front();
    return true;
  }

 private:
  FakeNet* net_;
  int rank_;
};

// Two ranks enter collectives 1 and 2; then `victim` freezes while the
// other enters collective 3 and waits. Returns the rank that ended the job.
int WhoEndsTheJob(int victim) {
  const int n = 2;
  FakeNet net(n);
  FlightRecorder rec[n];
  std::atomic<int> ended{-1};
  std::vector<std::unique_ptr<StallWatchdog>> dogs;
  for (int r = 0; r < n; ++r) {
    for (int k = 0; k < 2; ++k) {
      const int64_t seq = rec[r].Issue(CollectiveKind::kAllReduce, 64);
      rec[r].Start(seq);
      rec[r].Finish(seq, true);
    }
    dogs.push_back(std::make_unique<StallWatchdog>(
        r, n, &rec[r], std::make_unique<FakeChannel>(&net, r),
        StallConfig{0.4, 0.8}, [&ended, r] {
          int none = -1;
          ended.compare_exchange_strong(none, r);
        }));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  net.frozen[victim] = true;
  const int other = 1 - victim;
  rec[other].Start(rec[other].Issue(CollectiveKind::kAllReduce, 64));
  for (int i = 0; i < 100 && ended < 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (auto& d : dogs) d->Stop();
  return ended;
}

TEST(StallWatchdogTest, TheLiveRankEndsTheJob) {
  EXPECT_EQ(WhoEndsTheJob(1), 0);
  EXPECT_EQ(WhoEndsTheJob(0), 1);
}

// A ring's channel over a FakeNet of world ranks: peer p of the ring is
// world rank world_ranks[p].
class RingChannel : public ProgressChannel {
 public:
  RingChannel(FakeNet* net, std::vector<int> world_ranks, int world_rank)
      : world_ranks_(std::move(world_ranks)), inner_(net, world_rank) {}
  void Send(int peer, const ProgressReport& r) override {
    inner_.Send(world_ranks_[peer], r);
  }
  bool Poll(ProgressReport* r) override { return inner_.Poll(r); }

 private:
  std::vector<int> world_ranks_;
  FakeChannel inner_;
};

// Four ranks, ring 1 = {0, 1} and {2, 3}; world rank 3 stops joining the
// ring's collectives: the ring's watchdog on world rank 2 ends the job,
// naming world rank 3 and the ring.
TEST(StallWatchdogTest, ARingsWatchdogNamesTheWorldRankBehind) {
  const int n = 4;
  FakeNet world(n), rings(n);
  std::atomic<int> ended{-1};
  ::testing::internal::CaptureStderr();
  testing::RunRanks(n, [&](int rank, Communicator* comm) {
    comm->StartStallWatchdog(
        std::make_unique<FakeChannel>(&world, rank), StallConfig{0, 0.5},
        [&ended, rank] {
          int none = -1;
          ended.compare_exchange_strong(none, rank);
        },
        [&rings, rank](int ring, const std::vector<int>& world_ranks) {
          EXPECT_EQ(ring, 1);
          EXPECT_EQ(world_ranks, rank < 2 ? std::vector<int>({0, 1})
                                          : std::vector<int>({2, 3}));
          return std::make_unique<RingChannel>(&rings, world_ranks, rank);
        });
    Communicator* ring = comm->CreateGroup(1, rank / 2, rank);
    EXPECT_TRUE(ring->has_stall_watchdog());
    Tensor t(DataType::kFloat32, Shape{4});
    t.raw_mutable_data();
    ring->AllReduce(t, ReduceOp::kSum);
    if (rank == 3) {
      for (int i = 0; i < 60 && ended < 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ring->AllReduce(t, ReduceOp::kSum);
  });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(ended, 2) << err;
  EXPECT_NE(err.find("fluid: rank 2: stall: rank 3 holds up collective 2 "
                     "(allreduce, 16 bytes, #2 before the first step) on "
                     "ring 1 (ranks 2, 3), in which rank 2 has waited"),
            std::string::npos)
      << err;
}

// The backstop for an MPI_Abort that never returns (the launcher cut off):
// the process ends itself, saying so, unless disarmed first.
TEST(ExitDeadlineTest, EndsTheProcessUnlessDisarmed) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_EXIT(
      {
        ArmExitDeadline(0.2, 7, "rank 3: still here after 0.2 s; exiting");
        std::this_thread::sleep_for(std::chrono::seconds(30));
        std::exit(0);
      },
      ::testing::ExitedWithCode(7), "still here after 0.2 s; exiting");
  ArmExitDeadline(0.2, 7, "not to be seen");
  DisarmExitDeadline();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ArmExitDeadline(0.3, 7, "not to be seen either");  // armable again
  DisarmExitDeadline();
  SUCCEED() << "alive after the disarmed deadlines";
}

// A watchdog whose MPI_Abort never returns (mpirun on a host cut off) still
// ends its rank, kAbortGraceSeconds later, saying so.
TEST(ExitDeadlineTest, AStallWhoseAbortHangsStillEndsTheRank) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_EXIT(
      {
        FakeNet net(2);  // rank 1 never reports
        FlightRecorder rec;
        rec.Start(rec.Issue(CollectiveKind::kAllReduce, 64));
        StallWatchdog dog(
            0, 2, &rec, std::make_unique<FakeChannel>(&net, 0),
            StallConfig{0, 0.3}, [] {
              for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));
            });
        std::this_thread::sleep_for(std::chrono::seconds(60));
        std::exit(0);
      },
      ::testing::ExitedWithCode(1),
      "rank 0: the job has not ended 10 s after the stall ended it");
}

TEST(FlightRecorderTest, KeepsTheLastCollectivesAndDumpsThem) {
  FlightRecorder rec;
  for (int i = 0; i < 300; ++i) {
    if (i % 3 == 0) rec.BeginStep();
    const int64_t seq = rec.Issue(CollectiveKind::kBroadcast, i);
    rec.Start(seq);
    if (i < 299) rec.Finish(seq, true);
  }
  EXPECT_EQ(rec.issued(), 300);
  EXPECT_EQ(rec.finished(), 299);
  FlightRecorder::Record r;
  EXPECT_FALSE(rec.Get(44, &r));  // overwritten
  ASSERT_TRUE(rec.Get(300, &r));
  EXPECT_EQ(r.state, FlightRecorder::kRunning);
  EXPECT_EQ(r.step, 100);
  EXPECT_EQ(r.index, 3);
  EXPECT_FALSE(rec.Dump("no path yet"));
  char dir[] = "/tmp/flight_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  EXPECT_EQ(rec.SetDumpPath(dir, 3, 4), dir);
  ASSERT_TRUE(rec.Dump("a test"));
  const std::string path = std::string(dir) + "/flight-rank-3.txt";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("rank 3 size 4 pid"), std::string::npos);
  EXPECT_NE(text.str().find("reason a test\n"), std::string::npos);
  EXPECT_NE(text.str().find("seq 45 op broadcast bytes 44 step 15 index 3 "
                            "state done"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("seq 300 op broadcast bytes 299 step 100 index 3 "
                            "state running"),
            std::string::npos);
  std::remove(path.c_str());
  rmdir(dir);
}

// Nobody named a directory: the job's own under $TMPDIR, made only by the
// first dump, never the working directory.
TEST(FlightRecorderTest, TheDefaultDirectoryIsTheJobsUnderTmpdir) {
  char tmp[] = "/tmp/flight_tmpdir.XXXXXX";
  ASSERT_NE(mkdtemp(tmp), nullptr);
  const char* saved = std::getenv("TMPDIR");
  const std::string restore = saved != nullptr ? saved : "";
  setenv("TMPDIR", (std::string(tmp) + "/").c_str(), 1);
  EXPECT_EQ(DefaultFlightDir("prterun-host-4242@1"),
            std::string(tmp) + "/fluid-flight-prterun-host-4242_1");
  EXPECT_EQ(DefaultFlightDir(""), std::string(tmp) + "/fluid-flight-ppid" +
                                      std::to_string(getppid()));
  unsetenv("TMPDIR");
  EXPECT_EQ(DefaultFlightDir("7"), "/tmp/fluid-flight-7");
  if (saved != nullptr) setenv("TMPDIR", restore.c_str(), 1);

  const std::string dir = std::string(tmp) + "/fluid-flight-job";
  // On the heap: Dump writes once per recorder address (the first reason
  // stands), and a recorder of an earlier test may have had this one's.
  auto rec = std::make_unique<FlightRecorder>();
  rec->Issue(CollectiveKind::kAllReduce, 16);
  rec->SetDefaultDumpPath(dir, 1, 2);
  const std::string path = dir + "/flight-rank-1.txt";
  EXPECT_EQ(rec->dump_path(), path);
  struct stat st;
  EXPECT_NE(stat(dir.c_str(), &st), 0) << "made before any dump";
  ASSERT_TRUE(rec->Dump("a test"));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("rank 1 size 2 pid"), std::string::npos);
  std::remove(path.c_str());
  rmdir(dir.c_str());
  rmdir(tmp);
}

TEST(FlightRecorderTest, TheCommunicatorRecordsEachCollective) {
  Communicator comm(InProcessGroup::Create(1)->Backend(0));
  Tensor t(DataType::kFloat32, Shape{8});
  t.raw_mutable_data();
  comm.BroadcastAsync(t, 0)->Wait();  // before the first step
  comm.BeginStep();
  comm.AllReduce(t, ReduceOp::kSum);
  comm.Barrier();
  const FlightRecorder& rec = *comm.flight_recorder();
  EXPECT_EQ(rec.issued(), 3);
  EXPECT_EQ(rec.finished(), 3);
  FlightRecorder::Record r;
  ASSERT_TRUE(rec.Get(1, &r));
  EXPECT_EQ(r.desc.kind, CollectiveKind::kBroadcast);
  EXPECT_EQ(r.step, 0);
  ASSERT_TRUE(rec.Get(2, &r));
  EXPECT_EQ(r.desc.kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(r.bytes, 32);
  EXPECT_EQ(r.step, 1);
  EXPECT_EQ(r.index, 1);
  EXPECT_EQ(r.state, FlightRecorder::kDone);
  EXPECT_GE(r.end_ns, r.start_ns);
  EXPECT_GE(r.start_ns, r.issue_ns);
  ASSERT_TRUE(rec.Get(3, &r));
  EXPECT_EQ(r.desc.kind, CollectiveKind::kBarrier);
  EXPECT_EQ(r.index, 2);
}

TEST(FlightRecorderTest, RecordsWhatEachCollectiveIsAndTheJob) {
  CollectiveDesc d;
  d.kind = CollectiveKind::kAllReduce;
  d.dtype = static_cast<int32_t>(DataType::kFloat32);
  d.count = 4096;
  d.op = static_cast<int32_t>(ReduceOp::kAvg);
  EXPECT_EQ(DescribeCollective(d), "allreduce(avg) float32 x 4096");
  d.wire = static_cast<int32_t>(WireFormat::kBf16);
  EXPECT_EQ(DescribeCollective(d), "allreduce(avg) float32 x 4096 as bf16");
  CollectiveDesc b;
  b.kind = CollectiveKind::kBroadcast;
  b.dtype = static_cast<int32_t>(DataType::kInt64);
  b.count = 3;
  b.root = 0;
  EXPECT_EQ(DescribeCollective(b), "broadcast int64 x 3 from rank 0");
  CollectiveDesc barrier;
  barrier.kind = CollectiveKind::kBarrier;
  EXPECT_EQ(DescribeCollective(barrier), "barrier");

  // Static: Dump writes each recorder once, known by its address, which a
  // recorder on the stack of another test may have had.
  static FlightRecorder rec;
  rec.SetJobId("4242 0");
  rec.SetJobId("later ids do not replace the first");
  rec.Issue(d, 8192);
  char dir[] = "/tmp/flight_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  rec.SetDumpPath(dir, 0, 2);
  ASSERT_TRUE(rec.Dump("a test"));
  const std::string path = std::string(dir) + "/flight-rank-0.txt";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\njob 4242_0\n"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("seq 1 op allreduce bytes 8192 "),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find(" dtype float32 count 4096 reduce avg wire bf16\n"),
            std::string::npos)
      << text.str();
  std::remove(path.c_str());
  rmdir(dir);
}

// Every kind of collective is recorded as itself, with the bytes it moves
// (what a stalled rank's file and the timeline say of it), on every rank;
// the bytes of the allreduces, sparse allreduces and reduce-scatters (the
// gradients' collectives) are what the communicator counts as handed to
// the transport.
TEST(FlightRecorderTest, EachCollectiveIsRecordedWithItsKindAndBytes) {
  testing::RunRanks(2, [](int rank, Communicator* comm) {
    const FlightRecorder& rec = *comm->flight_recorder();
    const int64_t before = rec.issued();
    const int64_t wire_before = comm->allreduce_wire_bytes();
    const auto expected = testing::IssueEachCollective(comm);
    ASSERT_EQ(rec.issued() - before, static_cast<int64_t>(expected.size()));
    int64_t reduced = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      FlightRecorder::Record r;
      ASSERT_TRUE(rec.Get(before + 1 + static_cast<int64_t>(i), &r));
      const std::string kind = CollectiveKindName(expected[i].kind);
      EXPECT_EQ(CollectiveKindName(r.desc.kind), kind)
          << "rank " << rank << ", collective " << i;
      EXPECT_EQ(r.bytes, expected[i].bytes)
          << "rank " << rank << ", collective " << i << " (" << kind << ")";
      EXPECT_EQ(r.state, FlightRecorder::kDone);
      if (kind == "allreduce" || kind == "sparse_allreduce" ||
          kind == "reducescatter")
        reduced += r.bytes;
    }
    EXPECT_EQ(comm->allreduce_wire_bytes() - wire_before, reduced);
  });
}

}  // namespace
}  // namespace fluid
