// Pipeline parallelism (transpiler/pipeline.h): the schedules, where the
// cuts go, what each stage runs, what the lint refuses (a send with no
// receive, a schedule mismatch, a deadlock), and that a pipeline over
// in-process ranks (and pipeline x data parallel) trains like one process
// on the same global batch, with 1F1B and FThenB, with dropout.
//
// Equality is to a relative 1e-5, not bitwise: each stage sums its
// parameters' gradients over the micro-batches, where one process sums
// the whole batch's rows in one matrix product; float32 addition is not
// associative, so the last bits differ (the largest difference is
// printed by each test).
#include "transpiler/pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "src/builder/embedding_layers.h"
#include "src/builder/sequence_ops_layers.h"
#include "src/framework/enforce.h"
#include "src/framework/grad_op_maker.h"
#include "src/framework/loss_scaling_state.h"
#include "src/framework/program_desc.h"
#include "tests/transpiler/parallel_training.h"
#include "transpiler/collective_transpiler.h"
#include "transpiler/local_rewrites.h"
#include "transpiler/pipeline_plan.h"
#include "transpiler/strategy.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::ExpectClose;
using testing::MlpBatches;
using testing::MlpJob;
using testing::Trained;
using testing::TrainOne;
using testing::TrainParallel;
using testing::TransformerBatches;
using testing::TransformerJob;
using testing::TransformerSize;

proto::DistributedStrategy Pp(int stages, int micro_batches,
                              const std::string& schedule = "1F1B",
                              int forwards_ahead = 0) {
  proto::DistributedStrategy s;
  s.set_pipeline_stages(stages);
  s.mutable_pipeline_configs()->set_micro_batches(micro_batches);
  s.mutable_pipeline_configs()->set_schedule(schedule);
  s.mutable_pipeline_configs()->set_forwards_ahead(forwards_ahead);
  return s;
}

// Hybrid: tensor parallelism inside each stage, stages, data parallelism
// across: [pp][dp][tp].
proto::DistributedStrategy Hybrid(int tp, int pp, int micro_batches) {
  proto::DistributedStrategy s = Pp(pp, micro_batches);
  s.set_tensor_parallel_degree(tp);
  return s;
}

// The all-stage program of `job` (PipelineRewrite after the local
// rewrites, as CollectiveTranspile runs it).
proto::TrainingJob AllStages(const proto::TrainingJob& job,
                             const proto::DistributedStrategy& s) {
  proto::TrainingJob local = LocalRewrites(job, CanonicalStrategy(s));
  *local.mutable_strategy() = CanonicalStrategy(s);
  return PipelineRewrite(local);
}

int Count(const proto::ProgramDesc& p, const std::string& type) {
  int n = 0;
  for (const auto& op : p.blocks(0).ops()) n += op.type() == type;
  return n;
}

std::string Steps(const std::vector<PipelineStep>& steps) {
  std::string out;
  for (const PipelineStep& s : steps)
    out += (s.forward ? "F" : "B") + std::to_string(s.micro_batch) + " ";
  return out;
}

TEST(PipelineSchedule, OneForwardOneBackward) {
  // Stage s of p runs p - s - 1 forwards first, then alternates.
  EXPECT_EQ(Steps(StageSchedule(0, 4, 8, "1F1B")),
            "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7 ");
  EXPECT_EQ(Steps(StageSchedule(3, 4, 8, "1F1B")),
            "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 ");
  EXPECT_EQ(Steps(StageSchedule(1, 4, 2, "1F1B")), "F0 F1 B0 B1 ");
  EXPECT_EQ(Steps(StageSchedule(1, 2, 3, "FThenB")), "F0 F1 F2 B0 B1 B2 ");
  EXPECT_NE(
      ErrorOf([] { StageSchedule(0, 2, 2, "GPipe"); }).find("unknown schedule"),
      std::string::npos);
}

// forwards_ahead: every stage but the last runs that many more forwards
// before its first backward (at most all of them); the last is unchanged.
TEST(PipelineSchedule, ForwardsAheadDelayEachStagesFirstBackward) {
  EXPECT_EQ(Steps(StageSchedule(0, 2, 8, "1F1B", 1)),
            "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7 ");
  EXPECT_EQ(Steps(StageSchedule(1, 2, 8, "1F1B", 1)),
            Steps(StageSchedule(1, 2, 8, "1F1B")));
  EXPECT_EQ(Steps(StageSchedule(1, 4, 8, "1F1B", 2)),
            "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 F7 B3 B4 B5 B6 B7 ");
  EXPECT_EQ(Steps(StageSchedule(0, 2, 3, "1F1B", 5)), "F0 F1 F2 B0 B1 B2 ");
  const std::string fthenb =
      ErrorOf([] { StageSchedule(0, 2, 4, "FThenB", 1); });
  EXPECT_NE(fthenb.find("forwards_ahead = 1 applies to the 1F1B schedule"),
            std::string::npos)
      << fthenb;
  EXPECT_NE(ErrorOf([] {
              StageSchedule(0, 2, 4, "1F1B", -1);
            }).find("forwards_ahead must be >= 0"),
            std::string::npos);
}

TEST(PipelinePlan, BalancesTransformerLayersAcrossStages) {
  TransformerSize s;
  s.layers = 4;
  const proto::TrainingJob job = TransformerJob(s);
  const PipelinePlan plan = PlanPipeline(job.main().blocks(0), 4);
  // Every stage holds parameters; the causal mask (built from nothing)
  // runs on every stage.
  std::set<int> stages;
  for (const auto& [name, stage] : plan.value_stage) {
    const proto::VarDesc* v = FindVarDesc(job.main().blocks(0), name);
    if (v != nullptr && v->persistable()) stages.insert(stage);
  }
  EXPECT_EQ(stages, (std::set<int>{0, 1, 2, 3}));
  EXPECT_FALSE(plan.data_only.empty());
}

TEST(PipelineRewrite, EachStageSendsWhatTheNextReceives) {
  const proto::TrainingJob job = MlpJob();
  const proto::TrainingJob all = AllStages(job, Pp(2, 4));
  const proto::TrainingJob s0 = PipelineStageJob(all, 0);
  const proto::TrainingJob s1 = PipelineStageJob(all, 1);
  // Per micro-batch: activations forward, their gradients back.
  EXPECT_EQ(Count(s0.main(), "send_v2"), Count(s1.main(), "recv_v2"));
  EXPECT_EQ(Count(s1.main(), "send_v2"), Count(s0.main(), "recv_v2"));
  EXPECT_EQ(Count(s0.main(), "send_v2") % 4, 0);
  EXPECT_GT(Count(s0.main(), "send_v2"), 0);
  // Each stage updates its own parameters only.
  std::set<std::string> p0, p1;
  for (const auto& [p, g] : OptimizedParams(s0.main())) p0.insert(p);
  for (const auto& [p, g] : OptimizedParams(s1.main())) p1.insert(p);
  EXPECT_FALSE(p0.empty());
  EXPECT_FALSE(p1.empty());
  for (const std::string& p : p0) EXPECT_EQ(p1.count(p), 0u) << p;
  EXPECT_EQ(p0.size() + p1.size(), OptimizedParams(job.main()).size());
  // The loss reaches every stage.
  for (const auto* st : {&s0, &s1}) {
    bool broadcast = false;
    for (const auto& op : st->main().blocks(0).ops())
      broadcast = broadcast || (op.type() == "c_broadcast" &&
                                OpOutput(op, "Out")[0] == "loss");
    EXPECT_TRUE(broadcast);
  }
  // The startup makes only the stage's parameters.
  for (const auto& v : s0.startup().blocks(0).vars())
    EXPECT_EQ(p1.count(v.name()), 0u) << v.name();
}

TEST(PipelineRewrite, StageAttrsPlaceOpsAndAreChecked) {
  proto::TrainingJob job = MlpJob();
  auto* ops = job.mutable_main()->mutable_blocks(0)->mutable_ops();
  // Everything from the second fc on runs on stage 1.
  int muls = 0;
  for (auto& op : *ops) {
    if (op.type() == "mul" && ++muls == 2)
      SetOpAttr(&op, kPipelineStageAttr, int32_t{1});
  }
  const PipelinePlan plan = PlanPipeline(job.main().blocks(0), 2);
  EXPECT_EQ(plan.value_stage.at("fc_0.w_0"), 0);
  EXPECT_EQ(plan.value_stage.at("fc_1.w_0"), 1);
  EXPECT_EQ(plan.value_stage.at("fc_2.w_0"), 1);
  for (auto& op : *ops)
    if (op.type() == "mul") SetOpAttr(&op, kPipelineStageAttr, int32_t{2});
  EXPECT_NE(ErrorOf([&] {
              PlanPipeline(job.main().blocks(0), 2);
            }).find("stage 2 of a pipeline of 2 stages"),
            std::string::npos);
}

TEST(PipelineRewrite, AValueSkippingAStageIsRefused) {
  proto::TrainingJob job = MlpJob();
  // The first fc on stage 0, the second (reading the first's relu) on 2.
  int muls = 0;
  for (auto& op : *job.mutable_main()->mutable_blocks(0)->mutable_ops())
    if (op.type() == "mul")
      SetOpAttr(&op, kPipelineStageAttr, int32_t{++muls == 1 ? 0 : 2});
  const std::string error =
      ErrorOf([&] { PlanPipeline(job.main().blocks(0), 3); });
  EXPECT_NE(error.find("crosses one cut at a time"), std::string::npos)
      << error;
}

// Word ids (a batch of sequences, lod_level 1) embedded (`sparse`: the
// table's gradient as sparse rows), through an fc per word, averaged per
// sequence, classified; momentum.
proto::TrainingJob SequenceJob(bool sparse = false) {
  proto::TrainingJob job;
  job.set_version(kProgramVersion);
  *job.mutable_main() = NewProgram();
  *job.mutable_startup() = NewProgram();
  ProgramBuilder b(job.mutable_main(), job.mutable_startup(), 5);
  const std::string words =
      layers::Data(&b, "words", Shape{1}, DataType::kInt64);
  FindMutableVarDesc(job.mutable_main()->mutable_blocks(0), words)
      ->set_lod_level(1);
  const std::string label =
      layers::Data(&b, "label", Shape{1}, DataType::kInt64);
  layers::EmbeddingOptions emb;
  emb.is_sparse = sparse;
  std::string h = layers::Embedding(&b, words, {20, 8}, emb);
  h = layers::Fc(&b, h, 16, "relu");
  h = layers::SequencePool(&b, h, "average");
  testing::MinimizeWithMomentum(
      &b, &job,
      layers::Mean(&b, layers::SoftmaxWithCrossEntropy(&b, layers::Fc(&b, h, 4),
                                                       label)));
  return job;
}

// Step `step`'s 8 sentences of 1 to 4 words (one of none), sentences
// [8 * part / parts, 8 * (part + 1) / parts) of them.
testing::Batch SequenceBatches() {
  return [](int step, int part, int parts) {
    std::vector<int64_t> ids, labels;
    LoD lod{0};
    for (int i = 8 * part / parts; i < 8 * (part + 1) / parts; ++i) {
      const int len = (step * 3 + i) % 5 == 4 ? 0 : 1 + (step + i) % 4;
      for (int j = 0; j < len; ++j) ids.push_back((step * 7 + i * 3 + j) % 20);
      lod.push_back(lod.back() + len);
      labels.push_back((i + step) % 4);
    }
    Tensor w, l;
    std::copy(
        ids.begin(), ids.end(),
        w.mutable_data<int64_t>(Shape({static_cast<int64_t>(ids.size()), 1})));
    w.set_lod(lod);
    std::copy(labels.begin(), labels.end(),
              l.mutable_data<int64_t>(
                  Shape({static_cast<int64_t>(labels.size()), 1})));
    return FeedList{{"words", w}, {"label", l}};
  };
}

// A sparse gradient (the table's rows) is kept per micro-batch and
// concatenated once after the last backward; one `sum` per stage that
// holds the table, no in-place add of rows.
TEST(PipelineRewrite, SparseGradientsAreConcatenatedOncePerStep) {
  const proto::TrainingJob all =
      AllStages(SequenceJob(/*sparse=*/true), Pp(2, 4));
  int sums = 0;
  for (const auto& op : all.main().blocks(0).ops()) {
    if (op.type() != "sum" ||
        OpOutput(op, "Out").at(0).find("embedding") == std::string::npos)
      continue;
    ++sums;
    EXPECT_EQ(OpInput(op, "X").size(), 4u);
    EXPECT_EQ(GetOpAttrAs<int32_t>(op, kPipelineStageAttr), 0);
  }
  EXPECT_EQ(sums, 1);
}

// An fc weight's gradient accumulates over the micro-batches inside its
// mul_grad (YGradIn, in place) from the second micro-batch on; a bias's
// still takes an elementwise_add per later micro-batch. Training equal to
// one process: MlpPp2MatchesOneProcess and the rest.
TEST(PipelineRewrite, FcWeightGradientsAccumulateInsideTheProduct) {
  const proto::TrainingJob job = MlpJob();
  const proto::TrainingJob all = AllStages(job, Pp(2, 4));
  int weights = 0, biases = 0;
  for (const auto& [param, grad] : OptimizedParams(job.main())) {
    SCOPED_TRACE(grad);
    int products = 0, accumulating = 0, adds = 0;
    for (const auto& op : all.main().blocks(0).ops()) {
      if (op.type() == "mul_grad" &&
          OpOutput(op, GradSlot("Y")) == std::vector<std::string>{grad}) {
        ++products;
        if (!OpInput(op, "YGradIn").empty()) {
          EXPECT_EQ(OpInput(op, "YGradIn"), std::vector<std::string>{grad});
          ++accumulating;
        }
      }
      adds += op.type() == "elementwise_add" &&
              OpOutput(op, "Out") == std::vector<std::string>{grad};
    }
    if (products > 0) {
      ++weights;
      EXPECT_EQ(products, 4);
      EXPECT_EQ(accumulating, 3);  // every micro-batch but the first
      EXPECT_EQ(adds, 0);
    } else {
      ++biases;
      EXPECT_EQ(adds, 3);
    }
  }
  EXPECT_GT(weights, 0);
  EXPECT_GT(biases, 0);
}

// fp16 loss scaling: each stage checks its own gradients, the pipeline
// takes the maximum of the stages' overflow flags, then each stage updates
// its copy of the loss scale.
TEST(PipelineRewrite, Fp16StagesCheckTheirOwnGradientsAndAgree) {
  proto::DistributedStrategy s = Pp(2, 2);
  s.MergeFrom(testing::OverflowingFp16());
  const proto::TrainingJob all = AllStages(MlpJob(/*clip=*/true), s);
  std::set<std::string> checked;
  for (int stage = 0; stage < 2; ++stage) {
    SCOPED_TRACE(stage);
    const proto::TrainingJob st = PipelineStageJob(all, stage);
    const proto::BlockDesc& b = st.main().blocks(0);
    const int check = testing::ExpectOverflowFlagAgreed(b, kPipelineRing);
    ASSERT_GE(check, 0);
    for (const std::string& g : OpInput(b.ops(check), "X")) {
      EXPECT_TRUE(checked.insert(g).second) << g << " checked twice";
      EXPECT_NE(FindVarDesc(b, g), nullptr) << g;
    }
    for (const auto& op : b.ops()) {
      if (op.type() == "update_loss_scaling") {
        EXPECT_EQ(OpInput(op, "X"), OpInput(b.ops(check), "X"));
      }
    }
  }
  // Every parameter's gradient is checked, on one stage.
  EXPECT_EQ(checked.size(), OptimizedParams(MlpJob(true).main()).size());
}

// A global-norm clip sums each stage's squared norms, then the stages'.
TEST(PipelineRewrite, GlobalNormClipSumsOverTheStages) {
  const proto::TrainingJob all = AllStages(MlpJob(/*clip=*/true), Pp(2, 2));
  for (int stage = 0; stage < 2; ++stage) {
    const proto::TrainingJob st = PipelineStageJob(all, stage);
    int sums = 0;
    for (const auto& op : st.main().blocks(0).ops())
      sums += op.type() == "c_allreduce" &&
              GetOpAttrAs<int32_t>(op, "ring_id") == kPipelineRing;
    EXPECT_EQ(sums, 1) << "stage " << stage;
  }
}

// The index of the first op of `type` on `stage` in `all`.
int FirstOp(const proto::TrainingJob& all, int stage, const std::string& type) {
  const auto& ops = all.main().blocks(0).ops();
  for (int i = 0; i < ops.size(); ++i)
    if (ops[i].type() == type &&
        GetOpAttrAs<int32_t>(ops[i], kPipelineStageAttr) == stage)
      return i;
  return -1;
}

TEST(PipelineLint, RejectsASendWithNoReceive) {
  proto::TrainingJob all = AllStages(MlpJob(), Pp(2, 2));
  auto* ops = all.mutable_main()->mutable_blocks(0)->mutable_ops();
  ops->erase(ops->begin() + FirstOp(all, 1, "recv_v2"));
  const std::string error = ErrorOf([&] { LintPipeline(all); });
  EXPECT_NE(error.find("has no matching recv_v2"), std::string::npos) << error;
}

TEST(PipelineLint, RejectsAScheduleMismatch) {
  proto::TrainingJob all = AllStages(MlpJob(), Pp(2, 2));
  // Stage 1 receives micro-batch 1's activations before micro-batch 0's.
  auto* ops = all.mutable_main()->mutable_blocks(0)->mutable_ops();
  std::vector<int> recvs;
  for (int i = 0; i < ops->size(); ++i)
    if ((*ops)[i].type() == "recv_v2" &&
        GetOpAttrAs<int32_t>((*ops)[i], kPipelineStageAttr) == 1 &&
        !HasRole((*ops)[i], OpRole::kBackward))
      recvs.push_back(i);
  ASSERT_EQ(recvs.size(), 2u);
  std::swap(*(*ops)[recvs[0]].mutable_outputs(),
            *(*ops)[recvs[1]].mutable_outputs());
  const std::string error = ErrorOf([&] { LintPipeline(all); });
  EXPECT_NE(error.find("schedule mismatch"), std::string::npos) << error;
}

bool Reads(const proto::OpDesc& op, const std::string& name) {
  const std::vector<std::string> in = OpInputNames(op);
  return std::find(in.begin(), in.end(), name) != in.end();
}

// Whether `op` is a c_wait for a receive issued ahead.
bool IsReceiveWait(const proto::OpDesc& op) {
  return op.type() == "c_wait" &&
         OpInput(op, "Handle").at(0).find(kRecvHandleSuffix) !=
             std::string::npos;
}

// The index of the first c_wait on `stage` for a receive (stage 0 of two:
// a gradient; stage 1: activations).
int FirstReceiveWait(const proto::TrainingJob& all, int stage) {
  const auto& ops = all.main().blocks(0).ops();
  for (int i = 0; i < ops.size(); ++i)
    if (IsReceiveWait(ops[i]) &&
        GetOpAttrAs<int32_t>(ops[i], kPipelineStageAttr) == stage)
      return i;
  return -1;
}

TEST(PipelineLint, RejectsADeadlock) {
  proto::TrainingJob all = AllStages(MlpJob(), Pp(2, 2));
  // Stage 0 waits for micro-batch 0's gradient before sending its
  // activations.
  auto* ops = all.mutable_main()->mutable_blocks(0)->mutable_ops();
  const int wait = FirstReceiveWait(all, 0);
  const int send = FirstOp(all, 0, "send_v2");
  ASSERT_GE(wait, 0);
  ASSERT_LT(send, wait);
  for (int i = wait; i > send; --i) ops->SwapElements(i, i - 1);
  const std::string error = ErrorOf([&] { LintPipeline(all); });
  EXPECT_NE(error.find("deadlocks"), std::string::npos) << error;
  EXPECT_NE(error.find("stage 0 waits in c_wait for recv_v2 of '"),
            std::string::npos)
      << error;
}

TEST(PipelineLint, ReceivesAreIssuedAheadAndWaitedBeforeTheirReaders) {
  const proto::TrainingJob all = AllStages(MlpJob(), Pp(2, 4));
  // Each stage issues micro-batch k + 1's receive of a value right after
  // its wait for micro-batch k, and the first where its schedule begins.
  const auto& ops = all.main().blocks(0).ops();
  for (int stage : {0, 1}) {
    std::vector<int> starts, waits;
    for (int i = 0; i < ops.size(); ++i) {
      if (GetOpAttrAs<int32_t>(ops[i], kPipelineStageAttr) != stage) continue;
      if (ops[i].type() == "recv_v2") starts.push_back(i);
      if (IsReceiveWait(ops[i])) waits.push_back(i);
    }
    ASSERT_EQ(starts.size(), 4u) << "stage " << stage;
    ASSERT_EQ(waits.size(), 4u) << "stage " << stage;
    for (size_t k = 1; k < 4; ++k)
      EXPECT_EQ(starts[k], waits[k - 1] + 1) << "stage " << stage;
    EXPECT_LT(starts[0], FirstOp(all, stage, "mul")) << "stage " << stage;
    if (stage == 0) {
      EXPECT_LT(starts[0], FirstOp(all, 0, "send_v2"));
    }
  }
  LintPipeline(all);
}

TEST(PipelineLint, RejectsAValueReadBeforeItsReceiveWaits) {
  proto::TrainingJob all = AllStages(MlpJob(), Pp(2, 2));
  auto* ops = all.mutable_main()->mutable_blocks(0)->mutable_ops();
  // Stage 1's first wait for activations, moved after their first reader.
  const int wait = FirstReceiveWait(all, 1);
  ASSERT_GE(wait, 0);
  const std::string value = OpOutput((*ops)[wait], "Out").at(0);
  int reader = wait + 1;
  while (reader < ops->size() && !Reads((*ops)[reader], value)) ++reader;
  ASSERT_LT(reader, ops->size());
  for (int i = wait; i < reader; ++i) ops->SwapElements(i, i + 1);
  std::string error = ErrorOf([&] { LintPipeline(all); });
  EXPECT_NE(error.find("reads '" + value +
                       "' before the c_wait of its "
                       "recv_v2"),
            std::string::npos)
      << error;
  // And with the wait gone.
  ops->erase(ops->begin() + reader);
  error = ErrorOf([&] { LintPipeline(all); });
  EXPECT_NE(error.find("reads '" + value + "'"), std::string::npos) << error;
}

TEST(PipelineLint, RejectsAValueReadInsideABlockBeforeItsReceiveWaits) {
  proto::TrainingJob all = AllStages(MlpJob(), Pp(2, 2));
  proto::ProgramDesc* main = all.mutable_main();
  const int wait = FirstReceiveWait(all, 1);
  ASSERT_GE(wait, 0);
  const std::string value = OpOutput(main->blocks(0).ops(wait), "Out").at(0);
  // A conditional on stage 1, just before the wait, whose block (two
  // levels down) reads the value: the block runs where the op runs.
  const int32_t outer = main->blocks_size(), inner = outer + 1;
  proto::BlockDesc* block = main->add_blocks();
  block->set_idx(outer);
  block->set_parent_idx(0);
  block = main->add_blocks();
  block->set_idx(inner);
  block->set_parent_idx(outer);
  *main->mutable_blocks(outer)->add_ops() =
      MakeOp("conditional_block", {}, {}, {{"sub_block", inner}});
  *main->mutable_blocks(inner)->add_ops() =
      MakeOp("scale", {{"X", {value}}}, {{"Out", {value + "@scaled"}}});
  proto::OpDesc cond =
      MakeOp("conditional_block", {}, {}, {{"sub_block", outer}});
  SetOpAttr(&cond, kPipelineStageAttr, int32_t{1});
  auto* ops = main->mutable_blocks(0)->mutable_ops();
  *ops->Add() = cond;
  for (int i = ops->size() - 1; i > wait; --i) ops->SwapElements(i, i - 1);
  const std::string error = ErrorOf([&] { LintPipeline(all); });
  EXPECT_NE(error.find("conditional_block on stage 1 reads '" + value +
                       "' before the c_wait of its recv_v2"),
            std::string::npos)
      << error;
  // After the wait it is fine.
  ops->SwapElements(wait, wait + 1);
  EXPECT_NO_THROW(LintPipeline(all));
}

TEST(PipelineLint, RejectsAReceiveNeverWaitedFor) {
  proto::TrainingJob all = AllStages(MlpJob(), Pp(2, 2));
  auto* ops = all.mutable_main()->mutable_blocks(0)->mutable_ops();
  // Stage 0's first wait for a gradient, and every reader of its value
  // there.
  const int wait = FirstReceiveWait(all, 0);
  ASSERT_GE(wait, 0);
  const std::string value = OpOutput((*ops)[wait], "Out").at(0);
  for (int i = ops->size() - 1; i >= wait; --i)
    if (i == wait || (Reads((*ops)[i], value) &&
                      GetOpAttrAs<int32_t>((*ops)[i], kPipelineStageAttr) == 0))
      ops->erase(ops->begin() + i);
  const std::string error = ErrorOf([&] { LintPipeline(all); });
  EXPECT_NE(error.find("is never waited for"), std::string::npos) << error;
}

TEST(PipelineTraining, MlpPp2MatchesOneProcess) {
  const proto::TrainingJob job = MlpJob();
  const auto one = TrainOne(job, MlpBatches(), 20);
  for (const char* schedule : {"1F1B", "FThenB"}) {
    SCOPED_TRACE(schedule);
    ExpectClose(one,
                TrainParallel(job, 2, Pp(2, 4, schedule), MlpBatches(), 20));
  }
  // Forwards ahead: one more, and more than the micro-batches (stage 0
  // then runs every forward first).
  for (int ahead : {1, 6}) {
    SCOPED_TRACE("forwards_ahead " + std::to_string(ahead));
    ExpectClose(
        one, TrainParallel(job, 2, Pp(2, 4, "1F1B", ahead), MlpBatches(), 20));
  }
}

TEST(PipelineTraining, MlpPp2Dp2WithClipMatchesOneProcess) {
  const proto::TrainingJob job = MlpJob(/*clip=*/true);
  ExpectClose(TrainOne(job, MlpBatches(), 20),
              TrainParallel(job, 4, Pp(2, 2), MlpBatches(), 20));
}

// ZeRO on each stage's data-parallel ring: each rank keeps 1/dp of its
// stage's optimizer state.
TEST(PipelineTraining, MlpPp2Dp2ShardedMatchesOneProcess) {
  const proto::TrainingJob job = MlpJob();
  const auto one = TrainOne(job, MlpBatches(), 20);
  for (int stage : {1, 2, 3}) {
    SCOPED_TRACE("sharding stage " + std::to_string(stage));
    proto::DistributedStrategy s = Pp(2, 2);
    s.set_sharding(true);
    s.mutable_sharding_configs()->set_stage(stage);
    // (Stage 3 shards every parameter, however small.)
    s.mutable_sharding_configs()->set_param_persistence_threshold(0);
    ExpectClose(one, TrainParallel(job, 4, s, MlpBatches(), 20));
  }
}

// The schedule's step counter advances once per batch on every stage, not
// once per micro-batch.
TEST(PipelineTraining, MlpPp2WithALearningRateScheduleMatchesOneProcess) {
  const proto::TrainingJob job = MlpJob(/*clip=*/false, /*decay=*/true);
  const PipelinePlan plan = PlanPipeline(job.main().blocks(0), 2);
  bool counted = false;
  for (int i : plan.step_ops)
    counted = counted || job.main().blocks(0).ops(i).type() == "increment";
  EXPECT_TRUE(counted);
  ExpectClose(TrainOne(job, MlpBatches(), 20),
              TrainParallel(job, 2, Pp(2, 4), MlpBatches(), 20));
}

// With recompute too: each stage replays its own blocks in the backward
// of each micro-batch; a replayed value whose original was made on the
// stage before reads that original (it crossed the cut forward and is
// kept), and a replayed dropout draws its micro-batch's mask whether or
// not the last micro-batch's forward has advanced the counter (1F1B runs
// backwards before it, FThenB after). Equal to one process without
// recompute.
TEST(PipelineTraining, TransformerPp2WithDropoutMatchesOneProcess) {
  TransformerSize s;  // dropout 0.1
  s.optimizer = "momentum";
  const proto::TrainingJob job = TransformerJob(s);
  const auto one = TrainOne(job, TransformerBatches(s), 20);
  for (bool recompute : {false, true}) {
    for (const char* schedule : {"1F1B", "FThenB"}) {
      SCOPED_TRACE(std::string(schedule) + (recompute ? ", recompute" : ""));
      proto::DistributedStrategy p = Pp(2, 4, schedule);
      p.set_recompute(recompute);
      const proto::TrainingJob all = AllStages(job, p);
      for (int stage = 0; stage < 2 && recompute; ++stage) {
        int replays = 0;
        const proto::TrainingJob st = PipelineStageJob(all, stage);
        for (const auto& op : st.main().blocks(0).ops())
          replays += HasOpAttr(op, "recompute_segment");
        EXPECT_GT(replays, 0) << "stage " << stage;
      }
      ExpectClose(one, TrainParallel(job, 2, p, TransformerBatches(s), 20));
    }
  }
}

// A recompute segment across the cut (the MLP's one checkpoint, its
// logits, on the last stage): stage 1's replays and backward ops read the
// cut's values themselves, as received in the forward pass, not replayed
// copies from stage 0, which would have to cross the cut backwards.
TEST(PipelineTraining, MlpPp2WithASegmentAcrossTheCutMatchesOneProcess) {
  const proto::TrainingJob job = MlpJob();
  std::string logits;
  for (const auto& op : job.main().blocks(0).ops())
    if (op.type() == "softmax_with_cross_entropy")
      logits = OpInput(op, "Logits").at(0);
  proto::DistributedStrategy p = Pp(2, 4);
  p.set_recompute(true);
  p.mutable_recompute_configs()->add_checkpoints(logits);
  const PipelinePlan plan = PlanPipeline(
      LocalRewrites(job, CanonicalStrategy(p)).main().blocks(0), 2);
  EXPECT_EQ(plan.value_stage.at(logits), 1);
  EXPECT_EQ(
      plan.value_stage.at(OpOutput(job.main().blocks(0).ops(0), "Out").at(0)),
      0);
  ExpectClose(TrainOne(job, MlpBatches(), 20),
              TrainParallel(job, 2, p, MlpBatches(), 20));
}

// Gradient merge over pipelined steps: k steps of m micro-batches each,
// one update per k steps, as one process merging k steps. Each stage
// accumulates its gradients once per step, after the micro-batches' sum;
// the data-parallel reductions run on merged steps only, the pipeline's
// sends, waits and result broadcast on every step.
TEST(PipelineTraining, MlpPp2WithGradientMergeMatchesOneProcessMerging) {
  const proto::TrainingJob job = MlpJob(/*clip=*/true);
  proto::DistributedStrategy gm;
  gm.set_gradient_merge(true);
  gm.mutable_gradient_merge_configs()->set_k_steps(2);
  gm.mutable_gradient_merge_configs()->set_avg(true);
  const Trained one =
      TrainOne(LocalRewrites(job, CanonicalStrategy(gm)), MlpBatches(), 20);
  for (int nranks : {2, 4}) {
    SCOPED_TRACE(nranks);
    proto::DistributedStrategy s = Pp(2, 4 / (nranks / 2));
    s.MergeFrom(gm);
    ExpectClose(one, TrainParallel(job, nranks, s, MlpBatches(), 20));
  }
  // With fp16 loss scaling too (at Fluid's initial scale, which this MLP
  // never overflows): to fp16's rounding of the micro-batches.
  proto::DistributedStrategy amp;
  amp.set_amp(true);
  amp.mutable_amp_configs()->set_dtype("fp16");
  gm.MergeFrom(amp);
  proto::DistributedStrategy s = Pp(2, 2);
  s.MergeFrom(gm);
  ExpectClose(
      TrainOne(LocalRewrites(job, CanonicalStrategy(gm)), MlpBatches(), 20),
      TrainParallel(job, 4, s, MlpBatches(), 20), {}, 0, 1e-2);
}

// A feed that is a batch of sequences is cut into micro-batches of whole
// sequences (split_lod_batch); the loss averages over sentences, so the
// pipeline equals one process on the same batch.
TEST(PipelineTraining, SequenceFeedPp2MatchesOneProcess) {
  const proto::TrainingJob job = SequenceJob();
  const Trained one = TrainOne(job, SequenceBatches(), 20);
  for (int nranks : {2, 4}) {
    SCOPED_TRACE(nranks);
    const proto::DistributedStrategy s = Pp(2, 4 / (nranks / 2));
    // (The words are read on stage 0 only; the labels are cut by rows.)
    EXPECT_EQ(Count(AllStages(job, s).main(), "split_lod_batch"), 1);
    ExpectClose(one, TrainParallel(job, nranks, s, SequenceBatches(), 20));
  }
}

// The table's gradient as sparse rows: each micro-batch's rows, then their
// concatenation in micro-batch order, are the rows one process's lookup of
// the whole batch yields; with dp 2 the stage's sparse allreduce gathers
// them over its data-parallel ring (and with ZeRO, its shards').
TEST(PipelineTraining, SparseEmbeddingPp2MatchesOneProcess) {
  const proto::TrainingJob job = SequenceJob(/*sparse=*/true);
  const Trained one = TrainOne(job, SequenceBatches(), 20);
  for (int nranks : {2, 4}) {
    SCOPED_TRACE(nranks);
    ExpectClose(one, TrainParallel(job, nranks, Pp(2, 4 / (nranks / 2)),
                                   SequenceBatches(), 20));
  }
  proto::DistributedStrategy s = Pp(2, 2);
  s.set_sharding(true);
  s.mutable_sharding_configs()->set_stage(2);
  ExpectClose(one, TrainParallel(job, 4, s, SequenceBatches(), 20));
}

// The last stage's results reach every stage once per step: the accuracy
// averaged over the micro-batches (equal parts: the batch's), its integer
// counts summed (the batch's, exactly), as one process computes them.
TEST(PipelineTraining, ResultsAreTheWholeBatchsOnEveryStage) {
  const proto::TrainingJob job = MlpJob(false, false, /*accuracy=*/true);
  const std::vector<std::string> fetch = {"loss", "acc", "correct", "total"};
  std::vector<std::vector<double>> want;
  {
    Executor exe;
    Scope scope;
    exe.RunOnce(job.startup(), &scope);
    auto main = exe.Prepare(job.main(), &scope);
    std::vector<Tensor> out;
    for (int step = 0; step < 6; ++step) {
      exe.Run(main.get(), MlpBatches()(step, 0, 1), fetch, &out);
      want.push_back({out[0].data<float>()[0], out[1].data<float>()[0],
                      static_cast<double>(out[2].data<int64_t>()[0]),
                      static_cast<double>(out[3].data<int64_t>()[0])});
    }
  }
  int correct = 0;
  for (const auto& w : want) correct += static_cast<int>(w[2]);
  EXPECT_GT(correct, 0);  // (a count of zero would prove little)
  std::vector<std::vector<std::vector<double>>> got(2);
  testing::RunRanks(2, [&](int rank, Communicator* comm) {
    Scope scope;
    MPIExecutor dist(Place::CPU(), 1, comm);
    dist.Init(job, &scope, Pp(2, 4));
    std::vector<Tensor> out;
    for (int step = 0; step < 6; ++step) {
      dist.Run(MlpBatches()(step, 0, 1), fetch, &out);
      got[rank].push_back({out[0].data<float>()[0], out[1].data<float>()[0],
                           static_cast<double>(out[2].data<int64_t>()[0]),
                           static_cast<double>(out[3].data<int64_t>()[0])});
    }
  });
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(got[rank].size(), want.size()) << "rank " << rank;
    for (size_t step = 0; step < want.size(); ++step) {
      SCOPED_TRACE("rank " + std::to_string(rank) + " step " +
                   std::to_string(step));
      EXPECT_NEAR(got[rank][step][0], want[step][0], 1e-5 * want[step][0]);
      EXPECT_NEAR(got[rank][step][1], want[step][1], 1e-6);
      EXPECT_EQ(got[rank][step][2], want[step][2]);  // correct
      EXPECT_EQ(got[rank][step][3], 8);              // total: the batch
    }
  }
}

TEST(PipelineTraining, TransformerPp4MatchesOneProcess) {
  TransformerSize s;
  s.layers = 4;
  s.optimizer = "momentum";
  const proto::TrainingJob job = TransformerJob(s);
  const auto one = TrainOne(job, TransformerBatches(s, 8), 20);
  for (const char* schedule : {"1F1B", "FThenB"}) {
    SCOPED_TRACE(schedule);
    ExpectClose(one, TrainParallel(job, 4, Pp(4, 8, schedule),
                                   TransformerBatches(s, 8), 20));
  }
  SCOPED_TRACE("1F1B, forwards_ahead 1");
  ExpectClose(one, TrainParallel(job, 4, Pp(4, 8, "1F1B", 1),
                                 TransformerBatches(s, 8), 20));
}

TEST(PipelineTraining, TransformerTp2Pp2MatchesOneProcess) {
  TransformerSize s;
  s.dropout = 0;  // a split attention's mask would be drawn per rank
  s.optimizer = "momentum";
  const proto::TrainingJob job = TransformerJob(s);
  ExpectClose(
      TrainOne(job, TransformerBatches(s), 20),
      TrainParallel(job, 4, Hybrid(2, 2, 2), TransformerBatches(s), 20));
}

// 2 x 2 x 2 on 8 in-process ranks.
TEST(PipelineTraining, MlpTp2Pp2Dp2MatchesOneProcess) {
  const proto::TrainingJob job = MlpJob(/*clip=*/true);
  ExpectClose(TrainOne(job, MlpBatches(), 20),
              TrainParallel(job, 8, Hybrid(2, 2, 2), MlpBatches(), 20));
}

// ZeRO on the data-parallel ring of each (stage, tensor-parallel slice):
// 2 x 2 x 2 with optimizer state sharded over dp 2.
TEST(PipelineTraining, MlpTp2Pp2Dp2ShardedMatchesOneProcess) {
  const proto::TrainingJob job = MlpJob();
  const auto one = TrainOne(job, MlpBatches(), 20);
  for (int stage : {1, 2, 3}) {
    SCOPED_TRACE("sharding stage " + std::to_string(stage));
    proto::DistributedStrategy s = Hybrid(2, 2, 2);
    s.set_sharding(true);
    s.mutable_sharding_configs()->set_stage(stage);
    // (Stage 3 shards every parameter, however small.)
    s.mutable_sharding_configs()->set_param_persistence_threshold(0);
    ExpectClose(one, TrainParallel(job, 8, s, MlpBatches(), 20));
  }
}

// The same in bf16, against one process in bf16. Two bf16 runs that round
// in different places (the stages' micro-batches, the tensor-parallel
// partial products) drift apart about as far as bf16 drifts from float32:
// the bound is that distance, measured in the same test (measured: bf16
// against float32 1.4e-2 relative after 20 steps, 2 x 2 x 2 against one
// bf16 process 9.5e-3; without the clip, with ZeRO 1: 1.7e-2 and 7.7e-3).
double LargestRelativeDifference(const Trained& a, const Trained& b) {
  double worst = 0;
  for (const auto& [name, want] : a.params) {
    const std::vector<float>& got = b.params.at(name);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      diff = std::max(diff, std::abs(double(got[i]) - want[i]));
      norm = std::max(norm, std::abs(double(want[i])));
    }
    worst = std::max(worst, diff / std::max(norm, 1e-30));
  }
  return worst;
}

// 2 x 2 x 2 in bf16 against one bf16 process, with ZeRO stage `shard`
// (0: none) on the data-parallel rings. Sharding with tensor parallelism
// refuses a global-norm clip, so the sharded run trains without one.
void ExpectHybridBf16LikeOneBf16Process(int shard) {
  const proto::TrainingJob job = MlpJob(/*clip=*/shard == 0);
  proto::DistributedStrategy amp;
  amp.set_amp(true);
  amp.mutable_amp_configs()->set_dtype("bf16");
  proto::DistributedStrategy s = Hybrid(2, 2, 2);
  s.MergeFrom(amp);
  if (shard > 0) {
    s.set_sharding(true);
    s.mutable_sharding_configs()->set_stage(shard);
  }
  const Trained fp32 = TrainOne(job, MlpBatches(), 20);
  const Trained bf16 =
      TrainOne(LocalRewrites(job, CanonicalStrategy(amp)), MlpBatches(), 20);
  const Trained hybrid = TrainParallel(job, 8, s, MlpBatches(), 20);
  const double own = LargestRelativeDifference(fp32, bf16);
  const double drift = LargestRelativeDifference(bf16, hybrid);
  std::printf(
      "bf16 against float32: %.3g; 2x2x2 bf16 (ZeRO %d) against one "
      "bf16: %.3g\n",
      own, shard, drift);
  EXPECT_LT(drift, own);
  for (size_t i = 0; i < bf16.losses.size(); ++i)
    EXPECT_NEAR(hybrid.losses[i], bf16.losses[i], 1e-2 * bf16.losses[i]);
}

// fp16 with dynamic loss scaling, started at a scale that overflows (the
// first steps are skipped, the scale halving each time): every rank of
// every stage ends with the same loss scale and the same counts of good
// and skipped steps, because the stages agree on each step's overflow flag
// (without the agreement, a stage whose own gradients stayed finite would
// update and keep its scale while another skipped and halved its own).
// Against one fp16 process the runs may skip different steps: the
// pipeline's weight gradients are sums over micro-batches, each a 1/m of
// the rows one process's fp16 products sum, so they overflow at a scale m
// times larger; both train (the losses fall).
TEST(PipelineTraining, MlpPp2Fp16StagesSkipTheSameSteps) {
  const proto::TrainingJob job = MlpJob(/*clip=*/true);
  for (const auto& [nranks, shard] : {std::pair{2, 0}, {4, 0}, {4, 2}}) {
    SCOPED_TRACE(std::to_string(nranks) + " ranks, ZeRO " +
                 std::to_string(shard));
    proto::DistributedStrategy s = Pp(2, 4 / (nranks / 2));
    s.MergeFrom(testing::OverflowingFp16());
    if (shard > 0) {  // each stage's optimizer state over its dp ring
      s.set_sharding(true);
      s.mutable_sharding_configs()->set_stage(shard);
    }
    std::vector<std::vector<double>> state(nranks);
    std::vector<std::vector<float>> losses(nranks);
    testing::RunRanks(nranks, [&](int rank, Communicator* comm) {
      Scope scope;
      MPIExecutor dist(Place::CPU(), 1, comm);
      dist.Init(job, &scope, s);
      std::vector<Tensor> fetched;
      const int dp = nranks / 2, data_rank = rank % dp;
      for (int step = 0; step < 20; ++step) {
        dist.Run(MlpBatches()(step, data_rank, dp), {"loss"}, &fetched);
        losses[rank].push_back(fetched[0].data<float>()[0]);
      }
      dist.CheckConsistency();
      state[rank] = {
          scope.FindVar(kLossScalingVar)->GetTensor().data<float>()[0],
          double(scope.FindVar(kGoodStepsVar)->GetTensor().data<int32_t>()[0]),
          double(scope.FindVar(kBadStepsVar)->GetTensor().data<int32_t>()[0])};
    });
    for (int r = 0; r < nranks; ++r) {
      ASSERT_EQ(losses[r].size(), 20u) << "rank " << r;
      EXPECT_EQ(state[r], state[0]) << "rank " << r;
    }
    std::printf(
        "np %d, ZeRO %d: loss scale %g after 20 steps (good %g, bad %g)\n",
        nranks, shard, state[0][0], state[0][1], state[0][2]);
    EXPECT_LT(state[0][0], 1048576.0);  // some steps overflowed
    EXPECT_GT(state[0][1], 0.0);        // and some trained
    EXPECT_LT(losses[0].back(), losses[0].front());
  }
}

TEST(PipelineTraining, MlpTp2Pp2Dp2Bf16MatchesOneProcessBf16) {
  ExpectHybridBf16LikeOneBf16Process(0);
}

TEST(PipelineTraining, MlpTp2Pp2Dp2Bf16ShardedMatchesOneProcessBf16) {
  ExpectHybridBf16LikeOneBf16Process(1);
}

}  // namespace
}  // namespace fluid
