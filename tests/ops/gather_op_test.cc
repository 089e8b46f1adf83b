#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::CheckGradient;
using testing::ErrorOf;
using testing::GradCheckOptions;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::ToVector;

proto::OpDesc Gather(bool overwrite = true) {
  return MakeOp("gather", {{"X", {"x"}}, {"Index", {"i"}}}, {{"Out", {"out"}}},
                {{"overwrite", overwrite}});
}

TEST(GatherOp, PicksRows) {
  Tensor x = MakeTensor<double>({3, 2}, {1, 2, 3, 4, 5, 6});
  for (const Tensor& index : {MakeTensor<int64_t>({4}, {2, 0, 2, 1}),
                              MakeTensor<int32_t>({4, 1}, {2, 0, 2, 1})}) {
    Tensor out = RunOp(Gather(), {{"x", x}, {"i", index}})["out"];
    EXPECT_EQ(out.shape(), Shape({4, 2}));
    EXPECT_EQ(ToVector<double>(out),
              (std::vector<double>{5, 6, 1, 2, 5, 6, 3, 4}));
  }
  Tensor ids = MakeTensor<int64_t>({3}, {10, 20, 30});
  auto picked =
      RunOp(Gather(), {{"x", ids}, {"i", MakeTensor<int64_t>({2}, {2, 2})}});
  EXPECT_EQ(ToVector<int64_t>(picked["out"]), (std::vector<int64_t>{30, 30}));
}

proto::OpDesc GatherGrad(bool overwrite) {
  return MakeOp("gather_grad",
                {{"X", {"x"}}, {"Index", {"i"}}, {"Out@GRAD", {"g"}}},
                {{"X@GRAD", {"dx"}}}, {{"overwrite", overwrite}});
}

// A repeated row gets the sum (overwrite=false) or the last (true).
TEST(GatherOp, GradientOfRepeatedRows) {
  Tensor x = RandomTensor<double>({3, 2}, -1, 1, 1);
  Tensor index = MakeTensor<int64_t>({3}, {2, 0, 2});
  Tensor g = MakeTensor<double>({3, 2}, {1, 2, 3, 4, 5, 6});
  auto sum = RunOp(GatherGrad(false), {{"x", x}, {"i", index}, {"g", g}});
  EXPECT_EQ(ToVector<double>(sum["dx"]),
            (std::vector<double>{3, 4, 0, 0, 6, 8}));
  auto last = RunOp(GatherGrad(true), {{"x", x}, {"i", index}, {"g", g}});
  EXPECT_EQ(ToVector<double>(last["dx"]),
            (std::vector<double>{3, 4, 0, 0, 5, 6}));
}

TEST(GatherOp, Gradient) {
  GradCheckOptions o;
  o.wrt = {"x"};
  EXPECT_TRUE(CheckGradient(Gather(false),
                            {{"x", RandomTensor<double>({4, 3}, -1, 1, 2)},
                             {"i", MakeTensor<int64_t>({5}, {3, 0, 3, 1, 3})}},
                            o));
  EXPECT_TRUE(CheckGradient(Gather(true),
                            {{"x", RandomTensor<double>({4, 2, 2}, -1, 1, 3)},
                             {"i", MakeTensor<int32_t>({3}, {1, 0, 3})}},
                            o));
}

TEST(GatherOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape{10, 3, 5});
  AddVarDesc(block, "i", DataType::kInt64, Shape{-1, 1});
  InferShapeAtCompileTime(Gather(), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out")), Shape({-1, 3, 5}));
}

TEST(GatherOp, Errors) {
  Tensor x = RandomTensor<double>({3, 2}, -1, 1, 4);
  std::string msg =
      ErrorOf(Gather(), {{"x", x}, {"i", MakeTensor<int64_t>({2}, {1, 3})}});
  EXPECT_NE(msg.find("holds 3 at position 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'i'"), std::string::npos) << msg;
  msg = ErrorOf(Gather(), {{"x", x}, {"i", MakeTensor<int64_t>({1}, {-1})}});
  EXPECT_NE(msg.find("holds -1"), std::string::npos) << msg;
  msg = ErrorOf(Gather(), {{"x", x}, {"i", MakeTensor<double>({1}, {0})}});
  EXPECT_NE(msg.find("int32 or int64"), std::string::npos) << msg;
  msg =
      ErrorOf(Gather(), {{"x", x}, {"i", MakeTensor<int64_t>({1, 2}, {0, 1})}});
  EXPECT_NE(msg.find("[N] or [N, 1]"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
