// Multi-rank tests; ctest runs this binary under mpirun (np 2 and 4).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <random>

#include "src/builder/models.h"
#include "src/data/batcher.h"
#include "src/distributed/mpi_backend.h"
#include "src/framework/hash.h"
#include "src/framework/program_desc.h"
#include "src/io/checkpoint.h"
#include "src/runtime/mpi_executor.h"
#include "tests/testing/synthetic_batch.h"
#include "transpiler/pserver_transpiler.h"

namespace fluid {
namespace {

Communicator* Comm() { return GlobalCommunicator(); }

// Global batch `step` of `n` samples.
void GlobalBatch(int step, int64_t n, Tensor* images, Tensor* labels,
                 DataType dtype = DataType::kFloat32) {
  if (dtype == DataType::kFloat64) {
    testing::SyntheticBatch<double>(1000 + step, n, images, labels);
  } else {
    testing::SyntheticBatch<float>(1000 + step, n, images, labels);
  }
}

// Element i of a float32 or float64 tensor.
double At(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::kFloat64 ? t.data<double>()[i]
                                         : t.data<float>()[i];
}

// The built-in `model` with `optimizer` at learning rate `lr`.
proto::TrainingJob Model(const std::string& model, const std::string& optimizer,
                         float lr) {
  ModelOptions mo;
  mo.default_optimizer = false;
  mo.optimizer.type = optimizer;
  mo.optimizer.learning_rate = lr;
  return BuildModel(model, mo);
}

proto::TrainingJob Mlp(const std::string& optimizer, float lr) {
  return Model("mlp", optimizer, lr);
}

std::vector<std::string> Params(const proto::TrainingJob& job) {
  std::vector<std::string> p;
  for (const auto& v : job.main().blocks(0).vars())
    if (v.trainable()) p.push_back(v.name());
  return p;
}

// Trains `job` for `steps` steps on one process with the whole global
// batch each step; returns the scope.
std::unique_ptr<Scope> TrainSingle(const proto::TrainingJob& job, int steps,
                                   int64_t global_batch) {
  auto scope = std::make_unique<Scope>();
  Executor exe;
  exe.RunOnce(job.startup(), scope.get());
  auto main = exe.Prepare(job.main(), scope.get());
  Tensor x, y;
  for (int s = 0; s < steps; ++s) {
    GlobalBatch(s, global_batch, &x, &y);
    exe.Run(main.get(), {{"image", x}, {"label", y}});
  }
  return scope;
}

// `s` with optimizer-state sharding at `stage` (0: none).
void SetShardStage(proto::DistributedStrategy* s, int stage) {
  s->set_sharding(stage != 0);
  if (stage != 0) s->mutable_sharding_configs()->set_stage(stage);
}

// The same steps on every rank, each feeding its slice of the global batch.
// `allreduce` is the algorithm mode (flat, hier, auto; the strategy's
// allreduce_hierarchy); the communicator is left flat afterwards, and the
// parameters are checked to be bitwise identical on every rank.
std::unique_ptr<Scope> TrainDistributed(
    const proto::TrainingJob& job, int steps, int64_t per_rank,
    proto::DistributedStrategy strategy = {},
    const std::string& allreduce = "flat") {
  auto scope = std::make_unique<Scope>();
  MPIExecutor exe;
  strategy.set_allreduce_hierarchy(allreduce);
  exe.Init(job, scope.get(), strategy);
  EXPECT_EQ(exe.communicator()->allreduce_algorithm(),
            ChooseAllReduce(allreduce, exe.topology()));
  const int n = exe.world_size(), r = exe.rank();
  const DataType dtype = VarDtype(GetVarDesc(job.main().blocks(0), "image"));
  Tensor x, y;
  std::vector<Tensor> out;
  for (int s = 0; s < steps; ++s) {
    GlobalBatch(s, per_rank * n, &x, &y, dtype);
    exe.Run({{"image", x.Slice(r * per_rank, (r + 1) * per_rank)},
             {"label", y.Slice(r * per_rank, (r + 1) * per_rank)}},
            {}, &out);
  }
  exe.CheckConsistency();
  exe.communicator()->SetAllReduceAlgorithm(AllReduceAlgorithm::kFlat);
  return scope;
}

// Relative error of each parameter tensor (in the 2-norm) within `rel`;
// with `elementwise`, also every element within rel * max |p|. Adam is
// checked in norm only: it divides by sqrt(v), so a gradient entry at
// float-rounding level moves its parameter by up to the learning rate
// whichever way the rounding went.
void ExpectSameParams(const proto::TrainingJob& job, const Scope& a,
                      const Scope& b, double rel, bool elementwise) {
  for (const auto& name : Params(job)) {
    const Tensor& ta = a.GetVar(name)->GetTensor();
    const Tensor& tb = b.GetVar(name)->GetTensor();
    ASSERT_EQ(ta.shape(), tb.shape()) << name;
    double diff2 = 0, ref2 = 0, max_diff = 0, max_ref = 0;
    for (int64_t i = 0; i < ta.numel(); ++i) {
      const double d = At(ta, i) - At(tb, i);
      diff2 += d * d;
      ref2 += At(tb, i) * At(tb, i);
      max_diff = std::max(max_diff, std::fabs(d));
      max_ref = std::max(max_ref, std::fabs(At(tb, i)));
    }
    EXPECT_LE(std::sqrt(diff2), rel * std::sqrt(ref2))
        << name << " on rank " << Comm()->rank();
    if (elementwise) {
      EXPECT_LE(max_diff, rel * max_ref)
          << name << " on rank " << Comm()->rank();
    }
  }
}

class Equivalence : public ::testing::TestWithParam<std::string> {};

TEST_P(Equivalence, NRanksTimesBMatchesOneRankTimesNB) {
  const std::string opt = GetParam();
  proto::TrainingJob job = Mlp(opt, opt == "adam" ? 0.001f : 0.1f);
  const int64_t per_rank = 16;
  auto dist = TrainDistributed(job, 20, per_rank);
  auto single = TrainSingle(job, 20, per_rank * Comm()->size());
  ExpectSameParams(job, *dist, *single, 1e-5, opt != "adam");
}

TEST_P(Equivalence, ThroughThePserverStyleRewrite) {
  const std::string opt = GetParam();
  proto::TrainingJob job = Mlp(opt, opt == "adam" ? 0.001f : 0.1f);
  PserverSplit split = PserverTranspile(job, Comm()->size(),
                                        {"127.0.0.1:6174", "127.0.0.1:6175"});
  proto::TrainingJob converted =
      PserverToCollective(split.trainer, split.pservers,
                          proto::DistributedStrategy(), Comm()->size());
  const int64_t per_rank = 16;
  auto dist = TrainDistributed(converted, 20, per_rank);
  auto single = TrainSingle(job, 20, per_rank * Comm()->size());
  ExpectSameParams(job, *dist, *single, 1e-5, opt != "adam");
}

INSTANTIATE_TEST_SUITE_P(Optimizers, Equivalence,
                         ::testing::Values("sgd", "adam"));

// Hierarchical allreduce (reduce within each host, allreduce between host
// leaders, broadcast within each host): the same sums as flat up to
// rounding, and the same bits on every rank.
TEST(Hierarchical, AllReduceMatchesFlatBitwiseIdenticalOnEveryRank) {
  Communicator* comm = Comm();
  const int64_t n = 100003;
  Tensor flat, hier;
  float* f = flat.mutable_data<float>(Shape{n});
  std::mt19937 rng(17 + comm->rank());
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t i = 0; i < n; ++i) f[i] = u(rng);
  hier.CopyFrom(flat, Place::CPU());
  comm->AllReduce(flat, ReduceOp::kAvg);
  comm->SetAllReduceAlgorithm(AllReduceAlgorithm::kHierarchical);
  EXPECT_EQ(comm->allreduce_algorithm(), AllReduceAlgorithm::kHierarchical);
  comm->AllReduce(hier, ReduceOp::kAvg);
  comm->SetAllReduceAlgorithm(AllReduceAlgorithm::kFlat);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_NEAR(hier.data<float>()[i], f[i], 1e-6) << "element " << i;
  const auto sums =
      comm->AllGatherValue(Fnv1a64(hier.raw_data(), hier.bytes()));
  for (uint64_t s : sums) EXPECT_EQ(s, sums[0]) << "ranks differ";
}

// MPI's reduce-scatter and an in-place all-gather: the blocks of an
// allreduce, and the gathered result the same bits on every rank.
TEST(ReduceScatter, BlocksOfTheAllReduceThenGatheredInPlace) {
  Communicator* comm = Comm();
  const int n = comm->size();
  const int64_t block = 10007;
  Tensor all, mine;
  float* a = all.mutable_data<float>(Shape{block * n});
  std::mt19937 rng(29 + comm->rank());
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t i = 0; i < block * n; ++i) a[i] = u(rng);
  Tensor reduced;
  reduced.CopyFrom(all, Place::CPU());
  comm->AllReduce(reduced, ReduceOp::kAvg);
  mine.mutable_data<float>(Shape{block});
  comm->ReduceScatter(all, mine, ReduceOp::kAvg);
  const float* r = reduced.data<float>() + comm->rank() * block;
  for (int64_t i = 0; i < block; ++i)
    ASSERT_NEAR(mine.data<float>()[i], r[i], 1e-6) << "element " << i;
  // Gather the blocks back into `all`, this rank's from a view of its own.
  std::copy(mine.data<float>(), mine.data<float>() + block,
            a + comm->rank() * block);
  Tensor view = all.Slice(comm->rank() * block, (comm->rank() + 1) * block);
  comm->AllGather(view, all);
  for (int64_t i = 0; i < block * n; ++i)
    ASSERT_NEAR(all.data<float>()[i], reduced.data<float>()[i], 1e-6);
  const auto sums = comm->AllGatherValue(Fnv1a64(all.raw_data(), all.bytes()));
  for (uint64_t s : sums) EXPECT_EQ(s, sums[0]) << "ranks differ";
}

// LeNet (convolutions: 4-D parameters in the buffers), stage 2, with the
// gathers waited for at the end of the step or in the next one.
TEST(ShardOptimizer, LenetMatchesThePlainCollectiveUpdate) {
  for (const char* opt : {"sgd", "momentum", "adam"}) {
    const bool adam = opt == std::string("adam");
    proto::TrainingJob job = Model("lenet", opt, adam ? 0.001f : 0.05f);
    proto::DistributedStrategy cfg;
    cfg.set_bucket_bytes(16 << 10);  // several buckets
    auto want = TrainDistributed(job, 20, 8, cfg);
    SetShardStage(&cfg, 2);
    for (bool overlap_gather : {false, true}) {
      cfg.mutable_sharding_configs()->set_overlap_gather(overlap_gather);
      auto got = TrainDistributed(job, 20, 8, cfg);
      SCOPED_TRACE(std::string(opt) + (overlap_gather ? " overlapped" : ""));
      ExpectSameParams(job, *got, *want, 1e-6, !adam);
    }
  }
}

// Steps [from, to) of the global batches on an initialised executor.
void TrainSteps(MPIExecutor* exe, int from, int to, int64_t per_rank) {
  const int n = exe->world_size(), r = exe->rank();
  Tensor x, y;
  std::vector<Tensor> out;
  for (int s = from; s < to; ++s) {
    GlobalBatch(s, per_rank * n, &x, &y);
    exe->Run({{"image", x.Slice(r * per_rank, (r + 1) * per_rank)},
              {"label", y.Slice(r * per_rank, (r + 1) * per_rank)}},
             {}, &out);
  }
}

// A sharded run's checkpoint holds what an unsharded run's does (the
// per-parameter optimizer state, gathered from the shards), and each
// resumes the other: 10 steps, a checkpoint, 10 more steps equal 20
// steps without one.
// With overlapped gathers the sharded run saves and resumes with its last
// step's gathers in flight (GatherShardState and BroadcastPersistables wait
// for them).
void CheckpointsResumeEitherWay(bool overlap_gather) {
  proto::TrainingJob job = Mlp("adam", 0.01f);
  proto::DistributedStrategy plain, sharded;
  plain.set_bucket_bytes(64 << 10);
  sharded.set_bucket_bytes(64 << 10);
  SetShardStage(&sharded, 2);
  sharded.mutable_sharding_configs()->set_overlap_gather(overlap_gather);
  Communicator* comm = Comm();
  const std::string dir =
      "/tmp/fluid_shard_ckpt_" +
      std::to_string(comm->AllGatherValue(static_cast<uint64_t>(getpid()))[0]);
  auto save = [&](MPIExecutor* exe, const Scope& scope, const char* sub) {
    exe->GatherShardState();
    if (exe->rank() == 0)
      SaveCheckpoint(scope, PersistableVars(exe->checkpoint_program()),
                     dir + sub, CheckpointInfo{10, 0});
    exe->DropGatheredState();
    comm->Barrier();
  };
  Scope want_scope, a_scope, b_scope;
  MPIExecutor want, a, b;
  want.Init(job, &want_scope, plain);
  TrainSteps(&want, 0, 10, 16);
  save(&want, want_scope, "/plain");
  a.Init(job, &a_scope, sharded);
  TrainSteps(&a, 0, 10, 16);
  save(&a, a_scope, "/sharded");
  TrainSteps(&want, 10, 20, 16);
  // Each resumes from the other's checkpoint.
  auto resume = [&](MPIExecutor* exe, Scope* scope,
                    const proto::DistributedStrategy& c, const char* sub) {
    exe->Init(job, scope, c);
    if (exe->rank() == 0)
      LoadCheckpoint(scope, exe->checkpoint_program(), dir + sub);
    exe->BroadcastPersistables();
    TrainSteps(exe, 10, 20, 16);
    exe->CheckConsistency();
  };
  Scope c_scope;
  MPIExecutor c;
  resume(&b, &b_scope, plain, "/sharded");
  resume(&c, &c_scope, sharded, "/plain");
  ExpectSameParams(job, b_scope, want_scope, 1e-6, false);
  ExpectSameParams(job, c_scope, want_scope, 1e-6, false);
  comm->Barrier();
  if (comm->rank() == 0) std::system(("rm -rf " + dir).c_str());
}

TEST(ShardOptimizer, CheckpointsAreUnshardedAndResumeEitherWay) {
  CheckpointsResumeEitherWay(false);
}

TEST(ShardOptimizer, CheckpointsWithOverlappedGathersResumeEitherWay) {
  CheckpointsResumeEitherWay(true);
}

// Overlapped gathers: a parameter fetched after a step is the whole,
// gathered value (the step's wait has not run yet; Run waits for it), and
// each step's values equal those of the gathers waited for in the step.
TEST(ShardOptimizer, OverlappedGatherFetchesTheGatheredParameter) {
  proto::TrainingJob job = Mlp("momentum", 0.1f);
  const std::string param = Params(job)[0];
  proto::DistributedStrategy cfg;
  cfg.set_bucket_bytes(64 << 10);
  SetShardStage(&cfg, 2);
  Scope want_scope, got_scope;
  MPIExecutor want, got;
  want.Init(job, &want_scope, cfg);
  cfg.mutable_sharding_configs()->set_overlap_gather(true);
  got.Init(job, &got_scope, cfg);
  const int n = got.world_size(), r = got.rank();
  const int64_t per_rank = 16;
  Tensor x, y;
  std::vector<Tensor> a, b;
  for (int s = 0; s < 5; ++s) {
    GlobalBatch(s, per_rank * n, &x, &y);
    const FeedList feeds = {
        {"image", x.Slice(r * per_rank, (r + 1) * per_rank)},
        {"label", y.Slice(r * per_rank, (r + 1) * per_rank)}};
    want.Run(feeds, {param}, &a);
    got.Run(feeds, {param}, &b);
    ASSERT_EQ(a[0].bytes(), b[0].bytes());
    EXPECT_EQ(Fnv1a64(a[0].raw_data(), a[0].bytes()),
              Fnv1a64(b[0].raw_data(), b[0].bytes()))
        << "step " << s;
  }
  // A step that fetches no parameter leaves its gathers in flight, for the
  // next step or WaitParameterGathers.
  GlobalBatch(5, per_rank * n, &x, &y);
  got.Run({{"image", x.Slice(r * per_rank, (r + 1) * per_rank)},
           {"label", y.Slice(r * per_rank, (r + 1) * per_rank)}},
          {}, &b);
  Variable* handle = got_scope.FindVar("fused_param_0@COALESCED@HANDLE");
  ASSERT_NE(handle, nullptr);
  ASSERT_TRUE(handle->HasValue());
  EXPECT_NE(handle->Get<CommHandlePtr>(), nullptr);
  got.WaitParameterGathers();
  EXPECT_EQ(handle->Get<CommHandlePtr>(), nullptr);
  got.CheckConsistency();
}

// The sharded optimizer (stage 1 and 2, several buckets) against the plain
// collective update: the same parameters to 1e-6, bitwise identical on
// every rank (TrainDistributed checks), optimizer state for 1/N only.
TEST(ShardOptimizer, MatchesThePlainCollectiveUpdate) {
  for (const char* opt : {"sgd", "momentum", "adam"}) {
    proto::TrainingJob job =
        Mlp(opt, opt == std::string("adam") ? 0.01f : 0.1f);
    proto::DistributedStrategy plain;
    plain.set_bucket_bytes(64 << 10);  // several buckets
    auto want = TrainDistributed(job, 20, 16, plain);
    for (int stage : {1, 2}) {
      for (bool overlap_gather : {false, true}) {
        proto::DistributedStrategy cfg = plain;
        SetShardStage(&cfg, stage);
        cfg.mutable_sharding_configs()->set_overlap_gather(overlap_gather);
        auto got = TrainDistributed(job, 20, 16, cfg);
        SCOPED_TRACE(std::string(opt) + " stage " + std::to_string(stage) +
                     (overlap_gather ? " overlapped" : ""));
        // A reduce-scatter sums in another order than an allreduce: Adam,
        // which divides by sqrt(v), is compared in norm (see above).
        ExpectSameParams(job, *got, *want, 1e-6, opt != std::string("adam"));
      }
    }
  }
}

// Relative distance of two scopes' parameters (in the 2-norm, all
// parameters together).
double ParamDistance(const proto::TrainingJob& job, const Scope& a,
                     const Scope& b) {
  double diff2 = 0, ref2 = 0;
  for (const auto& name : Params(job)) {
    const Tensor& ta = a.GetVar(name)->GetTensor();
    const Tensor& tb = b.GetVar(name)->GetTensor();
    for (int64_t i = 0; i < ta.numel(); ++i) {
      const double d = At(ta, i) - At(tb, i);
      diff2 += d * d;
      ref2 += At(tb, i) * At(tb, i);
    }
  }
  return std::sqrt(diff2 / ref2);
}

// Regularization and clipping run on the shards: L2 decay with global-norm
// clipping (a scalar allreduce of the shards' squared norms), L1 decay
// with clipping by value, and L2 decay with clipping by each parameter's
// norm (on whole, allreduced gradients) equal the plain collective update.
// Sharded, the global norm is summed in another order; Adam, which divides by
// sqrt(v), turns that rounding into more than 1e-6 in float32 within 20 steps
// (the comparison above), so it is checked in float64, to 1e-10.
TEST(ShardOptimizer, ClippedAndDecayedMatchesThePlainCollectiveUpdate) {
  struct Case {
    const char* opt;
    float lr;
    Regularization::Kind decay;
    GradientClip::Kind clip;
    DataType dtype;
  };
  const auto l1 = Regularization::Kind::kL1, l2 = Regularization::Kind::kL2;
  const auto global = GradientClip::Kind::kByGlobalNorm;
  const auto f32 = DataType::kFloat32, f64 = DataType::kFloat64;
  for (const Case& c :
       {Case{"sgd", 0.1f, l2, global, f32},
        Case{"momentum", 0.1f, l2, global, f32},
        Case{"momentum", 0.1f, l1, GradientClip::Kind::kByValue, f32},
        Case{"momentum", 0.1f, l2, GradientClip::Kind::kByNorm, f32},
        Case{"adam", 0.01f, l2, global, f64}}) {
    ModelOptions mo;
    mo.default_optimizer = false;
    mo.dtype = c.dtype;
    mo.optimizer.type = c.opt;
    mo.optimizer.learning_rate = c.lr;
    const proto::TrainingJob unclipped = BuildModel("mlp", mo);
    mo.optimizer.regularization = {c.decay, c.decay == l1 ? 1e-4f : 1e-3f};
    mo.optimizer.gradient_clip.kind = c.clip;
    mo.optimizer.gradient_clip.clip_norm = 0.2f;  // below the mlp's norms
    mo.optimizer.gradient_clip.min = -2e-3f;
    mo.optimizer.gradient_clip.max = 2e-3f;
    const proto::TrainingJob job = BuildModel("mlp", mo);
    proto::DistributedStrategy plain;
    plain.set_bucket_bytes(64 << 10);  // several buckets
    auto want = TrainDistributed(job, 20, 16, plain);
    // The knobs matter: without them the parameters end elsewhere.
    EXPECT_GT(
        ParamDistance(job, *TrainDistributed(unclipped, 20, 16, plain), *want),
        1e-3)
        << c.opt;
    for (int stage : {1, 2}) {
      proto::DistributedStrategy cfg = plain;
      SetShardStage(&cfg, stage);
      auto got = TrainDistributed(job, 20, 16, cfg);
      SCOPED_TRACE(std::string(c.opt) + " stage " + std::to_string(stage));
      const bool adam = c.opt == std::string("adam");
      ExpectSameParams(job, *got, *want, adam ? 1e-10 : 1e-6, !adam);
    }
  }
}

TEST(Hierarchical, NRanksTimesBMatchesOneRankTimesNB) {
  proto::TrainingJob job = Mlp("sgd", 0.1f);
  const int64_t per_rank = 16;
  auto dist = TrainDistributed(job, 20, per_rank, {}, "hier");
  auto single = TrainSingle(job, 20, per_rank * Comm()->size());
  ExpectSameParams(job, *dist, *single, 1e-5, true);
}

TEST(Hierarchical, LenetNRanksTimesBMatchesOneRankTimesNBInEveryMode) {
  proto::TrainingJob job = Model("lenet", "sgd", 0.05f);
  const int64_t per_rank = 8;
  auto single = TrainSingle(job, 20, per_rank * Comm()->size());
  for (const char* mode : {"flat", "hier"}) {
    auto dist = TrainDistributed(job, 20, per_rank, {}, mode);
    ExpectSameParams(job, *dist, *single, 1e-5, true);
  }
}

// bfloat16 and float16 tensors over MPI (which has neither type): summed,
// averaged and max-reduced pairwise in float32 by the wire reductions, the
// same bits on every rank, exact for small integers, in both algorithms
// and through reduce-scatter.
TEST(SixteenBit, TensorsAllReduceAndReduceScatter) {
  Communicator* comm = Comm();
  const int n = comm->size(), r = comm->rank();
  for (DataType t : {DataType::kBFloat16, DataType::kFloat16}) {
    auto make = [t](int64_t count, float base) {
      Tensor x(t, Shape{count});
      x.raw_mutable_data();
      for (int64_t i = 0; i < count; ++i) {
        if (t == DataType::kBFloat16) {
          x.data<bfloat16>()[i] = FromFloat<bfloat16>(base + i % 7);
        } else {
          x.data<float16>()[i] = FromFloat<float16>(base + i % 7);
        }
      }
      return x;
    };
    auto at = [t](const Tensor& x, int64_t i) {
      return t == DataType::kBFloat16 ? ToFloat(x.data<bfloat16>()[i])
                                      : ToFloat(x.data<float16>()[i]);
    };
    for (auto algorithm :
         {AllReduceAlgorithm::kFlat, AllReduceAlgorithm::kHierarchical}) {
      comm->SetAllReduceAlgorithm(algorithm);
      Tensor s = make(1001, r);
      comm->AllReduce(s, ReduceOp::kSum);
      Tensor m = make(1001, r);
      comm->AllReduce(m, ReduceOp::kMax);
      comm->SetAllReduceAlgorithm(AllReduceAlgorithm::kFlat);
      for (int64_t i = 0; i < 1001; ++i) {
        ASSERT_EQ(at(s, i), n * (n - 1) / 2.0f + n * (i % 7))
            << DataTypeName(t) << " " << i;
        ASSERT_EQ(at(m, i), (n - 1) + i % 7) << DataTypeName(t);
      }
    }
    Tensor all = make(4 * n, r), shard(t, Shape{4});
    shard.raw_mutable_data();
    comm->ReduceScatter(all, shard, ReduceOp::kSum);
    for (int64_t i = 0; i < 4; ++i)
      ASSERT_EQ(at(shard, i), n * (n - 1) / 2.0f + n * ((4 * r + i) % 7))
          << DataTypeName(t);
  }
}

// Gradient compression: 16-bit values on the wire, added in float32. The
// result is the float32 average to within the format's rounding (one
// rounding per partial sum), the same bits on every rank, in both
// algorithms.
TEST(Compression, AllReduceIsCloseToFloat32AndIdenticalOnEveryRank) {
  Communicator* comm = Comm();
  const int64_t n = 50021;
  for (WireFormat wire : {WireFormat::kBf16, WireFormat::kFp16}) {
    for (auto algorithm :
         {AllReduceAlgorithm::kFlat, AllReduceAlgorithm::kHierarchical}) {
      Tensor exact, packed;
      float* f = exact.mutable_data<float>(Shape{n});
      std::mt19937 rng(29 + comm->rank());
      std::uniform_real_distribution<float> u(-1, 1);
      for (int64_t i = 0; i < n; ++i) f[i] = u(rng) * 1e-2f;
      packed.CopyFrom(exact, Place::CPU());
      comm->AllReduce(exact, ReduceOp::kAvg);
      comm->SetAllReduceAlgorithm(algorithm);
      const int64_t before = comm->allreduce_wire_bytes();
      comm->AllReduceAsync(packed, ReduceOp::kAvg, nullptr, wire)->Wait();
      EXPECT_EQ(comm->allreduce_wire_bytes() - before, n * 2);
      comm->SetAllReduceAlgorithm(AllReduceAlgorithm::kFlat);
      // Each of the size() - 1 additions and the inputs round once to 8
      // (bf16) or 11 (fp16) significant bits.
      const double ulp = wire == WireFormat::kBf16 ? 1.0 / 256 : 1.0 / 2048;
      const double bound = comm->size() * ulp * 1e-2;
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(packed.data<float>()[i], f[i], bound)
            << WireFormatName(wire) << " " << AllReduceAlgorithmName(algorithm)
            << " element " << i;
      const auto sums =
          comm->AllGatherValue(Fnv1a64(packed.raw_data(), packed.bytes()));
      for (uint64_t s : sums)
        EXPECT_EQ(s, sums[0]) << "ranks differ with " << WireFormatName(wire);
    }
  }
}

// A compressed reduce-scatter over MPI: near the float32 one, half the
// bytes, and the shards gathered back hold the same bits on every rank.
TEST(Compression, ReduceScatterIsCloseToFloat32AndIdenticalOnEveryRank) {
  Communicator* comm = Comm();
  const int64_t block = 12007;
  const int64_t n = block * comm->size();
  for (WireFormat wire : {WireFormat::kBf16, WireFormat::kFp16}) {
    Tensor in, exact, packed, gathered;
    float* f = in.mutable_data<float>(Shape{n});
    std::mt19937 rng(31 + comm->rank());
    std::uniform_real_distribution<float> u(-1, 1);
    for (int64_t i = 0; i < n; ++i) f[i] = u(rng) * 1e-2f;
    exact.mutable_data<float>(Shape{block});
    packed.mutable_data<float>(Shape{block});
    gathered.mutable_data<float>(Shape{n});
    comm->ReduceScatter(in, exact, ReduceOp::kAvg);
    const int64_t before = comm->allreduce_wire_bytes();
    comm->ReduceScatterAsync(in, packed, ReduceOp::kAvg, nullptr, wire)->Wait();
    EXPECT_EQ(comm->allreduce_wire_bytes() - before, n * 2);
    const double ulp = wire == WireFormat::kBf16 ? 1.0 / 256 : 1.0 / 2048;
    const double bound = comm->size() * ulp * 1e-2;
    for (int64_t i = 0; i < block; ++i)
      ASSERT_NEAR(packed.data<float>()[i], exact.data<float>()[i], bound)
          << WireFormatName(wire) << " element " << i;
    comm->AllGather(packed, gathered);
    const auto sums =
        comm->AllGatherValue(Fnv1a64(gathered.raw_data(), gathered.bytes()));
    for (uint64_t s : sums)
      EXPECT_EQ(s, sums[0]) << "ranks differ with " << WireFormatName(wire);
  }
}

// Training with compressed gradients stays near the float32 run, moves
// half the bytes, and keeps the ranks bitwise identical (TrainDistributed
// checks that).
TEST(Compression, TrainingStaysNearFloat32AndHalvesTheBytes) {
  proto::TrainingJob job = Mlp("sgd", 0.1f);
  const int64_t per_rank = 16;
  Communicator* comm = Comm();
  int64_t before = comm->allreduce_wire_bytes();
  auto plain = TrainDistributed(job, 20, per_rank);
  const int64_t plain_bytes = comm->allreduce_wire_bytes() - before;
  for (const char* wire : {"bf16", "fp16"}) {
    proto::DistributedStrategy cfg;
    cfg.set_grad_compression(wire);
    before = comm->allreduce_wire_bytes();
    auto packed = TrainDistributed(job, 20, per_rank, cfg);
    EXPECT_EQ(2 * (comm->allreduce_wire_bytes() - before), plain_bytes) << wire;
    // Parameters that start at zero (the biases) are sums of rounded
    // gradients: their relative error is a few units of the format's
    // rounding (bf16 2^-9, fp16 2^-11), not float32's; 16 units bound it.
    const double unit = wire[0] == 'b' ? 1.0 / 512 : 1.0 / 2048;
    ExpectSameParams(job, *packed, *plain, 16 * unit, false);
  }
}

TEST(MultiRank, ParametersStayBitwiseIdentical) {
  proto::TrainingJob job = Mlp("momentum", 0.05f);
  proto::DistributedStrategy cfg;
  cfg.set_bucket_bytes(256 * 1024);  // several buckets in flight
  auto scope = std::make_unique<Scope>();
  MPIExecutor exe;
  exe.Init(job, scope.get(), cfg);
  Tensor x, y;
  for (int s = 0; s < 50; ++s) {
    // Every rank its own data.
    GlobalBatch(s * 100 + exe.rank(), 8, &x, &y);
    exe.Run({{"image", x}, {"label", y}}, {}, nullptr);
  }
  EXPECT_NO_THROW(exe.CheckConsistency());
  for (const auto& name : Params(job)) {
    const Tensor& t = scope->GetVar(name)->GetTensor();
    uint64_t h = Fnv1a64(t.raw_data(), t.bytes());
    auto all = Comm()->AllGatherValue(h);
    for (size_t r = 1; r < all.size(); ++r)
      EXPECT_EQ(all[r], all[0]) << name << " differs on rank " << r;
  }
}

TEST(MultiRank, DifferentProgramsFailBeforeTheFirstAllReduceNamingTheRanks) {
  if (Comm()->size() < 2) GTEST_SKIP() << "needs at least 2 ranks";
  // The last rank builds with another seed: its startup program differs.
  ModelOptions mo;
  mo.seed = Comm()->rank() == Comm()->size() - 1 ? 99 : 1;
  proto::TrainingJob job = BuildModel("mlp", mo);
  Scope scope;
  MPIExecutor exe;
  try {
    exe.Init(job, &scope);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("different programs"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank(s) " + std::to_string(Comm()->size() - 1)),
              std::string::npos)
        << msg;
  }
  // Nothing was left in flight: a collective still works.
  EXPECT_NO_THROW(Comm()->Barrier());
}

TEST(MultiRank, UnevenShardsRunTheSameNumberOfSteps) {
  Dataset data;
  data.names = {"image", "label"};
  Tensor x, y;
  GlobalBatch(7, 1000, &x, &y);
  data.tensors = {x, y};
  Batcher batcher(data, 64, 5, Comm()->rank(), Comm()->size());
  auto steps = Comm()->AllGatherValue(batcher.StepsPerEpoch());
  for (auto s : steps) EXPECT_EQ(s, steps[0]);

  proto::TrainingJob job = BuildModel("mlp");
  Scope scope;
  MPIExecutor exe;
  exe.Init(job, &scope);
  batcher.StartEpoch(0);
  std::vector<Tensor> batch;
  int64_t ran = 0;
  while (batcher.Next(&batch)) {
    exe.Run({{"image", batch[0]}, {"label", batch[1]}}, {}, nullptr);
    ++ran;
  }
  auto all = Comm()->AllGatherValue(ran);
  for (auto s : all) EXPECT_EQ(s, all[0]);
  EXPECT_EQ(ran, static_cast<int64_t>(steps[0]));
}

}  // namespace
}  // namespace fluid

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  fluid::Communicator* comm = fluid::GlobalCommunicator();
  // Only rank 0 reports, so the output reads like one run.
  if (comm->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int rc = RUN_ALL_TESTS();
  // A test that failed on any rank fails the job.
  auto all = comm->AllGatherValue(static_cast<uint64_t>(rc));
  for (auto r : all) rc |= static_cast<int>(r);
  fluid::ShutdownGlobalCommunicator();
  return rc;
}
