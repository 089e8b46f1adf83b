#include <gtest/gtest.h>

#include <cmath>
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

proto::OpDesc Cast(DataType in, DataType out) {
  return MakeOp("cast", {{"X", {"x"}}}, {{"Out", {"out"}}},
                {{"in_dtype", static_cast<int32_t>(in)},
                 {"out_dtype", static_cast<int32_t>(out)}});
}

const std::vector<double> kValues = {-2.75, -1.0, -0.5, 0.0, 0.25, 1.5, 7.0};

Tensor ValuesAs(DataType dtype) {
  Shape s{7};
  switch (dtype) {
    case DataType::kFloat32:
      return MakeTensor<float>(s, {-2.75f, -1, -0.5f, 0, 0.25f, 1.5f, 7});
    case DataType::kFloat64:
      return MakeTensor<double>(s, kValues);
    case DataType::kInt32:
      return MakeTensor<int32_t>(s, {-2, -1, 0, 0, 0, 1, 7});
    case DataType::kInt64:
      return MakeTensor<int64_t>(s, {-2, -1, 0, 0, 0, 1, 7});
    case DataType::kFloat16:
    case DataType::kBFloat16: {
      // Every value is exact in both 16-bit formats.
      Tensor t = MakeTensor<float>(s, {-2.75f, -1, -0.5f, 0, 0.25f, 1.5f, 7});
      return RunOp(Cast(DataType::kFloat32, dtype), {{"x", t}})["out"];
    }
    case DataType::kBool:
      break;
  }
  return {};
}

// Every element as a double, whatever the dtype.
std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
      case DataType::kFloat32:
        v.push_back(t.data<float>()[i]);
        break;
      case DataType::kFloat64:
        v.push_back(t.data<double>()[i]);
        break;
      case DataType::kInt32:
        v.push_back(t.data<int32_t>()[i]);
        break;
      case DataType::kInt64:
        v.push_back(static_cast<double>(t.data<int64_t>()[i]));
        break;
      case DataType::kFloat16:
        v.push_back(ToFloat(t.data<float16>()[i]));
        break;
      case DataType::kBFloat16:
        v.push_back(ToFloat(t.data<bfloat16>()[i]));
        break;
      case DataType::kBool:
        v.push_back(t.data<bool>()[i] ? 1 : 0);
        break;
    }
  }
  return v;
}

constexpr DataType kAll[] = {DataType::kFloat32, DataType::kFloat64,
                             DataType::kInt32,   DataType::kInt64,
                             DataType::kFloat16, DataType::kBFloat16};

bool IsInt(DataType t) {
  return t == DataType::kInt32 || t == DataType::kInt64;
}

// Every pair of dtypes, both ways: floats to ints round toward zero.
TEST(CastOp, EveryPair) {
  for (DataType in : kAll) {
    for (DataType out : kAll) {
      Tensor x = ValuesAs(in);
      Tensor y = RunOp(Cast(in, out), {{"x", x}})["out"];
      ASSERT_EQ(y.dtype(), out);
      ASSERT_EQ(y.shape(), x.shape());
      std::vector<double> want = AsDoubles(x);
      if (IsInt(out))
        for (double& w : want) w = std::trunc(w);
      EXPECT_EQ(AsDoubles(y), want)
          << DataTypeName(in) << " -> " << DataTypeName(out);
    }
  }
}

TEST(CastOp, DoubleToFloatRounds) {
  Tensor x = MakeTensor<double>({2}, {0.1, 1.0 / 3.0});
  auto y = ToVector<float>(
      RunOp(Cast(DataType::kFloat64, DataType::kFloat32), {{"x", x}})["out"]);
  EXPECT_EQ(y, (std::vector<float>{0.1f, 1.0f / 3.0f}));
}

TEST(CastOp, Gradient) {
  EXPECT_TRUE(CheckGradient(Cast(DataType::kFloat64, DataType::kFloat64),
                            {{"x", RandomTensor<double>({3, 4}, -1, 1, 1)}}));
}

TEST(CastOp, GradCastsBack) {
  auto grads = OpRegistry::Global().Get("cast").grad_maker()(
      Cast(DataType::kFloat32, DataType::kFloat64));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type(), "cast");
  EXPECT_EQ(OpInput(grads[0], "X"), std::vector<std::string>{"out@GRAD"});
  EXPECT_EQ(OpOutput(grads[0], "Out"), std::vector<std::string>{"x@GRAD"});
  EXPECT_EQ(GetOpAttrAs<int32_t>(grads[0], "in_dtype"),
            static_cast<int32_t>(DataType::kFloat64));
  EXPECT_EQ(GetOpAttrAs<int32_t>(grads[0], "out_dtype"),
            static_cast<int32_t>(DataType::kFloat32));
  // Run the pair: float32 -> float64, and the gradient back to float32.
  Tensor dy = RandomTensor<double>({5}, -1, 1, 2);
  Tensor dx = RunOp(grads[0], {{"out@GRAD", dy}})["x@GRAD"];
  EXPECT_EQ(dx.dtype(), DataType::kFloat32);
  auto dyv = ToVector<double>(dy);
  auto dxv = ToVector<float>(dx);
  for (size_t i = 0; i < dyv.size(); ++i)
    EXPECT_EQ(dxv[i], static_cast<float>(dyv[i]));
}

TEST(CastOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "x", DataType::kInt64, Shape{-1, 3});
  InferShapeAtCompileTime(Cast(DataType::kInt64, DataType::kFloat32), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "out")), Shape({-1, 3}));
  EXPECT_EQ(VarDtype(GetVarDesc(*block, "out")), DataType::kFloat32);
}

TEST(CastOp, WrongInDtypeNamesX) {
  std::string msg = ErrorOf(Cast(DataType::kInt64, DataType::kFloat32),
                            {{"x", RandomTensor<float>({2}, -1, 1, 3)}});
  EXPECT_NE(msg.find("cast: X 'x' is float32"), std::string::npos) << msg;
  msg = ErrorOf(MakeOp("cast", {{"X", {"x"}}}, {{"Out", {"out"}}},
                       {{"out_dtype", int32_t{9}}}),
                {{"x", RandomTensor<float>({2}, -1, 1, 3)}});
  EXPECT_NE(msg.find("out_dtype 9"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fluid
