#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

const char* const kTypes[] = {"reduce_sum", "reduce_mean", "reduce_max",
                              "reduce_min", "reduce_prod"};

proto::OpDesc Reduce(const std::string& type, const std::vector<int32_t>& dim,
                     bool keep_dim = false, bool reduce_all = false) {
  return MakeOp(
      type, {{"X", {"x"}}}, {{"Out", {"out"}}},
      {{"dim", dim}, {"keep_dim", keep_dim}, {"reduce_all", reduce_all}});
}

// The reduction by brute force: every element of X visited, its index over
// the kept dims giving the element of Out it joins.
std::vector<double> NaiveReduce(const std::string& type, const Tensor& x,
                                const std::vector<bool>& reduced) {
  const Shape& s = x.shape();
  std::vector<std::vector<double>> groups;
  std::vector<int64_t> idx(s.rank(), 0);
  for (int64_t n = 0; n < s.numel(); ++n) {
    int64_t o = 0;
    for (int d = 0; d < s.rank(); ++d)
      if (!reduced[d]) o = o * s[d] + idx[d];
    if (static_cast<int64_t>(groups.size()) <= o) groups.resize(o + 1);
    groups[o].push_back(x.data<double>()[n]);
    for (int d = s.rank() - 1; d >= 0; --d) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  std::vector<double> out;
  for (const auto& g : groups) {
    double v = type == "reduce_prod" ? 1 : 0;
    for (double e : g) v = type == "reduce_prod" ? v * e : v + e;
    if (type == "reduce_mean") v /= g.size();
    if (type == "reduce_max") v = *std::max_element(g.begin(), g.end());
    if (type == "reduce_min") v = *std::min_element(g.begin(), g.end());
    out.push_back(v);
  }
  return out;
}

struct Case {
  Shape x;
  std::vector<int32_t> dim;
  std::vector<bool> reduced;
  Shape out;       // keep_dim false
  Shape out_keep;  // keep_dim true
};

std::vector<Case> Cases() {
  return {
      {{3, 4}, {1}, {false, true}, {3}, {3, 1}},
      {{3, 4}, {0}, {true, false}, {4}, {1, 4}},
      {{3, 4}, {-1}, {false, true}, {3}, {3, 1}},
      {{3, 4}, {0, 1}, {true, true}, {1}, {1, 1}},
      {{2, 3, 4}, {1}, {false, true, false}, {2, 4}, {2, 1, 4}},
      {{2, 3, 4}, {0, 2}, {true, false, true}, {3}, {1, 3, 1}},
      {{2, 3, 4}, {-1, -3}, {true, false, true}, {3}, {1, 3, 1}},
      {{2, 3, 2, 5}, {1, 3}, {false, true, false, true}, {2, 2}, {2, 1, 2, 1}},
      {{7}, {0}, {true}, {1}, {1}},
      // Groups longer than one CUDA thread reduces.
      {{3, 100}, {1}, {false, true}, {3}, {3, 1}}};
}

TEST(ReduceOp, ForwardMatchesNaive) {
  uint64_t seed = 1;
  for (const char* type : kTypes) {
    for (const Case& c : Cases()) {
      // Values near 1 keep a product of 100 of them in range.
      Tensor x = RandomTensor<double>(c.x, 0.5, 1.5, seed++);
      for (bool keep : {false, true}) {
        Tensor out = RunOp(Reduce(type, c.dim, keep), {{"x", x}})["out"];
        EXPECT_EQ(out.shape(), keep ? c.out_keep : c.out) << type << c.x;
        const std::vector<double> want = NaiveReduce(type, x, c.reduced);
        const std::vector<double> got = ToVector<double>(out);
        ASSERT_EQ(got.size(), want.size()) << type << c.x;
        for (size_t i = 0; i < want.size(); ++i)
          EXPECT_NEAR(got[i], want[i], 1e-12 * std::max(1.0, std::abs(want[i])))
              << type << " " << c.x << " at " << i;
      }
    }
  }
}

TEST(ReduceOp, ReduceAllIgnoresDim) {
  Tensor x = RandomTensor<double>({2, 3, 4}, -1, 1, 5);
  std::vector<bool> all(3, true);
  for (const char* type : kTypes) {
    Tensor out = RunOp(Reduce(type, {1}, false, true), {{"x", x}})["out"];
    EXPECT_EQ(out.shape(), Shape({1})) << type;
    EXPECT_NEAR(ToVector<double>(out)[0], NaiveReduce(type, x, all)[0], 1e-12)
        << type;
    Tensor kept = RunOp(Reduce(type, {1}, true, true), {{"x", x}})["out"];
    EXPECT_EQ(kept.shape(), Shape({1, 1, 1})) << type;
  }
}

TEST(ReduceOp, ThreadedMatchesOneThread) {
  Tensor x = RandomTensor<double>({64, 50, 33}, 0.9, 1.1, 6);
  for (const char* type : kTypes) {
    for (const auto& dim :
         std::vector<std::vector<int32_t>>{{1}, {0, 2}, {0}, {2}}) {
      auto one = ToVector<double>(RunOp(Reduce(type, dim), {{"x", x}})["out"]);
      auto four =
          ToVector<double>(RunOp(Reduce(type, dim), {{"x", x}}, 4)["out"]);
      EXPECT_EQ(one, four) << type;
    }
  }
}

TEST(ReduceOp, Integers) {
  std::vector<int64_t> v = {3, -1, 4, 1, -5, 9, 2, -6, 5, 3, 5, -8};
  Tensor x64 = MakeTensor<int64_t>({3, 4}, v);
  Tensor x32 =
      MakeTensor<int32_t>({3, 4}, std::vector<int32_t>(v.begin(), v.end()));
  const std::vector<std::pair<std::string, std::vector<int64_t>>> want = {
      {"reduce_sum", {7, 0, 5}},
      {"reduce_max", {4, 9, 5}},
      {"reduce_min", {-1, -6, -8}},
      {"reduce_prod", {-12, 540, -600}}};
  for (const auto& [type, expect] : want) {
    EXPECT_EQ(ToVector<int64_t>(RunOp(Reduce(type, {1}), {{"x", x64}})["out"]),
              expect)
        << type;
    EXPECT_EQ(ToVector<int32_t>(RunOp(Reduce(type, {1}), {{"x", x32}})["out"]),
              std::vector<int32_t>(expect.begin(), expect.end()))
        << type;
  }
}

// Sums accumulate in double: a float sum of many elements keeps its digits.
TEST(ReduceOp, FloatMatchesDouble) {
  for (const char* type : {"reduce_sum", "reduce_mean"}) {
    auto d = ToVector<double>(
        RunOp(Reduce(type, {1}),
              {{"x", RandomTensor<double>({3, 100000}, 0, 1, 7)}})["out"]);
    auto f = ToVector<float>(
        RunOp(Reduce(type, {1}),
              {{"x", RandomTensor<float>({3, 100000}, 0, 1, 7)}})["out"]);
    for (size_t i = 0; i < d.size(); ++i)
      EXPECT_NEAR(f[i], d[i], 1e-7 * std::abs(d[i])) << type;
  }
}

TEST(ReduceOp, Gradient) {
  uint64_t seed = 10;
  for (const char* type : kTypes) {
    for (const Case& c : Cases()) {
      if (c.x.numel() > 100) continue;  // the numeric gradient is slow
      for (bool keep : {false, true}) {
        // Distinct values: a max or a min is differentiable away from ties.
        EXPECT_TRUE(
            CheckGradient(Reduce(type, c.dim, keep),
                          {{"x", RandomTensor<double>(c.x, 0.5, 1.5, seed++)}}))
            << type << " " << c.x;
      }
    }
    EXPECT_TRUE(
        CheckGradient(Reduce(type, {0}, false, true),
                      {{"x", RandomTensor<double>({2, 3}, 0.5, 1.5, seed++)}}))
        << type;
  }
}

proto::OpDesc ReduceGrad(const std::string& type, std::vector<int32_t> dim) {
  return MakeOp(type + "_grad",
                {{"X", {"x"}}, {"Out", {"out"}}, {"Out@GRAD", {"dout"}}},
                {{"X@GRAD", {"dx"}}}, {{"dim", dim}});
}

// Every element tied with the max (or min) gets the whole gradient.
TEST(ReduceOp, TiesAllGetTheGradient) {
  Tensor x = MakeTensor<double>({2, 4}, {1, 3, 3, 2, -1, -1, 0, -1});
  Tensor dout = MakeTensor<double>({2}, {10, 20});
  Tensor max = MakeTensor<double>({2}, {3, 0});
  Tensor min = MakeTensor<double>({2}, {1, -1});
  auto dmax = RunOp(ReduceGrad("reduce_max", {1}),
                    {{"x", x}, {"out", max}, {"dout", dout}})["dx"];
  EXPECT_EQ(ToVector<double>(dmax),
            (std::vector<double>{0, 10, 10, 0, 0, 0, 20, 0}));
  auto dmin = RunOp(ReduceGrad("reduce_min", {1}),
                    {{"x", x}, {"out", min}, {"dout", dout}})["dx"];
  EXPECT_EQ(ToVector<double>(dmin),
            (std::vector<double>{10, 0, 0, 0, 20, 20, 0, 20}));
}

// A zero element gets the product of the others; with two zeros every
// element's gradient is 0.
TEST(ReduceOp, ProdGradientAtZeros) {
  Tensor x = MakeTensor<double>({3, 3}, {2, 0, 5, 0, 0, 3, 2, 3, 4});
  Tensor out = MakeTensor<double>({3}, {0, 0, 24});
  Tensor dout = MakeTensor<double>({3}, {1, 2, 3});
  auto dx = RunOp(ReduceGrad("reduce_prod", {1}),
                  {{"x", x}, {"out", out}, {"dout", dout}})["dx"];
  EXPECT_EQ(ToVector<double>(dx),
            (std::vector<double>{0, 10, 0, 0, 0, 0, 36, 24, 18}));
}

TEST(ReduceOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape{-1, 3, 5});
  InferShapeAtCompileTime(Reduce("reduce_sum", {-1}), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out")), Shape({-1, 3}));
  InferShapeAtCompileTime(Reduce("reduce_max", {1}, true), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out")), Shape({-1, 1, 5}));
  InferShapeAtCompileTime(Reduce("reduce_mean", {0}, false, true), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out")), Shape({1}));
}

TEST(ReduceOp, BadDimNamesTheOpAndX) {
  Tensor x = RandomTensor<double>({2, 3}, -1, 1, 8);
  for (const auto& dim :
       std::vector<std::vector<int32_t>>{{2}, {-3}, {0, 0}, {1, -1}, {}}) {
    std::string msg = ErrorOf(Reduce("reduce_sum", dim), {{"x", x}});
    EXPECT_NE(msg.find("reduce_sum"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("dim"), std::string::npos) << msg;
  }
  std::string msg = ErrorOf(Reduce("reduce_max", {1}),
                            {{"x", RandomTensor<double>({2, 0}, -1, 1, 9)}});
  EXPECT_NE(msg.find("no elements"), std::string::npos) << msg;
  // A sum of nothing is 0.
  Tensor empty = RunOp(Reduce("reduce_sum", {1}),
                       {{"x", RandomTensor<double>({2, 0}, -1, 1, 9)}})["out"];
  EXPECT_EQ(ToVector<double>(empty), (std::vector<double>{0, 0}));
}

}  // namespace
}  // namespace fluid
