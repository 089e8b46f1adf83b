// Recompute's cost and saving on a transformer language model (the numbers
// of docs/memory.md, "Recompute"): the same job trained with and without
// recompute (checkpoints: auto), in alternating rounds, one executor each.
// Prints, per configuration, the median step time (and the median of the
// rounds' on/off ratios), the peak tensor bytes a
// step allocates on top of what the step starts with (the activations and
// gradients; the executor frees each temporary after its last use), and the
// bytes the program's liveness keeps across the end of the forward pass.
//
//   recompute_bench [--width 512] [--layers 8] [--seq 256] [--batch 4]
//                   [--rounds 5] [--threads 1] [--dropout-percent 10]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "src/framework/executor.h"
#include "src/framework/memory.h"
#include "tests/transpiler/recompute_models.h"
#include "transpiler/recompute.h"

namespace fluid {
namespace {

struct Config {
  std::string name;
  proto::TrainingJob job;
  std::unique_ptr<Executor> exe;
  std::unique_ptr<Scope> scope;
  std::unique_ptr<PreparedProgram> main;
  std::vector<double> seconds;
  int64_t peak = 0;
};

// One step of `c` on `feeds`: its time, and its peak bytes above those in
// use when it started.
void Step(Config* c, const FeedList& feeds) {
  std::vector<Tensor> out;
  const int64_t before = GetMemoryUsage(Place::CPU()).in_use;
  ResetPeakMemory(Place::CPU());
  const auto t0 = std::chrono::steady_clock::now();
  c->exe->Run(c->main.get(), feeds, {"loss"}, &out);
  const auto t1 = std::chrono::steady_clock::now();
  c->seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
  c->peak = std::max(c->peak, GetMemoryUsage(Place::CPU()).peak - before);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Main(int argc, char** argv) {
  testing::TransformerSize s;
  s.width = 512;
  s.heads = 8;
  s.layers = 8;
  s.seq = 256;
  s.vocab = 256;
  int batch = 4, rounds = 5, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const int v = std::stoi(argv[i + 1]);
    if (k == "--width") s.width = v;
    if (k == "--layers") s.layers = v;
    if (k == "--seq") s.seq = v;
    if (k == "--batch") batch = v;
    if (k == "--rounds") rounds = v;
    if (k == "--threads") threads = v;
    if (k == "--dropout-percent") s.dropout = static_cast<float>(v) / 100;
  }
  std::vector<Config> configs(2);
  configs[0].name = "off";
  configs[0].job = testing::TransformerJob(s);
  configs[1].name = "on";
  configs[1].job = RecomputeRewrite(configs[0].job, proto::RecomputeConfig());
  for (Config& c : configs) {
    c.exe = std::make_unique<Executor>(Place::CPU(), threads);
    c.scope = std::make_unique<Scope>();
    c.exe->RunOnce(c.job.startup(), c.scope.get());
    c.main = c.exe->Prepare(c.job.main(), c.scope.get());
    Step(&c, testing::TransformerBatch(s, batch, 0));  // warm-up
    c.seconds.clear();
    c.peak = 0;
  }
  for (int r = 0; r < rounds; ++r)
    for (Config& c : configs) Step(&c, testing::TransformerBatch(s, batch, r));
  std::printf(
      "transformer width %lld, %lld layers, seq %lld, batch %d, %d threads\n",
      static_cast<long long>(s.width), static_cast<long long>(s.layers),
      static_cast<long long>(s.seq), batch, threads);
  for (const Config& c : configs)
    std::printf(
        "recompute %-3s  step %.3f s  peak step bytes %.1f MiB  live after "
        "forward %.1f MiB\n",
        c.name.c_str(), Median(c.seconds), c.peak / 1048576.0,
        LiveBytesAfterForward(c.job.main(), batch) / 1048576.0);
  // Each round's two steps ran closest in time: the median of the rounds'
  // ratios is steadier than the ratio of the medians on a busy host.
  std::vector<double> ratios;
  for (int r = 0; r < rounds; ++r)
    ratios.push_back(configs[1].seconds[r] / configs[0].seconds[r]);
  std::printf(
      "on/off: step time %.3f (median of the rounds' ratios; ratio of the "
      "medians %.3f), peak step bytes %.3f\n",
      Median(ratios), Median(configs[1].seconds) / Median(configs[0].seconds),
      static_cast<double>(configs[1].peak) / configs[0].peak);
  return 0;
}

}  // namespace
}  // namespace fluid

int main(int argc, char** argv) { return fluid::Main(argc, argv); }
