// Golden op sequences and invariants of the collective transpiler; no MPI
// and no kernels.
#include "transpiler/collective_transpiler.h"

#include <gtest/gtest.h>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/transpiler/testdata.h"
#include "transpiler/pserver_transpiler.h"

namespace fluid {
namespace {

std::vector<std::string> Types(const proto::ProgramDesc& p) {
  return testing::OpTypes(p);
}

const std::vector<std::string> kMlpForward = {
    "mul",  "elementwise_add", "relu",
    "mul",  "elementwise_add", "relu",
    "mul",  "elementwise_add", "softmax_with_cross_entropy",
    "mean", "accuracy"};

std::vector<std::string> Concat(std::vector<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const std::vector<std::string> kMomentum6(6, "momentum");

TEST(CollectiveTranspiler, MlpOneBucketWithOverlap) {
  proto::TrainingJob job = testing::LoadTestJob("mlp");
  proto::DistributedStrategy cfg;
  proto::TrainingJob out = CollectiveTranspile(job, cfg, 4);
  EXPECT_EQ(
      Types(out.main()),
      Concat({{"coalesce_tensor"},
              kMlpForward,
              {"fill_constant", "mean_grad", "softmax_with_cross_entropy_grad",
               "elementwise_add_grad", "mul_grad", "relu_grad",
               "elementwise_add_grad", "mul_grad", "relu_grad",
               "elementwise_add_grad", "mul_grad", "c_allreduce", "c_wait"},
              kMomentum6}));
  // The bucket holds the grads in the order the backward pass writes them.
  const auto& co = out.main().blocks(0).ops(0);
  EXPECT_EQ(OpOutput(co, "Output"),
            (std::vector<std::string>{"fc_2.b_0@GRAD", "fc_2.w_0@GRAD",
                                      "fc_1.b_0@GRAD", "fc_1.w_0@GRAD",
                                      "fc_0.b_0@GRAD", "fc_0.w_0@GRAD"}));
  EXPECT_EQ(out.main().nranks(), 4);
  EXPECT_EQ(out.main().structure_hash(), StructureHash(out.main()));
  EXPECT_EQ(out.main().nranks(), 4);
  // The input is untouched.
  EXPECT_EQ(Types(job.main()).front(), "mul");
  // Startup ends with a broadcast of every persistable var from rank 0.
  int broadcasts = 0, persistable = 0;
  for (const auto& op : out.startup().blocks(0).ops())
    if (op.type() == "c_broadcast") {
      ++broadcasts;
      EXPECT_EQ(GetOpAttrAs<int32_t>(op, "root"), 0);
    }
  for (const auto& v : out.startup().blocks(0).vars())
    persistable += v.persistable();
  EXPECT_EQ(broadcasts, persistable);
  EXPECT_EQ(persistable, 6 + 6 + 1) << "params, velocities, learning rate";
}

TEST(CollectiveTranspiler, MlpSmallBucketsWithAndWithoutOverlap) {
  proto::TrainingJob job = testing::LoadTestJob("mlp");
  proto::DistributedStrategy cfg;
  cfg.set_bucket_bytes(600 * 1024);
  std::vector<GradBucket> buckets = PlanBuckets(job.main(), cfg.bucket_bytes());
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].grads.size(), 5u);
  EXPECT_EQ(buckets[1].grads, std::vector<std::string>{"fc_0.w_0@GRAD"});

  const std::vector<std::string> head = {
      "fill_constant",        "mean_grad", "softmax_with_cross_entropy_grad",
      "elementwise_add_grad", "mul_grad",  "relu_grad",
      "elementwise_add_grad", "mul_grad",  "relu_grad",
      "elementwise_add_grad"};
  proto::TrainingJob on = CollectiveTranspile(job, cfg, 2);
  // Bucket 0 goes as soon as fc_0's bias grad is written, overlapping the
  // last mul_grad; the optimizer waits for each bucket just before it needs
  // it (fc_0.w first, in bucket 1).
  EXPECT_EQ(Types(on.main()),
            Concat({{"coalesce_tensor", "coalesce_tensor"},
                    kMlpForward,
                    head,
                    {"c_allreduce", "mul_grad", "c_allreduce", "c_wait",
                     "momentum", "c_wait"},
                    std::vector<std::string>(5, "momentum")}));
  cfg.set_overlap_allreduce(false);
  proto::TrainingJob off = CollectiveTranspile(job, cfg, 2);
  EXPECT_EQ(
      Types(off.main()),
      Concat({{"coalesce_tensor", "coalesce_tensor"},
              kMlpForward,
              head,
              {"mul_grad", "c_allreduce", "c_allreduce", "c_wait", "c_wait"},
              kMomentum6}));
  EXPECT_NE(StructureHash(on.main()), StructureHash(off.main()));
}

TEST(CollectiveTranspiler, SumWhenNotAveraging) {
  proto::DistributedStrategy cfg;
  cfg.set_average_gradients(false);
  proto::TrainingJob out =
      CollectiveTranspile(testing::LoadTestJob("mlp"), cfg, 1);
  for (const auto& op : out.main().blocks(0).ops()) {
    if (op.type() == "c_allreduce") {
      EXPECT_EQ(GetOpAttrAs<std::string>(op, "reduce_type"), "sum");
    }
  }
}

std::string LintError(const proto::ProgramDesc& main, int nranks) {
  try {
    LintCollective(main, nranks);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The mlp transpiled with one bucket per gradient, so that each gradient's
// allreduce can be edited on its own.
proto::ProgramDesc PerGradMain() {
  proto::DistributedStrategy cfg;
  cfg.set_bucket_bytes(1);
  return CollectiveTranspile(testing::LoadTestJob("mlp"), cfg, 2).main();
}

int FindOp(const proto::ProgramDesc& p, const std::string& type,
           const std::string& reads) {
  for (int i = 0; i < p.blocks(0).ops_size(); ++i) {
    const auto& op = p.blocks(0).ops(i);
    if (op.type() != type) continue;
    for (const auto& n : OpInputNames(op))
      if (n == reads) return i;
  }
  return -1;
}

TEST(CollectiveLint, AcceptsTranspiledProgramsAndRejectsAPlainOne) {
  EXPECT_EQ(LintError(PerGradMain(), 2), "");
  std::string msg = LintError(testing::LoadTestJob("mlp").main(), 2);
  EXPECT_NE(msg.find("never allreduced"), std::string::npos) << msg;
}

TEST(CollectiveLint, MissingAllReduceNamesTheGradient) {
  proto::ProgramDesc p = PerGradMain();
  std::string fused = "fused_grad_0@COALESCED";  // fc_2.b_0@GRAD's bucket
  auto* ops = p.mutable_blocks(0)->mutable_ops();
  ops->erase(ops->begin() + FindOp(p, "c_allreduce", fused));
  std::string msg = LintError(p, 2);
  EXPECT_NE(msg.find("'fc_2.b_0@GRAD'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("never allreduced"), std::string::npos) << msg;
}

TEST(CollectiveLint, DoubledAllReduceNamesTheGradient) {
  proto::ProgramDesc p = PerGradMain();
  std::string fused = "fused_grad_1@COALESCED";  // fc_2.w_0@GRAD
  int at = FindOp(p, "c_allreduce", fused);
  proto::OpDesc again = p.blocks(0).ops(at);
  SetOpOutput(&again, "Handle", {});
  auto* ops = p.mutable_blocks(0)->mutable_ops();
  *ops->Add() = again;
  ops->SwapElements(at + 1, ops->size() - 1);
  std::string msg = LintError(p, 2);
  EXPECT_NE(msg.find("'fc_2.w_0@GRAD'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 times"), std::string::npos) << msg;
}

TEST(CollectiveLint, DoubleAveragingAndMisplacementAreErrors) {
  proto::ProgramDesc p = PerGradMain();
  std::string fused = "fused_grad_0@COALESCED";
  int wait = FindOp(p, "c_wait", "fused_grad_0@COALESCED@HANDLE");
  proto::OpDesc scale =
      MakeOp("scale", {{"X", {fused}}}, {{"Out", {fused}}}, {{"scale", 0.5f}});
  auto* ops = p.mutable_blocks(0)->mutable_ops();
  *ops->Add() = scale;
  for (int i = ops->size() - 1; i > wait + 1; --i) ops->SwapElements(i, i - 1);
  std::string msg = LintError(p, 2);
  EXPECT_NE(msg.find("averaged 2 times"), std::string::npos) << msg;

  // An allreduce moved before the backward op that writes its gradient.
  proto::ProgramDesc q = PerGradMain();
  int at = FindOp(q, "c_allreduce", "fused_grad_5@COALESCED");  // fc_0.w
  auto* qops = q.mutable_blocks(0)->mutable_ops();
  qops->SwapElements(at, at - 1);
  msg = LintError(q, 2);
  EXPECT_NE(msg.find("'fc_0.w_0@GRAD'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("before the backward op"), std::string::npos) << msg;
}

TEST(CollectiveTranspiler, GradientCompressionMarksFloatBuckets) {
  proto::DistributedStrategy cfg;
  cfg.set_bucket_bytes(1);
  cfg.set_grad_compression("bf16");
  proto::TrainingJob out =
      CollectiveTranspile(testing::LoadTestJob("mlp"), cfg, 2);
  int compressed = 0;
  for (const auto& op : out.main().blocks(0).ops()) {
    if (op.type() != "c_allreduce") continue;
    EXPECT_EQ(GetOpAttrAs<std::string>(op, "compression"), "bf16");
    ++compressed;
  }
  EXPECT_EQ(compressed, 6);
  EXPECT_EQ(out.strategy().grad_compression(), "bf16");
  // Without compression the allreduces carry no such attribute at all, so
  // uncompressed programs keep their structure hash.
  const proto::ProgramDesc plain = PerGradMain();
  for (const auto& op : plain.blocks(0).ops())
    EXPECT_FALSE(HasOpAttr(op, "compression")) << op.type();

  cfg.set_grad_compression("int8");
  try {
    CollectiveTranspile(testing::LoadTestJob("mlp"), cfg, 2);
    FAIL() << "int8 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("none, bf16 or fp16"),
              std::string::npos)
        << e.what();
  }
}

TEST(CollectiveLint, CompressionOfAnUnknownFormatOrOfFloat64IsAnError) {
  proto::ProgramDesc p = PerGradMain();
  int at = FindOp(p, "c_allreduce", "fused_grad_0@COALESCED");
  SetOpAttr(p.mutable_blocks(0)->mutable_ops(at), "compression",
            std::string("fp8"));
  std::string msg = LintError(p, 2);
  EXPECT_NE(msg.find("'fc_2.b_0@GRAD'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fp8"), std::string::npos) << msg;

  SetOpAttr(p.mutable_blocks(0)->mutable_ops(at), "compression",
            std::string("fp16"));
  EXPECT_EQ(LintError(p, 2), "");
  for (auto& v : *p.mutable_blocks(0)->mutable_vars())
    if (v.name() == "fc_2.b_0@GRAD") v.set_dtype(proto::FP64);
  msg = LintError(p, 2);
  EXPECT_NE(msg.find("only float32 gradients are compressed"),
            std::string::npos)
      << msg;
}

TEST(CollectiveTranspiler, RefusesAnAlreadyDistributedJob) {
  proto::TrainingJob once =
      CollectiveTranspile(testing::LoadTestJob("mlp"), {}, 1);
  EXPECT_THROW(CollectiveTranspile(once, {}, 1), Error);
}

TEST(PserverTranspiler, SplitsIntoTrainerAndServers) {
  PserverSplit split = PserverTranspile(testing::LoadTestJob("mlp"), 2,
                                        {"127.0.0.1:6170", "127.0.0.1:6171"});
  std::vector<std::string> t = Types(split.trainer.main());
  EXPECT_EQ(std::count(t.begin(), t.end(), "send"), 6);
  EXPECT_EQ(std::count(t.begin(), t.end(), "recv"), 6);
  EXPECT_EQ(std::count(t.begin(), t.end(), "momentum"), 0);
  ASSERT_EQ(split.pservers.size(), 2u);
  for (const auto& ps : split.pservers) {
    EXPECT_EQ(Types(ps.main).back(), "listen_and_serv");
    ASSERT_EQ(ps.main.blocks_size(), 4) << "3 params per server";
    EXPECT_EQ(Types(ps.main).size(), 1u);
    const auto& blk = ps.main.blocks(1);
    ASSERT_EQ(blk.ops_size(), 3);
    EXPECT_EQ(blk.ops(0).type(), "sum");
    EXPECT_EQ(blk.ops(1).type(), "scale");
    EXPECT_FLOAT_EQ(GetOpAttrAs<float>(blk.ops(1), "scale"), 0.5f);
    EXPECT_EQ(blk.ops(2).type(), "momentum");
  }
  EXPECT_TRUE(IsPserverTrainer(split.trainer.main()));
}

TEST(PserverTranspiler, RewriteGivesTheSameOpsAsTranspilingThePlainJob) {
  proto::TrainingJob plain = testing::LoadTestJob("mlp");
  PserverSplit split = PserverTranspile(plain, 2, {"a:1", "b:2", "c:3"});
  for (bool overlap : {true, false}) {
    proto::DistributedStrategy cfg;
    cfg.set_overlap_allreduce(overlap);
    cfg.set_bucket_bytes(600 * 1024);
    proto::TrainingJob direct = CollectiveTranspile(plain, cfg, 2);
    proto::TrainingJob via =
        PserverToCollective(split.trainer, split.pservers, cfg, 2);
    ASSERT_EQ(Types(via.main()), Types(direct.main()));
    for (int i = 0; i < direct.main().blocks(0).ops_size(); ++i)
      EXPECT_EQ(OpToString(via.main().blocks(0).ops(i)),
                OpToString(direct.main().blocks(0).ops(i)));
    EXPECT_EQ(Types(via.startup()), Types(direct.startup()));
  }
}

// A one-layer model written out by hand in both styles: plain, and as a
// trainer that sends its gradients and receives its parameters plus one
// pserver program that merges, scales and applies them.
TEST(PserverTranspiler, HandBuiltPairBecomesTheCollectiveProgram) {
  auto role = [](proto::OpDesc op, OpRole r) {
    SetOpAttr(&op, kOpRoleAttr, static_cast<int32_t>(r));
    return op;
  };
  auto declare = [](proto::BlockDesc* b, bool with_state) {
    AddVarDesc(b, "x", DataType::kFloat32, Shape{-1, 4})
        ->set_stop_gradient(true);
    auto* w = AddVarDesc(b, "w", DataType::kFloat32, Shape{4, 2}, true);
    w->set_trainable(true);
    for (const char* n : {"y", "loss", "loss@GRAD", "y@GRAD", "w@GRAD"})
      AddVarDesc(b, n, DataType::kFloat32,
                 std::string(n) == "w@GRAD"             ? Shape{4, 2}
                 : std::string(n).rfind("loss", 0) == 0 ? Shape{1}
                                                        : Shape{-1, 2});
    if (with_state) AddVarDesc(b, "lr", DataType::kFloat32, Shape{1}, true);
  };
  auto forward_backward = [&](proto::BlockDesc* b) {
    *b->add_ops() =
        MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"y"}}});
    *b->add_ops() = role(MakeOp("mean", {{"X", {"y"}}}, {{"Out", {"loss"}}}),
                         OpRole::kLoss);
    *b->add_ops() =
        role(MakeOp("fill_constant", {}, {{"Out", {"loss@GRAD"}}},
                    {{"shape", std::vector<int64_t>{1}}, {"value", 1.0f}}),
             OpRole::kBackward);
    *b->add_ops() =
        role(MakeOp("mean_grad", {{"X", {"y"}}, {"Out@GRAD", {"loss@GRAD"}}},
                    {{"X@GRAD", {"y@GRAD"}}}),
             OpRole::kBackward);
    *b->add_ops() =
        role(MakeOp("mul_grad",
                    {{"X", {"x"}}, {"Y", {"w"}}, {"Out@GRAD", {"y@GRAD"}}},
                    {{"X@GRAD", {kEmptyVarName}}, {"Y@GRAD", {"w@GRAD"}}}),
             OpRole::kBackward);
  };
  proto::OpDesc sgd = role(
      MakeOp("sgd",
             {{"Param", {"w"}}, {"Grad", {"w@GRAD"}}, {"LearningRate", {"lr"}}},
             {{"ParamOut", {"w"}}},
             {{kOpRoleVarAttr, std::vector<std::string>{"w", "w@GRAD"}}}),
      OpRole::kOptimize);
  proto::OpDesc lr_init =
      MakeOp("fill_constant", {}, {{"Out", {"lr"}}},
             {{"shape", std::vector<int64_t>{1}}, {"value", 0.1f}});

  proto::TrainingJob plain;
  *plain.mutable_main() = NewProgram();
  *plain.mutable_startup() = NewProgram();
  declare(plain.mutable_main()->mutable_blocks(0), true);
  forward_backward(plain.mutable_main()->mutable_blocks(0));
  *plain.mutable_main()->mutable_blocks(0)->add_ops() = sgd;
  AddVarDesc(plain.mutable_startup()->mutable_blocks(0), "w",
             DataType::kFloat32, Shape{4, 2}, true);
  AddVarDesc(plain.mutable_startup()->mutable_blocks(0), "lr",
             DataType::kFloat32, Shape{1}, true);
  *plain.mutable_startup()->mutable_blocks(0)->add_ops() = lr_init;

  proto::TrainingJob trainer;
  *trainer.mutable_main() = NewProgram();
  *trainer.mutable_startup() = NewProgram();
  declare(trainer.mutable_main()->mutable_blocks(0), false);
  forward_backward(trainer.mutable_main()->mutable_blocks(0));
  auto* tb = trainer.mutable_main()->mutable_blocks(0);
  *tb->add_ops() = MakeOp("send", {{"X", {"w@GRAD"}}}, {},
                          {{"epmap", std::vector<std::string>{"ps:1"}}});
  *tb->add_ops() = MakeOp("recv", {}, {{"Out", {"w"}}},
                          {{"epmap", std::vector<std::string>{"ps:1"}}});
  AddVarDesc(trainer.mutable_startup()->mutable_blocks(0), "w",
             DataType::kFloat32, Shape{4, 2}, true);

  PserverProgram ps;
  ps.endpoint = "ps:1";
  ps.main = NewProgram();
  ps.startup = NewProgram();
  auto* pb = ps.main.mutable_blocks(0);
  AddVarDesc(pb, "w", DataType::kFloat32, Shape{4, 2}, true);
  AddVarDesc(pb, "lr", DataType::kFloat32, Shape{1}, true);
  for (const char* n : {"w@GRAD", "w@GRAD.trainer_0", "w@GRAD.trainer_1"})
    AddVarDesc(pb, n, DataType::kFloat32, Shape{4, 2});
  *pb->add_ops() = MakeOp("listen_and_serv",
                          {{"X", {"w@GRAD.trainer_0", "w@GRAD.trainer_1"}}}, {},
                          {{"optimize_blocks", std::vector<int32_t>{1}}});
  auto* opt = ps.main.add_blocks();
  opt->set_idx(1);
  *opt->add_ops() =
      role(MakeOp("sum", {{"X", {"w@GRAD.trainer_0", "w@GRAD.trainer_1"}}},
                  {{"Out", {"w@GRAD"}}}),
           OpRole::kOptimize);
  *opt->add_ops() = role(MakeOp("scale", {{"X", {"w@GRAD"}}},
                                {{"Out", {"w@GRAD"}}}, {{"scale", 0.5f}}),
                         OpRole::kOptimize);
  *opt->add_ops() = sgd;
  AddVarDesc(ps.startup.mutable_blocks(0), "lr", DataType::kFloat32, Shape{1},
             true);
  *ps.startup.mutable_blocks(0)->add_ops() = lr_init;

  proto::DistributedStrategy cfg;
  proto::TrainingJob direct = CollectiveTranspile(plain, cfg, 2);
  proto::TrainingJob via = PserverToCollective(trainer, {ps}, cfg, 2);
  EXPECT_EQ(Types(direct.main()),
            (std::vector<std::string>{"coalesce_tensor", "mul", "mean",
                                      "fill_constant", "mean_grad", "mul_grad",
                                      "c_allreduce", "c_wait", "sgd"}));
  ASSERT_EQ(Types(via.main()), Types(direct.main()));
  for (int i = 0; i < direct.main().blocks(0).ops_size(); ++i)
    EXPECT_EQ(OpToString(via.main().blocks(0).ops(i)),
              OpToString(direct.main().blocks(0).ops(i)));
  EXPECT_EQ(Types(via.startup()), Types(direct.startup()));
}

TEST(PserverTranspiler, MismatchedPairIsAnError) {
  PserverSplit split =
      PserverTranspile(testing::LoadTestJob("mlp"), 2, {"a:1", "b:2"});
  split.pservers.pop_back();
  try {
    PserverToPlain(split.trainer, split.pservers);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no pserver program optimizes"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fluid
