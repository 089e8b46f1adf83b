// Sparse embedding gradients across ranks (run by fluid_mpi_tests under
// mpirun): a table shared by two lookups trained 20 steps with SGD and Adam
// on N ranks x batch B with sparse gradients (c_sparse_allreduce) equals
// the dense run and one process on batch N * B to 1e-6, leaves every
// rank's parameters bitwise identical, and hands the transport fewer bytes
// than the dense run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/builder/embedding_layers.h"
#include "src/builder/layers.h"
#include "src/builder/optimizer.h"
#include "src/framework/hash.h"
#include "src/framework/program_desc.h"
#include "src/runtime/mpi_executor.h"
#include "tests/testing/id_batches.h"

namespace fluid {
namespace {

constexpr int64_t kVocab = 1000, kWidth = 8, kPerRank = 8;
constexpr int kSteps = 20;

// Ids a and c look up one table; their rows added -> fc 4 -> softmax
// cross entropy -> mean, in float64.
proto::TrainingJob EmbeddingJob(bool sparse, const std::string& optimizer) {
  proto::TrainingJob job;
  job.set_version(kProgramVersion);
  *job.mutable_main() = NewProgram();
  *job.mutable_startup() = NewProgram();
  ProgramBuilder b(job.mutable_main(), job.mutable_startup(), 3);
  std::string a = layers::Data(&b, "a", Shape{1}, DataType::kInt64);
  std::string c = layers::Data(&b, "c", Shape{1}, DataType::kInt64);
  std::string label = layers::Data(&b, "label", Shape{1}, DataType::kInt64);
  layers::EmbeddingOptions o;
  o.is_sparse = sparse;
  o.dtype = DataType::kFloat64;
  ParamAttr table;
  table.name = "table";
  std::string h = layers::ElementwiseAdd(
      &b, layers::Embedding(&b, a, {kVocab, kWidth}, o, table),
      layers::Embedding(&b, c, {kVocab, kWidth}, o, table));
  std::string loss = layers::Mean(
      &b, layers::SoftmaxWithCrossEntropy(&b, layers::Fc(&b, h, 4), label));
  OptimizerConfig opt;
  opt.type = optimizer;
  opt.learning_rate = optimizer == "adam" ? 0.01f : 0.5f;
  MakeOptimizer(opt)->Minimize(&b, loss);
  for (const char* f : {"a", "c", "label"}) job.add_feed_names(f);
  job.set_loss_name(loss);
  return job;
}

// The global batch of step s: ids from the first 40 rows of the table.
FeedList GlobalBatch(int s, int64_t n) {
  return testing::IdBatch(1000 + s, n, 40, 4);
}

FeedList Slice(const FeedList& global, int rank) {
  FeedList out;
  for (const auto& [name, t] : global)
    out.emplace_back(name, t.Slice(rank * kPerRank, (rank + 1) * kPerRank));
  return out;
}

const std::vector<std::string> kParams = {"table", "fc_0.w_0", "fc_0.b_0"};

std::vector<std::vector<double>> Params(const Scope& scope) {
  std::vector<std::vector<double>> out;
  for (const auto& p : kParams) {
    const Tensor& t = scope.FindVar(p)->GetTensor();
    out.emplace_back(t.data<double>(), t.data<double>() + t.numel());
  }
  return out;
}

struct RunResult {
  std::vector<std::vector<double>> params;
  int64_t wire_bytes = 0;
  int nranks = 0;
  bool same_on_every_rank = true;
};

RunResult TrainOnRanks(bool sparse, const std::string& optimizer) {
  Scope scope;
  MPIExecutor dist;
  dist.Init(EmbeddingJob(sparse, optimizer), &scope);
  Communicator* comm = dist.communicator();
  const int64_t before = comm->allreduce_wire_bytes();
  for (int s = 0; s < kSteps; ++s)
    dist.Run(Slice(GlobalBatch(s, kPerRank * dist.world_size()), dist.rank()),
             {}, nullptr);
  RunResult run;
  run.wire_bytes = comm->allreduce_wire_bytes() - before;
  run.nranks = dist.world_size();
  run.params = Params(scope);
  for (const auto& p : kParams) {
    const Tensor& t = scope.FindVar(p)->GetTensor();
    const uint64_t mine = Fnv1a64(t.raw_data(), t.bytes());
    for (uint64_t v : comm->AllGatherValue(mine))
      run.same_on_every_rank = run.same_on_every_rank && v == mine;
  }
  return run;
}

std::vector<std::vector<double>> TrainAlone(const std::string& optimizer,
                                            int nranks) {
  proto::TrainingJob job = EmbeddingJob(false, optimizer);
  Scope scope;
  Executor exe;
  exe.RunOnce(job.startup(), &scope);
  auto main = exe.Prepare(job.main(), &scope);
  for (int s = 0; s < kSteps; ++s)
    exe.Run(main.get(), GlobalBatch(s, kPerRank * nranks), {});
  return Params(scope);
}

void ExpectClose(const std::vector<std::vector<double>>& x,
                 const std::vector<std::vector<double>>& y,
                 const std::string& what) {
  for (size_t k = 0; k < x.size(); ++k)
    for (size_t i = 0; i < x[k].size(); ++i)
      ASSERT_NEAR(x[k][i], y[k][i], 1e-6)
          << what << ": " << kParams[k] << "[" << i << "]";
}

TEST(SparseEmbeddingAcrossRanks, SparseEqualsDenseAndOneProcess) {
  for (const std::string optimizer : {"sgd", "adam"}) {
    SCOPED_TRACE(optimizer);
    const RunResult sparse = TrainOnRanks(true, optimizer);
    const RunResult dense = TrainOnRanks(false, optimizer);
    ExpectClose(sparse.params, dense.params, "sparse vs dense");
    ExpectClose(sparse.params, TrainAlone(optimizer, sparse.nranks),
                "sparse vs one process");
    EXPECT_TRUE(sparse.same_on_every_rank);
    EXPECT_TRUE(dense.same_on_every_rank);
    // The table's dense gradient is 1000 x 8 doubles a step; the sparse one
    // 16 rows a rank (64 of 1000 rows on 4 ranks: below the dense ratio).
    EXPECT_LT(sparse.wire_bytes, dense.wire_bytes)
        << "sparse " << sparse.wire_bytes << " dense " << dense.wire_bytes;
  }
}

}  // namespace
}  // namespace fluid
