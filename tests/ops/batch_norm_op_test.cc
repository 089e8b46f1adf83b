#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::GradCheckOptions;
using testing::RandomTensor;
using testing::RunOp;
using testing::TensorMap;
using testing::ToVector;

// batch_norm of "x" with running statistics "mean"/"var" written to
// `mean_out`/`var_out` (the same vars for the usual in-place form).
proto::OpDesc BatchNorm(const AttributeMap& attrs,
                        const std::string& mean_out = "mean_out",
                        const std::string& var_out = "var_out") {
  return MakeOp("batch_norm",
                {{"X", {"x"}},
                 {"Scale", {"scale"}},
                 {"Bias", {"bias"}},
                 {"Mean", {"mean"}},
                 {"Variance", {"var"}}},
                {{"Y", {"y"}},
                 {"MeanOut", {mean_out}},
                 {"VarianceOut", {var_out}},
                 {"SavedMean", {"saved_mean"}},
                 {"SavedVariance", {"saved_var"}}},
                attrs);
}

// Random inputs for X of shape `x`; the variance is positive.
TensorMap Inputs(const Shape& x, uint64_t seed) {
  const Shape c{x[1]};
  return {{"x", RandomTensor<double>(x, -2, 3, seed)},
          {"scale", RandomTensor<double>(c, 0.5, 1.5, seed + 1)},
          {"bias", RandomTensor<double>(c, -1, 1, seed + 2)},
          {"mean", RandomTensor<double>(c, -1, 1, seed + 3)},
          {"var", RandomTensor<double>(c, 0.5, 2, seed + 4)}};
}

// The reference, written out with loops over [n, c, hw].
struct Naive {
  std::vector<double> y, mean, var, mean_out, var_out;
};

Naive NaiveBatchNorm(const TensorMap& in, const Shape& s, bool global,
                     double mom, double eps) {
  const int64_t n = s[0], c = s[1], hw = s.Product(2, s.rank());
  auto x = ToVector<double>(in.at("x"));
  auto scale = ToVector<double>(in.at("scale"));
  auto bias = ToVector<double>(in.at("bias"));
  Naive r;
  r.mean = ToVector<double>(in.at("mean"));
  r.var = ToVector<double>(in.at("var"));
  r.mean_out = r.mean;
  r.var_out = r.var;
  r.y.resize(x.size());
  for (int64_t ch = 0; ch < c; ++ch) {
    if (!global) {
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < hw; ++k) sum += x[(i * c + ch) * hw + k];
      const double mu = sum / double(n * hw);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < hw; ++k) {
          const double v = x[(i * c + ch) * hw + k] - mu;
          sq += v * v;
        }
      r.mean_out[ch] = mom * r.mean[ch] + (1 - mom) * mu;
      r.var_out[ch] = mom * r.var[ch] + (1 - mom) * sq / double(n * hw);
      r.mean[ch] = mu;
      r.var[ch] = sq / double(n * hw);
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < hw; ++k) {
        const int64_t j = (i * c + ch) * hw + k;
        r.y[j] = (x[j] - r.mean[ch]) / std::sqrt(r.var[ch] + eps) * scale[ch] +
                 bias[ch];
      }
  }
  return r;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want,
                double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol) << what << "[" << i << "]";
}

void CheckAgainstNaive(const Shape& s, const AttributeMap& attrs, bool global,
                       uint64_t seed) {
  const double mom = 0.8, eps = 1e-3;
  AttributeMap a = attrs;
  a["momentum"] = float(mom);
  a["epsilon"] = float(eps);
  TensorMap in = Inputs(s, seed);
  TensorMap out = RunOp(BatchNorm(a), in);
  Naive want = NaiveBatchNorm(in, s, global, float(mom), float(eps));
  ExpectNear(ToVector<double>(out["y"]), want.y, 1e-12, "y");
  ExpectNear(ToVector<double>(out["mean_out"]), want.mean_out, 1e-12,
             "mean_out");
  ExpectNear(ToVector<double>(out["var_out"]), want.var_out, 1e-12, "var_out");
  ExpectNear(ToVector<double>(out["saved_mean"]), want.mean, 1e-12,
             "saved_mean");
  std::vector<double> inv_std;
  for (double v : want.var) inv_std.push_back(1 / std::sqrt(v + float(eps)));
  ExpectNear(ToVector<double>(out["saved_var"]), inv_std, 1e-12, "saved_var");
}

TEST(BatchNormOp, TrainingMatchesNaive) {
  uint64_t seed = 1;
  for (Shape s : {Shape({4, 3}), Shape({2, 3, 4, 5}), Shape({1, 2, 3, 3}),
                  Shape({5, 1, 2, 1})}) {
    SCOPED_TRACE(::testing::Message() << s);
    CheckAgainstNaive(s, {}, false, seed += 10);
  }
}

TEST(BatchNormOp, RunningStatsWhenTestingOrGlobal) {
  for (const char* attr : {"is_test", "use_global_stats"}) {
    SCOPED_TRACE(attr);
    CheckAgainstNaive(Shape({3, 4, 2, 2}), {{attr, true}}, true, 50);
  }
}

TEST(BatchNormOp, RunningStatsInPlace) {
  TensorMap in = Inputs(Shape({6, 2}), 7);
  TensorMap apart = RunOp(BatchNorm({}), in);
  TensorMap same = RunOp(BatchNorm({}, "mean", "var"), in);
  EXPECT_EQ(ToVector<double>(same["mean"]),
            ToVector<double>(apart["mean_out"]));
  EXPECT_EQ(ToVector<double>(same["var"]), ToVector<double>(apart["var_out"]));
  EXPECT_EQ(ToVector<double>(same["y"]), ToVector<double>(apart["y"]));
}

TEST(BatchNormOp, DefaultsAreFluids) {
  TensorMap in = Inputs(Shape({8, 3}), 9);
  TensorMap out = RunOp(BatchNorm({}), in);
  Naive want = NaiveBatchNorm(in, Shape({8, 3}), false, 0.9, 1e-5);
  ExpectNear(ToVector<double>(out["y"]), want.y, 1e-6, "y");
  ExpectNear(ToVector<double>(out["mean_out"]), want.mean_out, 1e-7,
             "mean_out");
}

TEST(BatchNormOp, ThreadedMatchesSingle) {
  TensorMap in = Inputs(Shape({16, 8, 40, 50}), 11);
  TensorMap one = RunOp(BatchNorm({}), in, 1);
  TensorMap four = RunOp(BatchNorm({}), in, 4);
  for (const char* v : {"y", "mean_out", "var_out"})
    ExpectNear(ToVector<double>(four[v]), ToVector<double>(one[v]), 1e-12, v);
}

TEST(BatchNormOp, FloatMatchesDouble) {
  const Shape s{4, 3, 5, 5};
  TensorMap d = Inputs(s, 13);
  TensorMap f;
  for (const auto& [name, t] : d) {
    auto v = ToVector<double>(t);
    f[name] = testing::MakeTensor<float>(
        t.shape(), std::vector<float>(v.begin(), v.end()));
  }
  auto yd = ToVector<double>(RunOp(BatchNorm({}), d)["y"]);
  auto yf = ToVector<float>(RunOp(BatchNorm({}), f)["y"]);
  for (size_t i = 0; i < yd.size(); ++i) ASSERT_NEAR(yf[i], yd[i], 1e-4) << i;
}

// Also with fuse_with_relu: the gradient of max(batch_norm(X), 0).
TEST(BatchNormOp, Gradient) {
  GradCheckOptions o;
  o.wrt = {"x", "scale", "bias"};
  o.of = {"y"};
  uint64_t seed = 20;
  for (Shape s : {Shape({5, 3}), Shape({2, 3, 3, 2})}) {
    for (int variant = 0; variant < 4; ++variant) {
      const bool global = variant % 2 == 1, relu = variant >= 2;
      EXPECT_TRUE(CheckGradient(
          BatchNorm({{"use_global_stats", global}, {"fuse_with_relu", relu}}),
          Inputs(s, seed += 10), o))
          << s << " use_global_stats " << global << " fuse_with_relu " << relu;
    }
  }
}

// fuse_with_relu: Y = max(batch_norm(X), 0), the statistics unchanged.
TEST(BatchNormOp, FusedReluMatchesNaive) {
  const Shape s{3, 4, 2, 3};
  for (bool global : {false, true}) {
    SCOPED_TRACE(global ? "global" : "batch");
    TensorMap in = Inputs(s, 60);
    TensorMap out = RunOp(BatchNorm({{"use_global_stats", global},
                                     {"fuse_with_relu", true},
                                     {"momentum", 0.8f},
                                     {"epsilon", 1e-3f}}),
                          in);
    Naive want = NaiveBatchNorm(in, s, global, 0.8f, 1e-3f);
    int zeros = 0;
    for (double& v : want.y) {
      zeros += v <= 0;
      v = std::max(v, 0.0);
    }
    ASSERT_GT(zeros, 0);
    ASSERT_LT(zeros, int(want.y.size()));
    ExpectNear(ToVector<double>(out["y"]), want.y, 1e-12, "y");
    ExpectNear(ToVector<double>(out["mean_out"]), want.mean_out, 1e-12,
               "mean_out");
  }
}

// The fused gradient is batch_norm's gradient of dY masked where Y is 0.
TEST(BatchNormOp, FusedReluGradIsMaskedGrad) {
  const Shape s{4, 3, 5, 5};
  TensorMap in = Inputs(s, 90);
  TensorMap fwd = RunOp(BatchNorm({{"fuse_with_relu", true}}), in);
  auto grad_op = [](bool relu) {
    return MakeOp("batch_norm_grad",
                  {{"X", {"x"}},
                   {"Scale", {"scale"}},
                   {"Y", {"y"}},
                   {"SavedMean", {"saved_mean"}},
                   {"SavedVariance", {"saved_var"}},
                   {GradVarName("Y"), {"dy"}}},
                  {{GradVarName("X"), {"dx"}},
                   {GradVarName("Scale"), {"dscale"}},
                   {GradVarName("Bias"), {"dbias"}}},
                  {{"fuse_with_relu", relu}});
  };
  Tensor dy = RandomTensor<double>(s, -1, 1, 91);
  auto y = ToVector<double>(fwd["y"]), dyv = ToVector<double>(dy);
  for (size_t i = 0; i < y.size(); ++i)
    if (!(y[i] > 0)) dyv[i] = 0;
  TensorMap common = {{"x", in["x"]},
                      {"scale", in["scale"]},
                      {"y", fwd["y"]},
                      {"saved_mean", fwd["saved_mean"]},
                      {"saved_var", fwd["saved_var"]}};
  TensorMap fused_in = common, masked_in = common;
  fused_in["dy"] = dy;
  masked_in["dy"] = testing::MakeTensor<double>(s, dyv);
  TensorMap fused = RunOp(grad_op(true), fused_in);
  TensorMap masked = RunOp(grad_op(false), masked_in);
  for (const char* v : {"dx", "dscale", "dbias"})
    ExpectNear(ToVector<double>(fused[v]), ToVector<double>(masked[v]), 1e-12,
               v);
}

TEST(BatchNormOp, GradOpReadsSavedStats) {
  auto grads =
      OpRegistry::Global().Get("batch_norm").grad_maker()(BatchNorm({}));
  ASSERT_EQ(grads.size(), 1u);
  const proto::OpDesc& g = grads[0];
  EXPECT_EQ(g.type(), "batch_norm_grad");
  EXPECT_EQ(OpInput(g, "SavedVariance"), std::vector<std::string>{"saved_var"});
  EXPECT_EQ(OpInput(g, "Y"), std::vector<std::string>{"y"});
  EXPECT_EQ(OpInput(g, GradVarName("Y")), std::vector<std::string>{"y@GRAD"});
  EXPECT_EQ(OpOutput(g, GradVarName("X")), std::vector<std::string>{"x@GRAD"});
  EXPECT_EQ(OpOutput(g, GradVarName("Bias")),
            std::vector<std::string>{"bias@GRAD"});
  EXPECT_TRUE(OpOutput(g, GradVarName("Mean")).empty());
}

TEST(BatchNormOp, BadInputsNameOpAndVar) {
  TensorMap in = Inputs(Shape({4, 3}), 30);
  in["x"] = RandomTensor<double>(Shape({4}), -1, 1, 1);
  std::string msg = ErrorOf(BatchNorm({}), in);
  EXPECT_NE(msg.find("batch_norm: X 'x'"), std::string::npos) << msg;
  in = Inputs(Shape({4, 3}), 30);
  in["scale"] = RandomTensor<double>(Shape({2}), -1, 1, 1);
  msg = ErrorOf(BatchNorm({}), in);
  EXPECT_NE(msg.find("Scale 'scale'"), std::string::npos) << msg;
  msg = ErrorOf(BatchNorm({{"data_layout", std::string("NHWC")}}),
                Inputs(Shape({4, 3}), 30));
  EXPECT_NE(msg.find("data_layout"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
