// The cost of recording a timeline, measured inside one job so that the
// load of the machine falls on both sides alike: every rank trains the
// built-in model with the timeline recording in half of the blocks of
// steps (off, on, on, off, ...; the same blocks on every rank), and rank 0
// prints one JSON line with the median samples/s of the blocks of each
// kind, their ratio, the events recorded per step, what recording one op
// costs and so what share of a step recording takes. --control 1 records
// in no block: the ratio it gives is the noise alone.
//
//   mpirun -np 2 timeline_bench --model lenet --batch 64 --blocks 16
//       [--block-steps 10] [--trace FILE] [--control 0|1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "src/builder/models.h"
#include "src/distributed/timeline_session.h"
#include "src/runtime/mpi_executor.h"

namespace fluid {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// What recording one op costs (its two clock reads, its output shapes),
// into a timeline of its own: the median of 5 rounds over the program's
// ops, in ns per event.
double RecordCostNs(const PreparedProgram& program) {
  constexpr int kRounds = 5, kPerRound = 200000;
  std::vector<double> ns;
  for (int r = 0; r < kRounds; ++r) {
    auto probe = std::make_unique<Timeline>(0, 1, ClockSync{});
    const auto& ops = program.ops();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kPerRound; ++i)
      probe->RecordOp(*ops[i % ops.size()], TimelineNs());
    ns.push_back(std::chrono::duration<double, std::nano>(
                     std::chrono::steady_clock::now() - t0)
                     .count() /
                 kPerRound);
  }
  return Median(ns);
}

int Main(int argc, char** argv) {
  std::string model = "mlp", trace = "/tmp/timeline_bench.json";
  int blocks = 16, block_steps = 10;
  bool control = false;  // never record: what the blocks differ by alone
  int64_t batch = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") {
      model = v;
    } else if (k == "--blocks") {
      blocks = std::stoi(v);
    } else if (k == "--block-steps") {
      block_steps = std::stoi(v);
    } else if (k == "--batch") {
      batch = std::stoll(v);
    } else if (k == "--control") {
      control = v != "0";
    } else if (k == "--trace") {
      trace = v;
    } else {
      FLUID_THROW(ErrorCode::kInvalidArgument, "unknown flag ", k);
    }
  }
  Scope scope;  // outlives the executor's programs bound to it
  MPIExecutor exe(Place::CPU(), 1);
  exe.Init(BuildModel(model), &scope, proto::DistributedStrategy{});
  Tensor x, y;
  float* xp = x.mutable_data<float>(Shape{batch, 1, 28, 28});
  int64_t* yp = y.mutable_data<int64_t>(Shape{batch, 1});
  std::mt19937 rng(exe.rank() + 1);
  for (int64_t i = 0; i < x.numel(); ++i) xp[i] = (rng() % 256) / 255.0f;
  for (int64_t i = 0; i < batch; ++i) yp[i] = rng() % 10;
  const FeedList feeds = {{"image", x}, {"label", y}};
  std::vector<Tensor> out;
  for (int i = 0; i < block_steps; ++i) exe.Run(feeds, {"loss"}, &out);

  StartTimeline(exe.communicator(), trace);
  Timeline* timeline = CurrentTimeline();
  std::vector<double> on, off;
  size_t events_on = 0;
  for (int b = 0; b < 2 * blocks; ++b) {
    // off, on, on, off, ...: a drift of the machine's load falls on both.
    const bool recording = b % 4 == 1 || b % 4 == 2;
    SetCurrentTimeline(recording && !control ? timeline : nullptr);
    const size_t before = timeline->num_events();
    exe.communicator()->Barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < block_steps; ++i) exe.Run(feeds, {"loss"}, &out);
    exe.communicator()->Barrier();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    (recording ? on : off)
        .push_back(block_steps * batch * exe.world_size() / s);
    if (recording) events_on += timeline->num_events() - before;
  }
  SetCurrentTimeline(timeline);
  FinishTimeline(exe.communicator());
  const double events_per_step =
      static_cast<double>(events_on) / (blocks * block_steps);
  const double step_ns = 1e9 * batch * exe.world_size() / Median(off);
  const double event_ns = RecordCostNs(*exe.main_program());
  if (exe.rank() == 0)
    std::printf(
        "{\"model\": \"%s\", \"np\": %d, \"batch_per_rank\": %lld, "
        "\"blocks\": %d, \"block_steps\": %d, \"samples_per_s_off\": %.1f, "
        "\"samples_per_s_on\": %.1f, \"on_over_off\": %.4f, "
        "\"events_per_step\": %.1f, \"ns_per_op_event\": %.1f, "
        "\"recording_share_of_step\": %.5f}\n",
        model.c_str(), exe.world_size(), static_cast<long long>(batch), blocks,
        block_steps, Median(off), Median(on), Median(on) / Median(off),
        events_per_step, event_ns, events_per_step * event_ns / step_ns);
  return 0;
}

}  // namespace
}  // namespace fluid

int main(int argc, char** argv) {
  try {
    int rc = fluid::Main(argc, argv);
    fluid::ShutdownGlobalCommunicator();
    return rc;
  } catch (const fluid::Error& e) {
    std::fprintf(stderr, "timeline_bench: error: %s\n", e.what());
    fluid::GlobalCommunicator()->Abort(1);
    return 1;
  }
}
