#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::RandomTensor;
using testing::RunOp;
using testing::TensorMap;
using testing::ToVector;

proto::OpDesc Concat(int n, int axis) {
  std::vector<std::string> xs;
  for (int i = 0; i < n; ++i) xs.push_back("x" + std::to_string(i));
  return MakeOp("concat", {{"X", xs}}, {{"Out", {"out"}}},
                {{"axis", int32_t{axis}}});
}

// Element by element: Out's index split into (outer, position on the axis,
// inner), the position looked up among the inputs' ranges.
std::vector<double> NaiveConcat(const std::vector<Tensor>& xs, int axis) {
  const Shape& s0 = xs[0].shape();
  const int64_t outer = s0.Product(0, axis);
  const int64_t inner = s0.Product(axis + 1, s0.rank());
  int64_t dim = 0;
  for (const Tensor& x : xs) dim += x.shape()[axis];
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t a = 0; a < dim; ++a) {
      int64_t k = 0, start = 0;
      while (a >= start + xs[k].shape()[axis]) start += xs[k++].shape()[axis];
      const int64_t dk = xs[k].shape()[axis];
      for (int64_t in = 0; in < inner; ++in)
        out.push_back(
            xs[k].data<double>()[(o * dk + (a - start)) * inner + in]);
    }
  }
  return out;
}

struct Case {
  std::vector<Shape> xs;
  int axis;
  Shape want;
};

std::vector<Case> Cases() {
  return {{{{2, 3}, {4, 3}}, 0, {6, 3}},
          {{{2, 3}, {2, 1}, {2, 5}}, 1, {2, 9}},
          {{{2, 3}, {2, 4}}, -1, {2, 7}},
          {{{2, 3, 4}, {2, 1, 4}}, 1, {2, 4, 4}},
          {{{2, 3, 4}, {2, 3, 2}, {2, 3, 1}}, 2, {2, 3, 7}},
          {{{5}}, 0, {5}},
          {{{2, 0, 3}, {2, 2, 3}}, 1, {2, 2, 3}}};
}

TensorMap Inputs(const Case& c, uint64_t seed, std::vector<Tensor>* xs) {
  TensorMap in;
  for (size_t i = 0; i < c.xs.size(); ++i) {
    xs->push_back(RandomTensor<double>(c.xs[i], -1, 1, seed + i));
    in["x" + std::to_string(i)] = xs->back();
  }
  return in;
}

TEST(ConcatOp, ForwardMatchesNaive) {
  uint64_t seed = 1;
  for (const Case& c : Cases()) {
    std::vector<Tensor> xs;
    TensorMap in = Inputs(c, seed, &xs);
    seed += 10;
    Tensor out = RunOp(Concat(xs.size(), c.axis), in)["out"];
    ASSERT_EQ(out.shape(), c.want);
    const int axis = c.axis < 0 ? c.axis + c.want.rank() : c.axis;
    EXPECT_EQ(ToVector<double>(out), NaiveConcat(xs, axis)) << c.want;
  }
}

TEST(ConcatOp, FloatMatchesDouble) {
  auto op = Concat(2, 1);
  auto d = ToVector<double>(
      RunOp(op, {{"x0", RandomTensor<double>({3, 2}, -1, 1, 5)},
                 {"x1", RandomTensor<double>({3, 4}, -1, 1, 6)}})["out"]);
  auto f = ToVector<float>(
      RunOp(op, {{"x0", RandomTensor<float>({3, 2}, -1, 1, 5)},
                 {"x1", RandomTensor<float>({3, 4}, -1, 1, 6)}})["out"]);
  ASSERT_EQ(d.size(), f.size());
  for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-7);
}

TEST(ConcatOp, Gradient) {
  uint64_t seed = 100;
  for (const Case& c : Cases()) {
    std::vector<Tensor> xs;
    TensorMap in = Inputs(c, seed, &xs);
    seed += 10;
    EXPECT_TRUE(CheckGradient(Concat(xs.size(), c.axis), in)) << c.want;
  }
}

TEST(ConcatOp, GradientOfOneInput) {
  std::vector<Tensor> xs;
  TensorMap in = Inputs(Cases()[1], 7, &xs);
  testing::GradCheckOptions o;
  o.wrt = {"x1"};
  EXPECT_TRUE(CheckGradient(Concat(3, 1), in, o));
}

TEST(ConcatOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x0", DataType::kFloat32, Shape{-1, 3});
  AddVarDesc(block, "x1", DataType::kFloat32, Shape{-1, 5});
  InferShapeAtCompileTime(Concat(2, 1), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out")), Shape({-1, 8}));
}

TEST(ConcatOp, MismatchNamesInputs) {
  std::string msg =
      ErrorOf(Concat(2, 1), {{"x0", RandomTensor<double>({2, 3}, -1, 1, 1)},
                             {"x1", RandomTensor<double>({3, 3}, -1, 1, 2)}});
  EXPECT_NE(msg.find("concat"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'x1'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 3]"), std::string::npos) << msg;
  msg = ErrorOf(Concat(1, 2), {{"x0", RandomTensor<double>({2, 3}, -1, 1, 1)}});
  EXPECT_NE(msg.find("axis 2"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
