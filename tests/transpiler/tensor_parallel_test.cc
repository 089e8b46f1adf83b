// Tensor parallelism (transpiler/tensor_parallel.h): which layers the rules
// split in an MLP and a transformer, what the rewrite and its lint make of
// them, what the lint refuses, and that a job split over TP in-process
// ranks (and TP x DP) trains like one process on the same global batch.
//
// Equality is to a relative 1e-5, not bitwise: a row-parallel mul sums its
// K dimension in TP partial products, then adds them, where one process
// sums it in one pass; float32 addition is not associative, so the last
// bits differ (measured: the largest relative difference in any
// parameter after 20 steps is printed by each test).
#include "transpiler/tensor_parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "src/builder/models.h"
#include "src/framework/enforce.h"
#include "src/framework/executor.h"
#include "src/framework/memory.h"
#include "src/framework/program_desc.h"
#include "src/runtime/mpi_executor.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/in_process_ranks.h"
#include "tests/transpiler/parallel_training.h"
#include "tests/transpiler/recompute_models.h"
#include "transpiler/collective_transpiler.h"
#include "transpiler/local_rewrites.h"
#include "transpiler/program_query.h"
#include "transpiler/strategy.h"

namespace fluid {
namespace {

using testing::Batch;
using testing::ErrorOf;
using testing::ExpectClose;
using testing::MlpBatches;
using testing::MlpJob;
using testing::Trained;
using testing::TrainOne;
using testing::TransformerBatch;
using testing::TransformerBatches;
using testing::TransformerJob;
using testing::TransformerSize;

TransformerSize SmallTransformer() {
  TransformerSize s;
  s.dropout = 0;  // masks drawn per rank would differ from one process's
  return s;
}

proto::DistributedStrategy Tp(int tp) {
  proto::DistributedStrategy s;
  s.set_tensor_parallel_degree(tp);
  return s;
}

int CountOps(const proto::ProgramDesc& p, const std::string& type,
             const std::string& tp_role = "") {
  int n = 0;
  for (const auto& op : p.blocks(0).ops())
    n += op.type() == type &&
         (tp_role.empty() ||
          (HasOpAttr(op, kTpRoleAttr) &&
           GetOpAttrAs<std::string>(op, kTpRoleAttr) == tp_role));
  return n;
}

// An empty job with a builder over its programs, a float input x [16] and
// an int64 label [1], for programs built in a test.
struct SmallJob {
  proto::TrainingJob job;
  std::unique_ptr<ProgramBuilder> b;
  std::string x, label;
  SmallJob() {
    job.set_version(kProgramVersion);
    *job.mutable_main() = NewProgram();
    *job.mutable_startup() = NewProgram();
    b = std::make_unique<ProgramBuilder>(job.mutable_main(),
                                         job.mutable_startup(), 5);
    x = layers::Data(b.get(), "x", Shape{16});
    label = layers::Data(b.get(), "label", Shape{1}, DataType::kInt64);
  }
  SmallJob(const SmallJob&) = delete;
  SmallJob& operator=(const SmallJob&) = delete;
};

// The first pair, and the logits layer by classes with its loss.
TEST(TensorParallelPlan, MlpSplitsItsFirstPairAndItsLogits) {
  const TensorParallelPlan plan = PlanTensorParallel(MlpJob().main(), 2);
  EXPECT_EQ(plan.column.size(), 2u);
  EXPECT_EQ(plan.row.size(), 1u);
  EXPECT_EQ(plan.losses.size(), 1u);
  EXPECT_EQ(plan.params,
            (std::set<std::string>{"fc_0.w_0", "fc_0.b_0", "fc_1.w_0",
                                   "fc_2.w_0", "fc_2.b_0"}));
  EXPECT_EQ(plan.split.at("fc_0.w_0"), 1);
  EXPECT_EQ(plan.split.at("fc_1.w_0"), 0);
  EXPECT_EQ(plan.split.at("fc_2.w_0"), 1);
  EXPECT_TRUE(plan.unsplit.empty()) << plan.unsplit[0];
}

// A loss whose softmax another op reads (an accuracy) keeps the logits
// layer whole.
TEST(TensorParallelPlan, LogitsStayWholeWhenTheSoftmaxIsRead) {
  SmallJob small;
  proto::TrainingJob& job = small.job;
  ProgramBuilder& b = *small.b;
  const std::string &x = small.x, &label = small.label;
  const std::string h = layers::Fc(&b, layers::Fc(&b, x, 8, "relu"), 8);
  const std::string logits = layers::Fc(&b, h, 4);
  const std::string probs = b.CreateTmpVar("softmax", DataType::kFloat32);
  const std::string per_row = b.CreateTmpVar("ce", DataType::kFloat32);
  b.AppendOp(MakeOp("softmax_with_cross_entropy",
                    {{"Logits", {logits}}, {"Label", {label}}},
                    {{"Softmax", {probs}}, {"Loss", {per_row}}}));
  layers::Accuracy(&b, probs, label);
  RenameVar(job.mutable_main(), layers::Mean(&b, per_row), "loss");
  MakeOptimizer(OptimizerConfig())->Minimize(&b, "loss");
  const TensorParallelPlan plan = PlanTensorParallel(job.main(), 2);
  EXPECT_TRUE(plan.losses.empty());
  ASSERT_EQ(plan.unsplit.size(), 1u);
  EXPECT_NE(plan.unsplit[0].find("is read by op"), std::string::npos)
      << plan.unsplit[0];
}

// A parameter named in keep_whole keeps its layers whole; a name that is no
// parameter is an error.
TEST(TensorParallelPlan, KeepWholeOverridesTheRules) {
  const TensorParallelPlan pair =
      PlanTensorParallel(MlpJob().main(), 2, {"fc_1.w_0"});
  EXPECT_EQ(pair.column.size(), 1u);  // the logits layer only
  EXPECT_TRUE(pair.row.empty());
  EXPECT_EQ(pair.losses.size(), 1u);
  ASSERT_FALSE(pair.unsplit.empty());
  EXPECT_NE(pair.unsplit[0].find("'fc_1.w_0' is kept whole (keep_whole)"),
            std::string::npos)
      << pair.unsplit[0];
  const TensorParallelPlan logits =
      PlanTensorParallel(MlpJob().main(), 2, {"fc_2.b_0"});
  EXPECT_EQ(logits.column.size(), 1u);  // the first pair only
  EXPECT_EQ(logits.row.size(), 1u);
  EXPECT_TRUE(logits.losses.empty());
  ASSERT_EQ(logits.unsplit.size(), 1u);
  EXPECT_NE(logits.unsplit[0].find("'fc_2.b_0' is kept whole"),
            std::string::npos)
      << logits.unsplit[0];
  TransformerSize t = SmallTransformer();
  const TensorParallelPlan lm =
      PlanTensorParallel(TransformerJob(t).main(), 2, {"embedding_0.w_0"});
  EXPECT_TRUE(lm.embeddings.empty());
  const std::string e =
      ErrorOf([&] { PlanTensorParallel(MlpJob().main(), 2, {"fc_9.w_0"}); });
  EXPECT_NE(e.find("keep_whole names 'fc_9.w_0', which is no parameter"),
            std::string::npos)
      << e;
}

TEST(TensorParallelPlan, TransformerSplitsAttentionByHeadsAndFeedForward) {
  const TransformerSize s = SmallTransformer();
  const TensorParallelPlan plan =
      PlanTensorParallel(TransformerJob(s).main(), 2);
  // Per block: q, k, v and the first feed-forward fc column-parallel; the
  // output projection and the second feed-forward fc row-parallel; the
  // logits layer column-parallel.
  EXPECT_EQ(plan.column.size(), 4u * s.layers + 1);
  EXPECT_EQ(plan.row.size(), 2u * s.layers);
  // Per block: the two head splits of q, k, v and the merge of the heads.
  EXPECT_EQ(plan.reshapes.size(), 4u * s.layers);
  for (const auto& [op, change] : plan.reshapes)
    EXPECT_TRUE(change.second * 2 == s.heads || change.second * 2 == s.width)
        << "reshape op #" << op << " to " << change.second;
  // The logits layer by vocabulary, with its loss.
  EXPECT_EQ(plan.losses.size(), 1u);
  std::string unsplit;
  for (const auto& u : plan.unsplit) unsplit += u + "\n";
  EXPECT_TRUE(plan.unsplit.empty()) << unsplit;
}

TEST(TensorParallelPlan, NothingToSplitIsAnError) {
  SmallJob small;
  proto::TrainingJob& job = small.job;
  ProgramBuilder& b = *small.b;
  const std::string &x = small.x, &label = small.label;
  const std::string probs = layers::Softmax(&b, layers::Fc(&b, x, 4));
  const std::string loss =
      layers::Mean(&b, layers::CrossEntropy(&b, probs, label));
  RenameVar(job.mutable_main(), loss, "loss");
  MakeOptimizer(OptimizerConfig())->Minimize(&b, "loss");
  const std::string e = ErrorOf([&] { PlanTensorParallel(job.main(), 2); });
  EXPECT_NE(e.find("no layer of the program can be split"), std::string::npos)
      << e;
  EXPECT_NE(e.find("a softmax along the split axis"), std::string::npos) << e;
}

TEST(TensorParallelRewrite, MlpOpsAndStartup) {
  const proto::TrainingJob out = CollectiveTranspile(MlpJob(), Tp(2), 2);
  const proto::ProgramDesc& main = out.main();
  EXPECT_EQ(CountOps(main, "mul", "column"), 2);
  EXPECT_EQ(CountOps(main, "mul", "row"), 1);
  // The row mul's partial product and the logits mul's input gradient (the
  // first column mul's input is data: no gradient to sum).
  EXPECT_EQ(CountOps(main, "c_allreduce", "reduce"), 2);
  // The loss over the logits' classes, and its gradient.
  EXPECT_EQ(CountOps(main, "c_softmax_with_cross_entropy", "loss"), 1);
  EXPECT_EQ(CountOps(main, "c_softmax_with_cross_entropy_grad", "loss"), 1);
  EXPECT_EQ(CountOps(main, "softmax_with_cross_entropy"), 0);
  // Split: three weights, two biases, their velocities.
  EXPECT_EQ(CountOps(out.startup(), "c_split"), 10);
  EXPECT_EQ(VarShape(GetVarDesc(main.blocks(0), "fc_0.w_0")), Shape({16, 16}));
  EXPECT_EQ(VarShape(GetVarDesc(main.blocks(0), "fc_1.w_0")), Shape({16, 32}));
  EXPECT_EQ(VarShape(GetVarDesc(main.blocks(0), "fc_2.w_0")), Shape({32, 2}));
  EXPECT_EQ(VarShape(GetVarDesc(main.blocks(0), "fc_0.w_0@GRAD")),
            Shape({16, 16}));
  // The gradients' reductions run over the data-parallel ring.
  for (const auto& op : main.blocks(0).ops()) {
    if (op.type() == "c_allreduce" && !HasOpAttr(op, kTpRoleAttr)) {
      EXPECT_EQ(GetOpAttrAs<int32_t>(op, "ring_id"), kDataParallelRing);
    }
  }
}

// The bytes of the persistable vars of `block` (float32 whole or sliced,
// as declared), and the largest of them.
std::pair<int64_t, int64_t> StateBytes(const proto::BlockDesc& block) {
  int64_t total = 0, largest = 0;
  for (const auto& v : block.vars()) {
    if (!v.persistable()) continue;
    const int64_t bytes =
        VarShape(v).numel() * static_cast<int64_t>(SizeOf(VarDtype(v)));
    total += bytes;
    largest = std::max(largest, bytes);
  }
  return {total, largest};
}

// Each split state is broadcast and sliced right after its initialiser, so
// the startup holds one state whole at a time: a model whose whole state
// does not fit a rank still starts when its slices do.
TEST(TensorParallelRewrite, StartupSlicesEachStateBeforeTheNextIsMade) {
  SmallJob j;
  std::string h = j.x;
  for (int i = 0; i < 4; ++i) h = layers::Fc(j.b.get(), h, 512, "relu");
  const std::string loss = layers::Mean(
      j.b.get(), layers::SoftmaxWithCrossEntropy(
                     j.b.get(), layers::Fc(j.b.get(), h, 4), j.label));
  RenameVar(j.job.mutable_main(), loss, "loss");
  OptimizerConfig opt;
  opt.type = "momentum";
  MakeOptimizer(opt)->Minimize(j.b.get(), "loss");
  j.job.set_loss_name("loss");
  const proto::TrainingJob out = CollectiveTranspile(j.job, Tp(2), 2);
  const auto& ops = out.startup().blocks(0).ops();
  int splits = 0;
  for (int i = 0; i < ops.size(); ++i) {
    if (ops[i].type() != "c_split") continue;
    ++splits;
    const std::string v = OpInput(ops[i], "X").at(0);
    ASSERT_GE(i, 2) << v;
    EXPECT_EQ(ops[i - 1].type(), "c_broadcast") << v;
    EXPECT_EQ(OpInput(ops[i - 1], "X").at(0), v);
    const std::vector<std::string> made = OpOutputNames(ops[i - 2]);
    EXPECT_NE(std::find(made.begin(), made.end(), v), made.end())
        << v << " is not made by " << ops[i - 2].type() << " before its split";
  }
  EXPECT_GE(splits, 8);  // four weights, some biases, their velocities
  // Two in-process ranks start; the most either holds at once is its
  // slices and one whole state (the biggest, 1 MiB), not every state
  // whole, which is twice the slices here.
  const auto whole = StateBytes(j.job.startup().blocks(0));
  const auto sliced = StateBytes(out.startup().blocks(0));
  ASSERT_GT(whole.first, sliced.first + 3 * whole.second / 2);
  const int64_t before = GetMemoryUsage(Place::CPU()).in_use;
  ResetPeakMemory(Place::CPU());
  testing::RunRanks(2, [&](int, Communicator* comm) {
    Scope scope;
    MPIExecutor dist(Place::CPU(), 1, comm);
    dist.Init(j.job, &scope, Tp(2));
  });
  const int64_t peak = GetMemoryUsage(Place::CPU()).peak - before;
  std::printf(
      "startup peak over 2 ranks %lld bytes; each rank's state "
      "%lld whole, %lld sliced\n",
      static_cast<long long>(peak), static_cast<long long>(whole.first),
      static_cast<long long>(sliced.first));
  EXPECT_LE(peak, 2 * (sliced.first + whole.second) + (256 << 10))
      << "whole state " << whole.first << " bytes, sliced " << sliced.first
      << ", largest " << whole.second;
}

TEST(TensorParallelRewrite, TransformerSumsInputGradientsAndClipNorms) {
  const TransformerSize s = SmallTransformer();
  const proto::TrainingJob out =
      CollectiveTranspile(TransformerJob(s), Tp(2), 4);
  // Forward: one sum per row-parallel mul and one for the embedding;
  // backward: one per block for the attention (q, k and v's input
  // gradients are added first, then summed over the group once), one for
  // the feed-forward part (their input is a layer norm's) and one for the
  // logits layer's; the clip: one per split gradient's squared norm.
  const int split_grads = CountOps(out.startup(), "c_split") / 3;  // adam
  EXPECT_EQ(CountOps(out.main(), "c_allreduce", "reduce"),
            2 * s.layers + 1 + 2 * s.layers + 1 + split_grads);
  int after_sum = 0;
  const auto& ops = out.main().blocks(0).ops();
  for (int i = 1; i < ops.size(); ++i)
    after_sum += ops[i].type() == "c_allreduce" &&
                 HasOpAttr(ops[i], kTpRoleAttr) && ops[i - 1].type() == "sum";
  EXPECT_EQ(after_sum, s.layers);
  // The token embedding: a vocabulary-parallel lookup of half the rows.
  EXPECT_EQ(CountOps(out.main(), "c_embedding"), 1);
  EXPECT_EQ(CountOps(out.main(), "c_embedding_grad"), 1);
  EXPECT_EQ(VarShape(GetVarDesc(out.main().blocks(0), "embedding_0.w_0")),
            Shape({s.vocab / 2, s.width}));
}

TEST(TensorParallelRewrite, RefusesWhatDoesNotComposeYet) {
  proto::DistributedStrategy s = Tp(2);
  s.set_amp(true);
  s.mutable_amp_configs()->set_dtype("fp16");
  s.set_sharding(true);
  const std::string f = ErrorOf([&] { CollectiveTranspile(MlpJob(), s, 4); });
  EXPECT_NE(f.find("fp16 loss scaling and optimizer-state sharding together"),
            std::string::npos)
      << f;
  const std::string e =
      ErrorOf([&] { CollectiveTranspile(MlpJob(), Tp(2), 3); });
  EXPECT_NE(e.find("must divide the rank count (3)"), std::string::npos) << e;
}

TEST(TensorParallelLint, RejectsARowMulFedAnUnsplitInput) {
  proto::TrainingJob out = CollectiveTranspile(MlpJob(), Tp(2), 2);
  proto::BlockDesc* block = out.mutable_main()->mutable_blocks(0);
  std::string input;
  for (auto& op : *block->mutable_ops()) {
    if (op.type() != "mul" || !HasOpAttr(op, kTpRoleAttr)) continue;
    if (GetOpAttrAs<std::string>(op, kTpRoleAttr) == "column") {
      input = OpInput(op, "X")[0];
    } else {
      SetOpInput(&op, "X", {input});
    }
  }
  const std::string e = ErrorOf([&] { LintTensorParallel(out, 2); });
  EXPECT_NE(e.find("which is not split"), std::string::npos) << e;
}

TEST(TensorParallelLint, RejectsAVocabularyParallelLossOfWholeLogits) {
  proto::TrainingJob out = CollectiveTranspile(MlpJob(), Tp(2), 2);
  for (auto& op : *out.mutable_main()->mutable_blocks(0)->mutable_ops())
    if (op.type() == "c_softmax_with_cross_entropy")
      SetOpInput(&op, "Logits", {"x"});
  const std::string e = ErrorOf([&] { LintTensorParallel(out, 2); });
  EXPECT_NE(e.find("the vocabulary-parallel loss"), std::string::npos) << e;
  EXPECT_NE(e.find("reads 'x', which is not split"), std::string::npos) << e;
}

TEST(TensorParallelLint, RejectsAMissingGroupSum) {
  proto::TrainingJob out = CollectiveTranspile(MlpJob(), Tp(2), 2);
  auto* ops = out.mutable_main()->mutable_blocks(0)->mutable_ops();
  for (int i = 0; i < ops->size(); ++i)
    if (HasOpAttr(ops->Get(i), kTpRoleAttr) &&
        GetOpAttrAs<std::string>(ops->Get(i), kTpRoleAttr) == "reduce") {
      ops->DeleteSubrange(i, 1);
      break;
    }
  const std::string e = ErrorOf([&] { LintTensorParallel(out, 2); });
  EXPECT_NE(e.find("is not summed over the tensor-parallel group"),
            std::string::npos)
      << e;
}

// --- Training ---------------------------------------------------------

// `nranks` in-process ranks, tp per group (testing::TrainParallel).
Trained TrainRanks(const proto::TrainingJob& job, int nranks, int tp,
                   const Batch& batch, int steps,
                   proto::DistributedStrategy strategy = {}) {
  strategy.set_tensor_parallel_degree(tp);
  return testing::TrainParallel(job, nranks, strategy, batch, steps);
}

TEST(TensorParallelTraining, MlpTp2MatchesOneProcess) {
  const proto::TrainingJob job = MlpJob();
  ExpectClose(TrainOne(job, MlpBatches(), 20),
              TrainRanks(job, 2, 2, MlpBatches(), 20));
}

// keep_whole overrides the rules: the logits layer (and its loss) stays
// whole, and training still equals one process.
TEST(TensorParallelTraining, MlpTp2KeepingTheLogitsWholeMatchesOneProcess) {
  const proto::TrainingJob job = MlpJob();
  proto::DistributedStrategy s;
  s.mutable_tensor_parallel_configs()->add_keep_whole("fc_2.w_0");
  const proto::TrainingJob out = CollectiveTranspile(
      job,
      [&] {
        proto::DistributedStrategy t = s;
        t.set_tensor_parallel_degree(2);
        return t;
      }(),
      2);
  EXPECT_EQ(CountOps(out.main(), "c_softmax_with_cross_entropy"), 0);
  EXPECT_EQ(CountOps(out.main(), "mul", "column"), 1);
  ExpectClose(TrainOne(job, MlpBatches(), 20),
              TrainRanks(job, 2, 2, MlpBatches(), 20, s));
}

// Gradient merge over 2 micro-steps at tp 2 x dp 2: the split layers'
// group sums run every micro-step, the accumulators are split like the
// gradients, the optimizer (and the clip's sums of norms) once per merged
// step; against one process merging the same micro-steps.
TEST(TensorParallelTraining, MlpTp2Dp2WithGradientMergeMatchesOneProcess) {
  const proto::TrainingJob job = MlpJob(/*clip=*/true);
  proto::DistributedStrategy gm;
  gm.set_gradient_merge(true);
  gm.mutable_gradient_merge_configs()->set_k_steps(2);
  const proto::TrainingJob merged = LocalRewrites(job, CanonicalStrategy(gm));
  ExpectClose(TrainOne(merged, MlpBatches(), 20),
              TrainRanks(job, 4, 2, MlpBatches(), 20, gm));
}

TEST(TensorParallelTraining, MlpTp2Dp2WithClipMatchesOneProcess) {
  const proto::TrainingJob job = MlpJob(/*clip=*/true);
  ExpectClose(TrainOne(job, MlpBatches(), 20),
              TrainRanks(job, 4, 2, MlpBatches(), 20));
}

TEST(TensorParallelTraining, MlpTp4MatchesOneProcess) {
  const proto::TrainingJob job = MlpJob();
  ExpectClose(TrainOne(job, MlpBatches(), 20),
              TrainRanks(job, 4, 4, MlpBatches(), 20));
}

// Recompute: the replays of split layers split as the layers do (a
// replayed row mul's partial product is summed over the group again), so
// the values, and the training, are those of one process.
TEST(TensorParallelTraining, TransformerTp2WithRecomputeMatchesOneProcess) {
  TransformerSize s = SmallTransformer();
  s.optimizer = "momentum";
  const proto::TrainingJob job = TransformerJob(s);
  proto::DistributedStrategy r;
  r.set_recompute(true);
  proto::DistributedStrategy t = r;
  t.set_tensor_parallel_degree(2);
  const proto::TrainingJob out = CollectiveTranspile(job, t, 2);
  int replayed_sums = 0;
  const auto& ops = out.main().blocks(0).ops();
  for (int i = 1; i < ops.size(); ++i)
    replayed_sums += ops[i].type() == "c_allreduce" &&
                     HasOpAttr(ops[i], kTpRoleAttr) &&
                     HasOpAttr(ops[i - 1], "recompute_segment");
  EXPECT_GT(replayed_sums, 0);
  ExpectClose(TrainOne(job, TransformerBatches(s), 20),
              TrainRanks(job, 2, 2, TransformerBatches(s), 20, r));
}

// The key projections' biases (the second of each block's six fc layers);
// Adam at 1e-3 for 20 steps moves each run's by at most 0.02.
std::set<std::string> KeyBiases(const TransformerSize& s) {
  std::set<std::string> out;
  for (int64_t l = 0; l < s.layers; ++l)
    out.insert("fc_" + std::to_string(6 * l + 1) + ".b_0");
  return out;
}

TEST(TensorParallelTraining, TransformerTp2MatchesOneProcess) {
  const TransformerSize s = SmallTransformer();
  const proto::TrainingJob job = TransformerJob(s);
  ExpectClose(TrainOne(job, TransformerBatches(s), 20),
              TrainRanks(job, 2, 2, TransformerBatches(s), 20), KeyBiases(s),
              2 * 20 * 1e-3);
}

TEST(TensorParallelTraining, TransformerTp2Dp2MatchesOneProcess) {
  const TransformerSize s = SmallTransformer();
  const proto::TrainingJob job = TransformerJob(s);
  ExpectClose(TrainOne(job, TransformerBatches(s), 20),
              TrainRanks(job, 4, 2, TransformerBatches(s), 20), KeyBiases(s),
              2 * 20 * 1e-3);
}

// bf16 (mixed precision's casts of the split weights are split with them;
// the group sums add bf16 partial products): as one process in bf16, to
// bf16's precision (8 bits of mantissa: 1e-2 relative).
TEST(TensorParallelTraining, MlpTp2Bf16MatchesOneProcessBf16) {
  const proto::TrainingJob job = MlpJob();
  proto::DistributedStrategy amp;
  amp.set_amp(true);
  amp.mutable_amp_configs()->set_dtype("bf16");
  const proto::TrainingJob one = LocalRewrites(job, CanonicalStrategy(amp));
  ExpectClose(TrainOne(one, MlpBatches(), 20),
              TrainRanks(job, 2, 2, MlpBatches(), 20, amp), {}, 0, 1e-2);
}

// fp16 with dynamic loss scaling: each rank checks its slices for
// overflow, the group takes the maximum of the flags before the loss
// scaling is updated, so all ranks skip the same steps. Started at a scale
// of 2^20, the first steps overflow and are skipped (decr_every 1), as
// they are in one process: the runs agree only if every rank skipped
// exactly those (measured: 4.3e-4 relative after 20 steps, fp16's
// rounding of the split products).
TEST(TensorParallelTraining, MlpTp2Fp16SkipsTheStepsOneProcessSkips) {
  const proto::TrainingJob job = MlpJob(/*clip=*/true);
  const proto::DistributedStrategy amp = testing::OverflowingFp16();
  proto::DistributedStrategy tp = amp;
  tp.set_tensor_parallel_degree(2);
  const proto::TrainingJob out = CollectiveTranspile(job, tp, 2);
  testing::ExpectOverflowFlagAgreed(out.main().blocks(0), kTensorParallelRing);
  const proto::TrainingJob one = LocalRewrites(job, CanonicalStrategy(amp));
  // Overflowing at that scale, one process's second step is skipped: the
  // parameters after two steps are those after one.
  EXPECT_EQ(TrainOne(one, MlpBatches(), 2).params,
            TrainOne(one, MlpBatches(), 1).params);
  ExpectClose(TrainOne(one, MlpBatches(), 20),
              TrainRanks(job, 2, 2, MlpBatches(), 20, amp), {}, 0, 1e-2);
}

TEST(TensorParallelTraining, TransformerTp2Bf16MatchesOneProcessBf16) {
  const TransformerSize s = SmallTransformer();
  const proto::TrainingJob job = TransformerJob(s);
  proto::DistributedStrategy amp;
  amp.set_amp(true);
  amp.mutable_amp_configs()->set_dtype("bf16");
  const proto::TrainingJob one = LocalRewrites(job, CanonicalStrategy(amp));
  // The losses to bf16's precision; the parameters, which Adam moves by
  // up to its learning rate per step whatever the bf16 noise in a
  // gradient, within the bound of the key biases above.
  ExpectClose(TrainOne(one, TransformerBatches(s), 20),
              TrainRanks(job, 2, 2, TransformerBatches(s), 20, amp), {"*"},
              2 * 20 * 1e-3, 1e-2);
}

// ZeRO on the data-parallel ring: the optimizer state of each tensor-
// parallel slice sharded over the ranks holding that slice (at stage 3 the
// slices too: every one of them, however small, so that the test's small
// layers are sharded).
proto::DistributedStrategy Sharded(int stage) {
  proto::DistributedStrategy s;
  s.set_sharding(true);
  s.mutable_sharding_configs()->set_stage(stage);
  s.mutable_sharding_configs()->set_param_persistence_threshold(0);
  return s;
}

TEST(TensorParallelTraining, MlpTp2Dp2ShardedMatchesOneProcess) {
  const proto::TrainingJob job = MlpJob();
  const Trained one = TrainOne(job, MlpBatches(), 20);
  for (int stage : {1, 2, 3}) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    ExpectClose(one, TrainRanks(job, 4, 2, MlpBatches(), 20, Sharded(stage)));
  }
}

TEST(TensorParallelRewrite, RefusesShardingWithAGlobalNormClip) {
  proto::DistributedStrategy s = Sharded(2);
  s.set_tensor_parallel_degree(2);
  const std::string e =
      ErrorOf([&] { CollectiveTranspile(MlpJob(/*clip=*/true), s, 4); });
  EXPECT_NE(e.find("optimizer-state sharding and a global-norm gradient clip"),
            std::string::npos)
      << e;
  EXPECT_EQ(ErrorOf([&] { CollectiveTranspile(MlpJob(), s, 4); }), "");
}

// Dropout on the attention weights keeps the attention whole (each rank
// would draw other masks than one process); the feed-forward pairs still
// split, and the residual dropouts, on whole values, draw one process's
// masks on every rank of the group.
TEST(TensorParallelTraining, TransformerTp2WithDropoutMatchesOneProcess) {
  TransformerSize s = SmallTransformer();
  s.dropout = 0.1f;
  const proto::TrainingJob job = TransformerJob(s);
  const TensorParallelPlan plan = PlanTensorParallel(job.main(), 2);
  // The feed-forward pairs and the logits layer (the attention meets the
  // dropout of its output).
  EXPECT_EQ(plan.column.size(), static_cast<size_t>(s.layers) + 1);
  EXPECT_EQ(plan.row.size(), static_cast<size_t>(s.layers));
  EXPECT_EQ(plan.losses.size(), 1u);
  std::string unsplit;
  for (const auto& u : plan.unsplit) unsplit += u + "\n";
  EXPECT_NE(unsplit.find("reaches op dropout"), std::string::npos) << unsplit;
  ExpectClose(TrainOne(job, TransformerBatches(s), 20),
              TrainRanks(job, 2, 2, TransformerBatches(s), 20), KeyBiases(s),
              2 * 20 * 1e-3);
}

// Four ranks, one head each (a transformer of 4 heads), with momentum:
// under Adam the weight elements whose gradient is near zero amplify the
// four partial sums' rounding as the key biases do (measured: 2.7e-4
// relative on fc_5.w_0 after 20 steps), with momentum 4.9e-7.
TEST(TensorParallelTraining, TransformerTp4MatchesOneProcess) {
  TransformerSize s = SmallTransformer();
  s.heads = 4;
  s.optimizer = "momentum";
  const proto::TrainingJob job = TransformerJob(s);
  const TensorParallelPlan plan = PlanTensorParallel(job.main(), 4);
  EXPECT_EQ(plan.column.size(), 4u * s.layers + 1);  // and the logits
  EXPECT_EQ(plan.row.size(), 2u * s.layers);
  ExpectClose(TrainOne(job, TransformerBatches(s), 20),
              TrainRanks(job, 4, 4, TransformerBatches(s), 20));
}

}  // namespace
}  // namespace fluid
