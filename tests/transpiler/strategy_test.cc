// The distributed strategy: defaults, the canonical form ranks compare,
// access by path, and validation naming the field, all by reflection.
#include "transpiler/strategy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "src/framework/enforce.h"
#include "tests/transpiler/testdata.h"
#include "transpiler/collective_transpiler.h"

namespace fluid {
namespace {

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Strategy, DefaultsLiveInTheProto) {
  const proto::DistributedStrategy s;
  EXPECT_EQ(s.bucket_bytes(), 4 << 20);
  EXPECT_TRUE(s.overlap_allreduce());
  EXPECT_EQ(s.grad_compression(), "none");
  EXPECT_EQ(ShardStage(s), 0);
  proto::DistributedStrategy on;
  on.set_sharding(true);
  EXPECT_EQ(ShardStage(on), 2);  // the default stage
  EXPECT_NO_THROW(ValidateStrategy(s));
}

TEST(Strategy, EqualMeaningHasEqualBytes) {
  proto::DistributedStrategy unset, explicit_defaults;
  explicit_defaults.set_bucket_bytes(4 << 20);
  explicit_defaults.mutable_sharding_configs()->set_stage(2);
  EXPECT_NE(unset.SerializeAsString(), explicit_defaults.SerializeAsString());
  EXPECT_EQ(CanonicalBytes(unset), CanonicalBytes(explicit_defaults));
  proto::DistributedStrategy other;
  other.mutable_sharding_configs()->set_stage(1);
  EXPECT_NE(CanonicalBytes(unset), CanonicalBytes(other));
}

TEST(Strategy, FieldsByPath) {
  proto::DistributedStrategy s;
  const auto fields = StrategyFields(s);
  ASSERT_FALSE(fields.empty());
  EXPECT_EQ(fields[0].first, "bucket_bytes");
  bool stage = false;
  for (const auto& [path, value] : fields)
    if (path == "sharding_configs.stage") stage = value == "2";
  EXPECT_TRUE(stage);
  SetStrategyField(&s, "sharding_configs.stage", "1");
  SetStrategyField(&s, "sync_batch_norm", "yes");
  SetStrategyField(&s, "sparse_dense_ratio", "0.5");
  SetStrategyField(&s, "grad_compression", "bf16");
  EXPECT_EQ(s.sharding_configs().stage(), 1);
  EXPECT_TRUE(s.sync_batch_norm());
  EXPECT_FLOAT_EQ(s.sparse_dense_ratio(), 0.5f);
  EXPECT_EQ(GetStrategyField(s, "grad_compression"), "bf16");
  EXPECT_EQ(StrategyFieldType("bucket_bytes"), "int64");
  EXPECT_NE(ErrorOf([&] {
              SetStrategyField(&s, "bucket_size", "1");
            }).find("no field 'bucket_size'"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              SetStrategyField(&s, "sharding_configs", "1");
            }).find("is a group of settings"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              SetStrategyField(&s, "sharding_configs.stage", "two");
            }).find("sharding_configs.stage takes a int32, got 'two'"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              SetStrategyField(&s, "sync_batch_norm", "maybe");
            }).find("sync_batch_norm"),
            std::string::npos);
}

TEST(Strategy, RangesAndAllowedValuesNameTheField) {
  proto::DistributedStrategy s;
  s.mutable_sharding_configs()->set_stage(4);
  EXPECT_NE(ErrorOf([&] { ValidateStrategy(s); })
                .find("DistributedStrategy.sharding_configs.stage must be in "
                      "[1, 3], got 4"),
            std::string::npos);
  s = {};
  s.set_bucket_bytes(0);
  EXPECT_NE(ErrorOf([&] {
              ValidateStrategy(s);
            }).find("DistributedStrategy.bucket_bytes must be >= 1"),
            std::string::npos);
  s = {};
  s.set_sparse_dense_ratio(std::nanf(""));
  EXPECT_NE(ErrorOf([&] { ValidateStrategy(s); }).find("sparse_dense_ratio"),
            std::string::npos);
  s = {};
  s.set_grad_compression("int8");
  EXPECT_NE(ErrorOf([&] { ValidateStrategy(s); })
                .find("grad_compression must be none, bf16 or fp16, got "
                      "'int8'"),
            std::string::npos);
}

TEST(Strategy, FieldsThatNeedOrExcludeEachOther) {
  proto::DistributedStrategy s;
  s.mutable_sharding_configs()->set_overlap_gather(true);
  EXPECT_NE(ErrorOf([&] {
              ValidateStrategy(s);
            }).find("sharding_configs.overlap_gather needs sharding"),
            std::string::npos);
  s.set_sharding(true);
  EXPECT_NO_THROW(ValidateStrategy(s));
  // Compressed gradients are reduce-scattered in 16 bits under sharding.
  s.set_grad_compression("bf16");
  EXPECT_NO_THROW(ValidateStrategy(s));
}

TEST(Strategy, TextRoundTripAndErrors) {
  proto::DistributedStrategy s;
  s.set_sharding(true);
  s.mutable_sharding_configs()->set_stage(1);
  s.set_bucket_bytes(1 << 16);
  const std::string text = StrategyToText(CanonicalStrategy(s));
  EXPECT_EQ(CanonicalBytes(StrategyFromText(text, "t")), CanonicalBytes(s));
  const std::string bad = ErrorOf(
      [] { StrategyFromText("sharding: true\nbucket_size: 3\n", "f"); });
  EXPECT_NE(bad.find("f: not a DistributedStrategy: line 2"), std::string::npos)
      << bad;
  EXPECT_NE(bad.find("bucket_size"), std::string::npos) << bad;
}

TEST(Strategy, TheJobDecidesWhatItAllows) {
  proto::TrainingJob job = testing::LoadTestJob("mlp");
  for (auto& v : *job.mutable_main()->mutable_blocks(0)->mutable_vars())
    if (v.name() == "fc_0.w_0@GRAD") v.set_type(proto::VarDesc::SELECTED_ROWS);
  proto::DistributedStrategy s;
  EXPECT_NO_THROW(ValidateStrategy(s, &job));
  // A sparse gradient's parameter stays whole under sharding, at every
  // stage (SparseTranspile.ShardingKeepsASparseParameterWhole).
  s.set_sharding(true);
  for (int stage : {1, 2, 3}) {
    s.mutable_sharding_configs()->set_stage(stage);
    EXPECT_NO_THROW(ValidateStrategy(s, &job));
  }
}

TEST(Strategy, PassesFollowTheStrategy) {
  proto::DistributedStrategy s;
  EXPECT_EQ(CollectivePassNames(s),
            (std::vector<std::string>{"bucketing", "allreduce",
                                      "startup_broadcast"}));
  s.set_sync_batch_norm(true);
  s.set_grad_compression("fp16");
  EXPECT_EQ(CollectivePassNames(s),
            (std::vector<std::string>{"bucketing", "allreduce", "compression",
                                      "sync_batch_norm", "startup_broadcast"}));
  s.set_grad_compression("none");
  s.set_sharding(true);
  EXPECT_EQ(CollectivePassNames(s).back(), "shard_updates");
}

TEST(Strategy, TheTranspiledJobCarriesItsStrategy) {
  proto::DistributedStrategy s;
  s.set_bucket_bytes(1 << 16);
  const proto::TrainingJob out =
      CollectiveTranspile(testing::LoadTestJob("mlp"), s, 2);
  EXPECT_EQ(out.strategy().bucket_bytes(), 1 << 16);
  EXPECT_TRUE(out.strategy().has_grad_compression());  // canonical: all set
  EXPECT_EQ(out.main().nranks(), 2);
}

}  // namespace
}  // namespace fluid
