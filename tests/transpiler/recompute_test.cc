// The recompute rewrite (transpiler/recompute.h): what it makes of a small
// model (a golden op list), what its lint refuses, which checkpoints
// `auto` picks, and that a recomputed job trains bit for bit like the job
// it came from (dropout, batch norm, the transformer; one process and two
// ranks, float32 and bf16).
#include "transpiler/recompute.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "src/builder/models.h"
#include "src/framework/enforce.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "src/framework/shape_only_inputs.h"
#include "src/runtime/mpi_executor.h"
#include "tests/testing/in_process_ranks.h"
#include "tests/transpiler/recompute_models.h"
#include "transpiler/distributed_job.h"
#include "transpiler/local_rewrites.h"
#include "transpiler/program_query.h"
#include "transpiler/strategy.h"

namespace fluid {
namespace {

using testing::MlpBatch;
using testing::MlpDropoutJob;
using testing::TransformerBatch;
using testing::TransformerJob;
using testing::TransformerSize;

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

proto::RecomputeConfig Checkpoints(const std::vector<std::string>& names) {
  proto::RecomputeConfig c;
  for (const auto& n : names) c.add_checkpoints(n);
  return c;
}

bool IsReplayOp(const proto::OpDesc& op) {
  return HasOpAttr(op, kRecomputeSegmentAttr);
}

int CountReplays(const proto::ProgramDesc& p, const std::string& type = "") {
  int n = 0;
  for (const auto& op : p.blocks(0).ops())
    n += IsReplayOp(op) && (type.empty() || op.type() == type);
  return n;
}

// "type out" per op ("replay<s> type out" for a replay), up to the first
// optimizer op.
std::string OpList(const proto::ProgramDesc& main) {
  std::ostringstream out;
  for (const auto& op : main.blocks(0).ops()) {
    if (HasRole(op, OpRole::kOptimize)) break;
    if (IsReplayOp(op))
      out << "replay" << GetOpAttrAs<int32_t>(op, kRecomputeSegmentAttr) << " ";
    const std::vector<std::string> outs = OpOutputNames(op);
    out << op.type() << " " << (outs.empty() ? "-" : outs[0]) << "\n";
  }
  return out.str();
}

// The golden op list of the recomputed mlp: a change meaning to alter it
// rewrites the file with FLUID_UPDATE_TESTDATA=1.
TEST(Recompute, GoldenOpListOfTheMlp) {
  std::vector<std::string> hidden;
  const proto::TrainingJob job = MlpDropoutJob(&hidden);
  const proto::TrainingJob out =
      RecomputeRewrite(job, Checkpoints({hidden[2], hidden[1]}));
  const std::string path =
      std::string(FLUID_TESTDATA_DIR) + "/recompute_mlp_ops.txt";
  const std::string got = OpList(out.main());
  if (std::getenv("FLUID_UPDATE_TESTDATA") != nullptr) {
    std::ofstream(path) << got;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str());
  // Both segments are replayed, each dropout once, without its counter.
  EXPECT_EQ(CountReplays(out.main(), "dropout"), 2);
  for (const auto& op : out.main().blocks(0).ops())
    if (IsReplayOp(op) && op.type() == "dropout") {
      EXPECT_TRUE(OpOutput(op, "StepOut").empty());
      EXPECT_FALSE(GetOpAttrAs<std::string>(op, "replay_of").empty());
    }
  // The rewrite is not repeated.
  EXPECT_EQ(RecomputeRewrite(out, Checkpoints({hidden[1]})).SerializeAsString(),
            out.SerializeAsString());
}

TEST(Recompute, UnknownAndNonActivationCheckpointsAreRefusedByName) {
  std::vector<std::string> hidden;
  const proto::TrainingJob job = MlpDropoutJob(&hidden);
  std::string msg = ErrorOf([&] {
    RecomputeRewrite(job, Checkpoints({"nope", hidden[0], "nah"}));
  });
  EXPECT_NE(msg.find("'nope', 'nah' are not variables"), std::string::npos)
      << msg;
  msg = ErrorOf([&] { RecomputeRewrite(job, Checkpoints({"x"})); });
  EXPECT_NE(msg.find("'x' are not computed by the forward pass"),
            std::string::npos)
      << msg;
  msg = ErrorOf([&] { RecomputeRewrite(job, Checkpoints({"fc_0.w_0"})); });
  EXPECT_NE(msg.find("not computed by the forward pass"), std::string::npos)
      << msg;
  // auto finds no residual add or recurrent layer in an mlp.
  msg = ErrorOf([&] { RecomputeRewrite(job, Checkpoints({})); });
  EXPECT_NE(msg.find("found no checkpoints"), std::string::npos) << msg;
  msg = ErrorOf([&] { RecomputeRewrite(job, Checkpoints({"auto", "y"})); });
  EXPECT_NE(msg.find("\"auto\" alone"), std::string::npos) << msg;
}

// auto: the residual adds (two per transformer block, one per resnet
// block) and the lstm layer's hidden states.
TEST(Recompute, AutoCheckpointsOfTheBuiltInModels) {
  auto adds_of = [](const std::vector<std::string>& names,
                    const proto::ProgramDesc& main) {
    int adds = 0;
    for (const auto& op : main.blocks(0).ops())
      if (op.type() == "elementwise_add")
        for (const auto& n : names) adds += OpOutput(op, "Out")[0] == n;
    return adds;
  };
  const proto::TrainingJob transformer = BuildModel("transformer");
  const auto t = AutoCheckpoints(transformer.main());
  EXPECT_EQ(t.size(), 8u);  // 4 blocks
  EXPECT_EQ(adds_of(t, transformer.main()), 8);
  const proto::TrainingJob resnet = BuildModel("resnet");
  const auto r = AutoCheckpoints(resnet.main());
  EXPECT_EQ(r.size(), 6u);  // 3 stages of 2 blocks
  EXPECT_EQ(adds_of(r, resnet.main()), 6);
  const proto::TrainingJob lstm = BuildModel("lstm");
  const auto l = AutoCheckpoints(lstm.main());
  ASSERT_EQ(l.size(), 1u);
  bool hidden = false;
  for (const auto& op : lstm.main().blocks(0).ops())
    hidden =
        hidden || (op.type() == "lstm" && OpOutput(op, "Hidden")[0] == l[0]);
  EXPECT_TRUE(hidden);
  EXPECT_TRUE(AutoCheckpoints(BuildModel("mlp").main()).empty());
}

// Every backward read of an intermediate is its copy; after the forward
// pass nothing reads an original intermediate, so far fewer bytes are live
// when the backward pass starts.
TEST(Recompute, OriginalsDieInTheForwardPass) {
  TransformerSize s;
  s.layers = 4;
  const proto::TrainingJob job = TransformerJob(s);
  const proto::TrainingJob out = RecomputeRewrite(job, Checkpoints({"auto"}));
  EXPECT_EQ(CountReplays(out.main(), "dropout"), 3 * s.layers);
  EXPECT_GT(CountReplays(out.main(), "matmul"), 0);
  const int64_t off = LiveBytesAfterForward(job.main(), 4);
  const int64_t on = LiveBytesAfterForward(out.main(), 4);
  // Kept: the embedding's output and the 2 checkpoints per block, plus
  // the tail (final layer norm, logits, loss) and the mask; measured
  // 0.17 of off.
  EXPECT_LT(on * 4, off) << on << " of " << off;
}

TEST(Recompute, LintRefusesBrokenPrograms) {
  std::vector<std::string> hidden;
  const proto::TrainingJob job = MlpDropoutJob(&hidden);
  const std::vector<std::string> cps = {hidden[1], hidden[2]};
  const proto::TrainingJob out = RecomputeRewrite(job, Checkpoints(cps));
  const proto::BlockDesc& block = out.main().blocks(0);
  int first_replay = -1, reader = -1;
  std::string copy;
  for (int i = 0; i < block.ops_size() && reader < 0; ++i) {
    const auto& op = block.ops(i);
    if (IsReplayOp(op) && first_replay < 0) first_replay = i;
    if (IsReplayOp(op) || !HasRole(op, OpRole::kBackward)) continue;
    for (const auto& n : OpInputNames(op))
      if (n.find(kRecomputeSuffix) != std::string::npos) {
        reader = i;
        copy = n;
      }
  }
  ASSERT_GE(first_replay, 0);
  ASSERT_GT(reader, first_replay);
  {  // a backward read of the original
    proto::ProgramDesc main = out.main();
    RenameOpInput(main.mutable_blocks(0)->mutable_ops(reader), copy,
                  copy.substr(0, copy.size() - strlen(kRecomputeSuffix)));
    const std::string msg = ErrorOf([&] { LintRecompute(main, cps); });
    EXPECT_NE(msg.find("instead of its copy"), std::string::npos) << msg;
  }
  {  // the reader moved before the replays
    proto::ProgramDesc main = out.main();
    auto* ops = main.mutable_blocks(0)->mutable_ops();
    const proto::OpDesc moved = ops->Get(reader);
    ops->DeleteSubrange(reader, 1);
    *ops->Add() = moved;
    for (int k = ops->size() - 1; k > first_replay; --k)
      ops->SwapElements(k, k - 1);
    const std::string msg = ErrorOf([&] { LintRecompute(main, cps); });
    EXPECT_NE(msg.find("before a replay op writes it"), std::string::npos)
        << msg;
  }
  {  // a replay writing a persistable var
    proto::ProgramDesc main = out.main();
    proto::BlockDesc* b = main.mutable_blocks(0);
    for (auto& op : *b->mutable_ops())
      if (IsReplayOp(op) && op.type() == "dropout")
        SetOpOutput(&op, "StepOut", OpInput(op, "Step"));
    const std::string msg = ErrorOf([&] { LintRecompute(main, cps); });
    EXPECT_NE(msg.find("writes only non-persistable"), std::string::npos)
        << msg;
  }
}

// ---- dropout's replay_of ------------------------------------------------

// x -> dropout (advancing the counter) -> out; then, as the rewrite makes
// it, a replay reading the advanced counter: the same mask and output, and
// the counter advanced once.
TEST(Recompute, DropoutReplayDrawsTheReplayedOpsMask) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  for (const char* v : {"x", "out", "mask", "out_r", "mask_r"})
    AddVarDesc(b, v, DataType::kFloat32, Shape{4096});
  AddVarDesc(b, "step", DataType::kInt64, Shape{1}, /*persistable=*/true);
  *b->add_ops() =
      MakeOp("dropout", {{"X", {"x"}}, {"Step", {"step"}}},
             {{"Out", {"out"}}, {"Mask", {"mask"}}, {"StepOut", {"step"}}},
             {{"dropout_prob", 0.5f}});
  proto::OpDesc replay =
      MakeOp("dropout", {{"X", {"x"}}, {"Step", {"step"}}},
             {{"Out", {"out_r"}}, {"Mask", {"mask_r"}}},
             {{"dropout_prob", 0.5f}, {"replay_of", std::string("out")}});
  *b->add_ops() = replay;
  Executor exe;
  Scope scope;
  scope.Var("step")->GetMutableTensor()->mutable_data<int64_t>(Shape{1})[0] = 5;
  Tensor x;
  float* xp = x.mutable_data<float>(Shape{4096});
  for (int i = 0; i < 4096; ++i) xp[i] = 1.0f + i;
  std::vector<Tensor> out;
  exe.RunOnce(p, &scope, {{"x", x}}, {"out", "mask", "out_r", "mask_r", "step"},
              &out);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(std::memcmp(out[0].raw_data(), out[2].raw_data(), out[0].bytes()),
            0);
  EXPECT_EQ(std::memcmp(out[1].raw_data(), out[3].raw_data(), out[1].bytes()),
            0);
  EXPECT_EQ(out[4].data<int64_t>()[0], 6);
  int kept = 0;
  for (int i = 0; i < 4096; ++i) kept += out[1].data<float>()[i] != 0.0f;
  EXPECT_GT(kept, 1800);
  EXPECT_LT(kept, 2300);
  // A replay that would advance the counter a second time is refused.
  SetOpOutput(&replay, "StepOut", {"step"});
  *b->mutable_ops(1) = replay;
  const std::string msg = ErrorOf([&] { exe.RunOnce(p, &scope, {{"x", x}}); });
  EXPECT_NE(msg.find("must not write StepOut"), std::string::npos) << msg;
}

// ---- numerics -----------------------------------------------------------

// Every persistable var of `scope` named by `main`, as bytes.
std::map<std::string, std::string> Persistables(const proto::ProgramDesc& main,
                                                const Scope& scope) {
  std::map<std::string, std::string> out;
  for (const auto& v : main.blocks(0).vars()) {
    if (!v.persistable()) continue;
    Variable* var = scope.FindVar(v.name());
    if (var == nullptr || !var->IsTensor()) continue;
    const Tensor& t = var->GetTensor();
    if (!t.initialized()) continue;
    out[v.name()] =
        std::string(static_cast<const char*>(t.raw_data()), t.bytes());
  }
  return out;
}

struct Trained {
  std::vector<float> losses;
  std::map<std::string, std::string> state;
};

Trained Train(const proto::TrainingJob& job,
              const std::function<FeedList(int)>& batch, int steps) {
  Executor exe;
  Scope scope;
  exe.RunOnce(job.startup(), &scope);
  auto main = exe.Prepare(job.main(), &scope);
  Trained t;
  std::vector<Tensor> out;
  for (int step = 0; step < steps; ++step) {
    exe.Run(main.get(), batch(step), {"loss"}, &out);
    t.losses.push_back(out[0].data<float>()[0]);
  }
  t.state = Persistables(job.main(), scope);
  return t;
}

void ExpectBitwiseEqual(const Trained& a, const Trained& b) {
  ASSERT_FALSE(a.state.empty());
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i)
    EXPECT_EQ(std::memcmp(&a.losses[i], &b.losses[i], sizeof(float)), 0)
        << "step " << i << ": " << a.losses[i] << " vs " << b.losses[i];
  ASSERT_EQ(a.state.size(), b.state.size());
  for (const auto& [name, bytes] : a.state) {
    auto it = b.state.find(name);
    ASSERT_NE(it, b.state.end()) << name;
    EXPECT_TRUE(bytes == it->second) << name << " differs";
  }
}

TEST(Recompute, MlpWithDropoutTrainsBitwiseLikeWithout) {
  std::vector<std::string> hidden;
  const proto::TrainingJob job = MlpDropoutJob(&hidden);
  const proto::TrainingJob out =
      RecomputeRewrite(job, Checkpoints({hidden[1], hidden[2]}));
  const auto batch = [](int step) { return MlpBatch(step); };
  const Trained off = Train(job, batch, 12);
  const Trained on = Train(out, batch, 12);
  ExpectBitwiseEqual(off, on);
  EXPECT_NE(off.losses.front(), off.losses.back());
  // Each dropout's counter advanced once per step, not twice.
  for (const auto& [name, bytes] : on.state)
    if (name.find(".step") != std::string::npos) {
      int64_t step = 0;
      std::memcpy(&step, bytes.data(), sizeof(step));
      EXPECT_EQ(step, 12) << name;
    }
}

// The comparison sees a replay that draws another mask: without
// replay_of the replays derive their seeds from their own outputs' names.
TEST(Recompute, AReplayWithoutItsMaskTrainsOtherwise) {
  std::vector<std::string> hidden;
  const proto::TrainingJob job = MlpDropoutJob(&hidden);
  proto::TrainingJob out =
      RecomputeRewrite(job, Checkpoints({hidden[1], hidden[2]}));
  for (auto& op : *out.mutable_main()->mutable_blocks(0)->mutable_ops())
    if (op.type() == "dropout" || op.type() == "dropout_grad")
      SetOpAttr(&op, "replay_of", std::string());
  const auto batch = [](int step) { return MlpBatch(step); };
  const Trained off = Train(job, batch, 3);
  const Trained broken = Train(out, batch, 3);
  EXPECT_EQ(off.losses[0], broken.losses[0]);  // the forward pass is the same
  EXPECT_NE(off.state, broken.state);          // the gradients are not
}

FeedList ImageBatch(int step, int batch) {
  std::mt19937 rng(300 + step);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  Tensor x, y;
  float* xp = x.mutable_data<float>(Shape{batch, 1, 28, 28});
  int64_t* yp = y.mutable_data<int64_t>(Shape{batch, 1});
  for (int n = 0; n < batch; ++n) {
    yp[n] = rng() % 10;
    for (int i = 0; i < 784; ++i) xp[n * 784 + i] = u(rng) * (1 + yp[n] % 3);
  }
  return {{"image", x}, {"label", y}};
}

// batch_norm's running statistics move once per step (they are among the
// compared persistables).
TEST(Recompute, ResnetTrainsBitwiseLikeWithout) {
  const proto::TrainingJob job = BuildModel("resnet");
  const proto::TrainingJob out = RecomputeRewrite(job, Checkpoints({"auto"}));
  EXPECT_GT(CountReplays(out.main(), "batch_norm"), 0);
  const auto batch = [](int step) { return ImageBatch(step, 8); };
  ExpectBitwiseEqual(Train(job, batch, 10), Train(out, batch, 10));
}

TEST(Recompute, TransformerTrainsBitwiseLikeWithout) {
  const TransformerSize s;
  const proto::TrainingJob job = TransformerJob(s);
  const proto::TrainingJob out = RecomputeRewrite(job, Checkpoints({}));
  EXPECT_EQ(CountReplays(out.main(), "dropout"), 3 * s.layers);
  const auto batch = [&](int step) { return TransformerBatch(s, 4, step); };
  ExpectBitwiseEqual(Train(job, batch, 10), Train(out, batch, 10));
}

// A backward read of an intermediate's shape alone (elementwise_add_grad's
// X: a product before its bias) keeps the forward variable, whose shape the
// executor keeps after freeing it: no op is replayed for a shape alone. A
// dropout whose gradient alone needs it is replayed without Out, reading
// X's shape only, so nothing before it is replayed for it. The
// transformer's attention output projection and second feed-forward
// product are not replayed, with dropout or without; it still trains
// bitwise like without recompute.
TEST(Recompute, NothingIsReplayedForItsShapeAlone) {
  std::map<std::string, int> products;  // replayed mul + matmul, by dropout
  for (float dropout : {0.0f, 0.1f}) {
    TransformerSize s;
    s.layers = 2;
    s.dropout = dropout;
    const proto::TrainingJob job = TransformerJob(s);
    const proto::TrainingJob out = RecomputeRewrite(job, Checkpoints({"auto"}));
    const proto::BlockDesc& block = out.main().blocks(0);
    int replays = 0, masks_alone = 0;
    for (int i = 0; i < block.ops_size(); ++i) {
      const proto::OpDesc& op = block.ops(i);
      if (!IsReplayOp(op)) continue;
      ++replays;
      masks_alone += op.type() == "dropout" && OpOutput(op, "Out").empty();
      bool read = false;
      for (const std::string& n : OpOutputNames(op))
        for (int j = i + 1; j < block.ops_size() && !read; ++j)
          for (const auto& slot : block.ops(j).inputs())
            if (!ReadsShapeOnly(block.ops(j), slot.parameter()))
              for (const std::string& a : slot.arguments()) read |= a == n;
      EXPECT_TRUE(read) << op.type() << " " << OpOutputNames(op).at(0)
                        << " is replayed for its shape alone";
    }
    EXPECT_GT(replays, 0);
    // Each block's dropouts after the output projection and the second
    // feed-forward product.
    EXPECT_EQ(masks_alone, dropout > 0 ? 2 * s.layers : 0);
    products[std::to_string(dropout)] =
        CountReplays(out.main(), "mul") + CountReplays(out.main(), "matmul");
    const auto batch = [&](int step) { return TransformerBatch(s, 4, step); };
    ExpectBitwiseEqual(Train(job, batch, 5), Train(out, batch, 5));
  }
  EXPECT_EQ(products.begin()->second, products.rbegin()->second);
}

// After mixed precision (LocalRewrites' order) the casts are replayed too:
// bf16 with recompute is bf16 without it, bit for bit.
TEST(Recompute, Bf16TransformerTrainsBitwiseLikeWithout) {
  const TransformerSize s;
  const proto::TrainingJob job = TransformerJob(s);
  proto::DistributedStrategy amp;
  amp.set_amp(true);
  amp.mutable_amp_configs()->set_dtype("bf16");
  proto::DistributedStrategy both = amp;
  both.set_recompute(true);
  const proto::TrainingJob a = LocalRewrites(job, CanonicalStrategy(amp));
  const proto::TrainingJob b = LocalRewrites(job, CanonicalStrategy(both));
  EXPECT_GT(CountReplays(b.main(), "cast"), 0);
  const auto batch = [&](int step) { return TransformerBatch(s, 4, step); };
  ExpectBitwiseEqual(Train(a, batch, 10), Train(b, batch, 10));
}

// ---- two ranks ----------------------------------------------------------

// Trains `job` on 2 in-process ranks under `strategy`; rank r's state.
std::vector<Trained> TrainRanks(const proto::TrainingJob& job,
                                const proto::DistributedStrategy& strategy,
                                const std::function<FeedList(int)>& batch,
                                int steps) {
  std::vector<Trained> out(2);
  testing::RunRanks(2, [&](int rank, Communicator* comm) {
    Scope scope;  // outlives the executor, whose programs run on it
    MPIExecutor dist(Place::CPU(), 1, comm);
    dist.Init(job, &scope, strategy);
    std::vector<Tensor> fetched;
    for (int step = 0; step < steps; ++step) {
      dist.Run(batch(2 * step + rank), {"loss"}, &fetched);
      out[rank].losses.push_back(fetched[0].data<float>()[0]);
    }
    out[rank].state = Persistables(job.main(), scope);
  });
  return out;
}

void ExpectRanksBitwiseEqual(const proto::TrainingJob& job,
                             proto::DistributedStrategy s,
                             const std::function<FeedList(int)>& batch) {
  const std::vector<Trained> off = TrainRanks(job, s, batch, 10);
  s.set_recompute(true);
  const std::vector<Trained> on = TrainRanks(job, s, batch, 10);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ExpectBitwiseEqual(off[r], on[r]);
  }
}

TEST(Recompute, TwoRanksTransformerWithDropout) {
  const TransformerSize s;
  ExpectRanksBitwiseEqual(TransformerJob(s), {}, [&](int step) {
    return TransformerBatch(s, 2, step);
  });
}

// With the optimizer state sharded (stage 2: reduce-scattered gradients,
// gathered parameters) and the gradients clipped by their global norm.
TEST(Recompute, TwoRanksShardedTransformer) {
  proto::DistributedStrategy s;
  s.set_sharding(true);
  s.mutable_sharding_configs()->set_stage(2);
  const TransformerSize size;
  ExpectRanksBitwiseEqual(TransformerJob(size), s, [&](int step) {
    return TransformerBatch(size, 2, step);
  });
}

// Synchronised batch norm: the replays allreduce their sums again and get
// the forward pass's statistics on both ranks.
TEST(Recompute, TwoRanksResnetWithSyncBatchNorm) {
  proto::DistributedStrategy s;
  s.set_sync_batch_norm(true);
  const proto::TrainingJob job = BuildModel("resnet");
  proto::DistributedStrategy on = s;
  on.set_recompute(true);
  const proto::TrainingJob prepared = PrepareJob(job, on, 2);
  int synced_replays = 0;
  for (const auto& op : prepared.main().blocks(0).ops())
    synced_replays += IsReplayOp(op) && op.type() == "batch_norm" &&
                      GetOpAttrAs<bool>(op, "sync_stats");
  EXPECT_GT(synced_replays, 0);
  ExpectRanksBitwiseEqual(job, s, [](int step) { return ImageBatch(step, 4); });
}

}  // namespace
}  // namespace fluid
