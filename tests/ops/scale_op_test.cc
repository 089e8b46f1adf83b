#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc Scale(float scale, float bias, bool after,
                    const std::string& out = "out") {
  return MakeOp(
      "scale", {{"X", {"x"}}}, {{"Out", {out}}},
      {{"scale", scale}, {"bias", bias}, {"bias_after_scale", after}});
}

TEST(ScaleOp, ForwardMatchesNaive) {
  uint64_t seed = 1;
  for (Shape s : {Shape({1}), Shape({3, 5}), Shape({2, 1, 7}), Shape({0})}) {
    for (bool after : {true, false}) {
      for (float scale : {1.0f, -2.5f, 0.0f}) {
        for (float bias : {0.0f, 0.75f}) {
          Tensor x = RandomTensor<double>(s, -1, 1, seed++);
          Tensor out = RunOp(Scale(scale, bias, after), {{"x", x}})["out"];
          ASSERT_EQ(out.shape(), s);
          auto xv = ToVector<double>(x);
          auto got = ToVector<double>(out);
          const double a = scale, b = bias;
          for (size_t i = 0; i < xv.size(); ++i) {
            const double want = after ? a * xv[i] + b : a * (xv[i] + b);
            ASSERT_NEAR(got[i], want, 1e-14)
                << s << " scale " << scale << " bias " << bias << " after "
                << after;
          }
        }
      }
    }
  }
}

TEST(ScaleOp, DefaultsAreIdentity) {
  Tensor x = RandomTensor<double>({4, 3}, -1, 1, 2);
  Tensor out = RunOp(MakeOp("scale", {{"X", {"x"}}}, {{"Out", {"out"}}}),
                     {{"x", x}})["out"];
  EXPECT_EQ(ToVector<double>(out), ToVector<double>(x));
}

TEST(ScaleOp, InPlace) {
  Tensor x = RandomTensor<double>({5, 2}, -1, 1, 3);
  Tensor out = RunOp(Scale(3.0f, 1.0f, true, "x"), {{"x", x}})["x"];
  auto xv = ToVector<double>(x);
  auto got = ToVector<double>(out);
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_EQ(got[i], 3.0 * xv[i] + 1.0);
}

TEST(ScaleOp, ThreadedMatchesNaive) {
  Tensor x = RandomTensor<double>({300, 301}, -1, 1, 4);
  Tensor out = RunOp(Scale(-1.5f, 0.25f, false), {{"x", x}}, 4)["out"];
  auto xv = ToVector<double>(x);
  auto got = ToVector<double>(out);
  for (size_t i = 0; i < xv.size(); ++i)
    ASSERT_NEAR(got[i], -1.5 * (xv[i] + 0.25), 1e-14) << i;
}

TEST(ScaleOp, FloatMatchesDouble) {
  auto op = Scale(1.7f, -0.3f, false);
  auto d = ToVector<double>(
      RunOp(op, {{"x", RandomTensor<double>({6, 7}, -3, 3, 5)}})["out"]);
  auto f = ToVector<float>(
      RunOp(op, {{"x", RandomTensor<float>({6, 7}, -3, 3, 5)}})["out"]);
  ASSERT_EQ(d.size(), f.size());
  for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-5);
}

TEST(ScaleOp, Gradient) {
  uint64_t seed = 10;
  for (Shape s : {Shape({1}), Shape({3, 5}), Shape({2, 1, 3})}) {
    for (bool after : {true, false}) {
      EXPECT_TRUE(
          CheckGradient(Scale(-2.5f, 0.75f, after),
                        {{"x", RandomTensor<double>(s, -1, 1, seed++)}}))
          << s << " after " << after;
    }
  }
}

TEST(ScaleOp, GradIsScaleWithoutBias) {
  auto grads =
      OpRegistry::Global().Get("scale").grad_maker()(Scale(4.0f, 2.0f, false));
  ASSERT_EQ(grads.size(), 1u);
  const proto::OpDesc& g = grads[0];
  EXPECT_EQ(g.type(), "scale");
  EXPECT_EQ(OpInput(g, "X"), std::vector<std::string>{"out@GRAD"});
  EXPECT_EQ(OpOutput(g, "Out"), std::vector<std::string>{"x@GRAD"});
  EXPECT_EQ(GetOpAttrAs<float>(g, "scale"), 4.0f);
  EXPECT_EQ(GetOpAttrAs<float>(g, "bias"), 0.0f);
  EXPECT_EQ(OpRoleOf(g), static_cast<int>(OpRole::kBackward));
}

TEST(ScaleOp, BadAttrTypeNamesAttr) {
  auto op = MakeOp("scale", {{"X", {"in_var"}}}, {{"Out", {"o"}}},
                   {{"scale", 2}});  // int, not float
  try {
    RunOp(op, {{"in_var", RandomTensor<double>({2}, -1, 1, 1)}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'scale'"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace fluid
