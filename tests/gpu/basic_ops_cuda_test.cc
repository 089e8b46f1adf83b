// The CUDA kernels of the elementwise, reduction, shape, fill, random and
// metric ops against their CPU kernels: forward outputs and the outputs of
// every generated grad op, float32 and float64. Every test skips, saying
// why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/gpu/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaCheckOptions;
using testing::CudaMatchesCpu;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::TensorMap;

const DataType kFloatTypes[] = {DataType::kFloat32, DataType::kFloat64};

Tensor Random(DataType dtype, const Shape& shape, uint64_t seed, double lo = -1,
              double hi = 1) {
  if (dtype == DataType::kFloat64)
    return RandomTensor<double>(shape, lo, hi, seed);
  return RandomTensor<float>(shape, lo, hi, seed);
}

// Bit-for-bit equality of two host tensors.
::testing::AssertionResult SameBits(const Tensor& cpu, const Tensor& cuda) {
  if (cpu.dtype() != cuda.dtype() || cpu.shape() != cuda.shape())
    return ::testing::AssertionFailure()
           << "CUDA " << DataTypeName(cuda.dtype()) << " " << cuda.shape()
           << " vs CPU " << DataTypeName(cpu.dtype()) << " " << cpu.shape();
  if (cpu.bytes() > 0 &&
      std::memcmp(cpu.raw_data(), cuda.raw_data(), cpu.bytes()) != 0)
    return ::testing::AssertionFailure() << "values differ";
  return ::testing::AssertionSuccess();
}

// ---- elementwise_add / elementwise_mul ----

struct BroadcastCase {
  Shape x, y;
  int axis;
};

// Every layout of the broadcast ([pre, n, post] with each part 1 or not),
// axis given and defaulted, Y with trailing 1s.
const std::vector<BroadcastCase>& BroadcastCases() {
  static const std::vector<BroadcastCase> cases = {
      {{3, 4}, {3, 4}, -1},       // same shape
      {{5, 7}, {7}, -1},          // fc bias: post == 1
      {{1, 1}, {1}, -1},          // size-1 everything
      {{2, 3, 4, 5}, {3}, 1},     // conv bias: pre, n, post
      {{2, 3, 4, 5}, {3, 4}, 1},  // middle run of dims
      {{2, 3, 4}, {3, 1}, 1},     // trailing 1 of Y dropped
      {{3, 4}, {4, 1}, 1},        // same, at the last dim
      {{4, 6}, {1}, -1},          // one scalar for all: n == 1
      {{2, 3, 5}, {2}, 0},        // leading dim, post > 1
      {{2, 3, 5}, {2, 3}, 0},     // leading run
      {{6, 1, 3}, {1, 3}, 1},     // size-1 dim inside the run
      {{3, 1}, {3, 1}, -1},       // same shape with a trailing 1
      {{4, 5, 6}, {5, 6}, -1},    // default axis, post == 1
      {{7, 3, 2}, {3}, 1},        // small post
  };
  return cases;
}

// Larger reductions of dY: several row chunks of the column sum, several
// segments of the row sum, a multi-block full sum.
const std::vector<BroadcastCase>& LargeBroadcastCases() {
  static const std::vector<BroadcastCase> cases = {
      {{300, 200}, {200}, -1},     // column sums in 5 row chunks
      {{1000, 3}, {3}, -1},        // few columns, many chunks
      {{8, 16, 32, 32}, {16}, 1},  // conv bias, 8192 terms per channel
      {{300, 200}, {300, 1}, 0},   // pre == 1, post == 200
      {{70000, 2}, {1}, -1},       // full sum over 140000 terms
      {{70000}, {70000}, -1},      // same shape, many blocks
      {{2, 5, 3000}, {5}, 1},      // 6000 terms per entry: 2 segments
  };
  return cases;
}

proto::OpDesc Binary(const std::string& type, int axis,
                     const std::string& out = "out") {
  return MakeOp(type, {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {out}}},
                {{"axis", axis}});
}

TEST(BasicOpsCuda, ElementwiseAddAndMul) {
  REQUIRE_GPU();
  uint64_t seed = 1;
  for (const char* type : {"elementwise_add", "elementwise_mul"}) {
    for (DataType dt : kFloatTypes) {
      for (const BroadcastCase& c : BroadcastCases()) {
        TensorMap in = {{"x", Random(dt, c.x, seed)},
                        {"y", Random(dt, c.y, seed + 1)}};
        seed += 2;
        EXPECT_TRUE(CudaMatchesCpu(Binary(type, c.axis), in))
            << type << " " << DataTypeName(dt) << " " << c.x << " and " << c.y
            << " axis " << c.axis;
      }
    }
  }
}

// The sums of dY differ from the CPU's in order only; float32 sums of
// thousands of terms round differently at about 1e-5 relative.
TEST(BasicOpsCuda, ElementwiseAddAndMulLarge) {
  REQUIRE_GPU();
  uint64_t seed = 100;
  for (const char* type : {"elementwise_add", "elementwise_mul"}) {
    for (DataType dt : kFloatTypes) {
      CudaCheckOptions opt;
      if (dt == DataType::kFloat32) opt.tolerance = 1e-4;
      for (const BroadcastCase& c : LargeBroadcastCases()) {
        TensorMap in = {{"x", Random(dt, c.x, seed)},
                        {"y", Random(dt, c.y, seed + 1)}};
        seed += 2;
        EXPECT_TRUE(CudaMatchesCpu(Binary(type, c.axis), in, opt))
            << type << " " << DataTypeName(dt) << " " << c.x << " and " << c.y
            << " axis " << c.axis;
      }
    }
  }
}

// Out bound to X: written in place.
TEST(BasicOpsCuda, ElementwiseInPlace) {
  REQUIRE_GPU();
  for (const char* type : {"elementwise_add", "elementwise_mul"}) {
    for (DataType dt : kFloatTypes) {
      TensorMap in = {{"x", Random(dt, {4, 3, 5}, 7)},
                      {"y", Random(dt, {3}, 8)}};
      EXPECT_TRUE(CudaMatchesCpu(Binary(type, 1, "x"), in))
          << type << " " << DataTypeName(dt);
    }
  }
}

// Only one of the two gradients asked for.
TEST(BasicOpsCuda, ElementwiseGradOneSide) {
  REQUIRE_GPU();
  for (const char* type : {"elementwise_add_grad", "elementwise_mul_grad"}) {
    for (DataType dt : kFloatTypes) {
      TensorMap in = {{"x", Random(dt, {6, 4, 5}, 21)},
                      {"y", Random(dt, {4}, 22)},
                      {"g", Random(dt, {6, 4, 5}, 23)}};
      for (bool want_x : {true, false}) {
        auto op =
            MakeOp(type, {{"X", {"x"}}, {"Y", {"y"}}, {"Out@GRAD", {"g"}}},
                   {{"X@GRAD", {want_x ? "dx" : kEmptyVarName}},
                    {"Y@GRAD", {want_x ? kEmptyVarName : "dy"}}},
                   {{"axis", 1}});
        EXPECT_TRUE(CudaMatchesCpu(op, in))
            << type << " " << DataTypeName(dt) << " want_x " << want_x;
      }
    }
  }
}

// ---- scale ----

TEST(BasicOpsCuda, Scale) {
  REQUIRE_GPU();
  struct Form {
    float scale, bias;
    bool after;
  };
  uint64_t seed = 200;
  for (DataType dt : kFloatTypes) {
    for (const Form& f : std::vector<Form>{{2.5f, 0.0f, true},
                                           {-0.75f, 0.5f, true},
                                           {1.5f, -0.25f, false},
                                           {1.0f, 0.0f, true}}) {
      for (Shape s : {Shape({1}), Shape({3, 7}), Shape({70001})}) {
        auto op = MakeOp("scale", {{"X", {"x"}}}, {{"Out", {"out"}}},
                         {{"scale", f.scale},
                          {"bias", f.bias},
                          {"bias_after_scale", f.after}});
        EXPECT_TRUE(CudaMatchesCpu(op, {{"x", Random(dt, s, seed++)}}))
            << DataTypeName(dt) << " scale " << f.scale << " bias " << f.bias
            << " after " << f.after << " " << s;
      }
    }
  }
}

TEST(BasicOpsCuda, ScaleInPlace) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    auto op = MakeOp("scale", {{"X", {"x"}}}, {{"Out", {"x"}}},
                     {{"scale", 3.0f}, {"bias", 1.0f}});
    EXPECT_TRUE(CudaMatchesCpu(op, {{"x", Random(dt, {5, 9}, 3)}}))
        << DataTypeName(dt);
  }
}

// ---- sum ----

TEST(BasicOpsCuda, Sum) {
  REQUIRE_GPU();
  uint64_t seed = 300;
  for (DataType dt : kFloatTypes) {
    // Counts around the 8-input group.
    for (int n : {1, 2, 3, 8, 9, 17}) {
      for (Shape s : {Shape({1}), Shape({3, 5}), Shape({3, 1, 1500})}) {
        TensorMap in;
        std::vector<std::string> names;
        for (int i = 0; i < n; ++i) {
          names.push_back("x" + std::to_string(i));
          in[names.back()] = Random(dt, s, seed++);
        }
        auto op = MakeOp("sum", {{"X", names}}, {{"Out", {"out"}}});
        EXPECT_TRUE(CudaMatchesCpu(op, in))
            << DataTypeName(dt) << " " << n << " inputs " << s;
      }
    }
  }
}

// Out bound to an input, once or several times, as the autodiff's gradient
// accumulation does.
TEST(BasicOpsCuda, SumInPlace) {
  REQUIRE_GPU();
  const std::vector<std::vector<std::string>> aliases = {
      {"a", "b"},
      {"b", "a"},
      {"b", "a", "b", "a", "a"},
      {"a", "a"},
      {"a"},
      {"b", "b", "b", "b", "b", "b", "b", "b", "b", "a"},
      {"a", "b", "b", "b", "b", "b", "b", "b", "b", "b", "a"}};
  for (DataType dt : kFloatTypes) {
    for (const auto& xs : aliases) {
      TensorMap in = {{"a", Random(dt, {3, 700}, 5)}};
      for (const auto& x : xs)
        if (x == "b") in["b"] = Random(dt, {3, 700}, 6);
      auto op = MakeOp("sum", {{"X", xs}}, {{"Out", {"a"}}});
      EXPECT_TRUE(CudaMatchesCpu(op, in))
          << DataTypeName(dt) << " " << xs.size() << " inputs";
    }
  }
}

// ---- mean ----

TEST(BasicOpsCuda, Mean) {
  REQUIRE_GPU();
  uint64_t seed = 400;
  for (DataType dt : kFloatTypes) {
    for (Shape s : {Shape({1}), Shape({3, 4}), Shape({4095}), Shape({4097}),
                    Shape({3, 5000}), Shape({1000, 1000})}) {
      auto op = MakeOp("mean", {{"X", {"x"}}}, {{"Out", {"out"}}});
      EXPECT_TRUE(CudaMatchesCpu(op, {{"x", Random(dt, s, seed++, -1, 3)}}))
          << DataTypeName(dt) << " " << s;
    }
  }
}

// ---- reshape ----

TEST(BasicOpsCuda, Reshape) {
  REQUIRE_GPU();
  struct Case {
    Shape x;
    std::vector<int64_t> spec;
  };
  uint64_t seed = 500;
  for (DataType dt : kFloatTypes) {
    for (const Case& c : std::vector<Case>{{{2, 3, 4}, {6, 4}},
                                           {{2, 3, 4}, {0, -1}},
                                           {{2, 3, 4}, {-1}},
                                           {{12}, {3, 2, 2}},
                                           {{5, 1}, {1, 5}},
                                           {{64, 3, 8, 8}, {0, -1}}}) {
      auto op = MakeOp("reshape", {{"X", {"x"}}}, {{"Out", {"out"}}},
                       {{"shape", c.spec}});
      EXPECT_TRUE(CudaMatchesCpu(op, {{"x", Random(dt, c.x, seed++)}}))
          << DataTypeName(dt) << " " << c.x << " to " << Shape(c.spec);
    }
  }
}

// ---- fill_constant / fill_zeros_like ----

TEST(BasicOpsCuda, FillConstant) {
  REQUIRE_GPU();
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64, DataType::kInt32,
                      DataType::kInt64}) {
    for (float value : {0.0f, 2.5f, -1.75f, 1e6f}) {
      for (const std::vector<int64_t>& shape :
           std::vector<std::vector<int64_t>>{{1}, {3, 4}, {0, 3}, {70000}}) {
        auto op = MakeOp("fill_constant", {}, {{"Out", {"out"}}},
                         {{"shape", shape},
                          {"value", value},
                          {"dtype", static_cast<int32_t>(dt)}});
        EXPECT_TRUE(CudaMatchesCpu(op, {}))
            << DataTypeName(dt) << " " << value << " " << Shape(shape);
      }
    }
  }
}

TEST(BasicOpsCuda, FillZerosLike) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    for (Shape s : {Shape({1}), Shape({7, 3}), Shape({0, 2})}) {
      auto op = MakeOp("fill_zeros_like", {{"X", {"x"}}}, {{"Out", {"out"}}});
      EXPECT_TRUE(CudaMatchesCpu(op, {{"x", Random(dt, s, 9)}}))
          << DataTypeName(dt) << " " << s;
    }
  }
}

// ---- uniform_random / gaussian_random: the same bits on both places ----

TEST(BasicOpsCuda, UniformRandomSameBits) {
  REQUIRE_GPU();
  struct Range {
    float lo, hi;
  };
  for (DataType dt : kFloatTypes) {
    for (int32_t seed : {0, 1, 123, -7}) {
      for (const Range& r :
           std::vector<Range>{{-1, 1}, {0, 0.001f}, {2, 2}, {-5, 3}}) {
        for (const std::vector<int64_t>& shape :
             std::vector<std::vector<int64_t>>{{0}, {1}, {7}, {33, 65}}) {
          auto op = MakeOp("uniform_random", {}, {{"Out", {"fc_0.w"}}},
                           {{"shape", shape},
                            {"min", r.lo},
                            {"max", r.hi},
                            {"seed", seed},
                            {"dtype", static_cast<int32_t>(dt)}});
          Tensor cpu = RunOp(op, {}, 1, Place::CPU())["fc_0.w"];
          Tensor cuda = RunOp(op, {}, 1, Place::CUDA(0))["fc_0.w"];
          EXPECT_TRUE(SameBits(cpu, cuda))
              << DataTypeName(dt) << " seed " << seed << " [" << r.lo << ", "
              << r.hi << ") " << Shape(shape);
        }
      }
    }
  }
}

TEST(BasicOpsCuda, GaussianRandomSameBits) {
  REQUIRE_GPU();
  struct Dist {
    float mean, stddev;
  };
  for (DataType dt : kFloatTypes) {
    for (int32_t seed : {0, 1, 123, -7}) {
      for (const Dist& d :
           std::vector<Dist>{{0, 1}, {0.5f, 0.02f}, {-3, 0}, {1, 10}}) {
        // Odd sizes leave the second value of the last pair unused.
        for (const std::vector<int64_t>& shape :
             std::vector<std::vector<int64_t>>{{0}, {1}, {7}, {33, 65}}) {
          auto op = MakeOp("gaussian_random", {}, {{"Out", {"conv.w"}}},
                           {{"shape", shape},
                            {"mean", d.mean},
                            {"std", d.stddev},
                            {"seed", seed},
                            {"dtype", static_cast<int32_t>(dt)}});
          Tensor cpu = RunOp(op, {}, 1, Place::CPU())["conv.w"];
          Tensor cuda = RunOp(op, {}, 1, Place::CUDA(0))["conv.w"];
          EXPECT_TRUE(SameBits(cpu, cuda))
              << DataTypeName(dt) << " seed " << seed << " N(" << d.mean << ", "
              << d.stddev << "^2) " << Shape(shape);
        }
      }
    }
  }
}

// ---- accuracy ----

proto::OpDesc AccuracyOp(bool counts = true) {
  if (!counts)
    return MakeOp("accuracy", {{"Out", {"scores"}}, {"Label", {"label"}}},
                  {{"Accuracy", {"acc"}}});
  return MakeOp(
      "accuracy", {{"Out", {"scores"}}, {"Label", {"label"}}},
      {{"Accuracy", {"acc"}}, {"Correct", {"correct"}}, {"Total", {"total"}}});
}

Tensor RandomLabels(int64_t rows, int64_t classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(rows));
  for (auto& x : v) x = static_cast<int64_t>(rng() % classes);
  return MakeTensor<int64_t>({rows, 1}, v);
}

// Scores drawn from a few integers, so that rows have ties.
Tensor TiedScores(DataType dt, int64_t rows, int64_t classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(static_cast<size_t>(rows * classes));
  for (auto& x : v) x = static_cast<double>(rng() % 4);
  if (dt == DataType::kFloat64) return MakeTensor<double>({rows, classes}, v);
  return MakeTensor<float>({rows, classes},
                           std::vector<float>(v.begin(), v.end()));
}

TEST(BasicOpsCuda, Accuracy) {
  REQUIRE_GPU();
  struct Case {
    int64_t rows, classes;
  };
  uint64_t seed = 600;
  for (DataType dt : kFloatTypes) {
    for (const Case& c : std::vector<Case>{
             {1, 1}, {4, 3}, {64, 10}, {1000, 37}, {3, 100}, {257, 1000}}) {
      Tensor labels = RandomLabels(c.rows, c.classes, seed++);
      EXPECT_TRUE(CudaMatchesCpu(
          AccuracyOp(), {{"scores", Random(dt, {c.rows, c.classes}, seed++)},
                         {"label", labels}}))
          << DataTypeName(dt) << " " << c.rows << "x" << c.classes;
      EXPECT_TRUE(CudaMatchesCpu(
          AccuracyOp(), {{"scores", TiedScores(dt, c.rows, c.classes, seed++)},
                         {"label", labels}}))
          << DataTypeName(dt) << " ties " << c.rows << "x" << c.classes;
      EXPECT_TRUE(
          CudaMatchesCpu(AccuracyOp(false),
                         {{"scores", Random(dt, {c.rows, c.classes}, seed++)},
                          {"label", labels}}))
          << DataTypeName(dt) << " no counts " << c.rows << "x" << c.classes;
    }
  }
}

// A NaN score never wins a comparison of the CPU's scan, and a NaN at index
// 0 is never left.
TEST(BasicOpsCuda, AccuracyWithNaNScores) {
  REQUIRE_GPU();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> v = {nan, 5,   1,   2,    // stays at 0
                                 1,   nan, 3,   2,    // 2
                                 nan, nan, nan, nan,  // 0
                                 4,   2,   nan, 4,    // 0 (tie with 3)
                                 -1,  nan, -1,  0};   // 3
  Tensor labels = MakeTensor<int64_t>({5, 1}, {0, 2, 0, 3, 3});
  Tensor d = MakeTensor<double>({5, 4}, v);
  Tensor f = MakeTensor<float>({5, 4}, std::vector<float>(v.begin(), v.end()));
  EXPECT_TRUE(CudaMatchesCpu(AccuracyOp(), {{"scores", d}, {"label", labels}}));
  EXPECT_TRUE(CudaMatchesCpu(AccuracyOp(), {{"scores", f}, {"label", labels}}));
  // Many classes, so that the NaNs fall in different lanes of a warp.
  std::vector<double> wide(3 * 100);
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = (i * 37 % 101) * 0.5;
  wide[0] = nan;
  wide[100 + 63] = nan;
  wide[200 + 1] = nan;
  Tensor w = MakeTensor<double>({3, 100}, wide);
  EXPECT_TRUE(CudaMatchesCpu(
      AccuracyOp(), {{"scores", w}, {"label", RandomLabels(3, 100, 1)}}));
}

}  // namespace
}  // namespace fluid
