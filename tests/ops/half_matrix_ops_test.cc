// The bfloat16 and float16 kernels of mul, matmul and conv2d (and their
// grad ops) against the float32 kernels run on the same values: the 16-bit
// inputs converted to float32 exactly. Both paths of the 16-bit kernels
// are checked: oneDNN (where it runs the type on this CPU) and the float32
// path (oneDNN switched off), at one and two threads.
//
// Tolerances. The float32 path converts, runs the float32 kernel and rounds
// each result once, so it must equal the float32 kernel's result rounded to
// the type, bit for bit. oneDNN sums the same products in float32 in its
// own order and rounds once, so element i may differ from the float32
// kernel's f by one rounding, u |f| (u = 2^-8 for bfloat16's 8 significant
// bits, 2^-11 for float16's 11), plus the difference of two float32 sums of
// K products, each within K 2^-24 S of the exact sum (S = the sum of the
// products' magnitudes, computed by the float32 kernel on |inputs|): we
// allow u |f| + K 2^-22 S, K the longest contraction of the op.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/framework/cpu_isa.h"
#include "src/framework/math/dnnl_context.h"
#include "src/framework/math/dnnl_conv.h"
#include "src/framework/math/dnnl_gemm.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/half_tensors.h"

namespace fluid {
namespace {

using testing::Converted;
using testing::FloatAt;
using testing::GradRuns;
using testing::RandomOf;
using testing::RunOp;
using testing::TensorMap;

constexpr DataType kHalfTypes[] = {DataType::kBFloat16, DataType::kFloat16};

// Restores the oneDNN switch when a test ends.
class DnnlSwitch {
 public:
  explicit DnnlSwitch(bool on) : was_(math::DnnlEnabled()) {
    math::SetDnnlEnabled(on);
  }
  ~DnnlSwitch() { math::SetDnnlEnabled(was_); }

 private:
  bool was_;
};

double UnitRoundoff(DataType dt) {
  return dt == DataType::kBFloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
}

uint16_t Bits(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::kBFloat16 ? t.data<bfloat16>()[i].x
                                          : t.data<float16>()[i].x;
}

// `half` against the float32 kernel's `f` (and `s`, its result on
// |inputs|), as the file's comment says.
::testing::AssertionResult Matches(const Tensor& half, const Tensor& f,
                                   const Tensor& s, bool exact,
                                   int64_t contraction,
                                   const std::string& what) {
  if (half.shape() != f.shape())
    return ::testing::AssertionFailure()
           << what << ": shape " << half.shape() << " vs " << f.shape();
  const double u = UnitRoundoff(half.dtype());
  const double sum_tol = contraction * std::ldexp(1.0, -22);
  const Tensor rounded = Converted(f, half.dtype());
  for (int64_t i = 0; i < f.numel(); ++i) {
    const double want = f.data<float>()[i];
    if (exact) {
      if (Bits(half, i) != Bits(rounded, i))
        return ::testing::AssertionFailure()
               << what << "[" << i << "] = " << FloatAt(half, i)
               << " but the float32 kernel's " << want << " rounds to "
               << FloatAt(rounded, i);
      continue;
    }
    const double got = FloatAt(half, i);
    const double tol = u * std::fabs(want) + sum_tol * s.data<float>()[i];
    if (!(std::fabs(got - want) <= tol))
      return ::testing::AssertionFailure()
             << what << "[" << i << "] = " << got << ", float32 kernel " << want
             << ", allowed " << tol;
  }
  return ::testing::AssertionSuccess();
}

struct Case {
  std::string name;
  proto::OpDesc op;
  TensorMap inputs;  // float32 values, rounded to each type
  int64_t contraction;
};

// Runs `op` on 16-bit feeds and on their float32 (and |float32|) copies,
// comparing every output.
::testing::AssertionResult CompareRun(const proto::OpDesc& op,
                                      const TensorMap& half_feeds, int threads,
                                      bool exact, int64_t contraction,
                                      TensorMap* half_out) {
  TensorMap f32, mag;
  for (const auto& kv : half_feeds) {
    f32[kv.first] = Converted(kv.second, DataType::kFloat32);
    mag[kv.first] = Converted(kv.second, DataType::kFloat32, true);
  }
  TensorMap h = RunOp(op, half_feeds, threads);
  TensorMap f = RunOp(op, f32, threads);
  TensorMap s = RunOp(op, mag, threads);
  for (const auto& kv : h) {
    auto r = Matches(kv.second, f.at(kv.first), s.at(kv.first), exact,
                     contraction, op.type() + " output '" + kv.first + "'");
    if (!r) return r;
  }
  if (half_out != nullptr) *half_out = h;
  return ::testing::AssertionSuccess();
}

// The forward op and each grad op of `c`, for each 16-bit type and thread
// count; `exact` on the float32 path.
void CheckCase(const Case& c, bool exact) {
  uint64_t seed = 100;
  for (DataType dt : kHalfTypes) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(c.name + " " + DataTypeName(dt) + " threads " +
                   std::to_string(threads));
      TensorMap feeds, out, dout;
      for (const auto& kv : c.inputs)
        feeds[kv.first] = Converted(kv.second, dt);
      ASSERT_TRUE(CompareRun(c.op, feeds, threads, exact, c.contraction, &out));
      for (const auto& kv : out)
        dout[kv.first] = RandomOf(dt, kv.second.shape(), seed++);
      for (const auto& g : GradRuns(c.op, feeds, out, dout))
        ASSERT_TRUE(
            CompareRun(g.op, g.feeds, threads, exact, c.contraction, nullptr));
    }
  }
}

Tensor Random(const Shape& s, uint64_t seed) {
  return testing::RandomTensor<float>(s, -1, 1, seed);
}

std::vector<Case> MulCases() {
  struct Dims {
    Shape x, y;
    int xn, yn;
  };
  const std::vector<Dims> dims = {
      {{1, 1}, {1, 1}, 1, 1},       {{3, 5}, {5, 7}, 1, 1},
      {{17, 33}, {33, 9}, 1, 1},    {{2, 3, 4}, {4, 5}, 2, 1},
      {{6, 2, 2}, {2, 2, 3}, 1, 2}, {{64, 128}, {128, 10}, 1, 1}};
  std::vector<Case> cases;
  uint64_t seed = 1;
  for (const Dims& d : dims) {
    const int64_t m = d.x.Product(0, d.xn), k = d.x.Product(d.xn, d.x.rank());
    const int64_t n = d.y.Product(d.yn, d.y.rank());
    cases.push_back(
        {"mul " + d.x.ToString() + " x " + d.y.ToString(),
         MakeOp("mul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}},
                {{"x_num_col_dims", d.xn}, {"y_num_col_dims", d.yn}}),
         {{"x", Random(d.x, seed++)}, {"y", Random(d.y, seed++)}},
         std::max({m, k, n})});
  }
  return cases;
}

std::vector<Case> MatMulCases() {
  struct Dims {
    Shape x, y;
    bool tx, ty;
    float alpha;
  };
  const std::vector<Dims> dims = {
      {{4, 5}, {5, 3}, false, false, 1.0f},
      {{5, 4}, {5, 3}, true, false, 1.0f},
      {{4, 5}, {3, 5}, false, true, 0.5f},
      {{5, 4}, {3, 5}, true, true, 1.0f},
      {{2, 3, 4, 5}, {2, 3, 5, 6}, false, false, 1.0f},
      {{2, 3, 5, 4}, {2, 3, 6, 5}, true, true, 2.0f},
      {{3, 4, 5}, {5, 6}, false, false, 1.0f},  // Y shared by the batch
      {{3, 5, 4}, {6, 5}, true, true, 0.25f},   // likewise, transposed
      {{4, 5}, {3, 5, 6}, false, false, 1.0f},  // X shared
      {{5, 4}, {3, 6, 5}, true, true, 1.0f},
      {{8, 16, 64}, {8, 64, 16}, false, false, 0.125f}};
  std::vector<Case> cases;
  uint64_t seed = 40;
  for (const Dims& d : dims) {
    // No product of matmul or its gradient sums more terms than an operand
    // has elements (a shared operand's gradient sums batch x M or N).
    const int64_t longest = std::max(d.x.numel(), d.y.numel());
    cases.push_back(
        {"matmul " + d.x.ToString() + (d.tx ? "^T" : "") + " x " +
             d.y.ToString() + (d.ty ? "^T" : ""),
         MakeOp("matmul", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}},
                {{"transpose_X", d.tx},
                 {"transpose_Y", d.ty},
                 {"alpha", d.alpha}}),
         {{"x", Random(d.x, seed++)}, {"y", Random(d.y, seed++)}},
         longest});
  }
  return cases;
}

std::vector<Case> ConvCases() {
  struct Dims {
    Shape x, w;
    std::vector<int32_t> strides, paddings, dilations;
    int groups;
  };
  const std::vector<Dims> dims = {
      {{2, 3, 7, 7}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
      {{2, 4, 9, 8}, {6, 2, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 2},
      {{1, 3, 9, 9}, {2, 3, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 1},
      {{3, 8, 5, 5}, {4, 8, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},
      {{2, 8, 6, 6}, {8, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 8},
      {{2, 3, 8, 7}, {5, 3, 2, 3}, {2, 1}, {0, 2}, {1, 1}, 1},
      {{4, 16, 12, 12}, {16, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1}};
  std::vector<Case> cases;
  uint64_t seed = 70;
  for (const Dims& d : dims) {
    const int64_t n = d.x[0], m = d.w[0];
    const int64_t taps = d.w[1] * d.w[2] * d.w[3];
    cases.push_back({"conv2d " + d.x.ToString() + " * " + d.w.ToString() +
                         " groups " + std::to_string(d.groups),
                     MakeOp("conv2d", {{"Input", {"x"}}, {"Filter", {"w"}}},
                            {{"Output", {"y"}}},
                            {{"strides", d.strides},
                             {"paddings", d.paddings},
                             {"dilations", d.dilations},
                             {"groups", d.groups}}),
                     {{"x", Random(d.x, seed++)}, {"w", Random(d.w, seed++)}},
                     std::max({taps, m * d.w[2] * d.w[3],
                               n * (d.x[2] + 2 * d.paddings[0]) *
                                   (d.x[3] + 2 * d.paddings[1])})});
  }
  return cases;
}

void CheckAll(const std::vector<Case>& cases, bool dnnl) {
  DnnlSwitch on(dnnl);
  for (const Case& c : cases) CheckCase(c, !dnnl);
}

TEST(HalfMatrixOps, MulOneDnn) { CheckAll(MulCases(), true); }
TEST(HalfMatrixOps, MulFloat32Path) { CheckAll(MulCases(), false); }
TEST(HalfMatrixOps, MatMulOneDnn) { CheckAll(MatMulCases(), true); }
TEST(HalfMatrixOps, MatMulFloat32Path) { CheckAll(MatMulCases(), false); }
TEST(HalfMatrixOps, Conv2dOneDnn) { CheckAll(ConvCases(), true); }
TEST(HalfMatrixOps, Conv2dFloat32Path) { CheckAll(ConvCases(), false); }

// Without oneDNN switched on, the wrappers decline (the kernels then take
// the float32 path, which the *Float32Path tests check exactly).
TEST(HalfMatrixOps, SwitchedOffDeclines) {
  DnnlSwitch off(false);
  const CPUDeviceContext dev(1);
  const bfloat16 one = FromFloat<bfloat16>(1.0f);
  bfloat16 c = FromFloat<bfloat16>(0.0f);
  math::GemmBatch g;
  g.m = g.n = g.k = 1;
  EXPECT_FALSE(math::DnnlGemm<bfloat16>(dev, g, &one, &one, &c));
  EXPECT_EQ(ToFloat(c), 0.0f);
  EXPECT_NE(DnnlIsaName().find(math::DnnlBuilt() ? "off" : "without"),
            std::string::npos)
      << DnnlIsaName();
}

// Where the build has oneDNN and the CPU has bfloat16 instructions,
// oneDNN runs the bfloat16 products and convolutions (the *OneDnn tests
// then check its results, not the float32 path's).
TEST(HalfMatrixOps, OneDnnRunsBfloat16) {
  if (!math::DnnlBuilt())
    GTEST_SKIP() << "built without oneDNN: only the float32 path exists";
  if (!HasAvx512Bf16() && !HasAmxBf16())
    GTEST_SKIP() << "this CPU has no bfloat16 instructions ("
                 << HalfComputeDescription() << ")";
  DnnlSwitch on(true);
  const CPUDeviceContext dev(1);
  std::vector<bfloat16> a(6, FromFloat<bfloat16>(0.5f)), c(4);
  math::GemmBatch g;
  g.m = 2;
  g.n = 2;
  g.k = 3;
  ASSERT_TRUE(math::DnnlGemm<bfloat16>(dev, g, a.data(), a.data(), c.data()));
  for (const bfloat16& v : c) EXPECT_EQ(ToFloat(v), 0.75f);
  math::ConvDims d;
  d.n = 1;
  d.c = 1;
  d.h = d.w = 3;
  d.m = 1;
  d.kh = d.kw = 3;
  d.oh = d.ow = 1;
  std::vector<bfloat16> x(9, FromFloat<bfloat16>(0.5f)), y(1);
  ASSERT_TRUE(
      math::DnnlConvForward<bfloat16>(dev, d, x.data(), x.data(), y.data()));
  EXPECT_EQ(ToFloat(y[0]), 2.25f);
  EXPECT_EQ(DnnlIsaName().find("off"), std::string::npos) << DnnlIsaName();
}

// More shapes than a thread's cache keeps (it starts over): every product
// still right.
TEST(HalfMatrixOps, ManyShapesStayRight) {
  if (!math::DnnlBuilt()) GTEST_SKIP() << "built without oneDNN";
  DnnlSwitch on(true);
  const CPUDeviceContext dev(1);
  std::vector<bfloat16> a(600, FromFloat<bfloat16>(0.5f)), c(600);
  const bfloat16 b = FromFloat<bfloat16>(0.25f);
  for (int64_t m = 1; m <= 600; ++m) {
    math::GemmBatch g;
    g.m = m;
    g.n = 1;
    g.k = 1;
    if (!math::DnnlGemm<bfloat16>(dev, g, a.data(), &b, c.data())) {
      GTEST_SKIP() << "oneDNN has no bfloat16 products on this CPU";
    }
    ASSERT_EQ(ToFloat(c[m - 1]), 0.125f) << m;
  }
}

// oneDNN runs with the executor's thread count: one with --threads 1.
TEST(HalfMatrixOps, OneDnnFollowsTheThreadCount) {
  if (!math::DnnlBuilt()) GTEST_SKIP() << "built without oneDNN";
  DnnlSwitch on(true);
  const Case c = MulCases().back();
  TensorMap feeds;
  for (const auto& kv : c.inputs)
    feeds[kv.first] = Converted(kv.second, DataType::kBFloat16);
  for (int threads : {2, 1, 2}) {
    RunOp(c.op, feeds, threads);
    EXPECT_EQ(math::DnnlThreads(), threads);
  }
}

// FLUID_DNNL=0 in the environment keeps the kernels off oneDNN, =1 puts
// them on it, and without it they are on it only where oneDNN has AMX
// (ctest runs this test once more with each set).
TEST(HalfMatrixOps, EnvironmentSwitch) {
  const char* v = std::getenv("FLUID_DNNL");
  const std::string set = v != nullptr ? v : "";
  const bool amx = math::DnnlCpuIsa() == "avx512_core_amx";
  EXPECT_EQ(math::DnnlFasterHere(), amx);
  const bool want = set == "1" || (set != "0" && amx);
  EXPECT_EQ(math::DnnlEnabled(), math::DnnlBuilt() && want)
      << "FLUID_DNNL=" << (v ? v : "(unset)") << ", oneDNN "
      << math::DnnlCpuIsa();
  if (math::DnnlBuilt() && !math::DnnlEnabled()) {
    EXPECT_NE(DnnlIsaName().find(amx ? "(off: float32 compute)"
                                     : "faster than oneDNN without AMX"),
              std::string::npos)
        << DnnlIsaName();
  }
}

// Any other FLUID_DNNL is refused where it is read, naming it (ctest runs
// this with FLUID_DNNL=yes; without it there is nothing to refuse).
TEST(HalfMatrixOps, EnvironmentSwitchBad) {
  const char* v = std::getenv("FLUID_DNNL");
  if (v == nullptr || std::string(v) != "yes")
    GTEST_SKIP() << "ctest runs this with FLUID_DNNL=yes";
  if (!math::DnnlBuilt()) GTEST_SKIP() << "built without oneDNN";
  const std::string error = testing::ErrorOf([] { math::DnnlEnabled(); });
  EXPECT_NE(error.find("FLUID_DNNL=yes: expected 0"), std::string::npos)
      << error;
}

// The same shape twice gives the same bits (the cached primitive reused).
TEST(HalfMatrixOps, RepeatedRunsAgree) {
  const Case c = ConvCases().back();
  TensorMap feeds;
  for (const auto& kv : c.inputs)
    feeds[kv.first] = Converted(kv.second, DataType::kBFloat16);
  for (int threads : {1, 2}) {
    const Tensor a = RunOp(c.op, feeds, threads)["y"];
    const Tensor b = RunOp(c.op, feeds, threads)["y"];
    for (int64_t i = 0; i < a.numel(); ++i)
      ASSERT_EQ(Bits(a, i), Bits(b, i)) << i;
  }
}

}  // namespace
}  // namespace fluid
