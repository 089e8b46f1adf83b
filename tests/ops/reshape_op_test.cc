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

proto::OpDesc Reshape(const std::vector<int64_t>& shape,
                      const std::string& x = "x") {
  return MakeOp("reshape", {{"X", {x}}}, {{"Out", {"out"}}},
                {{"shape", shape}});
}

struct Case {
  Shape x;
  std::vector<int64_t> spec;
  Shape want;
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {{2, 3, 4}, {6, 4}, {6, 4}},
      {{2, 3, 4}, {-1}, {24}},
      {{2, 3, 4}, {0, -1}, {2, 12}},
      {{2, 3, 4}, {-1, 0}, {8, 3}},  // 0 copies X's dim 1
      {{2, 3, 4}, {0, 0, 2, 2}, {2, 3, 2, 2}},
      {{6, 1}, {1, 6}, {1, 6}},
      {{1}, {1, 1, -1}, {1, 1, 1}},
      {{5, 7}, {7, 5}, {7, 5}},
      {{4, 784}, {-1, 1, 28, 28}, {4, 1, 28, 28}},
      {{0, 4}, {-1, 2}, {0, 2}},
  };
  return cases;
}

TEST(ReshapeOp, ShapesAndValues) {
  uint64_t seed = 1;
  for (const Case& c : Cases()) {
    Tensor x = RandomTensor<double>(c.x, -1, 1, seed++);
    Tensor out = RunOp(Reshape(c.spec), {{"x", x}})["out"];
    EXPECT_EQ(out.shape(), c.want) << c.x << " -> " << Shape(c.spec);
    // Row-major order is kept: the flat elements are X's.
    EXPECT_EQ(ToVector<double>(out), ToVector<double>(x)) << c.x;
  }
}

TEST(ReshapeOp, ThreadedLargeCopy) {
  Tensor x = RandomTensor<double>({64, 3, 32, 32}, -1, 1, 2);
  Tensor out = RunOp(Reshape({0, -1}), {{"x", x}}, 4)["out"];
  EXPECT_EQ(out.shape(), Shape({64, 3072}));
  EXPECT_EQ(ToVector<double>(out), ToVector<double>(x));
}

TEST(ReshapeOp, FloatMatchesDouble) {
  auto d = ToVector<double>(
      RunOp(Reshape({3, -1}),
            {{"x", RandomTensor<double>({2, 9}, -1, 1, 3)}})["out"]);
  auto f = ToVector<float>(RunOp(
      Reshape({3, -1}), {{"x", RandomTensor<float>({2, 9}, -1, 1, 3)}})["out"]);
  ASSERT_EQ(d.size(), f.size());
  for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(f[i], d[i], 1e-7);
}

// Ids are reshaped too (fluid.embedding, fluid.one_hot): integers keep
// every bit.
TEST(ReshapeOp, IntegerIds) {
  const std::vector<int64_t> ids = {0, 7, int64_t{1} << 40, -3, 9, 2};
  Tensor out = RunOp(Reshape({0, -1, 1}),
                     {{"x", testing::MakeTensor<int64_t>({2, 3}, ids)}})["out"];
  EXPECT_EQ(out.shape(), Shape({2, 3, 1}));
  EXPECT_EQ(ToVector<int64_t>(out), ids);
  const std::vector<int32_t> small = {5, -1, 4, 8};
  Tensor out32 =
      RunOp(Reshape({4}),
            {{"x", testing::MakeTensor<int32_t>({2, 2}, small)}})["out"];
  EXPECT_EQ(ToVector<int32_t>(out32), small);
}

TEST(ReshapeOp, Gradient) {
  uint64_t seed = 10;
  for (const Case& c : Cases()) {
    if (c.x.numel() > 100) continue;
    EXPECT_TRUE(CheckGradient(
        Reshape(c.spec), {{"x", RandomTensor<double>(c.x, -1, 1, seed++)}}))
        << c.x << " -> " << Shape(c.spec);
  }
}

TEST(ReshapeOp, CompileTimeUnknownDims) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "img", DataType::kFloat32, Shape({-1, 784}));
  AddVarDesc(block, "feat", DataType::kFloat32, Shape({-1, 4, 5}));
  struct Ct {
    std::string x;
    std::vector<int64_t> spec;
    Shape want;
  };
  int i = 0;
  for (const Ct& c : std::vector<Ct>{
           {"img", {-1, 1, 28, 28}, {-1, 1, 28, 28}},
           {"img", {0, 28, 28}, {-1, 28, 28}},
           {"feat", {0, -1}, {-1, 20}},  // the unknown batch cancels out
           {"feat", {0, 20}, {-1, 20}},
           {"feat", {-1, 10}, {-1, 10}},  // cannot be inferred: stays -1
           {"feat", {-1}, {-1}},
       }) {
    std::string out = "o" + std::to_string(i++);
    InferShapeAtCompileTime(MakeOp("reshape", {{"X", {c.x}}}, {{"Out", {out}}},
                                   {{"shape", c.spec}}),
                            block);
    EXPECT_EQ(VarShape(*FindVarDesc(*block, out)), c.want)
        << c.x << " -> " << Shape(c.spec);
  }
  // Known dims that cannot fit are refused at compile time.
  try {
    InferShapeAtCompileTime(
        MakeOp("reshape", {{"X", {"feat"}}}, {{"Out", {"bad"}}},
               {{"shape", std::vector<int64_t>{0, 3, -1}}}),
        block);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("feat"), std::string::npos)
        << e.what();
  }
}

std::string ErrorOf(const std::vector<int64_t>& spec, const Shape& x) {
  try {
    RunOp(Reshape(spec, "pixels"),
          {{"pixels", RandomTensor<double>(x, -1, 1, 1)}});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ReshapeOp, BadSpecsNameVars) {
  std::string msg = ErrorOf({5, 5}, {2, 12});
  EXPECT_NE(msg.find("pixels"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 12]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[5, 5]"), std::string::npos) << msg;

  msg = ErrorOf({-1, 5}, {2, 12});
  EXPECT_NE(msg.find("pixels"), std::string::npos) << msg;
  EXPECT_NE(msg.find("divide"), std::string::npos) << msg;

  msg = ErrorOf({-1, -1}, {2, 12});
  EXPECT_NE(msg.find("more than one -1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("pixels"), std::string::npos) << msg;

  msg = ErrorOf({0, 0, 0}, {2, 12});
  EXPECT_NE(msg.find("position 2"), std::string::npos) << msg;

  msg = ErrorOf({-2, 12}, {2, 12});
  EXPECT_NE(msg.find("invalid dim -2"), std::string::npos) << msg;

  msg = ErrorOf({}, {2, 12});
  EXPECT_NE(msg.find("pixels"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
