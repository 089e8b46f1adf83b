#include "src/framework/op_registry.h"

#include <gtest/gtest.h>

#include <limits>

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

REGISTER_OP(test_ranged)
    .Output("Out", "an output")
    .Attr<int32_t>("dims", 1, "a count of dims")
    .InRange(1, 7)
    .Attr<std::vector<int64_t>>("sizes", {}, "sizes")
    .InRange(0, 1000)
    .Attr<float>("rate", 0.5f, "a probability")
    .InRange(0, 1)
    .Attr<std::string>("mode", "sum", "how")
    .OneOf({"sum", "mean"});

std::string ResolveError(const proto::OpDesc& op) {
  try {
    OpRegistry::Global().Get(op.type()).ResolveAttrs(op);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OpRegistry, AttrRangesAreChecked) {
  proto::OpDesc op = MakeOp("test_ranged", {}, {{"Out", {"o"}}});
  EXPECT_EQ(ResolveError(op), "");
  SetOpAttr(&op, "dims", int32_t{0});
  EXPECT_NE(ResolveError(op).find("attribute 'dims' of op 'test_ranged': 0 is "
                                  "out of its range [1, 7]"),
            std::string::npos)
      << ResolveError(op);
  SetOpAttr(&op, "dims", std::numeric_limits<int32_t>::max());
  EXPECT_NE(ResolveError(op).find("2147483647 is out of its range"),
            std::string::npos);
  SetOpAttr(&op, "dims", int32_t{7});
  SetOpAttr(&op, "sizes", std::vector<int64_t>{3, int64_t{1} << 40});
  EXPECT_NE(ResolveError(op).find("element 1 1099511627776 is out of its "
                                  "range [0, 1000]"),
            std::string::npos)
      << ResolveError(op);
  SetOpAttr(&op, "sizes", std::vector<int64_t>{3, 4});
  SetOpAttr(&op, "rate", std::numeric_limits<float>::quiet_NaN());
  EXPECT_NE(ResolveError(op).find("nan is out of its range [0, 1]"),
            std::string::npos)
      << ResolveError(op);
  SetOpAttr(&op, "rate", 1.0f);
  SetOpAttr(&op, "mode", std::string("max"));
  EXPECT_NE(ResolveError(op).find("is 'max'; it takes one of 'sum', 'mean'"),
            std::string::npos)
      << ResolveError(op);
  SetOpAttr(&op, "mode", std::string("mean"));
  EXPECT_EQ(ResolveError(op), "");
  // An attribute present with its value lost (a proto field left unset)
  // reads as 0: out of range, not a silent default.
  proto::OpDesc lost = MakeOp("test_ranged", {}, {{"Out", {"o"}}});
  auto* a = lost.add_attrs();
  a->set_name("dims");
  a->set_type(proto::INT);
  EXPECT_NE(ResolveError(lost).find("0 is out of its range"),
            std::string::npos);
}

TEST(OpRegistry, GradOpsInheritTheRanges) {
  proto::OpDesc op = MakeOp("mul_grad", {{"X", {"x"}}, {"Y", {"y"}}},
                            {{"X@GRAD", {"x@GRAD"}}});
  SetOpAttr(&op, "x_num_col_dims", int32_t{0});
  EXPECT_NE(ResolveError(op).find("attribute 'x_num_col_dims' of op "
                                  "'mul_grad': 0 is out of its range"),
            std::string::npos)
      << ResolveError(op);
  proto::OpDesc add = MakeOp("elementwise_add_grad", {}, {});
  SetOpAttr(&add, "axis", std::numeric_limits<int32_t>::max());
  EXPECT_NE(ResolveError(add).find("attribute 'axis' of op "
                                   "'elementwise_add_grad': 2147483647 is out"),
            std::string::npos)
      << ResolveError(add);
}

// Hyperparameters outside their meaning trained silently before (a beta
// of 1.5 makes Adam's moments grow without bound).
TEST(OpRegistry, OptimizerAndNormAttrsAreRanged) {
  struct Case {
    const char* op;
    const char* attr;
    float value;
  };
  for (const Case& c :
       {Case{"adam", "beta1", 1.5f}, Case{"adam", "beta2", -0.1f},
        Case{"adam", "epsilon", -1e-8f}, Case{"momentum", "mu", -0.9f},
        Case{"batch_norm", "momentum", 1.1f},
        Case{"layer_norm", "epsilon", -1.0f},
        Case{"adadelta", "rho", std::numeric_limits<float>::quiet_NaN()}}) {
    proto::OpDesc op = MakeOp(c.op, {}, {});
    SetOpAttr(&op, c.attr, c.value);
    EXPECT_NE(ResolveError(op).find(std::string("attribute '") + c.attr +
                                    "' of op '" + c.op + "'"),
              std::string::npos)
        << c.op << "." << c.attr << ": " << ResolveError(op);
  }
}

// A block of y = mul(x, w) and its gradient op, the gradient's attrs as
// given.
proto::BlockDesc MulAndGrad(int32_t fwd_dims, int32_t grad_dims) {
  proto::BlockDesc block;
  proto::OpDesc fwd =
      MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"y"}}});
  SetOpAttr(&fwd, "x_num_col_dims", fwd_dims);
  *block.add_ops() = fwd;
  proto::OpDesc grad =
      MakeOp("mul_grad", {{"X", {"x"}}, {"Y", {"w"}}, {"Out@GRAD", {"y@GRAD"}}},
             {{"X@GRAD", {"x@GRAD"}}, {"Y@GRAD", {"w@GRAD"}}});
  SetOpAttr(&grad, "x_num_col_dims", grad_dims);
  *block.add_ops() = grad;
  return block;
}

TEST(OpRegistry, GradOpAttrsMustMatchTheirForwardOp) {
  EXPECT_NO_THROW(CheckGradOpAttrs(MulAndGrad(2, 2)));
  try {
    CheckGradOpAttrs(MulAndGrad(1, 3));
    FAIL() << "a mul_grad made for other attributes was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("op #1 'mul_grad' has x_num_col_dims = 3 but the op it "
                       "differentiates, #0 'mul', has x_num_col_dims = 1"),
              std::string::npos)
        << msg;
  }
  // A dropped attribute takes the default, which must agree as well.
  proto::BlockDesc dropped = MulAndGrad(2, 2);
  dropped.mutable_ops(1)->clear_attrs();
  EXPECT_THROW(CheckGradOpAttrs(dropped), Error);
  // A gradient op whose forward op is not in the block is left to its own
  // checks; so is one reading other variables than any forward op wrote.
  proto::BlockDesc alone = MulAndGrad(1, 3);
  alone.mutable_ops()->DeleteSubrange(0, 1);
  EXPECT_NO_THROW(CheckGradOpAttrs(alone));
  proto::BlockDesc other = MulAndGrad(1, 3);
  SetOpInput(other.mutable_ops(1), "X", {"z"});
  EXPECT_NO_THROW(CheckGradOpAttrs(other));
  // Two forward ops on the same variables: agreeing with one is enough.
  proto::BlockDesc twice = MulAndGrad(1, 3);
  proto::OpDesc second = twice.ops(0);
  SetOpAttr(&second, "x_num_col_dims", int32_t{3});
  *twice.mutable_ops()->Add() = twice.ops(1);
  *twice.mutable_ops(1) = second;
  EXPECT_NO_THROW(CheckGradOpAttrs(twice));
}

}  // namespace
}  // namespace fluid
