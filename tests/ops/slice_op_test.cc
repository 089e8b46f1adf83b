#include <gtest/gtest.h>

#include <climits>
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

proto::OpDesc Slice(const std::vector<int32_t>& axes,
                    const std::vector<int32_t>& starts,
                    const std::vector<int32_t>& ends) {
  return MakeOp("slice", {{"Input", {"x"}}}, {{"Out", {"out"}}},
                {{"axes", axes}, {"starts", starts}, {"ends", ends}});
}

struct Case {
  std::vector<int32_t> axes, starts, ends;
  // The range taken of each dim of x [4, 5, 6].
  int64_t lo[3], hi[3];
};

std::vector<Case> Cases() {
  return {{{0}, {1}, {3}, {1, 0, 0}, {3, 5, 6}},
          {{1, 2}, {0, 2}, {2, 5}, {0, 0, 2}, {4, 2, 5}},
          // Negative counts from the end; an end past the dim is clamped.
          {{2}, {-3}, {INT_MAX}, {0, 0, 3}, {4, 5, 6}},
          {{0, 1}, {-10, 1}, {-1, 100}, {0, 1, 0}, {3, 5, 6}},
          {{2, 0}, {1, 2}, {-1, 4}, {2, 0, 1}, {4, 5, 5}}};
}

TEST(SliceOp, ForwardMatchesNaive) {
  Tensor x = RandomTensor<double>({4, 5, 6}, -1, 1, 1);
  for (const Case& c : Cases()) {
    Tensor out = RunOp(Slice(c.axes, c.starts, c.ends), {{"x", x}})["out"];
    ASSERT_EQ(out.shape(),
              Shape({c.hi[0] - c.lo[0], c.hi[1] - c.lo[1], c.hi[2] - c.lo[2]}));
    std::vector<double> want;
    for (int64_t i = c.lo[0]; i < c.hi[0]; ++i)
      for (int64_t j = c.lo[1]; j < c.hi[1]; ++j)
        for (int64_t k = c.lo[2]; k < c.hi[2]; ++k)
          want.push_back(x.data<double>()[(i * 5 + j) * 6 + k]);
    EXPECT_EQ(ToVector<double>(out), want);
  }
  auto ids = RunOp(Slice({0}, {1}, {3}),
                   {{"x", MakeTensor<int64_t>({4}, {5, 6, 7, 8})}})["out"];
  EXPECT_EQ(ToVector<int64_t>(ids), (std::vector<int64_t>{6, 7}));
}

TEST(SliceOp, Gradient) {
  uint64_t seed = 2;
  for (const Case& c : Cases()) {
    EXPECT_TRUE(
        CheckGradient(Slice(c.axes, c.starts, c.ends),
                      {{"x", RandomTensor<double>({4, 5, 6}, -1, 1, seed++)}}));
  }
}

TEST(SliceOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape{-1, 8});
  InferShapeAtCompileTime(Slice({0, 1}, {0, 2}, {2, -2}), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out")), Shape({-1, 4}));
}

TEST(SliceOp, Errors) {
  Tensor x = RandomTensor<double>({4, 5}, -1, 1, 3);
  std::string msg = ErrorOf(Slice({0}, {3}, {1}), {{"x", x}});
  EXPECT_NE(msg.find("is empty"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
  msg = ErrorOf(Slice({0}, {7}, {9}), {{"x", x}});
  EXPECT_NE(msg.find("is empty"), std::string::npos) << msg;
  msg = ErrorOf(Slice({2}, {0}, {1}), {{"x", x}});
  EXPECT_NE(msg.find("axes"), std::string::npos) << msg;
  msg = ErrorOf(Slice({0, 0}, {0, 0}, {1, 1}), {{"x", x}});
  EXPECT_NE(msg.find("each once"), std::string::npos) << msg;
  msg = ErrorOf(Slice({0}, {0, 1}, {1}), {{"x", x}});
  EXPECT_NE(msg.find("one entry each"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
