#include "src/framework/op_registry.h"

#include <gtest/gtest.h>

#include "src/framework/operator.h"

namespace fluid {
namespace {

TEST(OpRegistry, DuplicateTypeIsRefused) {
  ASSERT_TRUE(OpRegistry::Global().Has("mul"));
  try {
    OpRegistry::Global().Register("mul");
    FAIL() << "expected a duplicate error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kAlreadyExists);
    EXPECT_NE(std::string(e.what()).find("mul"), std::string::npos);
  }
}

TEST(OpRegistry, UnknownTypeListsKnownOnes) {
  try {
    OpRegistry::Global().Get("no_such_op");
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(msg.find("no_such_op"), std::string::npos);
    EXPECT_NE(msg.find("mul"), std::string::npos);
    EXPECT_NE(msg.find("fill_constant"), std::string::npos);
  }
}

TEST(OpRegistry, MissingKernelNamesWhatExists) {
  try {
    OpRegistry::Global().GetKernel("mul", Place::CPU(), DataType::kInt32);
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CPU/float32"), std::string::npos) << msg;
  }
}

TEST(OpSchema, ValidatesSlotsAndAttrs) {
  const OpSchema& mul = OpRegistry::Global().Get("mul");
  EXPECT_THROW(mul.Validate(MakeOp("mul", {{"X", {"a"}}}, {{"Out", {"c"}}})),
               Error);
  EXPECT_THROW(mul.Validate(MakeOp("mul", {{"X", {"a"}}, {"Y", {"b"}},
                                           {"Z", {"z"}}},
                                   {{"Out", {"c"}}})),
               Error);
  EXPECT_THROW(mul.Validate(MakeOp("mul", {{"X", {"a", "b"}}, {"Y", {"b"}}},
                                   {{"Out", {"c"}}})),
               Error);
  // Defaults are filled, declared types are enforced.
  AttributeMap attrs = mul.ResolveAttrs(
      MakeOp("mul", {{"X", {"a"}}, {"Y", {"b"}}}, {{"Out", {"c"}}}));
  EXPECT_EQ(std::get<int32_t>(attrs.at("x_num_col_dims")), 1);
  EXPECT_THROW(mul.ResolveAttrs(MakeOp("mul", {{"X", {"a"}}, {"Y", {"b"}}},
                                       {{"Out", {"c"}}},
                                       {{"x_num_col_dims", 1.5f}})),
               Error);
}

TEST(OpSchema, CompileTimeShapeInferencePropagatesUnknownBatch) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* block = p.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kFloat32, Shape{-1, 784});
  AddVarDesc(block, "w", DataType::kFloat32, Shape{784, 10}, true);
  proto::OpDesc op =
      MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"y"}}});
  InferShapeAtCompileTime(op, block);
  const proto::VarDesc* y = FindVarDesc(*block, "y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(VarShape(*y), Shape({-1, 10}));
  EXPECT_EQ(VarDtype(*y), DataType::kFloat32);
}

}  // namespace
}  // namespace fluid
