// Optimizer::Minimize with a sparse gradient (an embedding table's,
// SELECTED_ROWS) and weight decay or gradient clipping: the rows merged
// once, before every clip and decay op that reads them; the decay one
// sparse_weight_decay op (the optimizer's regularization or the table's
// own); the clips the ordinary ops; nothing added where the table has
// neither, and the dense parameters' ops as before. Under the collective
// transpiler the table's c_wait comes before the merge. Trained, a row the
// batches never touch keeps its starting value while the decay and the
// clip change the touched ones. An optimizer without a sparse path is
// refused, naming the parameter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/builder/embedding_layers.h"
#include "src/builder/layers.h"
#include "src/builder/optimizer.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/id_batches.h"
#include "transpiler/collective_transpiler.h"
#include "transpiler/program_query.h"

namespace fluid {
namespace {

constexpr int64_t kVocab = 30, kWidth = 4, kUsedRows = 10;

struct Model {
  proto::ProgramDesc main = NewProgram();
  proto::ProgramDesc startup = NewProgram();
};

// ids "a" -> embedding "table" -> fc 3 -> softmax cross entropy.
Model Build(bool sparse, const OptimizerConfig& cfg,
            const ParamAttr& table_attr = {}) {
  Model m;
  ProgramBuilder b(&m.main, &m.startup, 23);
  std::string a = layers::Data(&b, "a", Shape{1}, DataType::kInt64);
  std::string label = layers::Data(&b, "label", Shape{1}, DataType::kInt64);
  layers::EmbeddingOptions o;
  o.is_sparse = sparse;
  ParamAttr table = table_attr;
  table.name = "table";
  std::string e = layers::Embedding(&b, a, {kVocab, kWidth}, o, table);
  std::string logits = layers::Fc(&b, e, 3);
  std::string loss =
      layers::Mean(&b, layers::SoftmaxWithCrossEntropy(&b, logits, label));
  MakeOptimizer(cfg)->Minimize(&b, loss);
  return m;
}

OptimizerConfig Config(const std::string& type = "sgd") {
  OptimizerConfig c;
  c.type = type;
  c.learning_rate = 0.3f;
  return c;
}

Regularization Decay(Regularization::Kind kind, float coeff) {
  Regularization r;
  r.kind = kind;
  r.coeff = coeff;
  return r;
}

GradientClip Clip(GradientClip::Kind kind) {
  GradientClip c;
  c.kind = kind;
  c.min = -0.01f;
  c.max = 0.01f;
  c.clip_norm = 0.02f;
  return c;
}

bool Reads(const proto::OpDesc& op, const std::string& var) {
  for (const auto& slot : op.inputs())
    for (const auto& arg : slot.arguments())
      if (arg == var) return true;
  return false;
}

// The types of the ops after the backward pass that read `var`.
std::vector<std::string> Readers(const proto::ProgramDesc& p,
                                 const std::string& var) {
  std::vector<std::string> t;
  for (const auto& op : p.blocks(0).ops())
    if (Reads(op, var) && !HasRole(op, OpRole::kBackward))
      t.push_back(op.type());
  return t;
}

const proto::OpDesc& FirstOp(const proto::ProgramDesc& p,
                             const std::string& type) {
  for (const auto& op : p.blocks(0).ops())
    if (op.type() == type) return op;
  throw std::runtime_error("no " + type + " op");
}

TEST(SparseRegularization, DecayIsOneOpOnMergedRows) {
  OptimizerConfig cfg = Config();
  cfg.regularization = Decay(Regularization::Kind::kL2, 0.1f);
  Model m = Build(true, cfg);
  EXPECT_EQ(Readers(m.main, "table@GRAD"),
            (std::vector<std::string>{"merge_selected_rows",
                                      "sparse_weight_decay", "sgd"}));
  const proto::OpDesc& decay = FirstOp(m.main, "sparse_weight_decay");
  EXPECT_TRUE(HasRole(decay, OpRole::kOptimize));
  EXPECT_EQ(GetOpAttrAs<std::string>(decay, "regularizer"), "l2");
  EXPECT_FLOAT_EQ(GetOpAttrAs<float>(decay, "regularization_coeff"), 0.1f);
  EXPECT_EQ(OpOutput(decay, "GradOut"), std::vector<std::string>{"table@GRAD"});
  EXPECT_TRUE(
      HasRole(FirstOp(m.main, "merge_selected_rows"), OpRole::kOptimize));
  // The fc weight's gradient is dense: scale + sum, as before.
  const std::string w = "fc_0.w_0@GRAD";
  EXPECT_EQ(Readers(m.main, w), (std::vector<std::string>{"sum", "sgd"}));
  EXPECT_EQ(GetVarDesc(m.main.blocks(0), "table@GRAD").type(),
            proto::VarDesc::SELECTED_ROWS);
}

TEST(SparseRegularization, TableOwnDecayOverridesTheOptimizers) {
  OptimizerConfig cfg = Config("adam");
  cfg.regularization = Decay(Regularization::Kind::kL2, 0.1f);
  ParamAttr attr;
  attr.regularizer = Decay(Regularization::Kind::kL1, 0.25f);
  Model m = Build(true, cfg, attr);
  const proto::OpDesc& decay = FirstOp(m.main, "sparse_weight_decay");
  EXPECT_EQ(GetOpAttrAs<std::string>(decay, "regularizer"), "l1");
  EXPECT_FLOAT_EQ(GetOpAttrAs<float>(decay, "regularization_coeff"), 0.25f);
}

TEST(SparseRegularization, ClipsReadTheMergedRowsOnce) {
  const std::vector<std::pair<GradientClip::Kind, std::vector<std::string>>>
      cases = {
          {GradientClip::Kind::kByValue, {"clip"}},
          {GradientClip::Kind::kByNorm, {"clip_by_norm"}},
          {GradientClip::Kind::kByGlobalNorm,
           {"squared_l2_norm", "elementwise_mul"}},
      };
  for (const auto& [kind, clip_ops] : cases) {
    OptimizerConfig cfg = Config("momentum");
    cfg.gradient_clip = Clip(kind);
    cfg.regularization = Decay(Regularization::Kind::kL1, 0.1f);
    std::vector<std::string> want = {"merge_selected_rows"};
    want.insert(want.end(), clip_ops.begin(), clip_ops.end());
    want.push_back("sparse_weight_decay");
    want.push_back("momentum");
    EXPECT_EQ(Readers(Build(true, cfg).main, "table@GRAD"), want);
    // The table's own clip, without a decay.
    ParamAttr attr;
    attr.gradient_clip = Clip(kind);
    want.erase(want.end() - 2);
    EXPECT_EQ(Readers(Build(true, Config("momentum"), attr).main, "table@GRAD"),
              want);
  }
}

TEST(SparseRegularization, NothingAddedWithoutDecayOrClip) {
  for (const std::string type : {"sgd", "momentum", "adam", "adagrad"}) {
    Model m = Build(true, Config(type));
    EXPECT_EQ(Readers(m.main, "table@GRAD"), std::vector<std::string>{type});
  }
  // A dense table with a decay and a clip: the dense ops, no merge.
  OptimizerConfig cfg = Config();
  cfg.gradient_clip = Clip(GradientClip::Kind::kByGlobalNorm);
  cfg.regularization = Decay(Regularization::Kind::kL2, 0.1f);
  EXPECT_EQ(Readers(Build(false, cfg).main, "table@GRAD"),
            (std::vector<std::string>{"squared_l2_norm", "elementwise_mul",
                                      "sum", "sgd"}));
}

TEST(SparseRegularization, OptimizerWithoutSparsePathIsRefused) {
  for (const std::string type :
       {"rmsprop", "decayed_adagrad", "adamax", "adadelta", "lars_momentum"}) {
    OptimizerConfig cfg = Config(type);
    cfg.regularization = Decay(Regularization::Kind::kL2, 0.1f);
    const std::string msg = testing::ErrorOf([&] { Build(true, cfg); });
    EXPECT_NE(msg.find("parameter 'table' has a sparse gradient "
                       "(embedding(is_sparse=True)), which the " +
                       type +
                       " optimizer does not take; use SGD, Momentum, "
                       "Adam or Adagrad, or is_sparse=False"),
              std::string::npos)
        << msg;
    EXPECT_EQ(testing::ErrorOf([&] { Build(false, cfg); }), "");
  }
}

TEST(SparseRegularization, CollectiveWaitComesBeforeTheMerge) {
  OptimizerConfig cfg = Config("adam");
  cfg.gradient_clip = Clip(GradientClip::Kind::kByGlobalNorm);
  cfg.regularization = Decay(Regularization::Kind::kL2, 0.1f);
  Model m = Build(true, cfg);
  proto::TrainingJob job;
  *job.mutable_main() = m.main;
  *job.mutable_startup() = m.startup;
  for (bool overlap : {false, true}) {
    proto::DistributedStrategy strategy;
    strategy.set_overlap_allreduce(overlap);
    // Lints every gradient: reduced once, waited for before its first
    // reader on the optimizer's side.
    const proto::TrainingJob out = CollectiveTranspile(job, strategy, 2);
    std::vector<std::string> seen;
    for (const auto& op : out.main().blocks(0).ops())
      if (op.type() == "c_sparse_allreduce" || op.type() == "c_wait" ||
          (Reads(op, "table@GRAD") && !HasRole(op, OpRole::kBackward)))
        seen.push_back(op.type());
    const auto at = [&](const std::string& t) {
      return std::find(seen.begin(), seen.end(), t) - seen.begin();
    };
    EXPECT_LT(at("c_sparse_allreduce"), at("merge_selected_rows"));
    EXPECT_EQ(seen[at("merge_selected_rows") - 1], "c_wait")
        << "overlap " << overlap;
    EXPECT_LT(at("merge_selected_rows"), at("squared_l2_norm"));
    EXPECT_LT(at("elementwise_mul"), at("sparse_weight_decay"));
  }
}

// The table after 6 SGD-style steps whose ids all lie in the first
// kUsedRows rows; `start` is its value before them.
std::vector<float> TrainTable(const Model& m, std::vector<float>* start) {
  Executor exe;
  Scope scope;
  exe.RunOnce(m.startup, &scope);
  *start = testing::ToVector<float>(scope.GetVar("table")->GetTensor());
  auto prepared = exe.Prepare(m.main, &scope);
  for (int s = 0; s < 6; ++s) {
    FeedList feed = testing::IdBatch(300 + s, 8, kUsedRows, 3);
    feed.erase(feed.begin() + 1);  // "c" is not a slot of this model
    exe.Run(prepared.get(), feed, {});
  }
  return testing::ToVector<float>(scope.GetVar("table")->GetTensor());
}

TEST(SparseRegularization, UntouchedRowsKeepTheirValues) {
  const size_t used = static_cast<size_t>(kUsedRows * kWidth);
  for (const std::string type : {"sgd", "momentum", "adam", "adagrad"}) {
    std::vector<float> start, plain_start;
    const std::vector<float> plain =
        TrainTable(Build(true, Config(type)), &plain_start);
    OptimizerConfig cfg = Config(type);
    cfg.regularization = Decay(Regularization::Kind::kL2, 0.2f);
    cfg.gradient_clip = Clip(GradientClip::Kind::kByGlobalNorm);
    const std::vector<float> got = TrainTable(Build(true, cfg), &start);
    ASSERT_EQ(start, plain_start);  // same seed, same table
    for (size_t i = used; i < got.size(); ++i)
      ASSERT_EQ(got[i], start[i]) << type << " element " << i;
    float most = 0.0f;
    for (size_t i = 0; i < used; ++i)
      most = std::max(most, std::abs(got[i] - plain[i]));
    EXPECT_GT(most, 1e-4f) << type << ": the decay and clip change nothing";
  }
}

}  // namespace
}  // namespace fluid
