#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "src/framework/shape_only_inputs.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::GradCheckOptions;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::TensorMap;
using testing::ToVector;

// dropout of "x"; with `counted`, the step counter "step" is advanced in
// place.
proto::OpDesc Dropout(const AttributeMap& attrs, bool counted = false) {
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"X", {"x"}}};
  std::vector<std::pair<std::string, std::vector<std::string>>> out = {
      {"Out", {"out"}}, {"Mask", {"mask"}}};
  if (counted) {
    in.push_back({"Step", {"step"}});
    out.push_back({"StepOut", {"step"}});
  }
  return MakeOp("dropout", in, out, attrs);
}

Tensor Step(int64_t v) { return MakeTensor<int64_t>(Shape({1}), {v}); }

double KeptFraction(const Tensor& mask) {
  double kept = 0;
  for (double m : ToVector<double>(mask)) kept += m;
  return kept / double(mask.numel());
}

TEST(DropoutOp, KeepsAboutOneMinusP) {
  Tensor x = RandomTensor<double>(Shape({200, 500}), 1, 2, 1);
  for (float p : {0.1f, 0.5f, 0.9f}) {
    for (int32_t seed : {0, 7}) {
      TensorMap out =
          RunOp(Dropout({{"dropout_prob", p}, {"seed", seed}}), {{"x", x}});
      // 100000 Bernoulli draws: the standard deviation is below 0.0016.
      EXPECT_NEAR(KeptFraction(out["mask"]), 1.0 - p, 0.01)
          << "p " << p << " seed " << seed;
    }
  }
}

TEST(DropoutOp, ExtremeProbabilities) {
  Tensor x = RandomTensor<double>(Shape({1000}), 1, 2, 2);
  EXPECT_EQ(KeptFraction(
                RunOp(Dropout({{"dropout_prob", 0.0f}}), {{"x", x}})["mask"]),
            1.0);
  for (const char* impl : {"downgrade_in_infer", "upscale_in_train"}) {
    TensorMap out =
        RunOp(Dropout({{"dropout_prob", 1.0f},
                       {"dropout_implementation", std::string(impl)}}),
              {{"x", x}});
    EXPECT_EQ(KeptFraction(out["mask"]), 0.0) << impl;
    for (double v : ToVector<double>(out["out"])) ASSERT_EQ(v, 0.0) << impl;
  }
}

TEST(DropoutOp, TrainAndInferForEachImplementation) {
  const double p = 0.3;
  Tensor x = RandomTensor<double>(Shape({7, 9}), -1, 1, 3);
  auto xv = ToVector<double>(x);
  for (bool upscale : {false, true}) {
    const AttributeMap attrs = {
        {"dropout_prob", float(p)},
        {"dropout_implementation",
         std::string(upscale ? "upscale_in_train" : "downgrade_in_infer")}};
    TensorMap train = RunOp(Dropout(attrs), {{"x", x}});
    auto mask = ToVector<double>(train["mask"]);
    auto out = ToVector<double>(train["out"]);
    const double keep = upscale ? 1.0 / (1.0 - float(p)) : 1.0;
    for (size_t i = 0; i < xv.size(); ++i) {
      ASSERT_TRUE(mask[i] == 0.0 || mask[i] == 1.0) << i;
      ASSERT_NEAR(out[i], xv[i] * mask[i] * keep, 1e-15) << i;
    }
    AttributeMap test_attrs = attrs;
    test_attrs["is_test"] = true;
    auto infer =
        ToVector<double>(RunOp(Dropout(test_attrs), {{"x", x}})["out"]);
    const double scale = upscale ? 1.0 : 1.0 - float(p);
    for (size_t i = 0; i < xv.size(); ++i)
      ASSERT_NEAR(infer[i], xv[i] * scale, 1e-15) << i;
  }
}

TEST(DropoutOp, MaskIsReproducibleAndVariesWithSeedAndStep) {
  Tensor x = RandomTensor<double>(Shape({64, 64}), 1, 2, 4);
  auto mask = [&](int32_t seed, int64_t step) {
    return ToVector<double>(RunOp(Dropout({{"seed", seed}}, true),
                                  {{"x", x}, {"step", Step(step)}})["mask"]);
  };
  EXPECT_EQ(mask(5, 0), mask(5, 0));
  EXPECT_NE(mask(5, 0), mask(6, 0));
  EXPECT_NE(mask(5, 0), mask(5, 1));
}

// A recompute replay that only its gradient's Mask needs has no Out: it
// reads X's shape alone (so X may be freed), and draws the replayed op's
// mask (its Out's name as replay_of, the step it read).
TEST(DropoutOp, AReplayWithoutOutDrawsTheMaskFromXsShape) {
  EXPECT_FALSE(IsShapeOnlyInput("dropout", "X"));
  EXPECT_STREQ(ShapeOnlyInputWithout("dropout", "X"), "Out");
  const Tensor x = RandomTensor<double>(Shape({64, 48}), 1, 2, 8);
  for (const char* impl : {"downgrade_in_infer", "upscale_in_train"}) {
    const AttributeMap attrs = {{"dropout_prob", 0.3f},
                                {"dropout_implementation", std::string(impl)}};
    const Tensor want =
        RunOp(Dropout(attrs, true), {{"x", x}, {"step", Step(7)}})["mask"];
    proto::OpDesc replay = MakeOp("dropout", {{"X", {"x"}}, {"Step", {"step"}}},
                                  {{"Mask", {"mask"}}}, attrs);
    SetOpAttr(&replay, "replay_of", std::string("out"));
    proto::ProgramDesc program = NewProgram();
    proto::BlockDesc* block = program.mutable_blocks(0);
    AddVarDesc(block, "x", DataType::kFloat64, x.shape(), true);
    AddVarDesc(block, "step", DataType::kInt64, Shape{1}, true);
    *block->add_ops() = replay;
    InferShapeAtCompileTime(replay, block);
    Scope scope;
    Tensor* held = scope.Var("x")->GetMutableTensor();
    held->CopyFrom(x, Place::CPU());
    held->ReleaseBuffer();  // as the executor leaves it: shape, no values
    scope.Var("step")->GetMutableTensor()->CopyFrom(Step(8), Place::CPU());
    Executor exe(Place::CPU(), 2);
    std::vector<Tensor> got;
    exe.RunOnce(program, &scope, {}, {"mask"}, &got);
    EXPECT_EQ(ToVector<double>(got[0]), ToVector<double>(want)) << impl;
  }
  // Not a replay: an error naming replay_of.
  const std::string msg = ErrorOf(
      MakeOp("dropout", {{"X", {"x"}}}, {{"Mask", {"mask"}}}), {{"x", x}});
  EXPECT_NE(msg.find("replay_of"), std::string::npos) << msg;
}

TEST(DropoutOp, AdvancesItsStepCounter) {
  Tensor x = RandomTensor<double>(Shape({3, 4}), 1, 2, 5);
  TensorMap out = RunOp(Dropout({}, true), {{"x", x}, {"step", Step(41)}});
  EXPECT_EQ(ToVector<int64_t>(out["step"]), std::vector<int64_t>{42});
  // Inference leaves it alone.
  out =
      RunOp(Dropout({{"is_test", true}}, true), {{"x", x}, {"step", Step(41)}});
  EXPECT_EQ(ToVector<int64_t>(out["step"]), std::vector<int64_t>{41});
}

TEST(DropoutOp, ThreadedMatchesSingle) {
  Tensor x = RandomTensor<double>(Shape({600, 700}), -1, 1, 6);
  auto one = RunOp(Dropout({{"seed", 3}}), {{"x", x}}, 1);
  auto four = RunOp(Dropout({{"seed", 3}}), {{"x", x}}, 4);
  EXPECT_EQ(ToVector<double>(one["mask"]), ToVector<double>(four["mask"]));
  EXPECT_EQ(ToVector<double>(one["out"]), ToVector<double>(four["out"]));
}

TEST(DropoutOp, FloatAndDoubleDropTheSameElements) {
  auto d = RunOp(Dropout({{"seed", 9}}),
                 {{"x", RandomTensor<double>(Shape({50, 40}), -1, 1, 7)}});
  auto f = RunOp(Dropout({{"seed", 9}}),
                 {{"x", RandomTensor<float>(Shape({50, 40}), -1, 1, 7)}});
  auto md = ToVector<double>(d["mask"]);
  auto mf = ToVector<float>(f["mask"]);
  for (size_t i = 0; i < md.size(); ++i) ASSERT_EQ(md[i], double(mf[i])) << i;
}

TEST(DropoutOp, Gradient) {
  // With a fixed seed and no step counter every run draws the same mask,
  // so the op is linear in X and the central differences see that mask.
  GradCheckOptions o;
  o.wrt = {"x"};
  o.of = {"out"};
  // Seed 0 derives the seed from Out's name, which the grad op lacks.
  for (const char* impl : {"downgrade_in_infer", "upscale_in_train"}) {
    for (bool is_test : {false, true}) {
      for (int32_t seed : {11, 0}) {
        EXPECT_TRUE(CheckGradient(
            Dropout({{"dropout_prob", 0.4f},
                     {"seed", seed},
                     {"is_test", is_test},
                     {"dropout_implementation", std::string(impl)}}),
            {{"x", RandomTensor<double>(Shape({6, 5}), -1, 1, 8)}}, o))
            << impl << " is_test " << is_test << " seed " << seed;
      }
    }
  }
}

TEST(DropoutOp, BadAttrsAreNamed) {
  TensorMap in = {{"x", RandomTensor<double>(Shape({3}), -1, 1, 9)}};
  std::string msg = ErrorOf(Dropout({{"dropout_prob", 1.5f}}), in);
  EXPECT_NE(msg.find("dropout_prob"), std::string::npos) << msg;
  msg = ErrorOf(Dropout({{"dropout_implementation", std::string("upscale")}}),
                in);
  EXPECT_NE(msg.find("dropout_implementation"), std::string::npos) << msg;
  in["step"] = RandomTensor<double>(Shape({1}), 0, 1, 1);
  msg = ErrorOf(Dropout({}, true), in);
  EXPECT_NE(msg.find("Step 'step'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
