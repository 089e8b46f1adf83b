#include "src/framework/timeline.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "src/distributed/communicator.h"
#include "src/distributed/in_process_backend.h"
#include "src/distributed/stall_watchdog.h"
#include "src/distributed/timeline_session.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "tests/distributed/each_collective.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/programs.h"

namespace fluid {
namespace {

using testing::MakeTensor;
using testing::MulProgram;

void RunMul(int64_t rows) {
  Executor exe;
  Scope scope;
  scope.Var("w")->GetMutableTensor()->CopyFrom(
      MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  auto prepared = exe.Prepare(MulProgram(), &scope);
  std::vector<Tensor> out;
  exe.Run(prepared.get(),
          {{"x", MakeTensor<float>({rows, 3}, std::vector<float>(rows * 3))}},
          {"y"}, &out);
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1))
    ++n;
  return n;
}

// Brackets balance outside strings, and no list or object ends in a comma:
// what a JSON reader needs of the trace's structure (the Python test
// parses it for real).
::testing::AssertionResult WellFormed(const std::string& json) {
  int depth = 0;
  bool in_string = false;
  char last = 0;  // last non-space byte outside strings
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') {
      if (last == ',')
        return ::testing::AssertionFailure() << "trailing comma at " << i;
      if (--depth < 0)
        return ::testing::AssertionFailure() << "unbalanced at " << i;
    }
    if (c != ' ' && c != '\n') last = c;
  }
  if (depth != 0 || in_string)
    return ::testing::AssertionFailure() << "unclosed at the end";
  return ::testing::AssertionSuccess();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Timeline, TheExecutorRecordsOpsWithShapesAndBytesAndFeeds) {
  Timeline timeline(0, 1, ClockSync{});
  SetCurrentTimeline(&timeline);
  RunMul(4);
  SetCurrentTimeline(nullptr);
  RunMul(5);  // off: not recorded
  const std::string text = timeline.Format();
  EXPECT_EQ(Count(text, "\"name\":\"mul\""), 1u) << text;
  EXPECT_NE(text.find("\"bytes\":32,\"shapes\":[[4,2]]"), std::string::npos)
      << text;
  // The feed's copy (4 x 3 floats) and the run.
  EXPECT_NE(text.find("\"name\":\"feed\",\"cat\":\"data\""), std::string::npos);
  EXPECT_NE(text.find("\"bytes\":48"), std::string::npos);
  EXPECT_EQ(Count(text, "\"name\":\"run\""), 1u);
  EXPECT_EQ(timeline.num_events(), 3u);
  EXPECT_EQ(timeline.dropped(), 0);
}

TEST(Timeline, ScopesCostNothingWhenOff) {
  SetCurrentTimeline(nullptr);
  TimelineScope off(TimelineTrack::kData, "load batch");
  EXPECT_FALSE(off.active());
  Timeline timeline(0, 1, ClockSync{});
  SetCurrentTimeline(&timeline);
  {
    TimelineScope on(TimelineTrack::kCheckpoints, "save checkpoint");
    EXPECT_TRUE(on.active());
    on.set_bytes(7);
  }
  SetCurrentTimeline(nullptr);
  const std::string text = timeline.Format();
  EXPECT_NE(text.find("\"name\":\"save checkpoint\",\"cat\":\"checkpoints\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"bytes\":7"), std::string::npos);
}

// Times are shifted by the rank's clock offset onto rank 0's clock, from
// the trace's origin, in microseconds.
TEST(Timeline, CollectivesShowQueueRunAndBucketOnRankZerosClock) {
  Timeline timeline(1, 2, ClockSync{1500, 10, 1000});
  timeline.RecordCollective(
      Timeline::Collective{"allreduce", 4096, 3, 17, 2, 10000, 12000, 20500});
  const std::string text = timeline.Format();
  EXPECT_NE(text.find("{\"ph\":\"b\",\"pid\":2,\"tid\":4,\"name\":"
                      "\"allreduce\",\"cat\":\"queued\",\"id\":17,\"ts\":10."
                      "500}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("{\"ph\":\"X\",\"pid\":2,\"tid\":4,\"name\":"
                      "\"allreduce\",\"cat\":\"collective\",\"ts\":12.500,"
                      "\"dur\":8.500,\"args\":{\"step\":3,\"bytes\":4096,"
                      "\"bucket\":2,\"seq\":17,\"enqueue_ts\":10.500,"
                      "\"queued_us\":2.000}}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"offset_ns\":1500,\"uncertainty_ns\":10"),
            std::string::npos);
}

// A job with rings records collectives from several communicators' worker
// threads at once: every one is kept, none torn.
TEST(Timeline, CollectivesFromSeveralThreadsAreAllKept) {
  Timeline timeline(0, 1, ClockSync{});
  constexpr int kThreads = 4, kEach = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&timeline, t] {
      for (int i = 0; i < kEach; ++i)
        timeline.RecordCollective(Timeline::Collective{
            t % 2 ? "broadcast" : "allreduce", 64, 1, i + 1, 1, 10, 20, 30});
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(timeline.num_events(), static_cast<size_t>(kThreads * kEach));
  const std::string text = timeline.Format();
  size_t collectives = 0;
  for (size_t at = text.find("\"cat\":\"collective\""); at != std::string::npos;
       at = text.find("\"cat\":\"collective\"", at + 1))
    ++collectives;
  EXPECT_EQ(collectives, static_cast<size_t>(kThreads * kEach));
}

// The flight recorder's hook: every collective, numbered within its step.
TEST(Timeline, TheCommunicatorRecordsEveryCollective) {
  auto group = InProcessGroup::Create(1);
  Communicator comm(group->Backend(0));
  Timeline timeline(0, 1, ClockSync{});
  SetCurrentTimeline(&timeline);
  Tensor t = MakeTensor<float>({3}, {1, 2, 3});
  for (int step = 0; step < 2; ++step) {
    comm.BeginStep();
    for (int i = 0; i < 3; ++i) comm.AllReduce(t, ReduceOp::kSum);
  }
  SetCurrentTimeline(nullptr);
  comm.Barrier();  // after the last recorded one: not recorded
  const std::string text = timeline.Format();
  EXPECT_EQ(Count(text, "\"cat\":\"collective\""), 6u) << text;
  EXPECT_EQ(Count(text, "\"step\":2,\"bytes\":12,\"bucket\":3"), 1u) << text;
  EXPECT_EQ(Count(text, "\"name\":\"barrier\""), 0u);
}

// Each kind of collective shows under its own name with the bytes it moves
// (reducescatter, allgather and sparse allreduce as much as allreduce).
TEST(Timeline, EachCollectiveShowsItsKindAndBytes) {
  auto group = InProcessGroup::Create(1);
  Communicator comm(group->Backend(0));
  Timeline timeline(0, 1, ClockSync{});
  SetCurrentTimeline(&timeline);
  comm.BeginStep();
  const auto expected = testing::IssueEachCollective(&comm);
  SetCurrentTimeline(nullptr);
  const std::string text = timeline.Format();
  const std::regex event(
      "\"name\":\"([a-z_]+)\",\"cat\":\"collective\"[^\n]*"
      "\"bytes\":([0-9]+),\"bucket\":[0-9]+,\"seq\":([0-9]+)");
  std::vector<std::pair<std::string, int64_t>> shown(expected.size());
  size_t events = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), event), end; it != end;
       ++it, ++events) {
    const size_t seq = std::stoul((*it)[3]);
    ASSERT_TRUE(seq >= 1 && seq <= expected.size()) << text;
    shown[seq - 1] = {(*it)[1], std::stoll((*it)[2])};
  }
  EXPECT_EQ(events, expected.size()) << text;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(shown[i].first, CollectiveKindName(expected[i].kind))
        << "collective " << i;
    EXPECT_EQ(shown[i].second, expected[i].bytes)
        << "collective " << i << " (" << shown[i].first << ")";
  }
}

// On one machine the ranks share one clock: the true offset, 0, lies
// within each estimate's bounds, and those are tight.
TEST(AlignClocks, OffsetsAreWithinTheirBoundsOfZero) {
  constexpr int kRanks = 3;
  auto group = InProcessGroup::Create(kRanks);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < kRanks; ++r)
    comms.push_back(std::make_unique<Communicator>(group->Backend(r)));
  std::vector<ClockSync> sync(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] { sync[r] = AlignClocks(comms[r].get()); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(sync[0].offset_ns, 0);
  EXPECT_EQ(sync[0].uncertainty_ns, 0);
  for (int r = 1; r < kRanks; ++r) {
    EXPECT_LE(std::llabs(sync[r].offset_ns), sync[r].uncertainty_ns + 1)
        << "rank " << r;
    EXPECT_LT(std::llabs(sync[r].offset_ns), 1000000) << "rank " << r;
    EXPECT_EQ(sync[r].origin_ns, sync[0].origin_ns);
  }
}

std::string TempPath(const char* name) {
  return ::testing::TempDir() + "/" + name + "-" + std::to_string(::getpid());
}

TEST(TimelineSession, ASingleProcessWritesAWholeTrace) {
  const std::string path = TempPath("timeline.json");
  StartTimeline(nullptr, path);
  EXPECT_TRUE(TimelineStarted());
  RunMul(2);
  EXPECT_EQ(FinishTimeline(nullptr), path);
  EXPECT_FALSE(TimelineStarted());
  EXPECT_EQ(CurrentTimeline(), nullptr);
  const std::string text = ReadFile(path);
  EXPECT_TRUE(WellFormed(text)) << text;
  EXPECT_EQ(text.rfind("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", 0), 0u);
  EXPECT_NE(text.find("\"name\":\"mul\""), std::string::npos);
  EXPECT_NE(text.find("\"note\":\"complete\""), std::string::npos);
  std::remove(path.c_str());
}

// An abort writes what there is, once, with the reason.
TEST(TimelineSession, AnAbortWritesWhatThereIs) {
  const std::string path = TempPath("aborted.json");
  StartTimeline(nullptr, path);
  RunMul(3);
  DumpTimeline("error: this rank ended the job", false);
  std::string text = ReadFile(path);
  EXPECT_TRUE(WellFormed(text)) << text;
  EXPECT_NE(text.find("\"name\":\"mul\""), std::string::npos);
  EXPECT_NE(text.find("\"note\":\"error: this rank ended the job\""),
            std::string::npos);
  DumpTimeline("second", false);
  EXPECT_EQ(ReadFile(path).find("second"), std::string::npos);
  FinishTimeline(nullptr);
  std::remove(path.c_str());
}

TEST(TimelineSession, AnUnwritablePathIsAnError) {
  EXPECT_THROW(StartTimeline(nullptr, "/nonexistent-dir/x/trace.json"), Error);
  EXPECT_FALSE(TimelineStarted());
}

// The message StartTimeline throws for `path`; "" when it does not.
std::string StartError(const std::string& path) {
  try {
    StartTimeline(nullptr, path);
  } catch (const Error& e) {
    return e.what();
  }
  FinishTimeline(nullptr);
  return "";
}

// A path whose file opens for writing but that cannot take the trace,
// which is written next to it and renamed onto it: refused at the start,
// not after training (root may open /proc/version for writing).
TEST(TimelineSession, APathThatCannotTakeTheTraceIsRefusedAtTheStart) {
  std::string why = StartError("/proc/version");
  EXPECT_NE(why.find("cannot write '/proc/version'"), std::string::npos) << why;
  EXPECT_FALSE(TimelineStarted());
  // A directory: the rename fails, and the file written first is removed.
  const std::string dir = TempPath("timeline-dir");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  why = StartError(dir);
  EXPECT_NE(why.find("cannot write '" + dir + "'"), std::string::npos) << why;
  EXPECT_NE(::access((dir + ".tmp").c_str(), F_OK), 0)
      << "left " << dir << ".tmp behind";
  ::rmdir(dir.c_str());
}

// Until the trace replaces it, the file is a readable trace without events
// that says why (a job killed before it writes leaves that, not 0 bytes).
TEST(TimelineSession, TheFileIsAReadableTraceFromTheStart) {
  const std::string path = TempPath("started.json");
  StartTimeline(nullptr, path);
  const std::string text = ReadFile(path);
  EXPECT_TRUE(WellFormed(text)) << text;
  EXPECT_NE(text.find(kTimelinePlaceholderNote), std::string::npos) << text;
  EXPECT_EQ(text.find("\"ph\":\"X\""), std::string::npos) << text;
  FinishTimeline(nullptr);
  EXPECT_EQ(ReadFile(path).find(kTimelinePlaceholderNote), std::string::npos);
  std::remove(path.c_str());
}

// A channel to a peer that never answers: the watchdog of rank 0 of 2 finds
// it stuck once rank 0 has waited out the timeout in a collective.
class SilentPeer : public ProgressChannel {
 public:
  void Send(int, const ProgressReport&) override {}
  bool Poll(ProgressReport*) override { return false; }
};

// The watchdog writes the timeline before it ends the job: MPI_Abort ends
// the process without running anything else of it.
TEST(TimelineSession, AStallThatEndsTheJobWritesTheTimelineFirst) {
  const std::string path = TempPath("stalled.json");
  StartTimeline(nullptr, path);
  RunMul(2);
  FlightRecorder rec;
  rec.Start(rec.Issue(CollectiveKind::kAllReduce, 64));
  std::atomic<bool> ended{false};
  std::string text;
  {
    StallWatchdog dog(0, 2, &rec, std::make_unique<SilentPeer>(),
                      StallConfig{0, 0.3}, [&] {
                        text = ReadFile(path);
                        ended = true;
                      });
    for (int i = 0; i < 200 && !ended; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(ended);
  EXPECT_TRUE(WellFormed(text)) << text;
  EXPECT_NE(text.find("\"name\":\"mul\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"note\":\"stall: rank 1 holds up collective 1"),
            std::string::npos)
      << text;
  FinishTimeline(nullptr);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace fluid
