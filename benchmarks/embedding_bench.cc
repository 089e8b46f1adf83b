// Step time of word-level embedding training under mpirun, with sparse
// gradients (c_sparse_allreduce gathers the rows the ranks touched) or
// dense ones (the whole table allreduced): each sample looks up a window
// of `--window` word ids in one [vocab, width] table (shared, as word2vec
// shares it), sums the rows and classifies them into 16 classes. Rank 0
// prints one JSON line.
//
//   mpirun -np 2 embedding_bench --sparse 1 --vocab 50000 --width 128
//       [--batch 64] [--window 4] [--steps 50] [--optimizer sgd|adam]
//       [--lazy 0|1]
//       [--sparse-dense-ratio 0.25]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "src/builder/embedding_layers.h"
#include "src/builder/layers.h"
#include "src/builder/optimizer.h"
#include "src/framework/program_desc.h"
#include "src/runtime/mpi_executor.h"

namespace fluid {
namespace {

struct Options {
  bool sparse = true;
  int64_t vocab = 50000, width = 128, batch = 64;
  int window = 4, steps = 50, warmup = 5;
  std::string optimizer = "sgd";
  bool lazy = false;  // adam's lazy_mode
  double ratio = 0.25;
};

proto::TrainingJob Job(const Options& o) {
  proto::TrainingJob job;
  job.set_version(kProgramVersion);
  *job.mutable_main() = NewProgram();
  *job.mutable_startup() = NewProgram();
  ProgramBuilder b(job.mutable_main(), job.mutable_startup(), 1);
  layers::EmbeddingOptions e;
  e.is_sparse = o.sparse;
  ParamAttr table;
  table.name = "word_emb";
  std::string sum;
  for (int k = 0; k < o.window; ++k) {
    const std::string w = "w" + std::to_string(k);
    layers::Data(&b, w, Shape{1}, DataType::kInt64);
    job.add_feed_names(w);
    std::string row = layers::Embedding(&b, w, {o.vocab, o.width}, e, table);
    sum = sum.empty() ? row : layers::ElementwiseAdd(&b, sum, row);
  }
  std::string label = layers::Data(&b, "label", Shape{1}, DataType::kInt64);
  job.add_feed_names("label");
  std::string loss = layers::Mean(
      &b, layers::SoftmaxWithCrossEntropy(&b, layers::Fc(&b, sum, 16), label));
  OptimizerConfig opt;
  opt.type = o.optimizer;
  opt.learning_rate = 0.01f;
  opt.lazy_mode = o.lazy;
  MakeOptimizer(opt)->Minimize(&b, loss);
  job.set_loss_name(loss);
  return job;
}

// Zipf-like word ids (most steps touch the frequent words), per rank.
FeedList Batch(const Options& o, std::mt19937_64* rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  FeedList feeds;
  for (int k = 0; k <= o.window; ++k) {
    Tensor t;
    int64_t* p = t.mutable_data<int64_t>(Shape{o.batch, 1});
    for (int64_t i = 0; i < o.batch; ++i)
      p[i] = k == o.window
                 ? static_cast<int64_t>((*rng)() % 16)
                 : static_cast<int64_t>(std::pow(o.vocab, u(*rng))) - 1;
    feeds.emplace_back(k == o.window ? "label" : "w" + std::to_string(k), t);
  }
  return feeds;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--sparse")
      o.sparse = v != "0";
    else if (k == "--vocab")
      o.vocab = std::stoll(v);
    else if (k == "--width")
      o.width = std::stoll(v);
    else if (k == "--batch")
      o.batch = std::stoll(v);
    else if (k == "--window")
      o.window = std::stoi(v);
    else if (k == "--steps")
      o.steps = std::stoi(v);
    else if (k == "--optimizer")
      o.optimizer = v;
    else if (k == "--lazy")
      o.lazy = v != "0";
    else if (k == "--sparse-dense-ratio")
      o.ratio = std::stod(v);
    else
      FLUID_THROW(ErrorCode::kInvalidArgument, "unknown flag ", k);
  }
  return o;
}

int Main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  Scope scope;  // outlives the executor's programs bound to it
  MPIExecutor exe;
  proto::DistributedStrategy strategy;
  strategy.set_sparse_dense_ratio(static_cast<float>(o.ratio));
  exe.Init(Job(o), &scope, strategy);
  std::mt19937_64 rng(exe.rank() + 1);
  for (int i = 0; i < o.warmup; ++i) exe.Run(Batch(o, &rng), {}, nullptr);
  Communicator* comm = exe.communicator();
  comm->Barrier();
  const int64_t bytes0 = comm->allreduce_wire_bytes();
  double seconds = 0;
  for (int i = 0; i < o.steps; ++i) {
    FeedList feeds = Batch(o, &rng);  // not timed
    auto t0 = std::chrono::steady_clock::now();
    exe.Run(feeds, {}, nullptr);
    seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
  }
  comm->Barrier();
  const double mib = (comm->allreduce_wire_bytes() - bytes0) / 1048576.0;
  if (exe.rank() == 0)
    std::printf(
        "{\"sparse\": %d, \"np\": %d, \"vocab\": %lld, \"width\": %lld, "
        "\"batch_per_rank\": %lld, \"window\": %d, \"optimizer\": \"%s%s\", "
        "\"steps\": %d, \"ms_per_step\": %.2f, \"mib_per_step\": %.3f}\n",
        o.sparse ? 1 : 0, exe.world_size(), static_cast<long long>(o.vocab),
        static_cast<long long>(o.width), static_cast<long long>(o.batch),
        o.window, o.optimizer.c_str(), o.lazy ? " lazy" : "", o.steps,
        1e3 * seconds / o.steps, mib / o.steps);
  return 0;
}

}  // namespace
}  // namespace fluid

int main(int argc, char** argv) {
  try {
    return fluid::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "embedding_bench: %s\n", e.what());
    return 1;
  }
}
