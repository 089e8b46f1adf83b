// layer_norm: forward against a naive loop in long double (with and without
// Scale and Bias, every begin_norm_axis), the saved Mean and Variance, the
// fp64 numeric gradient for X, Scale and Bias, the gradients against the
// closed forms, threads, compile-time shapes and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc LayerNorm(int axis, bool scale = true, bool bias = true,
                        float eps = 1e-5f) {
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"X", {"x"}}};
  if (scale) in.push_back({"Scale", {"scale"}});
  if (bias) in.push_back({"Bias", {"bias"}});
  return MakeOp("layer_norm", in,
                {{"Y", {"y"}}, {"Mean", {"mean"}}, {"Variance", {"var"}}},
                {{"begin_norm_axis", int32_t{axis}}, {"epsilon", eps}});
}

struct Naive {
  std::vector<double> y, mean, var;
};

Naive NaiveLayerNorm(const Tensor& x, int axis, const Tensor* scale,
                     const Tensor* bias, double eps) {
  const int64_t cols = x.shape().Product(axis, x.shape().rank());
  const int64_t rows = x.numel() / cols;
  auto xv = ToVector<double>(x);
  std::vector<double> sv =
      scale ? ToVector<double>(*scale) : std::vector<double>(cols, 1.0);
  std::vector<double> bv =
      bias ? ToVector<double>(*bias) : std::vector<double>(cols, 0.0);
  Naive n;
  for (int64_t r = 0; r < rows; ++r) {
    long double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += xv[r * cols + c];
    mean /= cols;
    for (int64_t c = 0; c < cols; ++c)
      var += (xv[r * cols + c] - mean) * (xv[r * cols + c] - mean);
    var /= cols;
    for (int64_t c = 0; c < cols; ++c)
      n.y.push_back(static_cast<double>(
          (xv[r * cols + c] - mean) / std::sqrt(var + eps) * sv[c] + bv[c]));
    n.mean.push_back(static_cast<double>(mean));
    n.var.push_back(static_cast<double>(var));
  }
  return n;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want,
                double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol) << what << " at " << i;
}

TEST(LayerNormOp, ForwardMatchesNaive) {
  const Shape s({2, 3, 4, 5});
  uint64_t seed = 1;
  for (int axis = 0; axis < 4; ++axis) {
    for (int params = 0; params < 4; ++params) {
      const bool with_scale = params & 1, with_bias = params & 2;
      const int64_t cols = s.Product(axis, 4);
      Tensor x = RandomTensor<double>(s, -3, 3, seed++);
      Tensor scale = RandomTensor<double>({cols}, 0.5, 2, seed++);
      Tensor bias = RandomTensor<double>({cols}, -1, 1, seed++);
      testing::TensorMap in = {{"x", x}};
      if (with_scale) in["scale"] = scale;
      if (with_bias) in["bias"] = bias;
      auto out = RunOp(LayerNorm(axis, with_scale, with_bias), in);
      // The op's epsilon is a float attr.
      Naive n = NaiveLayerNorm(x, axis, with_scale ? &scale : nullptr,
                               with_bias ? &bias : nullptr, double{1e-5f});
      const std::string what =
          "axis=" + std::to_string(axis) + " params=" + std::to_string(params);
      EXPECT_EQ(out["y"].shape(), s);
      EXPECT_EQ(out["mean"].shape(), Shape({s.Product(0, axis)}));
      ExpectNear(ToVector<double>(out["y"]), n.y, 1e-13, what + " y");
      ExpectNear(ToVector<double>(out["mean"]), n.mean, 1e-14, what);
      ExpectNear(ToVector<double>(out["var"]), n.var, 1e-13, what);
    }
  }
}

TEST(LayerNormOp, ThreadedMatchesNaive) {
  Tensor x = RandomTensor<double>({700, 130}, -2, 2, 5);
  Tensor scale = RandomTensor<double>({130}, 0.5, 2, 6);
  Tensor bias = RandomTensor<double>({130}, -1, 1, 7);
  auto out = RunOp(LayerNorm(1), {{"x", x}, {"scale", scale}, {"bias", bias}},
                   /*threads=*/4);
  Naive n = NaiveLayerNorm(x, 1, &scale, &bias, double{1e-5f});
  ExpectNear(ToVector<double>(out["y"]), n.y, 1e-13, "y");
}

TEST(LayerNormOp, Gradient) {
  uint64_t seed = 20;
  for (int axis : {1, 2}) {
    for (int params = 0; params < 4; ++params) {
      const bool with_scale = params & 1, with_bias = params & 2;
      const Shape s({3, 2, 5});
      const int64_t cols = s.Product(axis, 3);
      testing::TensorMap in = {{"x", RandomTensor<double>(s, -2, 2, seed++)}};
      if (with_scale)
        in["scale"] = RandomTensor<double>({cols}, 0.5, 2, seed++);
      if (with_bias) in["bias"] = RandomTensor<double>({cols}, -1, 1, seed++);
      testing::GradCheckOptions opt;
      opt.of = {"y"};
      EXPECT_TRUE(
          CheckGradient(LayerNorm(axis, with_scale, with_bias), in, opt))
          << "axis=" << axis << " params=" << params;
    }
  }
}

TEST(LayerNormOp, GradientWithPool) {
  testing::GradCheckOptions opt;
  opt.of = {"y"};
  opt.threads = 3;
  EXPECT_TRUE(CheckGradient(LayerNorm(1, true, true, 1e-3f),
                            {{"x", RandomTensor<double>({6, 7}, -2, 2, 30)},
                             {"scale", RandomTensor<double>({7}, 0.5, 2, 31)},
                             {"bias", RandomTensor<double>({7}, -1, 1, 32)}},
                            opt));
}

TEST(LayerNormOp, FloatMatchesDouble) {
  auto d =
      RunOp(LayerNorm(1), {{"x", RandomTensor<double>({5, 33}, -4, 4, 8)},
                           {"scale", RandomTensor<double>({33}, 0, 2, 9)},
                           {"bias", RandomTensor<double>({33}, -1, 1, 10)}});
  auto f =
      RunOp(LayerNorm(1), {{"x", RandomTensor<float>({5, 33}, -4, 4, 8)},
                           {"scale", RandomTensor<float>({33}, 0, 2, 9)},
                           {"bias", RandomTensor<float>({33}, -1, 1, 10)}});
  auto dv = ToVector<double>(d["y"]);
  auto fv = ToVector<float>(f["y"]);
  for (size_t i = 0; i < dv.size(); ++i) EXPECT_NEAR(fv[i], dv[i], 1e-5);
}

TEST(LayerNormOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape({-1, 7, 16}));
  AddVarDesc(block, "scale", DataType::kFloat32, Shape({16}));
  AddVarDesc(block, "bias", DataType::kFloat32, Shape({16}));
  InferShapeAtCompileTime(LayerNorm(2), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "y")), Shape({-1, 7, 16}));
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "mean")), Shape({-1}));
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "var")), Shape({-1}));
}

TEST(LayerNormOp, BadInputsNameVars) {
  std::string msg =
      ErrorOf(LayerNorm(1), {{"x", RandomTensor<double>({2, 6}, -1, 1, 1)},
                             {"scale", RandomTensor<double>({5}, -1, 1, 1)},
                             {"bias", RandomTensor<double>({6}, -1, 1, 1)}});
  EXPECT_NE(msg.find("Scale 'scale'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 6]"), std::string::npos) << msg;
  msg = ErrorOf(LayerNorm(2), {{"x", RandomTensor<double>({2, 6}, -1, 1, 1)},
                               {"scale", RandomTensor<double>({6}, -1, 1, 1)},
                               {"bias", RandomTensor<double>({6}, -1, 1, 1)}});
  EXPECT_NE(msg.find("begin_norm_axis=2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
