// Gradient merge (transpiler/gradient_merge.h): the rewrite's op list, what
// its lint refuses, and that k micro-steps of batch B train like one step
// of batch k x B, skip a merged step whose fp16 gradients overflowed in
// any micro-step, and resume mid-accumulation exactly.
#include "transpiler/gradient_merge.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "src/builder/models.h"
#include "src/framework/enforce.h"
#include "src/framework/executor.h"
#include "src/framework/loss_scaling_state.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "transpiler/collective_transpiler.h"
#include "transpiler/mixed_precision.h"
#include "transpiler/program_query.h"
#include "transpiler/strategy.h"

namespace fluid {
namespace {

using testing::ErrorOf;

proto::GradientMergeConfig Merge(int k, bool avg = true) {
  proto::GradientMergeConfig c;
  c.set_k_steps(k);
  c.set_avg(avg);
  return c;
}

proto::TrainingJob Mlp(const std::string& optimizer = "momentum") {
  ModelOptions options;
  options.default_optimizer = false;
  options.optimizer.type = optimizer;
  options.optimizer.learning_rate = optimizer == "adam" ? 0.001f : 0.05f;
  return BuildModel("mlp", options);
}

// `op` without its op_skip_if.
void DropSkip(proto::OpDesc* op) {
  auto* attrs = op->mutable_attrs();
  for (int i = 0; i < attrs->size(); ++i)
    if (attrs->Get(i).name() == kOpSkipIfAttr) {
      attrs->DeleteSubrange(i, 1);
      return;
    }
}

// Each op as "type" plus " [skip_if]" and, for the ops the rewrite adds,
// their slots.
std::string OpList(const proto::ProgramDesc& main) {
  std::ostringstream out;
  for (const auto& op : main.blocks(0).ops()) {
    out << op.type();
    if (HasOpAttr(op, kOpSkipIfAttr))
      out << " [" << GetOpAttrAs<std::string>(op, kOpSkipIfAttr) << "]";
    const bool added =
        op.type().rfind("gradient_merge", 0) == 0 ||
        op.type().rfind("c_", 0) == 0 ||
        (HasRole(op, OpRole::kBackward) &&
         (op.type() == "elementwise_mul" || op.type() == "fill_zeros_like" ||
          (op.type() == "elementwise_add" &&
           IsGradMergeAccumulator(OpOutput(op, "Out")[0]))));
    if (added)
      for (const auto& s : op.outputs())
        for (const auto& a : s.arguments())
          out << " " << s.parameter() << "=" << a;
    out << "\n";
  }
  return out.str();
}

// The golden op lists of the mlp merged over 4 micro-steps, in one process
// and transpiled for 2 ranks: a change that means to alter them rewrites
// the file with FLUID_UPDATE_TESTDATA=1.
TEST(GradientMerge, GoldenOpLists) {
  const proto::TrainingJob local = GradientMergeRewrite(Mlp(), Merge(4));
  proto::DistributedStrategy s;
  s.set_gradient_merge(true);
  s.mutable_gradient_merge_configs()->set_k_steps(4);
  s.set_bucket_bytes(1 << 20);
  const proto::TrainingJob two = CollectiveTranspile(Mlp(), s, 2);
  const std::string got = "# one process\n" + OpList(local.main()) +
                          "# 2 ranks\n" + OpList(two.main());
  const std::string path =
      std::string(FLUID_TESTDATA_DIR) + "/gradient_merge_ops.txt";
  if (std::getenv("FLUID_UPDATE_TESTDATA") != nullptr) {
    std::ofstream(path) << got;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing " << path;
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str());
  // The accumulators and the counter are persistable, zeroed by startup.
  for (const auto& pg : OptimizedParams(local.main())) {
    const std::string acc = GradMergeAccumulator(pg.second);
    EXPECT_TRUE(GetVarDesc(local.main().blocks(0), acc).persistable()) << acc;
    EXPECT_NE(FindVarDesc(local.startup().blocks(0), acc), nullptr) << acc;
  }
  EXPECT_TRUE(
      GetVarDesc(local.main().blocks(0), kGradMergeStepVar).persistable());
  EXPECT_EQ(GradientMergeSteps(local.main()), 4);
  EXPECT_EQ(GradientMergeSteps(Mlp().main()), 0);
}

TEST(GradientMerge, RewriteIsIdempotentAndChecksItsConfig) {
  const proto::TrainingJob once = GradientMergeRewrite(Mlp(), Merge(4));
  EXPECT_EQ(GradientMergeRewrite(once, Merge(4)).SerializeAsString(),
            once.SerializeAsString());
  std::string msg = ErrorOf([&] { GradientMergeRewrite(once, Merge(2)); });
  EXPECT_NE(msg.find("already rewritten for k_steps 4"), std::string::npos)
      << msg;
  msg = ErrorOf([&] { GradientMergeRewrite(Mlp(), Merge(0)); });
  EXPECT_NE(msg.find("k_steps must be >= 1, got 0"), std::string::npos) << msg;
  // k_steps 1 is plain training.
  EXPECT_EQ(GradientMergeRewrite(Mlp(), Merge(1)).SerializeAsString(),
            Mlp().SerializeAsString());
}

// A hand-broken program for each promise the lint checks.
TEST(GradientMerge, LintRefusesBrokenPrograms) {
  {  // An update that runs on every micro-step.
    proto::ProgramDesc main = GradientMergeRewrite(Mlp(), Merge(4)).main();
    for (auto& op : *main.mutable_blocks(0)->mutable_ops())
      if (IsUpdateOp(op)) {
        DropSkip(&op);
        break;
      }
    const std::string msg = ErrorOf([&] { LintGradientMerge(main); });
    EXPECT_NE(msg.find("momentum op"), std::string::npos) << msg;
    EXPECT_NE(msg.find("must skip on '@GRAD_MERGE_SKIP@'"), std::string::npos)
        << msg;
  }
  {  // A collective outside the merged steps.
    proto::DistributedStrategy s;
    s.set_gradient_merge(true);
    s.mutable_gradient_merge_configs()->set_k_steps(4);
    proto::ProgramDesc main = CollectiveTranspile(Mlp(), s, 2).main();
    for (auto& op : *main.mutable_blocks(0)->mutable_ops())
      if (op.type() == "c_allreduce") {
        DropSkip(&op);
        break;
      }
    const std::string msg = ErrorOf([&] { LintGradientMerge(main); });
    EXPECT_NE(msg.find("c_allreduce op"), std::string::npos) << msg;
    EXPECT_NE(msg.find("moves data between ranks on every micro-step"),
              std::string::npos)
        << msg;
  }
  {  // An accumulation that skips.
    proto::ProgramDesc main = GradientMergeRewrite(Mlp(), Merge(4)).main();
    for (auto& op : *main.mutable_blocks(0)->mutable_ops())
      if (op.type() == "elementwise_add" &&
          IsGradMergeAccumulator(OpOutput(op, "Out")[0])) {
        SetOpAttr(&op, kOpSkipIfAttr, std::string(kGradMergeSkipVar));
        break;
      }
    const std::string msg = ErrorOf([&] { LintGradientMerge(main); });
    EXPECT_NE(msg.find("must run on every micro-step"), std::string::npos)
        << msg;
  }
}

// A gradient holding sparse rows (an embedding's with is_sparse) is
// refused, naming it and the option to use.
TEST(GradientMerge, SparseGradientIsRefusedByName) {
  proto::TrainingJob job = Mlp();
  const std::string grad = OptimizedParams(job.main())[0].second;
  FindMutableVarDesc(job.mutable_main()->mutable_blocks(0), grad)
      ->set_type(proto::VarDesc::SELECTED_ROWS);
  const std::string msg = ErrorOf([&] { GradientMergeRewrite(job, Merge(2)); });
  EXPECT_NE(msg.find("is_sparse=False"), std::string::npos) << msg;
  EXPECT_NE(msg.find(grad), std::string::npos) << msg;
}

constexpr int kBatch = 32;

// Global batch `step` of the mlp: rows [begin, end) of it.
FeedList Batch(int step, int begin, int end) {
  std::mt19937 rng(1000 + step);
  Tensor x, y;
  float* xp = x.mutable_data<float>(Shape{end - begin, 1, 28, 28});
  int64_t* yp = y.mutable_data<int64_t>(Shape{end - begin, 1});
  std::uniform_real_distribution<float> noise(0.0f, 1.0f);
  for (int n = 0; n < kBatch; ++n) {
    const int cls = rng() % 10;
    for (int i = 0; i < 784; ++i) {
      const float v = noise(rng) + (i % 10 == cls ? 0.5f : 0.0f);
      if (n >= begin && n < end) xp[(n - begin) * 784 + i] = v;
    }
    if (n >= begin && n < end) yp[n - begin] = cls;
  }
  return {{"image", x}, {"label", y}};
}

struct Training {
  Executor exe;
  Scope scope;
  std::unique_ptr<PreparedProgram> main;
  explicit Training(const proto::TrainingJob& job) {
    exe.RunOnce(job.startup(), &scope);
    main = exe.Prepare(job.main(), &scope);
  }
  // Runs global batches [from, to) as k micro-batches each.
  void Train(int from, int to, int k) {
    for (int step = from; step < to; ++step)
      for (int m = 0; m < k; ++m)
        exe.Run(main.get(), Batch(step, m * kBatch / k, (m + 1) * kBatch / k),
                {}, nullptr);
  }
  std::vector<float> Values(const std::string& name) const {
    const Tensor& t = scope.FindVar(name)->GetTensor();
    return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
  }
};

double RelativeError(const std::vector<float>& got,
                     const std::vector<float>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff += (got[i] - want[i]) * double(got[i] - want[i]);
    norm += want[i] * double(want[i]);
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

// 4 micro-steps of 8 against one step of 32, after 5 merged steps: within
// 1e-6 relative (the sums differ in rounding only), with Momentum and with
// Adam (whose beta powers advance once per merged step).
TEST(GradientMerge, KMicroStepsTrainLikeOneBigStep) {
  for (const std::string opt : {"momentum", "adam"}) {
    Training merged(GradientMergeRewrite(Mlp(opt), Merge(4)));
    Training big(Mlp(opt));
    merged.Train(0, 5, 4);
    big.Train(0, 5, 1);
    for (const auto& pg : OptimizedParams(big.main->program())) {
      const double err =
          RelativeError(merged.Values(pg.first), big.Values(pg.first));
      EXPECT_LT(err, 1e-6) << opt << " " << pg.first;
      // The accumulators are zero after a merged step.
      for (float v : merged.Values(GradMergeAccumulator(pg.second)))
        ASSERT_EQ(v, 0.0f);
    }
  }
}

// Sums (avg=false): the merged gradient is k times the mean, so SGD with
// rate lr/k trains like the mean with rate lr.
TEST(GradientMerge, SumIsKTimesTheMean) {
  Training summed(GradientMergeRewrite(Mlp("sgd"), Merge(2, false)));
  Training mean(GradientMergeRewrite(Mlp("sgd"), Merge(2, true)));
  summed.Train(0, 1, 2);
  mean.Train(0, 1, 2);
  Training start(Mlp("sgd"));
  for (const auto& pg : OptimizedParams(start.main->program())) {
    const std::vector<float> p0 = start.Values(pg.first);
    const std::vector<float> s = summed.Values(pg.first);
    const std::vector<float> m = mean.Values(pg.first);
    std::vector<float> ds(p0.size()), dm(p0.size());
    for (size_t i = 0; i < p0.size(); ++i) {
      ds[i] = s[i] - p0[i];
      dm[i] = 2 * (m[i] - p0[i]);
    }
    EXPECT_LT(RelativeError(ds, dm), 1e-4) << pg.first;
  }
}

// A checkpoint taken mid-accumulation (the persistables, accumulators and
// counter included) resumes to the bit of an uninterrupted run.
TEST(GradientMerge, ResumeMidAccumulationIsExact) {
  const proto::TrainingJob job = GradientMergeRewrite(Mlp("adam"), Merge(4));
  Training whole(job);
  whole.Train(0, 3, 4);
  Training first(job);
  first.Train(0, 1, 4);
  first.exe.Run(first.main.get(), Batch(1, 0, 8), {}, nullptr);
  first.exe.Run(first.main.get(), Batch(1, 8, 16), {}, nullptr);
  Training second(job);
  for (const auto& v : job.main().blocks(0).vars())
    if (v.persistable())
      second.scope.GetVar(v.name())->GetMutableTensor()->CopyFrom(
          first.scope.FindVar(v.name())->GetTensor());
  second.exe.Run(second.main.get(), Batch(1, 16, 24), {}, nullptr);
  second.exe.Run(second.main.get(), Batch(1, 24, 32), {}, nullptr);
  second.Train(2, 3, 4);
  for (const auto& pg : OptimizedParams(job.main())) {
    const std::vector<float> a = whole.Values(pg.first);
    const std::vector<float> b = second.Values(pg.first);
    ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
        << pg.first;
  }
}

// fp16 with dynamic loss scaling, k = 2: an Inf in the second micro-step of
// the second merged step skips that merged step (parameters as they were,
// the scale halved, found_infinite set on that run only).
TEST(GradientMerge, Fp16InfInOneMicroStepSkipsTheMergedStep) {
  proto::AmpConfig amp;
  amp.set_dtype("fp16");
  amp.set_init_loss_scaling(64);
  amp.set_decr_every_n_nan_or_inf(1);
  amp.set_decr_ratio(0.5f);
  const proto::TrainingJob job =
      GradientMergeRewrite(MixedPrecisionRewrite(Mlp(), amp), Merge(2));
  Training run(job);
  auto found = [&] {
    return run.scope.FindVar(kFoundInfVar)->GetTensor().data<int32_t>()[0];
  };
  run.Train(0, 1, 2);
  EXPECT_EQ(found(), 0);
  const std::string param = OptimizedParams(job.main())[0].first;
  const std::vector<float> before = run.Values(param);
  run.exe.Run(run.main.get(), Batch(1, 0, 16), {}, nullptr);
  EXPECT_EQ(found(), 0);
  FeedList poisoned = Batch(1, 16, 32);
  poisoned[0].second.mutable_data<float>()[0] = 1e30f;
  run.exe.Run(run.main.get(), poisoned, {}, nullptr);
  EXPECT_EQ(found(), 1);
  EXPECT_EQ(run.Values(kLossScalingVar)[0], 32.0f);
  const std::vector<float> after = run.Values(param);
  ASSERT_EQ(std::memcmp(before.data(), after.data(), 4 * before.size()), 0);
  run.Train(2, 3, 2);
  EXPECT_EQ(found(), 0);
  EXPECT_NE(run.Values(param), before);
}

}  // namespace
}  // namespace fluid

namespace fluid {
namespace {

// Every combination of the collective features with gradient merge
// transpiles for 2 ranks and passes the lints: every collective that moves
// data, and every optimize op, skips outside merged steps.
TEST(GradientMerge, ComposesWithTheCollectiveFeatures) {
  struct Case {
    const char* model;
    const char* fields;
  };
  const Case cases[] = {
      {"resnet", "sync_batch_norm=true"},
      {"resnet", "sharding=true,sharding_configs.stage=1"},
      {"mlp", "sharding=true,sharding_configs.stage=2"},
      {"mlp", "sharding=true,sharding_configs.overlap_gather=true"},
      {"mlp", "overlap_allreduce=false"},
      {"mlp", "grad_compression=bf16"},
      {"mlp", "amp=true,amp_configs.dtype=bf16"},
      {"mlp", "amp=true,amp_configs.dtype=fp16"},
      {"lenet", "amp=true,amp_configs.dtype=bf16,sharding=true"},
  };
  for (const Case& c : cases) {
    proto::DistributedStrategy s;
    SetStrategyField(&s, "gradient_merge", "true");
    SetStrategyField(&s, "gradient_merge_configs.k_steps", "3");
    std::stringstream fields(c.fields);
    std::string field;
    while (std::getline(fields, field, ',')) {
      const size_t eq = field.find('=');
      SetStrategyField(&s, field.substr(0, eq), field.substr(eq + 1));
    }
    proto::TrainingJob job;
    const std::string msg =
        ErrorOf([&] { job = CollectiveTranspile(BuildModel(c.model), s, 2); });
    ASSERT_EQ(msg, "") << c.model << " " << c.fields;
    int guarded = 0;
    for (const auto& op : job.main().blocks(0).ops())
      if (IsDataCollective(op)) {
        ASSERT_TRUE(HasOpAttr(op, kOpSkipIfAttr))
            << c.model << " " << c.fields << ": " << op.type();
        ++guarded;
      }
    EXPECT_GT(guarded, 0) << c.model << " " << c.fields;
    EXPECT_EQ(GradientMergeSteps(job.main()), 3);
  }
}

}  // namespace
}  // namespace fluid
