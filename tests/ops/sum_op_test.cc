#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "src/framework/backward.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::RandomTensor;
using testing::RunOp;
using testing::TensorMap;
using testing::ToVector;

// Inputs x0..x{n-1} of `shape`, and the op summing them into `out`.
struct SumCase {
  proto::OpDesc op;
  TensorMap inputs;
  std::vector<double> want;
};

SumCase MakeCase(int n, const Shape& shape, uint64_t seed) {
  SumCase c;
  std::vector<std::string> names;
  c.want.assign(static_cast<size_t>(shape.numel()), 0.0);
  for (int i = 0; i < n; ++i) {
    std::string name = "x" + std::to_string(i);
    names.push_back(name);
    c.inputs[name] = RandomTensor<double>(shape, -1, 1, seed + i);
    auto v = ToVector<double>(c.inputs[name]);
    for (size_t j = 0; j < v.size(); ++j) c.want[j] += v[j];
  }
  c.op = MakeOp("sum", {{"X", names}}, {{"Out", {"out"}}});
  return c;
}

TEST(SumOp, ForwardMatchesNaive) {
  uint64_t seed = 1;
  // Counts around the 8-input group; sizes around the 2048-element tile.
  for (int n : {1, 2, 3, 8, 9, 17}) {
    for (Shape s :
         {Shape({1}), Shape({3, 5}), Shape({2049}), Shape({3, 1, 1500})}) {
      SumCase c = MakeCase(n, s, seed);
      seed += n;
      Tensor out = RunOp(c.op, c.inputs)["out"];
      ASSERT_EQ(out.shape(), s);
      auto got = ToVector<double>(out);
      for (size_t j = 0; j < got.size(); ++j)
        ASSERT_NEAR(got[j], c.want[j], 1e-13) << n << " inputs " << s;
    }
  }
}

TEST(SumOp, ThreadedMatchesNaive) {
  for (int n : {2, 5, 11}) {
    SumCase c = MakeCase(n, {123, 1001}, 40);
    Tensor out = RunOp(c.op, c.inputs, 4)["out"];
    auto got = ToVector<double>(out);
    for (size_t j = 0; j < got.size(); ++j)
      ASSERT_NEAR(got[j], c.want[j], 1e-13) << n << " at " << j;
  }
}

// Out bound to an input (once or several times) reads it before writing.
TEST(SumOp, OutMayBeAnInput) {
  Tensor a = RandomTensor<double>({3, 700}, -1, 1, 5);
  Tensor b = RandomTensor<double>({3, 700}, -1, 1, 6);
  auto av = ToVector<double>(a), bv = ToVector<double>(b);
  struct Alias {
    std::vector<std::string> xs;
    double ka, kb;
  };
  for (const Alias& al : std::vector<Alias>{
           {{"a", "b"}, 1, 1},
           {{"b", "a"}, 1, 1},
           {{"b", "a", "b", "a", "a"}, 3, 2},
           {{"a", "a"}, 2, 0},
           {{"a"}, 1, 0},
           {{"b", "b", "b", "b", "b", "b", "b", "b", "b", "a"}, 1, 9}}) {
    auto op = MakeOp("sum", {{"X", al.xs}}, {{"Out", {"a"}}});
    TensorMap in = {{"a", a}};
    if (al.kb != 0) in["b"] = b;
    auto got = ToVector<double>(RunOp(op, in)["a"]);
    ASSERT_EQ(got.size(), av.size());
    for (size_t j = 0; j < got.size(); ++j)
      ASSERT_NEAR(got[j], al.ka * av[j] + al.kb * bv[j], 1e-13)
          << al.xs.size() << " inputs, at " << j;
  }
}

// Integer terms (counts) add exactly, in place too, past the 8-input group
// and across tiles; checked against a naive loop.
template <typename T>
Tensor IntTensor(const Shape& shape, int64_t seed) {
  Tensor t;
  T* p = t.mutable_data<T>(shape);
  for (int64_t i = 0; i < shape.numel(); ++i)
    p[i] = static_cast<T>((i * 7919 + seed * 104729) % 2001 - 1000);
  return t;
}

template <typename T>
void ExpectIntSums() {
  for (int n : {1, 3, 9}) {
    TensorMap in;
    std::vector<std::string> names;
    std::vector<T> want(3000, 0);
    for (int i = 0; i < n; ++i) {
      names.push_back("x" + std::to_string(i));
      in[names.back()] = IntTensor<T>({3, 1000}, i);
      const auto v = ToVector<T>(in[names.back()]);
      for (size_t j = 0; j < v.size(); ++j) want[j] += v[j];
    }
    EXPECT_EQ(ToVector<T>(RunOp(MakeOp("sum", {{"X", names}}, {{"Out", {"o"}}}),
                                in)["o"]),
              want)
        << n << " inputs";
    // Out bound to x0 twice: x0 counted twice.
    names.push_back("x0");
    for (size_t j = 0; j < want.size(); ++j)
      want[j] += ToVector<T>(in["x0"])[j];
    EXPECT_EQ(ToVector<T>(RunOp(
                  MakeOp("sum", {{"X", names}}, {{"Out", {"x0"}}}), in)["x0"]),
              want)
        << n << " inputs, in place";
  }
}

TEST(SumOp, IntegersAddExactly) {
  ExpectIntSums<int32_t>();
  ExpectIntSums<int64_t>();
}

TEST(SumOp, FloatMatchesDouble) {
  SumCase c = MakeCase(4, {6, 7}, 9);
  TensorMap fin;
  for (int i = 0; i < 4; ++i)
    fin["x" + std::to_string(i)] = RandomTensor<float>({6, 7}, -1, 1, 9 + i);
  auto d = ToVector<double>(RunOp(c.op, c.inputs)["out"]);
  auto f = ToVector<float>(RunOp(c.op, fin)["out"]);
  ASSERT_EQ(d.size(), f.size());
  for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-5);
}

TEST(SumOp, Gradient) {
  for (int n : {1, 2, 3}) {
    for (Shape s : {Shape({1}), Shape({2, 3}), Shape({4, 1, 2})}) {
      SumCase c = MakeCase(n, s, 20);
      EXPECT_TRUE(CheckGradient(c.op, c.inputs)) << n << " inputs " << s;
    }
  }
}

TEST(SumOp, GradMakerCopiesOutGradToEachInput) {
  auto op = MakeOp("sum", {{"X", {"p", "q"}}}, {{"Out", {"s"}}});
  auto grads = OpRegistry::Global().Get("sum").grad_maker()(op);
  ASSERT_EQ(grads.size(), 2u);
  const char* names[] = {"p@GRAD", "q@GRAD"};
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(grads[i].type(), "scale");
    EXPECT_EQ(OpInput(grads[i], "X"), std::vector<std::string>{"s@GRAD"});
    EXPECT_EQ(OpOutput(grads[i], "Out"), std::vector<std::string>{names[i]});
    EXPECT_EQ(GetOpAttrAs<float>(grads[i], "scale"), 1.0f);
    EXPECT_EQ(GetOpAttrAs<float>(grads[i], "bias"), 0.0f);
  }
}

// The autodiff's own use: h feeds two ops, so its gradient is a `sum`.
TEST(SumOp, AccumulatesGradientsInAutodiff) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "w", DataType::kFloat64, Shape({2, 3}), true)
      ->set_trainable(true);
  auto add_op = [&](proto::OpDesc op) {
    *block->add_ops() = op;
    InferShapeAtCompileTime(op, block);
  };
  add_op(MakeOp("scale", {{"X", {"w"}}}, {{"Out", {"h"}}}, {{"scale", 2.0f}}));
  add_op(MakeOp("scale", {{"X", {"h"}}}, {{"Out", {"a"}}}, {{"scale", 3.0f}}));
  add_op(MakeOp("tanh", {{"X", {"h"}}}, {{"Out", {"t"}}}));
  add_op(MakeOp("sum", {{"X", {"a", "t", "h"}}}, {{"Out", {"s"}}}));
  add_op(MakeOp("mean", {{"X", {"s"}}}, {{"Out", {"loss"}}}));
  AppendBackward(&program, "loss");
  int sums = 0;
  for (const auto& op : program.blocks(0).ops()) sums += op.type() == "sum";
  EXPECT_EQ(sums, 2);  // the forward sum and h@GRAD's accumulation
  Scope scope;
  Executor exe;
  Tensor w = RandomTensor<double>({2, 3}, -1, 1, 30);
  scope.Var("w")->GetMutableTensor()->CopyFrom(w);
  std::vector<Tensor> got;
  exe.RunOnce(program, &scope, {}, {"w@GRAD"}, &got);
  auto wv = ToVector<double>(w);
  auto gw = ToVector<double>(got[0]);
  ASSERT_EQ(gw.size(), wv.size());
  for (size_t i = 0; i < wv.size(); ++i) {
    // loss = mean(3h + tanh(h) + h), h = 2w.
    const double t = std::tanh(2 * wv[i]);
    EXPECT_NEAR(gw[i], 2 * (3 + (1 - t * t) + 1) / 6.0, 1e-12) << i;
  }
}

TEST(SumOp, CompileTimeShapesMerge) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "g0", DataType::kFloat32, Shape({-1, 4}));
  AddVarDesc(block, "g1", DataType::kFloat32, Shape({-1, 4}));
  InferShapeAtCompileTime(
      MakeOp("sum", {{"X", {"g0", "g1"}}}, {{"Out", {"g"}}}), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "g")), Shape({-1, 4}));
  AddVarDesc(block, "g2", DataType::kFloat32, Shape({3, -1}));
  InferShapeAtCompileTime(
      MakeOp("sum", {{"X", {"g0", "g2"}}}, {{"Out", {"h"}}}), block);
  EXPECT_EQ(VarShape(*FindVarDesc(*block, "h")), Shape({3, 4}));
}

TEST(SumOp, BadShapesNameVars) {
  auto op =
      MakeOp("sum", {{"X", {"part_a", "part_b", "part_c"}}}, {{"Out", {"o"}}});
  try {
    RunOp(op, {{"part_a", RandomTensor<double>({2, 3}, -1, 1, 1)},
               {"part_b", RandomTensor<double>({2, 3}, -1, 1, 1)},
               {"part_c", RandomTensor<double>({3, 2}, -1, 1, 1)}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("part_c"), std::string::npos) << msg;
    EXPECT_NE(msg.find("part_a"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[3, 2]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace fluid
