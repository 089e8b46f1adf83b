// batch_norm and dropout across ranks (run by fluid_mpi_tests under
// mpirun): synchronised statistics make N ranks x batch B train as one
// process x batch N * B; without them the running statistics stay per rank
// until the stat sync program averages them; dropout masks differ across
// ranks and repeat on a rerun.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "src/builder/layers.h"
#include "src/builder/norm_layers.h"
#include "src/builder/optimizer.h"
#include "src/framework/hash.h"
#include "src/framework/program_desc.h"
#include "src/io/checkpoint.h"
#include "src/runtime/mpi_executor.h"

namespace fluid {
namespace {

constexpr int64_t kC = 3, kHW = 4;

// x [N, 3, 2, 2] -> batch_norm -> * r -> mean -> SGD(0.5), in float64.
proto::TrainingJob BatchNormJob() {
  proto::TrainingJob job;
  job.set_version(kProgramVersion);
  *job.mutable_main() = NewProgram();
  *job.mutable_startup() = NewProgram();
  ProgramBuilder b(job.mutable_main(), job.mutable_startup(), 1);
  const DataType f64 = DataType::kFloat64;
  std::string x = layers::Data(&b, "x", Shape{kC, 2, 2}, f64);
  std::string r = layers::Data(&b, "r", Shape{kC, 2, 2}, f64);
  layers::BatchNormOptions o;
  o.momentum = 0.7f;
  std::string y = layers::BatchNorm(&b, x, o);
  std::string loss = layers::Mean(&b, layers::ElementwiseMul(&b, y, r));
  OptimizerConfig opt;
  opt.type = "sgd";
  opt.learning_rate = 0.5f;
  MakeOptimizer(opt)->Minimize(&b, loss);
  job.add_feed_names("x");
  job.add_feed_names("r");
  job.set_loss_name(loss);
  return job;
}

// The output of batch_norm_0 (ProgramBuilder's naming).
const char kY[] = "batch_norm_0.tmp_0";

const std::vector<std::string> kBatchNormState = {
    "batch_norm_0.w_0", "batch_norm_0.b_0", "batch_norm_0.w_1",
    "batch_norm_0.w_2"};

Tensor Random(int64_t n, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t;
  double* p = t.mutable_data<double>(Shape{n, kC, 2, 2});
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

std::vector<double> Values(const Scope& scope, const std::string& name) {
  const Tensor& t = scope.FindVar(name)->GetTensor();
  return std::vector<double>(t.data<double>(), t.data<double>() + t.numel());
}

uint64_t HashOf(const Tensor& t) { return Fnv1a64(t.raw_data(), t.bytes()); }

bool SameOnEveryRank(Communicator* comm, uint64_t mine) {
  for (uint64_t v : comm->AllGatherValue(mine))
    if (v != mine) return false;
  return true;
}

TEST(SyncBatchNorm, NRanksTimesBMatchesOneProcessTimesNB) {
  const int64_t per_rank = 5;
  const int steps = 3;
  proto::TrainingJob job = BatchNormJob();
  Scope scope;  // outlives the executor's prepared program
  MPIExecutor dist;
  const int n = dist.world_size(), rank = dist.rank();
  // One process, the whole global batch.
  Scope single;
  Executor exe;
  exe.RunOnce(job.startup(), &single);
  auto main = exe.Prepare(job.main(), &single);
  // N ranks, one slice each, statistics synchronised.
  proto::DistributedStrategy cfg;
  cfg.set_sync_batch_norm(true);
  dist.Init(job, &scope, cfg);
  std::vector<Tensor> y_single, y_rank;
  for (int s = 0; s < steps; ++s) {
    Tensor x = Random(per_rank * n, 10 + s, -2, 3);
    Tensor r = Random(per_rank * n, 20 + s, -1, 1);
    exe.Run(main.get(), {{"x", x}, {"r", r}}, {kY}, &y_single);
    dist.Run({{"x", x.Slice(rank * per_rank, (rank + 1) * per_rank)},
              {"r", r.Slice(rank * per_rank, (rank + 1) * per_rank)}},
             {kY}, &y_rank);
    const double* ys = y_single[0].data<double>() + rank * per_rank * kC * kHW;
    for (int64_t i = 0; i < y_rank[0].numel(); ++i)
      ASSERT_NEAR(y_rank[0].data<double>()[i], ys[i], 1e-9)
          << "step " << s << " y[" << i << "]";
  }
  for (const std::string& name : kBatchNormState) {
    auto want = Values(single, name);
    auto got = Values(scope, name);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-9) << name << "[" << i << "]";
  }
}

TEST(BatchNormStats, PerRankUntilSyncedThenIdenticalAndCheckpointed) {
  proto::TrainingJob job = BatchNormJob();
  Scope scope;
  MPIExecutor dist;
  dist.Init(job, &scope);
  Communicator* comm = dist.communicator();
  const int rank = dist.rank();
  // Each rank its own data, shifted so that the ranks' statistics differ.
  for (int s = 0; s < 3; ++s) {
    Tensor x = Random(4, 100 * rank + s, -1 + rank, 2 + 2 * rank);
    dist.Run({{"x", x}, {"r", Random(4, 7 + s, -1, 1)}}, {}, nullptr);
  }
  const std::string mean = "batch_norm_0.w_1", var = "batch_norm_0.w_2";
  Tensor before;
  before.CopyFrom(scope.FindVar(mean)->GetTensor());
  EXPECT_FALSE(SameOnEveryRank(comm, HashOf(before)));
  EXPECT_NO_THROW(dist.CheckConsistency());  // running stats are exempt
  Tensor sum;
  sum.CopyFrom(before);
  comm->AllReduce(sum, ReduceOp::kSum);
  dist.SyncRunningStats();
  for (const std::string& name : {mean, var})
    EXPECT_TRUE(SameOnEveryRank(comm, HashOf(scope.FindVar(name)->GetTensor())))
        << name;
  auto synced = Values(scope, mean);
  for (int64_t c = 0; c < kC; ++c)
    EXPECT_NEAR(synced[c], sum.data<double>()[c] / dist.world_size(), 1e-12);
  // Rank 0 writes the checkpoint; every rank reads back its own values.
  const std::string dir =
      "/tmp/fluid_norm_mpi_ckpt_" +
      std::to_string(comm->AllGatherValue(static_cast<uint64_t>(getpid()))[0]);
  if (rank == 0)
    SaveCheckpoint(scope, PersistableVars(dist.job().main()), dir,
                   CheckpointInfo{3, 1});
  comm->Barrier();
  Scope loaded;
  LoadCheckpoint(&loaded, dist.job().main(), dir);
  for (const std::string& name : {mean, var})
    EXPECT_EQ(HashOf(loaded.FindVar(name)->GetTensor()),
              HashOf(scope.FindVar(name)->GetTensor()))
        << name;
  comm->Barrier();
  if (rank == 0) std::system(("rm -rf " + dir).c_str());
}

// x [N, 64] -> fc -> dropout(0.5) -> mean -> SGD.
proto::TrainingJob DropoutJob() {
  proto::TrainingJob job;
  job.set_version(kProgramVersion);
  *job.mutable_main() = NewProgram();
  *job.mutable_startup() = NewProgram();
  ProgramBuilder b(job.mutable_main(), job.mutable_startup(), 1);
  std::string x = layers::Data(&b, "x", Shape{64}, DataType::kFloat64);
  std::string h = layers::Fc(&b, x, 64);
  std::string d = layers::Dropout(&b, h, 0.5f, false, 42);
  std::string loss = layers::Mean(&b, d);
  OptimizerConfig opt;
  opt.type = "sgd";
  MakeOptimizer(opt)->Minimize(&b, loss);
  job.add_feed_names("x");
  job.set_loss_name(loss);
  return job;
}

// The hashes of the masks of `steps` runs on a fresh scope.
std::vector<uint64_t> MaskHashes(const proto::TrainingJob& job, int steps) {
  Scope scope;
  MPIExecutor dist;
  dist.Init(job, &scope);
  Tensor x;
  double* p = x.mutable_data<double>(Shape{8, 64});
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = 1.0 + 0.001 * i;
  std::vector<uint64_t> out;
  std::vector<Tensor> mask;
  for (int s = 0; s < steps; ++s) {
    dist.Run({{"x", x}}, {"dropout_0.mask_0"}, &mask);
    out.push_back(HashOf(mask[0]));
  }
  return out;
}

TEST(DropoutAcrossRanks, MasksDifferAcrossRanksAndStepsAndRepeatOnRerun) {
  proto::TrainingJob job = DropoutJob();
  const std::vector<uint64_t> first = MaskHashes(job, 3);
  EXPECT_NE(first[0], first[1]);
  EXPECT_NE(first[1], first[2]);
  EXPECT_EQ(MaskHashes(job, 3), first);
  Communicator* comm = GlobalCommunicator();
  std::vector<uint64_t> all = comm->AllGatherValue(first[0]);
  for (size_t r = 1; r < all.size(); ++r)
    EXPECT_NE(all[r], all[0]) << "rank " << r << " drew rank 0's mask";
}

}  // namespace
}  // namespace fluid
