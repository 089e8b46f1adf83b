#include "src/framework/op_registry.h"

#include <gtest/gtest.h>

#include "src/framework/grad_op_maker.h"
#include "src/framework/operator.h"

namespace fluid {
namespace {

REGISTER_OP(test_dup)
    .DuplicableInput("X", "several inputs")
    .Output("Out", "one output")
    .Attr<float>("k", 2.0f, "a factor")
    .SetGrad(GradSpec("test_dup_grad")
                 .Inputs({"X"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}));
REGISTER_GRAD_OP(test_dup_grad);

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

TEST(OpRegistry, DuplicateAnyDtypeKernelIsRefused) {
  EXPECT_THROW(
      OpRegistry::Global().RegisterAnyDtypeKernel(
          "c_allreduce", Place::Kind::kCPU, [](const ExecutionContext&) {}),
      Error);
}

// A gradient op declared by its forward op: every forward attr, with its
// default; pass-through slots, gradient slots as duplicable as the forward
// ones; optional gradient outputs.
TEST(OpRegistry, GradOpSchemaComesFromTheForwardOp) {
  const OpSchema& fwd = OpRegistry::Global().Get("conv2d");
  const OpSchema& g = OpRegistry::Global().Get("conv2d_grad");
  ASSERT_NE(fwd.grad_spec(), nullptr);
  EXPECT_EQ(fwd.grad_spec()->type, "conv2d_grad");
  ASSERT_EQ(g.attrs().size(), fwd.attrs().size());
  for (size_t i = 0; i < g.attrs().size(); ++i) {
    EXPECT_EQ(g.attrs()[i].name, fwd.attrs()[i].name);
    EXPECT_EQ(g.attrs()[i].default_value, fwd.attrs()[i].default_value);
  }
  std::vector<std::string> ins, outs;
  for (const auto& s : g.inputs()) ins.push_back(s.name);
  for (const auto& s : g.outputs()) {
    outs.push_back(s.name);
    EXPECT_TRUE(s.dispensable) << s.name;
  }
  EXPECT_EQ(ins,
            (std::vector<std::string>{"Input", "Filter", GradSlot("Output")}));
  EXPECT_EQ(outs,
            (std::vector<std::string>{GradSlot("Input"), GradSlot("Filter")}));
  // The op the grad maker emits validates against that schema.
  proto::OpDesc op = MakeOp("conv2d", {{"Input", {"x"}}, {"Filter", {"w"}}},
                            {{"Output", {"y"}}}, {{"groups", int32_t{1}}});
  std::vector<proto::OpDesc> made = fwd.grad_maker()(op);
  ASSERT_EQ(made.size(), 1u);
  EXPECT_EQ(made[0].type(), "conv2d_grad");
  EXPECT_NO_THROW(g.Validate(made[0]));
  EXPECT_EQ(OpInput(made[0], GradSlot("Output")),
            (std::vector<std::string>{GradVarName("y")}));
  EXPECT_EQ(OpOutput(made[0], GradSlot("Filter")),
            (std::vector<std::string>{GradVarName("w")}));

  // Duplicable forward slots stay duplicable in the gradient op.
  const OpSchema& sum_like = OpRegistry::Global().Get("test_dup_grad");
  EXPECT_TRUE(sum_like.inputs()[0].duplicable);
  EXPECT_TRUE(sum_like.outputs()[0].duplicable);
}

TEST(OpRegistry, GradOpWithoutForwardIsRefused) {
  try {
    OpRegistry::Global().RegisterGrad("nobody_grad");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("nobody_grad"), std::string::npos);
  }
}

TEST(OpSchema, ValidatesSlotsAndAttrs) {
  const OpSchema& mul = OpRegistry::Global().Get("mul");
  EXPECT_THROW(mul.Validate(MakeOp("mul", {{"X", {"a"}}}, {{"Out", {"c"}}})),
               Error);
  EXPECT_THROW(
      mul.Validate(MakeOp("mul", {{"X", {"a"}}, {"Y", {"b"}}, {"Z", {"z"}}},
                          {{"Out", {"c"}}})),
      Error);
  EXPECT_THROW(mul.Validate(MakeOp("mul", {{"X", {"a", "b"}}, {"Y", {"b"}}},
                                   {{"Out", {"c"}}})),
               Error);
  // Defaults are filled, declared types are enforced.
  AttributeMap attrs = mul.ResolveAttrs(
      MakeOp("mul", {{"X", {"a"}}, {"Y", {"b"}}}, {{"Out", {"c"}}}));
  EXPECT_EQ(std::get<int32_t>(attrs.at("x_num_col_dims")), 1);
  EXPECT_THROW(
      mul.ResolveAttrs(MakeOp("mul", {{"X", {"a"}}, {"Y", {"b"}}},
                              {{"Out", {"c"}}}, {{"x_num_col_dims", 1.5f}})),
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
