// Multi-rank tests of the GPU path; ctest runs this binary under mpirun
// with np 1 and np 2. Each rank takes the GPU of its node-local rank modulo
// the visible count, so on a one-GPU machine np 2 puts both ranks on one
// device: NCCL refuses that, and the communicator falls back to MPI through
// host memory. Every test skips, saying so, when no GPU is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "src/builder/models.h"
#include "src/framework/device.h"
#include "src/framework/memory.h"
#include "src/runtime/mpi_executor.h"
#include "tests/testing/require_gpu.h"
#include "tests/testing/synthetic_batch.h"

namespace fluid {
namespace {

Place RankPlace() { return Place::CUDA(LocalRankDevice()); }
Communicator* Comm() { return GlobalCommunicator(RankPlace()); }

// Ranks sharing a device (more ranks on the node than GPUs).
bool DevicesShared() { return Comm()->size() > CudaDeviceCount(); }

Tensor OnDevice(const std::vector<double>& values) {
  Tensor host;
  double* p = host.mutable_data<double>(Shape{int64_t(values.size())});
  std::copy(values.begin(), values.end(), p);
  Tensor dev;
  dev.CopyFrom(host, RankPlace());
  return dev;
}

std::vector<double> ToHost(const Tensor& t) {
  Tensor host;
  host.CopyFrom(t, Place::CPU());
  return std::vector<double>(host.data<double>(),
                             host.data<double>() + host.numel());
}

TEST(MpiCuda, BackendIsNcclUnlessRanksShareAGpu) {
  REQUIRE_GPU();
  const std::string want = DevicesShared() ? "mpi" : "nccl";
  EXPECT_EQ(Comm()->backend_name(), want)
      << Comm()->size() << " ranks, " << CudaDeviceCount() << " GPU(s)";
}

TEST(MpiCuda, AllReduceAndBroadcastOfDeviceTensors) {
  REQUIRE_GPU();
  const int n = Comm()->size(), r = Comm()->rank();
  const int64_t count = 1000;
  std::vector<double> mine(count);
  for (int64_t i = 0; i < count; ++i) mine[i] = (r + 1) * 0.5 + i;
  Tensor sum = OnDevice(mine);
  Comm()->AllReduce(sum, ReduceOp::kSum);
  Tensor avg = OnDevice(mine);
  Comm()->AllReduce(avg, ReduceOp::kAvg);
  const double ranks_half = 0.5 * n * (n + 1) / 2.0;  // sum of (r+1)*0.5
  auto s = ToHost(sum), a = ToHost(avg);
  for (int64_t i = 0; i < count; ++i) {
    EXPECT_DOUBLE_EQ(s[i], ranks_half + n * double(i)) << i;
    EXPECT_NEAR(a[i], (ranks_half + n * double(i)) / n, 1e-12 * (1 + i)) << i;
  }
  Tensor b = OnDevice(std::vector<double>(count, r == 0 ? 3.25 : -1.0));
  Comm()->Broadcast(b, 0);
  for (double v : ToHost(b)) EXPECT_EQ(v, 3.25);
}

// The sharded optimizer's collectives on device tensors: rank r receives
// block r of the average, and the blocks gathered in place from a view of
// this rank's own block give every rank the whole average.
TEST(MpiCuda, ReduceScatterAndAllGatherOfDeviceTensors) {
  REQUIRE_GPU();
  const int n = Comm()->size(), r = Comm()->rank();
  const int64_t block = 500;
  std::vector<double> mine(block * n), want(block * n);
  for (int64_t i = 0; i < block * n; ++i) {
    mine[i] = (r + 1) * 0.5 + i;
    want[i] = 0.25 * (n + 1) + i;  // the average over ranks of (r+1)*0.5 + i
  }
  Tensor all = OnDevice(mine);
  Tensor shard = OnDevice(std::vector<double>(block, 0.0));
  Comm()->ReduceScatter(all, shard, ReduceOp::kAvg);
  auto s = ToHost(shard);
  for (int64_t i = 0; i < block; ++i)
    EXPECT_NEAR(s[i], want[r * block + i], 1e-12 * (1 + i)) << i;
  Tensor gathered = OnDevice(std::vector<double>(block * n, -1.0));
  Tensor view = gathered.Slice(r * block, (r + 1) * block);
  CopyBytes(view.place(), const_cast<void*>(view.raw_data()), shard.place(),
            shard.raw_data(), shard.bytes());
  Comm()->AllGather(view, gathered);
  auto g = ToHost(gathered);
  for (int64_t i = 0; i < block * n; ++i)
    EXPECT_NEAR(g[i], want[i], 1e-12 * (1 + i)) << i;
}

// The built-in mlp trained by `optimizer` at learning rate 0.1.
proto::TrainingJob MlpJob(const std::string& optimizer) {
  ModelOptions mo;
  mo.default_optimizer = false;
  mo.optimizer.type = optimizer;
  mo.optimizer.learning_rate = 0.1f;
  return BuildModel("mlp", mo);
}

// N ranks on the GPU, B samples each, give the parameters of one CPU
// process on N*B samples (SGD, 10 steps).
TEST(MpiCuda, DataParallelOnGpuMatchesSingleProcess) {
  REQUIRE_GPU();
  proto::TrainingJob job = MlpJob("sgd");
  const int n = Comm()->size(), r = Comm()->rank();
  const int64_t per_rank = 16;
  const int steps = 10;

  Scope dist_scope;
  MPIExecutor dist(RankPlace(), 1, Comm());
  dist.Init(job, &dist_scope);
  Scope single_scope;
  Executor single;
  single.RunOnce(job.startup(), &single_scope);
  auto main = single.Prepare(job.main(), &single_scope);
  Tensor x, y;
  std::vector<Tensor> out;
  for (int s = 0; s < steps; ++s) {
    testing::SyntheticBatch<float>(500 + s, per_rank * n, &x, &y);
    dist.Run({{"image", x.Slice(r * per_rank, (r + 1) * per_rank)},
              {"label", y.Slice(r * per_rank, (r + 1) * per_rank)}},
             {}, &out);
    single.Run(main.get(), {{"image", x}, {"label", y}});
  }
  dist.CheckConsistency();  // every rank holds the same parameters
  for (const auto& v : job.main().blocks(0).vars()) {
    if (!v.trainable()) continue;
    Tensor a;
    a.CopyFrom(dist_scope.GetVar(v.name())->GetTensor(), Place::CPU());
    const Tensor& b = single_scope.GetVar(v.name())->GetTensor();
    ASSERT_EQ(a.shape(), b.shape()) << v.name();
    double diff2 = 0, ref2 = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      double d = double(a.data<float>()[i]) - b.data<float>()[i];
      diff2 += d * d;
      ref2 += double(b.data<float>()[i]) * b.data<float>()[i];
    }
    EXPECT_LE(std::sqrt(diff2), 1e-5 * std::sqrt(ref2))
        << v.name() << " on rank " << r;
  }
}

// The sharded optimizer with its parameter gathers waited for in the next
// step (overlap_gather) on device tensors: the same bits as the gathers
// waited for in the step, a fetched parameter included (Momentum, 10
// steps).
TEST(MpiCuda, ShardedOverlappedGatherMatchesTheGatherWaitedInTheStep) {
  REQUIRE_GPU();
  proto::TrainingJob job = MlpJob("momentum");
  std::string param;
  for (const auto& v : job.main().blocks(0).vars())
    if (v.trainable() && param.empty()) param = v.name();
  const int n = Comm()->size(), r = Comm()->rank();
  const int64_t per_rank = 16;
  proto::DistributedStrategy cfg;
  cfg.set_bucket_bytes(64 << 10);  // several buckets
  cfg.set_sharding(true);
  cfg.mutable_sharding_configs()->set_stage(2);
  Scope scopes[2];
  std::vector<Tensor> fetched[2];
  for (int overlapped : {0, 1}) {
    cfg.mutable_sharding_configs()->set_overlap_gather(overlapped == 1);
    MPIExecutor exe(RankPlace(), 1, Comm());
    exe.Init(job, &scopes[overlapped], cfg);
    Tensor x, y;
    std::vector<Tensor> out;
    for (int s = 0; s < 10; ++s) {
      testing::SyntheticBatch<float>(700 + s, per_rank * n, &x, &y);
      exe.Run({{"image", x.Slice(r * per_rank, (r + 1) * per_rank)},
               {"label", y.Slice(r * per_rank, (r + 1) * per_rank)}},
              {param}, &out);
      fetched[overlapped].push_back(out[0]);
    }
    exe.CheckConsistency();  // waits, then compares the ranks
  }
  for (int s = 0; s < 10; ++s)
    ASSERT_EQ(std::memcmp(fetched[0][s].raw_data(), fetched[1][s].raw_data(),
                          fetched[0][s].bytes()),
              0)
        << param << " fetched after step " << s + 1;
  for (const auto& v : job.main().blocks(0).vars()) {
    if (!v.trainable()) continue;
    Tensor a, b;
    a.CopyFrom(scopes[0].GetVar(v.name())->GetTensor(), Place::CPU());
    b.CopyFrom(scopes[1].GetVar(v.name())->GetTensor(), Place::CPU());
    ASSERT_EQ(a.bytes(), b.bytes()) << v.name();
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.bytes()), 0)
        << v.name() << " on rank " << r;
  }
}

}  // namespace
}  // namespace fluid

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // The communicator is made for the rank's GPU when there is one.
  fluid::Communicator* comm =
      fluid::BuiltWithCuda() && fluid::CudaDeviceCount() > 0
          ? fluid::GlobalCommunicator(
                fluid::Place::CUDA(fluid::LocalRankDevice()))
          : fluid::GlobalCommunicator();
  if (comm->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int rc = RUN_ALL_TESTS();
  auto all = comm->AllGatherValue(static_cast<uint64_t>(rc));
  for (auto r : all) rc |= static_cast<int>(r);
  fluid::ShutdownGlobalCommunicator();
  return rc;
}
