// The embedding layer trained with sparse gradients against the same model
// with dense ones: a table shared by two lookups (their sparse gradients
// summed into one), 20 steps of SGD, Adam and Momentum, the parameters equal
// to 1e-6; Adam's lazy_mode; the padding row; errors; checkpoints refusing
// a sparse gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "src/builder/embedding_layers.h"
#include "src/builder/layers.h"
#include "src/builder/optimizer.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "src/io/checkpoint.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/id_batches.h"

namespace fluid {
namespace {

constexpr int64_t kVocab = 40;
constexpr int64_t kWidth = 6;
constexpr int64_t kBatch = 8;

struct Model {
  proto::ProgramDesc main = NewProgram();
  proto::ProgramDesc startup = NewProgram();
  std::vector<std::string> params;
};

// Two lookups of one table ("table"), added, then fc 4 and softmax cross
// entropy; ids 0..kVocab-1, `padding` the padding id (-1 none).
Model Build(bool sparse, const OptimizerConfig& cfg, int64_t padding = -1) {
  Model m;
  ProgramBuilder b(&m.main, &m.startup, 17);
  std::string a = layers::Data(&b, "a", Shape{1}, DataType::kInt64);
  std::string c = layers::Data(&b, "c", Shape{1}, DataType::kInt64);
  std::string label = layers::Data(&b, "label", Shape{1}, DataType::kInt64);
  layers::EmbeddingOptions o;
  o.is_sparse = sparse;
  o.padding_idx = padding;
  ParamAttr table;
  table.name = "table";
  std::string ea = layers::Embedding(&b, a, {kVocab, kWidth}, o, table);
  std::string ec = layers::Embedding(&b, c, {kVocab, kWidth}, o, table);
  std::string h = layers::ElementwiseAdd(&b, ea, ec);
  std::string logits = layers::Fc(&b, h, 4);
  std::string loss =
      layers::Mean(&b, layers::SoftmaxWithCrossEntropy(&b, logits, label));
  for (const auto& pg : MakeOptimizer(cfg)->Minimize(&b, loss))
    m.params.push_back(pg.first);
  return m;
}

// Ids drawn from the first 12 rows (repeats within a batch; most rows of
// the table never touched), a different batch each step.
FeedList Batch(int step) { return testing::IdBatch(100 + step, kBatch, 12, 4); }

std::vector<std::vector<float>> Train(const Model& m, int steps) {
  Executor exe;
  Scope scope;
  exe.RunOnce(m.startup, &scope);
  auto prepared = exe.Prepare(m.main, &scope);
  for (int s = 0; s < steps; ++s) exe.Run(prepared.get(), Batch(s), {});
  std::vector<std::vector<float>> out;
  for (const auto& p : m.params)
    out.push_back(testing::ToVector<float>(scope.GetVar(p)->GetTensor()));
  return out;
}

void ExpectClose(const std::vector<std::vector<float>>& x,
                 const std::vector<std::vector<float>>& y, double tol) {
  ASSERT_EQ(x.size(), y.size());
  for (size_t k = 0; k < x.size(); ++k) {
    ASSERT_EQ(x[k].size(), y[k].size());
    for (size_t i = 0; i < x[k].size(); ++i)
      ASSERT_NEAR(x[k][i], y[k][i], tol) << "param " << k << " element " << i;
  }
}

OptimizerConfig Config(const std::string& type, float lr) {
  OptimizerConfig c;
  c.type = type;
  c.learning_rate = lr;
  return c;
}

TEST(Embedding, SparseGradientIsDeclaredAndSummedSparse) {
  Model m = Build(true, Config("sgd", 0.1f));
  const proto::BlockDesc& block = m.main.blocks(0);
  EXPECT_EQ(GetVarDesc(block, "table@GRAD").type(),
            proto::VarDesc::SELECTED_ROWS);
  int sums = 0;
  for (const auto& op : block.ops())
    if (op.type() == "sum" && OpOutput(op, "Out").at(0) == "table@GRAD") ++sums;
  EXPECT_EQ(sums, 1);
  Model dense = Build(false, Config("sgd", 0.1f));
  EXPECT_EQ(GetVarDesc(dense.main.blocks(0), "table@GRAD").type(),
            proto::VarDesc::TENSOR);
}

TEST(Embedding, SparseTrainsLikeDense) {
  for (const std::string type : {"sgd", "adam", "momentum", "adagrad"}) {
    SCOPED_TRACE(type);
    const float lr = type == "adam" ? 0.01f : 0.2f;
    ExpectClose(Train(Build(true, Config(type, lr)), 20),
                Train(Build(false, Config(type, lr)), 20), 1e-6);
  }
}

TEST(Embedding, LazyAdamLeavesUntouchedRowsAlone) {
  OptimizerConfig cfg = Config("adam", 0.01f);
  cfg.lazy_mode = true;
  Model m = Build(true, cfg);
  Executor exe;
  Scope scope;
  exe.RunOnce(m.startup, &scope);
  std::vector<float> before =
      testing::ToVector<float>(scope.GetVar("table")->GetTensor());
  auto prepared = exe.Prepare(m.main, &scope);
  for (int s = 0; s < 5; ++s) exe.Run(prepared.get(), Batch(s), {});
  std::vector<float> after =
      testing::ToVector<float>(scope.GetVar("table")->GetTensor());
  // Rows 12.. are never looked up: lazy Adam never moves them.
  for (int64_t i = 12 * kWidth; i < kVocab * kWidth; ++i)
    EXPECT_EQ(before[i], after[i]) << i;
  // Non-lazy sparse Adam is the dense update, which differs from lazy on
  // rows skipped by some step.
  ExpectClose(Train(Build(true, Config("adam", 0.01f)), 5),
              Train(Build(false, Config("adam", 0.01f)), 5), 1e-6);
}

TEST(Embedding, PaddingRowReadsZeroAndNeverMoves) {
  for (bool sparse : {false, true}) {
    Model m = Build(sparse, Config("adam", 0.01f), 3);
    Executor exe;
    Scope scope;
    exe.RunOnce(m.startup, &scope);
    std::vector<float> before =
        testing::ToVector<float>(scope.GetVar("table")->GetTensor());
    auto prepared = exe.Prepare(m.main, &scope);
    for (int s = 0; s < 10; ++s) exe.Run(prepared.get(), Batch(s), {});
    std::vector<float> after =
        testing::ToVector<float>(scope.GetVar("table")->GetTensor());
    for (int64_t j = 0; j < kWidth; ++j)
      EXPECT_EQ(before[3 * kWidth + j], after[3 * kWidth + j]) << sparse;
  }
  ExpectClose(Train(Build(true, Config("adam", 0.01f), 3), 10),
              Train(Build(false, Config("adam", 0.01f), 3), 10), 1e-6);
}

TEST(Embedding, Errors) {
  proto::ProgramDesc main = NewProgram(), startup = NewProgram();
  ProgramBuilder b(&main, &startup, 1);
  std::string x = layers::Data(&b, "x", Shape{1});
  std::string ids = layers::Data(&b, "ids", Shape{1}, DataType::kInt64);
  EXPECT_NE(testing::ErrorOf([&] {
              layers::Embedding(&b, x, {10, 4});
            }).find("layer 'embedding': argument 'input' 'x' must be int64"),
            std::string::npos);
  EXPECT_NE(testing::ErrorOf([&] {
              layers::Embedding(&b, ids, {10});
            }).find("argument 'size' must be two positive ints"),
            std::string::npos);
  layers::EmbeddingOptions o;
  o.padding_idx = 10;
  EXPECT_NE(testing::ErrorOf([&] {
              layers::Embedding(&b, ids, {10, 4}, o);
            }).find("argument 'padding_idx' must be -1 (none) or in [0, 10)"),
            std::string::npos);
  // An id beyond the table when the program runs.
  std::string out = layers::Embedding(&b, ids, {10, 4});
  Executor exe;
  Scope scope;
  exe.RunOnce(startup, &scope);
  Tensor bad = testing::MakeTensor<int64_t>({2, 1}, {4, 10});
  std::string msg = testing::ErrorOf([&] {
    exe.RunOnce(main, &scope, {{"ids", bad}}, {out});
  });
  EXPECT_NE(msg.find("lookup_table: Ids 'ids' holds id 10 at position 1"),
            std::string::npos)
      << msg;
}

TEST(Embedding, CheckpointsRefuseSparseRows) {
  Scope scope;
  scope.Var("w")->GetMutableTensor()->mutable_data<float>(Shape{2});
  scope.Var("table@GRAD")->GetMutableSelectedRows()->set_height(4);
  std::string msg = testing::ErrorOf([&] {
    SaveCheckpoint(scope, {"w", "table@GRAD"}, "/tmp/fluid_sparse_ckpt_refused",
                   CheckpointInfo{});
  });
  EXPECT_NE(msg.find("table@GRAD: holds sparse rows (SELECTED_ROWS"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace fluid
