// The bfloat16 and float16 kernels of the ops between the matrix ops,
// forward and gradient, against the float32 kernels on the same rounded
// inputs (tests/testing/half_checks.h; tolerance: one unit in the last
// place of the 16-bit type, HalfTolerance says why).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "ops/half_cpu.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/half_checks.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::BroadcastCase;
using testing::BroadcastCases;
using testing::GradFeeds;
using testing::HalfClose;
using testing::HalfFeeds;
using testing::HalfTolerance;
using testing::kHalfTypes;
using testing::MakeHalfFeeds;
using testing::RandomTensor;
using testing::RunOp;
using testing::Select;
using testing::TensorMap;

// What a check of one op may vary.
struct HalfCheck {
  // Input vars that stay float32 in the 16-bit run (norm parameters).
  std::set<std::string> keep;
  // Output vars (forward or gradient) that are float32 in the 16-bit run.
  std::set<std::string> f32_outputs;
  bool grad = true;  // also the generated grad ops
  uint64_t seed = 77;
};

// The outputs of the 16-bit run `got` match the float32 run `ref`, and
// each has the dtype it should (`dt`, or float32 when listed).
void ExpectOutputsMatch(const std::string& what, const TensorMap& ref,
                        const TensorMap& got, DataType dt, const HalfCheck& c) {
  for (const auto& kv : ref) {
    ASSERT_TRUE(got.count(kv.first)) << what << " lacks " << kv.first;
    const Tensor& g = got.at(kv.first);
    if (!IsFloatDtype(kv.second.dtype())) continue;
    const DataType want =
        c.f32_outputs.count(kv.first) ? DataType::kFloat32 : dt;
    EXPECT_EQ(g.dtype(), want)
        << what << " output " << kv.first << " is " << DataTypeName(g.dtype());
    EXPECT_TRUE(HalfClose(kv.second, g, HalfTolerance(dt),
                          what + " output '" + kv.first + "'"));
  }
}

// `op` on `inputs` (float32; rounded to each 16-bit type) against the
// float32 kernel on the rounded values, and likewise each of its
// generated grad ops, fed the 16-bit run's forward values and the same
// random output gradients.
void ExpectHalfMatchesFloat(const proto::OpDesc& op, const TensorMap& inputs,
                            const HalfCheck& c = {}) {
  for (DataType dt : kHalfTypes) {
    const std::string what = op.type() + " " + DataTypeName(dt);
    const HalfFeeds f = MakeHalfFeeds(inputs, dt, c.keep);
    const TensorMap got = RunOp(op, f.half);
    ExpectOutputsMatch(what, RunOp(op, f.ref), got, dt, c);
    const OpSchema& schema = OpRegistry::Global().Get(op.type());
    if (!c.grad || !schema.has_grad()) continue;
    const HalfFeeds g = GradFeeds(f, got, c.seed);
    for (const proto::OpDesc& grad : schema.grad_maker()(op)) {
      const auto names = OpInputNames(grad);
      ExpectOutputsMatch(what + " " + grad.type(),
                         RunOp(grad, Select(g.ref, names)),
                         RunOp(grad, Select(g.half, names)), dt, c);
    }
  }
}

// ---- the kernels' conversions (ops/half_math.h)

// ToCompute and FromCompute (an instruction each where the CPU has F16C)
// convert as float16.h does: every 16-bit value to float, and floats
// around every 16-bit value, its rounding ties, subnormals and overflow
// back, bit for bit (NaN only as NaN: its payload may differ).
TEST(HalfElementwiseOps, ConversionsMatchFloat16h) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float16 h = float16::FromBits(static_cast<uint16_t>(bits));
    const bfloat16 b = bfloat16::FromBits(static_cast<uint16_t>(bits));
    const float fh = ops::ToCompute(h), fb = ops::ToCompute(b);
    if (std::isnan(ToFloat(h))) {
      EXPECT_TRUE(std::isnan(fh)) << bits;
    } else {
      ASSERT_EQ(fh, ToFloat(h)) << bits;
    }
    if (!std::isnan(ToFloat(b))) {
      ASSERT_EQ(fb, ToFloat(b)) << bits;
    }
    for (float v : {fh, std::nextafter(fh, 0.0f), std::nextafter(fh, 1e9f),
                    std::nextafter(fh, -1e9f), fh * 1.0004883f}) {
      if (std::isnan(v)) continue;
      ASSERT_EQ(ops::FromCompute<float16>(v).x, FromFloat<float16>(v).x) << v;
      ASSERT_EQ(ops::FromCompute<bfloat16>(v).x, FromFloat<bfloat16>(v).x) << v;
    }
  }
}

// The bulk conversions of the CPU kernels (eight at a time with F16C) give
// ToCompute's and FromCompute's values, whatever the length's remainder.
TEST(HalfElementwiseOps, BulkConversionsMatchOneByOne) {
  std::vector<float16> h(0x10000 + 5);
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = float16::FromBits(static_cast<uint16_t>(i * 7919));
  std::vector<float> f(h.size());
  ops::ToFloats(h.data(), f.data(), static_cast<int64_t>(h.size()));
  std::vector<float> g;
  for (size_t i = 0; i < h.size(); ++i) {
    const float want = ops::ToCompute(h[i]);
    if (std::isnan(want)) continue;
    ASSERT_EQ(f[i], want) << i;
    g.push_back(std::nextafter(want, 1e9f));
    g.push_back(want * 1.0004883f);
  }
  std::vector<float16> back(g.size());
  ops::FromFloats(g.data(), back.data(), static_cast<int64_t>(g.size()));
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_EQ(back[i].x, ops::FromCompute<float16>(g[i]).x) << g[i];
}

// ---- elementwise_add, _sub, _mul, _div

void ExpectBroadcastsMatch(const std::string& type, double y_lo, double y_hi) {
  uint64_t seed = 1;
  for (const BroadcastCase& c : BroadcastCases()) {
    SCOPED_TRACE(::testing::Message()
                 << c.x << " and " << c.y << " axis " << c.axis);
    ExpectHalfMatchesFloat(
        testing::ElementwiseOp(type, c.axis),
        {{"x", RandomTensor<float>(c.x, -2, 2, seed)},
         {"y", RandomTensor<float>(c.y, y_lo, y_hi, seed + 1)}});
    seed += 2;
  }
}

TEST(HalfElementwiseOps, AddBroadcasts) {
  ExpectBroadcastsMatch("elementwise_add", -2, 2);
}

TEST(HalfElementwiseOps, SubBroadcasts) {
  ExpectBroadcastsMatch("elementwise_sub", -2, 2);
}

TEST(HalfElementwiseOps, MulBroadcasts) {
  ExpectBroadcastsMatch("elementwise_mul", -2, 2);
}

// Y away from 0, where X / Y and its gradient are well conditioned.
TEST(HalfElementwiseOps, DivBroadcasts) {
  ExpectBroadcastsMatch("elementwise_div", 0.5, 2);
}

// A bias add large enough for the pool and for dY's column blocks: X
// [300, 200] + b [200], and a conv bias X [4, 16, 12, 12] + b [16].
TEST(HalfElementwiseOps, LargeBiasAdds) {
  ExpectHalfMatchesFloat(testing::ElementwiseOp("elementwise_add", -1),
                         {{"x", RandomTensor<float>({300, 200}, -2, 2, 5)},
                          {"y", RandomTensor<float>({200}, -2, 2, 6)}});
  ExpectHalfMatchesFloat(testing::ElementwiseOp("elementwise_add", 1),
                         {{"x", RandomTensor<float>({4, 16, 12, 12}, -2, 2, 7)},
                          {"y", RandomTensor<float>({16}, -2, 2, 8)}});
}

// ---- activations

struct ActivationCase {
  std::string type;
  AttributeMap attrs;
  double lo, hi;  // the range of X
};

const std::vector<ActivationCase>& ActivationCases() {
  static const std::vector<ActivationCase> cases = {
      {"relu", {}, -3, 3},
      {"sigmoid", {}, -4, 4},
      {"tanh", {}, -3, 3},
      {"leaky_relu", {{"alpha", 0.1f}}, -3, 3},
      {"elu", {{"alpha", 0.7f}}, -3, 3},
      {"relu6", {{"threshold", 2.0f}}, -3, 3},
      {"brelu", {{"t_min", -1.0f}, {"t_max", 1.0f}}, -2, 2},
      {"exp", {}, -3, 3},
      {"log", {}, 0.5, 4},
      {"sqrt", {}, 0.5, 4},
      {"square", {}, -3, 3},
      {"abs", {}, -3, 3},
      {"pow", {{"factor", 2.5f}}, 0.5, 3},
      {"softplus", {}, -4, 4},
      {"softsign", {}, -4, 4},
      {"gelu", {{"approximate", false}}, -3, 3},
      {"gelu", {{"approximate", true}}, -3, 3},
  };
  return cases;
}

TEST(HalfElementwiseOps, Activations) {
  uint64_t seed = 40;
  for (const ActivationCase& a : ActivationCases()) {
    // 4100 elements: more than one chunk of the 16-bit CPU path.
    ExpectHalfMatchesFloat(
        MakeOp(a.type, {{"X", {"x"}}}, {{"Out", {"out"}}}, a.attrs),
        {{"x", RandomTensor<float>({41, 100}, a.lo, a.hi, seed++)}});
  }
}

// ---- scale, dropout, sum

TEST(HalfElementwiseOps, Scale) {
  const Tensor x = RandomTensor<float>({30, 70}, -3, 3, 60);
  for (bool after : {true, false}) {
    for (float bias : {0.0f, 0.75f}) {
      ExpectHalfMatchesFloat(
          MakeOp(
              "scale", {{"X", {"x"}}}, {{"Out", {"out"}}},
              {{"scale", 1.5f}, {"bias", bias}, {"bias_after_scale", after}}),
          {{"x", x}});
    }
  }
}

proto::OpDesc Dropout(float prob, bool is_test, const std::string& impl) {
  return MakeOp("dropout", {{"X", {"x"}}},
                {{"Out", {"out"}}, {"Mask", {"mask"}}},
                {{"dropout_prob", prob},
                 {"is_test", is_test},
                 {"seed", int32_t{17}},
                 {"dropout_implementation", impl}});
}

TEST(HalfElementwiseOps, Dropout) {
  const Tensor x = RandomTensor<float>({50, 90}, -2, 2, 61);
  for (const char* impl : {"downgrade_in_infer", "upscale_in_train"}) {
    for (bool is_test : {false, true}) {
      ExpectHalfMatchesFloat(Dropout(0.3f, is_test, impl), {{"x", x}});
    }
  }
}

// The mask of a 16-bit dropout is the float32 kernel's for the same seed,
// element for element.
TEST(HalfElementwiseOps, DropoutMaskIsTheFloat32Mask) {
  const Tensor x = RandomTensor<float>({64, 64}, -2, 2, 62);
  const proto::OpDesc op = Dropout(0.4f, false, "upscale_in_train");
  const std::vector<float> want =
      testing::ToVector<float>(RunOp(op, {{"x", x}})["mask"]);
  for (DataType dt : kHalfTypes) {
    const Tensor mask =
        testing::ToFloat32(RunOp(op, {{"x", testing::ToHalf(x, dt)}})["mask"]);
    EXPECT_EQ(testing::ToVector<float>(mask), want) << DataTypeName(dt);
  }
}

// Three terms, and three with Out bound to the first (in place).
TEST(HalfElementwiseOps, Sum) {
  const TensorMap in = {{"a", RandomTensor<float>({70, 40}, -2, 2, 63)},
                        {"b", RandomTensor<float>({70, 40}, -2, 2, 64)},
                        {"c", RandomTensor<float>({70, 40}, -2, 2, 65)}};
  ExpectHalfMatchesFloat(
      MakeOp("sum", {{"X", {"a", "b", "c"}}}, {{"Out", {"out"}}}), in);
  ExpectHalfMatchesFloat(
      MakeOp("sum", {{"X", {"a", "b", "c"}}}, {{"Out", {"a"}}}), in);
}

// ---- pool2d

TEST(HalfElementwiseOps, Pool2d) {
  const std::vector<testing::PoolCase> cases = {
      {2, 3, 8, 8, 2, 2, 2, 2, 0, 0},  // 2x2 tiles
      {2, 2, 7, 5, 3, 3, 2, 2, 1, 1},  // stride 2, padding 1
      {1, 2, 9, 9, 3, 3, 1, 1, 1, 1},  // 3x3, stride 1, padding 1
  };
  uint64_t seed = 70;
  for (const testing::PoolCase& k : cases) {
    const Shape x{k.n, k.c, k.h, k.w};
    for (const char* type : {"max", "avg"}) {
      for (bool exclusive : {true, false}) {
        SCOPED_TRACE(testing::Describe(k) + " " + type);
        ExpectHalfMatchesFloat(testing::Pool2dOp(k, type, exclusive),
                               {{"x", RandomTensor<float>(x, -2, 2, seed++)}});
      }
    }
  }
}

// ---- the data-movement ops

TEST(HalfElementwiseOps, DataMovement) {
  const Tensor x = RandomTensor<float>({4, 6, 5}, -2, 2, 80);
  ExpectHalfMatchesFloat(MakeOp("reshape", {{"X", {"x"}}}, {{"Out", {"out"}}},
                                {{"shape", std::vector<int64_t>{6, -1}}}),
                         {{"x", x}});
  ExpectHalfMatchesFloat(MakeOp("transpose", {{"X", {"x"}}}, {{"Out", {"out"}}},
                                {{"axis", std::vector<int32_t>{2, 0, 1}}}),
                         {{"x", x}});
  ExpectHalfMatchesFloat(
      MakeOp("concat", {{"X", {"x", "y"}}}, {{"Out", {"out"}}},
             {{"axis", int32_t{1}}}),
      {{"x", x}, {"y", RandomTensor<float>({4, 3, 5}, -2, 2, 81)}});
  ExpectHalfMatchesFloat(
      MakeOp("split", {{"X", {"x"}}}, {{"Out", {"o0", "o1", "o2"}}},
             {{"axis", int32_t{1}}, {"num", int32_t{3}}}),
      {{"x", x}});
  ExpectHalfMatchesFloat(MakeOp("assign", {{"X", {"x"}}}, {{"Out", {"out"}}}),
                         {{"x", x}});
}

// ---- batch_norm and layer_norm: X and Y 16-bit, the parameters float32

proto::OpDesc BatchNorm(const AttributeMap& attrs) {
  return MakeOp("batch_norm",
                {{"X", {"x"}},
                 {"Scale", {"scale"}},
                 {"Bias", {"bias"}},
                 {"Mean", {"mean"}},
                 {"Variance", {"var"}}},
                {{"Y", {"y"}},
                 {"MeanOut", {"mean"}},
                 {"VarianceOut", {"var"}},
                 {"SavedMean", {"saved_mean"}},
                 {"SavedVariance", {"saved_var"}}},
                attrs);
}

const HalfCheck& NormParams() {
  static const HalfCheck c = [] {
    HalfCheck h;
    h.keep = {"scale", "bias", "mean", "var"};
    h.f32_outputs = {"mean",      "var",        "saved_mean",
                     "saved_var", "scale@GRAD", "bias@GRAD"};
    return h;
  }();
  return c;
}

TEST(HalfElementwiseOps, BatchNorm) {
  for (const Shape& x : {Shape{4, 3, 5, 6}, Shape{16, 7}}) {
    const Shape c{x[1]};
    const TensorMap in = {{"x", RandomTensor<float>(x, -2, 3, 90)},
                          {"scale", RandomTensor<float>(c, 0.5, 1.5, 91)},
                          {"bias", RandomTensor<float>(c, -1, 1, 92)},
                          {"mean", RandomTensor<float>(c, -0.5, 0.5, 93)},
                          {"var", RandomTensor<float>(c, 0.5, 2, 94)}};
    for (const AttributeMap& attrs :
         {AttributeMap{}, AttributeMap{{"is_test", true}},
          AttributeMap{{"use_global_stats", true}},
          AttributeMap{{"fuse_with_relu", true}}}) {
      SCOPED_TRACE(::testing::Message() << x << " " << attrs.size());
      ExpectHalfMatchesFloat(BatchNorm(attrs), in, NormParams());
    }
  }
}

// A 16-bit X with parameters of X's dtype instead of float32 is refused,
// naming the parameter.
TEST(HalfElementwiseOps, BatchNormRefusesHalfParameters) {
  const Shape c{3};
  TensorMap in = {{"x", testing::ToHalf(RandomTensor<float>({2, 3}, -1, 1, 1),
                                        DataType::kBFloat16)},
                  {"scale", testing::ToHalf(RandomTensor<float>(c, 1, 2, 2),
                                            DataType::kBFloat16)},
                  {"bias", RandomTensor<float>(c, -1, 1, 3)},
                  {"mean", RandomTensor<float>(c, -1, 1, 4)},
                  {"var", RandomTensor<float>(c, 1, 2, 5)}};
  const std::string err = testing::ErrorOf(BatchNorm({}), in);
  EXPECT_NE(err.find("Scale 'scale' is bfloat16 but must be float32"),
            std::string::npos)
      << err;
}

proto::OpDesc LayerNorm(bool scale, bool bias) {
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"X", {"x"}}};
  if (scale) in.push_back({"Scale", {"scale"}});
  if (bias) in.push_back({"Bias", {"bias"}});
  return MakeOp("layer_norm", in,
                {{"Y", {"y"}}, {"Mean", {"mean"}}, {"Variance", {"var"}}},
                {{"begin_norm_axis", int32_t{1}}});
}

TEST(HalfElementwiseOps, LayerNorm) {
  const TensorMap in = {{"x", RandomTensor<float>({12, 3, 20}, -2, 3, 95)},
                        {"scale", RandomTensor<float>({60}, 0.5, 1.5, 96)},
                        {"bias", RandomTensor<float>({60}, -1, 1, 97)}};
  for (bool with_params : {true, false}) {
    SCOPED_TRACE(with_params ? "Scale and Bias" : "neither");
    ExpectHalfMatchesFloat(LayerNorm(with_params, with_params),
                           with_params ? in : TensorMap{{"x", in.at("x")}},
                           NormParams());
  }
}

}  // namespace
}  // namespace fluid
