// The bfloat16 and float16 CUDA kernels of the ops between the matrix ops
// against their CPU kernels, on the same 16-bit inputs: each forward op and
// each of its generated grad ops, fed the CPU forward values and the same
// random output gradients (tests/testing/half_checks.h). Tolerances are
// cuda_op_check's for the 16-bit types: both places compute in float, so
// they differ where the sums are taken in another order, by at most about
// one unit in the last place after rounding.
// Every test skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/cuda_op_check.h"
#include "tests/testing/elementwise_cuda_checks.h"
#include "tests/testing/half_checks.h"
#include "tests/testing/op_cases.h"

namespace fluid {
namespace {

using testing::CudaCheckOptions;
using testing::CudaMatchesCpu;
using testing::HalfFeeds;
using testing::kHalfTypes;
using testing::RandomTensor;
using testing::TensorMap;

// `op` on `inputs` (float32, rounded to each 16-bit type; those in `keep`
// stay float32) on CUDA against the CPU, and each generated grad op.
void ExpectHalfCudaMatchesCpu(const proto::OpDesc& op, const TensorMap& inputs,
                              const std::set<std::string>& keep = {}) {
  CudaCheckOptions opt;
  opt.grad = false;  // the grad ops are checked below, on 16-bit gradients
  for (DataType dt : kHalfTypes) {
    const std::string what = op.type() + " " + DataTypeName(dt);
    const HalfFeeds f = testing::MakeHalfFeeds(inputs, dt, keep);
    EXPECT_TRUE(CudaMatchesCpu(op, f.half, opt)) << what;
    const OpSchema& schema = OpRegistry::Global().Get(op.type());
    if (!schema.has_grad()) continue;
    const HalfFeeds g =
        testing::GradFeeds(f, testing::RunOp(op, f.half), opt.seed);
    for (const proto::OpDesc& grad : schema.grad_maker()(op)) {
      EXPECT_TRUE(CudaMatchesCpu(
          grad, testing::Select(g.half, OpInputNames(grad)), opt))
          << what << " " << grad.type();
    }
  }
}

void ExpectBroadcastsMatch(const std::string& type,
                           const std::vector<testing::BroadcastCase>& cases,
                           double y_lo, double y_hi) {
  uint64_t seed = 3;
  for (const testing::BroadcastCase& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << c.x << " and " << c.y << " axis " << c.axis);
    ExpectHalfCudaMatchesCpu(
        testing::ElementwiseOp(type, c.axis),
        {{"x", RandomTensor<float>(c.x, -2, 2, seed)},
         {"y", RandomTensor<float>(c.y, y_lo, y_hi, seed + 1)}});
    seed += 2;
  }
}

// Every broadcast layout, and the large reductions of dY (several row
// chunks of a column sum, several segments of a row sum, a full sum).
TEST(HalfOpsCuda, ElementwiseBroadcasts) {
  REQUIRE_GPU();
  for (const char* type : {"elementwise_add", "elementwise_sub",
                           "elementwise_mul", "elementwise_div"}) {
    const bool div = std::string(type) == "elementwise_div";
    ExpectBroadcastsMatch(type, testing::BroadcastCases(), div ? 0.5 : -2, 2);
    ExpectBroadcastsMatch(type, testing::LargeBroadcastCases(), div ? 0.5 : -2,
                          2);
  }
}

TEST(HalfOpsCuda, Activations) {
  REQUIRE_GPU();
  const std::vector<std::pair<std::string, AttributeMap>> acts = {
      {"relu", {}},
      {"sigmoid", {}},
      {"tanh", {}},
      {"leaky_relu", {{"alpha", 0.1f}}},
      {"elu", {{"alpha", 0.7f}}},
      {"relu6", {{"threshold", 2.0f}}},
      {"brelu", {{"t_min", -1.0f}, {"t_max", 1.0f}}},
      {"exp", {}},
      {"log", {}},
      {"sqrt", {}},
      {"square", {}},
      {"abs", {}},
      {"pow", {{"factor", 2.5f}}},
      {"softplus", {}},
      {"softsign", {}},
      {"gelu", {{"approximate", false}}},
      {"gelu", {{"approximate", true}}},
  };
  uint64_t seed = 20;
  for (const auto& a : acts) {
    // log, sqrt and pow on positive X only.
    const bool positive =
        a.first == "log" || a.first == "sqrt" || a.first == "pow";
    ExpectHalfCudaMatchesCpu(
        MakeOp(a.first, {{"X", {"x"}}}, {{"Out", {"out"}}}, a.second),
        {{"x", RandomTensor<float>({13, 70}, positive ? 0.5 : -3, 3, seed++)}});
  }
}

TEST(HalfOpsCuda, ScaleAndDropout) {
  REQUIRE_GPU();
  const TensorMap in = {{"x", RandomTensor<float>({30, 50}, -2, 2, 30)}};
  ExpectHalfCudaMatchesCpu(
      MakeOp("scale", {{"X", {"x"}}}, {{"Out", {"out"}}},
             {{"scale", 1.5f}, {"bias", 0.5f}, {"bias_after_scale", false}}),
      in);
  for (bool is_test : {false, true}) {
    ExpectHalfCudaMatchesCpu(
        MakeOp("dropout", {{"X", {"x"}}},
               {{"Out", {"out"}}, {"Mask", {"mask"}}},
               {{"dropout_prob", 0.3f},
                {"is_test", is_test},
                {"seed", int32_t{5}},
                {"dropout_implementation", std::string("upscale_in_train")}}),
        in);
  }
}

// Three terms; ten (past one launch's group, so the float partial sums
// wait in the workspace); ten with Out bound to one of them.
TEST(HalfOpsCuda, Sum) {
  REQUIRE_GPU();
  TensorMap in;
  std::vector<std::string> names;
  for (int i = 0; i < 10; ++i) {
    names.push_back("x" + std::to_string(i));
    in[names.back()] = RandomTensor<float>({40, 30}, -2, 2, 40 + i);
  }
  const std::vector<std::string> three(names.begin(), names.begin() + 3);
  ExpectHalfCudaMatchesCpu(MakeOp("sum", {{"X", three}}, {{"Out", {"out"}}}),
                           in);
  ExpectHalfCudaMatchesCpu(MakeOp("sum", {{"X", names}}, {{"Out", {"out"}}}),
                           in);
  ExpectHalfCudaMatchesCpu(MakeOp("sum", {{"X", names}}, {{"Out", {"x4"}}}),
                           in);
}

TEST(HalfOpsCuda, Pool2d) {
  REQUIRE_GPU();
  const std::vector<testing::PoolCase> cases = {
      {2, 3, 8, 8, 2, 2, 2, 2, 0, 0},
      {2, 2, 7, 5, 3, 3, 2, 2, 1, 1},
      {1, 2, 9, 9, 3, 3, 1, 1, 1, 1},
  };
  uint64_t seed = 50;
  for (const testing::PoolCase& k : cases) {
    for (const char* type : {"max", "avg"}) {
      for (bool exclusive : {true, false}) {
        SCOPED_TRACE(testing::Describe(k) + " " + type);
        ExpectHalfCudaMatchesCpu(
            testing::Pool2dOp(k, type, exclusive),
            {{"x", RandomTensor<float>({k.n, k.c, k.h, k.w}, -2, 2, seed++)}});
      }
    }
  }
}

TEST(HalfOpsCuda, DataMovement) {
  REQUIRE_GPU();
  const Tensor x = RandomTensor<float>({4, 6, 5}, -2, 2, 60);
  ExpectHalfCudaMatchesCpu(MakeOp("reshape", {{"X", {"x"}}}, {{"Out", {"out"}}},
                                  {{"shape", std::vector<int64_t>{6, -1}}}),
                           {{"x", x}});
  ExpectHalfCudaMatchesCpu(
      MakeOp("transpose", {{"X", {"x"}}}, {{"Out", {"out"}}},
             {{"axis", std::vector<int32_t>{2, 0, 1}}}),
      {{"x", x}});
  ExpectHalfCudaMatchesCpu(
      MakeOp("concat", {{"X", {"x", "y"}}}, {{"Out", {"out"}}},
             {{"axis", int32_t{1}}}),
      {{"x", x}, {"y", RandomTensor<float>({4, 3, 5}, -2, 2, 61)}});
  ExpectHalfCudaMatchesCpu(
      MakeOp("split", {{"X", {"x"}}}, {{"Out", {"o0", "o1", "o2"}}},
             {{"axis", int32_t{1}}, {"num", int32_t{3}}}),
      {{"x", x}});
  ExpectHalfCudaMatchesCpu(MakeOp("assign", {{"X", {"x"}}}, {{"Out", {"out"}}}),
                           {{"x", x}});
}

// X and Y 16-bit, Scale, Bias and the statistics float32.
TEST(HalfOpsCuda, Norms) {
  REQUIRE_GPU();
  const std::set<std::string> keep = {"scale", "bias", "mean", "var"};
  const Shape x{4, 3, 5, 6}, c{3};
  const TensorMap bn = {{"x", RandomTensor<float>(x, -2, 3, 70)},
                        {"scale", RandomTensor<float>(c, 0.5, 1.5, 71)},
                        {"bias", RandomTensor<float>(c, -1, 1, 72)},
                        {"mean", RandomTensor<float>(c, -0.5, 0.5, 73)},
                        {"var", RandomTensor<float>(c, 0.5, 2, 74)}};
  for (const AttributeMap& attrs :
       {AttributeMap{}, AttributeMap{{"is_test", true}},
        AttributeMap{{"fuse_with_relu", true}}}) {
    ExpectHalfCudaMatchesCpu(MakeOp("batch_norm",
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
                                    attrs),
                             bn, keep);
  }
  const TensorMap ln = {{"x", RandomTensor<float>({12, 3, 20}, -2, 3, 75)},
                        {"scale", RandomTensor<float>({60}, 0.5, 1.5, 76)},
                        {"bias", RandomTensor<float>({60}, -1, 1, 77)}};
  ExpectHalfCudaMatchesCpu(
      MakeOp("layer_norm",
             {{"X", {"x"}}, {"Scale", {"scale"}}, {"Bias", {"bias"}}},
             {{"Y", {"y"}}, {"Mean", {"mean"}}, {"Variance", {"var"}}},
             {{"begin_norm_axis", int32_t{1}}}),
      ln, keep);
}

}  // namespace
}  // namespace fluid
