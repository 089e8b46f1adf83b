// The ops of dynamic loss scaling: check_finite_and_unscale (the division
// exact by a power of two, Inf and NaN found in any of several X, dense and
// sparse, in any float dtype, the 16-bit kernels against the float32
// kernel on the same inputs) and update_loss_scaling (its state machine
// step by step against a naive reference, Out zeroed or passed on), their
// checks of attrs, shapes and dtypes, and that neither has a gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"
#include "tests/testing/sparse_inputs.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::MakeSelectedRows;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::RunOpOnSparse;
using testing::SparseErrorOf;
using testing::TensorMap;
using testing::ToVector;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

proto::OpDesc UnscaleOp(const std::vector<std::string>& xs,
                        const std::vector<std::string>& outs) {
  return MakeOp("check_finite_and_unscale", {{"X", xs}, {"Scale", {"scale"}}},
                {{"Out", outs}, {"FoundInfinite", {"found"}}});
}

// update_loss_scaling with its state in place (scale, good, bad).
proto::OpDesc UpdateOp(const std::vector<std::string>& xs,
                       const std::vector<std::string>& outs,
                       const AttributeMap& attrs = {}) {
  return MakeOp("update_loss_scaling",
                {{"X", xs},
                 {"FoundInfinite", {"found"}},
                 {"PrevLossScaling", {"scale"}},
                 {"InGoodSteps", {"good"}},
                 {"InBadSteps", {"bad"}}},
                {{"Out", outs},
                 {"LossScaling", {"scale"}},
                 {"OutGoodSteps", {"good"}},
                 {"OutBadSteps", {"bad"}}},
                attrs);
}

Tensor Int(int32_t v) { return MakeTensor<int32_t>({1}, {v}); }
Tensor Float(float v) { return MakeTensor<float>({1}, {v}); }

// `t` (float32) with element `i` set to `v`.
Tensor With(Tensor t, int64_t i, float v) {
  Tensor copy;
  copy.CopyFrom(t);
  copy.data<float>()[i] = v;
  return copy;
}

// A float32 tensor converted element by element to T (rounded once).
template <typename T>
Tensor ToHalf(const Tensor& f) {
  std::vector<T> v;
  for (float x : ToVector<float>(f)) v.push_back(FromFloat<T>(x));
  return MakeTensor<T>(f.shape(), v);
}

// A 16-bit tensor widened to float32 (exact).
template <typename T>
Tensor Widen(const Tensor& h) {
  std::vector<float> v;
  for (T x : ToVector<T>(h)) v.push_back(ToFloat(x));
  return MakeTensor<float>(h.shape(), v);
}

template <typename T>
std::vector<uint16_t> Bits(const Tensor& h) {
  std::vector<uint16_t> b;
  for (T x : ToVector<T>(h)) b.push_back(x.x);
  return b;
}

int32_t FoundOf(const TensorMap& out) {
  return ToVector<int32_t>(out.at("found"))[0];
}

// ---- check_finite_and_unscale

// Division by a power of two only moves the exponent: the quotient is exact,
// so Out equals X * 2^-k to the bit.
TEST(CheckFiniteAndUnscaleOp, DividesExactlyByAPowerOfTwo) {
  Tensor a = RandomTensor<float>({3, 5}, -100, 100, 1);
  Tensor b = RandomTensor<double>({7}, -1, 1, 2);
  Tensor c = RandomTensor<float>({1}, -1e-3, 1e-3, 3);
  auto out = RunOp(UnscaleOp({"a", "b", "c"}, {"oa", "ob", "oc"}),
                   {{"a", a}, {"b", b}, {"c", c}, {"scale", Float(1024.0f)}});
  EXPECT_EQ(FoundOf(out), 0);
  EXPECT_EQ(out.at("found").shape(), Shape({1}));
  auto check = [&](const Tensor& x, const std::string& o) {
    EXPECT_EQ(out.at(o).dtype(), x.dtype());
    EXPECT_EQ(out.at(o).shape(), x.shape());
  };
  check(a, "oa");
  check(b, "ob");
  check(c, "oc");
  auto va = ToVector<float>(a), voa = ToVector<float>(out.at("oa"));
  for (size_t i = 0; i < va.size(); ++i)
    EXPECT_EQ(voa[i], va[i] * 0x1p-10f) << i;
  auto vb = ToVector<double>(b), vob = ToVector<double>(out.at("ob"));
  for (size_t i = 0; i < vb.size(); ++i)
    EXPECT_EQ(vob[i], vb[i] * 0x1p-10) << i;
  EXPECT_EQ(ToVector<float>(out.at("oc"))[0], ToVector<float>(c)[0] / 1024.0f);
}

// In place (Out bound to X), large enough for the thread pool's chunks, and
// with a float64 Scale.
TEST(CheckFiniteAndUnscaleOp, InPlaceOnThePool) {
  Tensor a = RandomTensor<float>({300, 700}, -1e4, 1e4, 4);
  auto op = UnscaleOp({"a"}, {"a"});
  auto out =
      RunOp(op, {{"a", a}, {"scale", MakeTensor<double>({1}, {65536.0})}}, 2);
  EXPECT_EQ(FoundOf(out), 0);
  auto va = ToVector<float>(a), vo = ToVector<float>(out.at("a"));
  for (size_t i = 0; i < va.size(); ++i)
    ASSERT_EQ(vo[i], va[i] * 0x1p-16f) << i;
  // An Inf at the very end of the last chunk.
  out = RunOp(
      op, {{"a", With(a, a.numel() - 1, -kInf)}, {"scale", Float(2.0f)}}, 2);
  EXPECT_EQ(FoundOf(out), 1);
  EXPECT_EQ(ToVector<float>(out.at("a")).back(), -kInf);
}

// A scale that is no power of two: Out is the correctly rounded X / Scale
// (float32, and float64 for a float64 X).
TEST(CheckFiniteAndUnscaleOp, RoundsTheQuotientOnce) {
  Tensor a = RandomTensor<float>({64}, -10, 10, 5);
  Tensor b = RandomTensor<double>({64}, -10, 10, 6);
  const float s = 26214.4f;
  auto out = RunOp(UnscaleOp({"a", "b"}, {"a", "b"}),
                   {{"a", a}, {"b", b}, {"scale", Float(s)}});
  auto va = ToVector<float>(a), vo = ToVector<float>(out.at("a"));
  auto vb = ToVector<double>(b), vob = ToVector<double>(out.at("b"));
  for (size_t i = 0; i < va.size(); ++i) {
    EXPECT_EQ(vo[i], va[i] / s) << i;
    EXPECT_EQ(vob[i], vb[i] / static_cast<double>(s)) << i;
  }
}

// +Inf, -Inf and NaN, at the first, a middle and the last element of each
// of three X in turn: found every time, and only then.
TEST(CheckFiniteAndUnscaleOp, FindsInfAndNanInAnyX) {
  const std::vector<Tensor> xs = {RandomTensor<float>({4, 3}, -1, 1, 7),
                                  RandomTensor<float>({1}, -1, 1, 8),
                                  RandomTensor<float>({1000}, -1, 1, 9)};
  auto op = UnscaleOp({"x0", "x1", "x2"}, {"x0", "x1", "x2"});
  auto feeds = [&](int k, int64_t i, float v) {
    TensorMap m = {{"scale", Float(8.0f)}};
    for (int j = 0; j < 3; ++j)
      m["x" + std::to_string(j)] = j == k ? With(xs[j], i, v) : xs[j];
    return m;
  };
  EXPECT_EQ(FoundOf(RunOp(op, feeds(-1, 0, 0))), 0);
  for (int k = 0; k < 3; ++k) {
    const int64_t n = xs[k].numel();
    for (int64_t i : {int64_t{0}, n / 2, n - 1}) {
      for (float v : {kInf, -kInf, kNaN}) {
        auto out = RunOp(op, feeds(k, i, v));
        EXPECT_EQ(FoundOf(out), 1) << "X[" << k << "][" << i << "] = " << v;
        // Out = X / Scale for every element, the non-finite one included.
        const float got = ToVector<float>(out.at("x" + std::to_string(k)))[i];
        if (std::isnan(v)) {
          EXPECT_TRUE(std::isnan(got));
        } else {
          EXPECT_EQ(got, v);
        }
      }
    }
  }
  // The largest finite value is finite.
  EXPECT_EQ(FoundOf(RunOp(op, feeds(1, 0, std::numeric_limits<float>::max()))),
            0);
}

TEST(CheckFiniteAndUnscaleOp, FindsInfAndNanInFloat64) {
  auto op = UnscaleOp({"a", "b"}, {"a", "b"});
  Tensor b = RandomTensor<double>({5}, -1, 1, 10);
  for (double v : {std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN(),
                   std::numeric_limits<double>::max()}) {
    Tensor bad;
    bad.CopyFrom(b);
    bad.data<double>()[3] = v;
    auto out = RunOp(op, {{"a", RandomTensor<float>({2}, -1, 1, 11)},
                          {"b", bad},
                          {"scale", Float(4.0f)}});
    EXPECT_EQ(FoundOf(out), std::isfinite(v) ? 0 : 1) << v;
  }
}

// The 16-bit kernels against the float32 kernel on the same inputs (the
// 16-bit values widened, exactly): each divides in float32 and rounds once
// to 16 bits, so the 16-bit Out is the float32 Out rounded, to the bit
// (tolerance 0). Inf and NaN are found in 16 bits too.
template <typename T>
void CheckHalfAgainstFloat(float scale) {
  Tensor h = ToHalf<T>(RandomTensor<float>({513}, -60000, 60000, 12));
  Tensor h_small = ToHalf<T>(RandomTensor<float>({40}, -1e-3, 1e-3, 13));
  auto op = UnscaleOp({"h", "s"}, {"h", "s"});
  auto half = RunOp(op, {{"h", h}, {"s", h_small}, {"scale", Float(scale)}});
  auto full = RunOp(
      op,
      {{"h", Widen<T>(h)}, {"s", Widen<T>(h_small)}, {"scale", Float(scale)}});
  EXPECT_EQ(FoundOf(half), 0);
  EXPECT_EQ(half.at("h").dtype(), DataTypeOf<T>::value);
  EXPECT_EQ(Bits<T>(half.at("h")), Bits<T>(ToHalf<T>(full.at("h"))));
  EXPECT_EQ(Bits<T>(half.at("s")), Bits<T>(ToHalf<T>(full.at("s"))));
  for (float v : {kInf, -kInf, kNaN}) {
    Tensor bad = ToHalf<T>(With(Widen<T>(h_small), 39, v));
    EXPECT_EQ(FoundOf(RunOp(op, {{"h", h}, {"s", bad}, {"scale", Float(2)}})),
              1)
        << v;
  }
}

TEST(CheckFiniteAndUnscaleOp, Float16MatchesFloat32) {
  CheckHalfAgainstFloat<float16>(1024.0f);
  CheckHalfAgainstFloat<float16>(26214.4f);
  // 65504 is float16's largest finite value: a gradient rounded to Inf in
  // float16 is found.
  Tensor big = ToHalf<float16>(MakeTensor<float>({2}, {65504.0f, 65520.0f}));
  auto out = RunOp(UnscaleOp({"b"}, {"b"}), {{"b", big}, {"scale", Float(2)}});
  EXPECT_EQ(FoundOf(out), 1);
}

TEST(CheckFiniteAndUnscaleOp, BFloat16MatchesFloat32) {
  CheckHalfAgainstFloat<bfloat16>(1024.0f);
  CheckHalfAgainstFloat<bfloat16>(26214.4f);
}

// X of several dtypes in one op: each keeps its own.
TEST(CheckFiniteAndUnscaleOp, MixedDtypes) {
  Tensor f = RandomTensor<float>({6}, -1, 1, 14);
  Tensor d = RandomTensor<double>({3}, -1, 1, 15);
  Tensor h = ToHalf<float16>(RandomTensor<float>({5}, -1, 1, 16));
  Tensor b = ToHalf<bfloat16>(RandomTensor<float>({5}, -1, 1, 17));
  for (const std::vector<std::string>& order :
       {std::vector<std::string>{"f", "d", "h", "b"},
        std::vector<std::string>{"h", "b", "f", "d"}}) {
    auto out =
        RunOp(UnscaleOp(order, order),
              {{"f", f}, {"d", d}, {"h", h}, {"b", b}, {"scale", Float(4.0f)}});
    EXPECT_EQ(FoundOf(out), 0);
    EXPECT_EQ(ToVector<float>(out.at("f"))[2], ToVector<float>(f)[2] / 4);
    EXPECT_EQ(ToVector<double>(out.at("d"))[1], ToVector<double>(d)[1] / 4);
    // Rounded once to 16 bits (exact unless the quotient is subnormal).
    EXPECT_EQ(ToVector<float16>(out.at("h"))[4].x,
              FromFloat<float16>(ToFloat(ToVector<float16>(h)[4]) / 4).x);
    EXPECT_EQ(ToVector<bfloat16>(out.at("b"))[0].x,
              FromFloat<bfloat16>(ToFloat(ToVector<bfloat16>(b)[0]) / 4).x);
  }
  Tensor bad = ToHalf<float16>(With(Widen<float16>(h), 0, kNaN));
  auto out = RunOp(UnscaleOp({"f", "h"}, {"f", "h"}),
                   {{"f", f}, {"h", bad}, {"scale", Float(4.0f)}});
  EXPECT_EQ(FoundOf(out), 1);
}

// Sparse gradients: their values are divided and checked; Out keeps the
// rows and the height, in place or not, beside dense X.
TEST(CheckFiniteAndUnscaleOp, SparseRows) {
  Tensor values = RandomTensor<float>({4, 3}, -8, 8, 18);
  const std::vector<int64_t> rows = {5, 0, 5, 2};
  Tensor dense = RandomTensor<float>({2, 2}, -1, 1, 19);
  for (bool in_place : {true, false}) {
    const std::string so = in_place ? "sp" : "sp_out";
    auto op = UnscaleOp({"d", "sp"}, {"d", so});
    auto r = RunOpOnSparse(op, {{"d", dense}, {"scale", Float(16.0f)}},
                           {{"sp", MakeSelectedRows(9, rows, values)}});
    EXPECT_EQ(ToVector<int32_t>(r.dense.at("found"))[0], 0);
    const SelectedRows& o = r.sparse.at(so);
    EXPECT_EQ(o.rows(), rows);
    EXPECT_EQ(o.height(), 9);
    auto v = ToVector<float>(values), ov = ToVector<float>(o.value());
    for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(ov[i], v[i] / 16) << i;
    auto dv = ToVector<float>(dense), dov = ToVector<float>(r.dense.at("d"));
    for (size_t i = 0; i < dv.size(); ++i) EXPECT_EQ(dov[i], dv[i] / 16) << i;
    for (int64_t i : {int64_t{0}, int64_t{7}, int64_t{11}}) {
      for (float bad : {kInf, kNaN}) {
        auto rb = RunOpOnSparse(
            op, {{"d", dense}, {"scale", Float(16.0f)}},
            {{"sp", MakeSelectedRows(9, rows, With(values, i, bad))}});
        EXPECT_EQ(ToVector<int32_t>(rb.dense.at("found"))[0], 1) << i;
      }
    }
  }
  // A sparse gradient that touched no row.
  Tensor none;
  none.set_dtype(DataType::kFloat32);
  none.Resize({0, 3});
  auto r = RunOpOnSparse(UnscaleOp({"sp"}, {"sp"}), {{"scale", Float(2.0f)}},
                         {{"sp", MakeSelectedRows(9, {}, none)}});
  EXPECT_EQ(ToVector<int32_t>(r.dense.at("found"))[0], 0);
  EXPECT_TRUE(r.sparse.at("sp").rows().empty());
}

TEST(CheckFiniteAndUnscaleOp, ChecksItsInputs) {
  Tensor a = RandomTensor<float>({3}, -1, 1, 20);
  auto expect = [](const std::string& msg, const std::vector<std::string>& in) {
    EXPECT_NE(msg.find("check_finite_and_unscale"), std::string::npos) << msg;
    for (const auto& s : in) EXPECT_NE(msg.find(s), std::string::npos) << msg;
  };
  // Out lists one var per X.
  expect(ErrorOf(UnscaleOp({"a", "b"}, {"a"}),
                 {{"a", a}, {"b", a}, {"scale", Float(2)}}),
         {"2 X but 1 Out"});
  // Scale: one element, float32 or float64.
  expect(ErrorOf(UnscaleOp({"a"}, {"a"}),
                 {{"a", a}, {"scale", MakeTensor<float>({2}, {1, 2})}}),
         {"Scale 'scale'", "one element", "[2]"});
  expect(ErrorOf(UnscaleOp({"a"}, {"a"}), {{"a", a}, {"scale", Int(2)}}),
         {"Scale 'scale'", "int32", "float32 or float64"});
  // Every X of a float dtype.
  expect(ErrorOf(UnscaleOp({"a", "i"}, {"a", "i"}),
                 {{"a", a}, {"i", Int(3)}, {"scale", Float(2)}}),
         {"X[1] 'i'", "int32"});
  // Out[i] is X[i] or a var of its own.
  expect(ErrorOf(UnscaleOp({"a", "b"}, {"b", "a"}),
                 {{"a", a}, {"b", a}, {"scale", Float(2)}}),
         {"Out[0] 'b'", "X[1]"});
  expect(ErrorOf(UnscaleOp({"a", "a"}, {"a", "c"}),
                 {{"a", a}, {"scale", Float(2)}}),
         {"Out[0] 'a'", "X[1]"});
  expect(ErrorOf(UnscaleOp({"a", "b"}, {"c", "c"}),
                 {{"a", a}, {"b", a}, {"scale", Float(2)}}),
         {"Out[1] 'c'", "twice"});
  // X listed twice into Outs of their own is fine.
  EXPECT_EQ(ErrorOf(UnscaleOp({"a", "a"}, {"c", "d"}),
                    {{"a", a}, {"scale", Float(2)}}),
            "");
}

// ---- update_loss_scaling

// The state machine as Fluid's documentation states it, written plainly.
struct RefScaling {
  float scale;
  int32_t good = 0;
  int32_t bad = 0;
  int32_t incr_every = 1000;
  int32_t decr_every = 2;
  float incr_ratio = 2.0f;
  float decr_ratio = 0.8f;

  void Step(bool found_infinite) {
    if (found_infinite) {
      good = 0;
      bad += 1;
      if (bad == decr_every) {
        scale = std::max(1.0f, scale * decr_ratio);
        bad = 0;
      }
    } else {
      bad = 0;
      good += 1;
      if (good == incr_every) {
        const float raised = scale * incr_ratio;
        if (std::isfinite(raised)) scale = raised;
        good = 0;
      }
    }
  }
};

// update_loss_scaling run step after step on persistable state (scale,
// good, bad, updated in place), with X fed and Out = X, as a training
// program runs it.
class ScalingRun {
 public:
  ScalingRun(const RefScaling& start, DataType x_dtype = DataType::kFloat32)
      : exe_(Place::CPU()) {
    proto::ProgramDesc program = NewProgram();
    proto::BlockDesc* block = program.mutable_blocks(0);
    AddVarDesc(block, "scale", DataType::kFloat32, {1}, true);
    AddVarDesc(block, "good", DataType::kInt32, {1}, true);
    AddVarDesc(block, "bad", DataType::kInt32, {1}, true);
    AddVarDesc(block, "found", DataType::kInt32, {1});
    AddVarDesc(block, "x", x_dtype, {4});
    const proto::OpDesc op =
        UpdateOp({"x"}, {"x"},
                 {{"incr_every_n_steps", start.incr_every},
                  {"decr_every_n_nan_or_inf", start.decr_every},
                  {"incr_ratio", start.incr_ratio},
                  {"decr_ratio", start.decr_ratio}});
    *block->add_ops() = op;
    InferShapeAtCompileTime(op, block);
    scope_.Var("scale")->GetMutableTensor()->CopyFrom(Float(start.scale));
    scope_.Var("good")->GetMutableTensor()->CopyFrom(Int(start.good));
    scope_.Var("bad")->GetMutableTensor()->CopyFrom(Int(start.bad));
    prepared_ = exe_.Prepare(program, &scope_);
  }

  // One step; returns Out.
  Tensor Step(bool found_infinite, const Tensor& x) {
    std::vector<Tensor> out;
    exe_.Run(prepared_.get(),
             {{"found", Int(found_infinite ? 1 : 0)}, {"x", x}}, {"x"}, &out);
    return out[0];
  }
  float scale() const { return Value<float>("scale"); }
  int32_t good() const { return Value<int32_t>("good"); }
  int32_t bad() const { return Value<int32_t>("bad"); }

 private:
  template <typename T>
  T Value(const std::string& name) const {
    return scope_.FindVar(name)->GetTensor().data<T>()[0];
  }
  Scope scope_;
  Executor exe_;
  std::unique_ptr<PreparedProgram> prepared_;
};

// Steps `run` and `ref` through `found` together, comparing after each.
void ExpectSameSteps(ScalingRun* run, RefScaling* ref,
                     const std::vector<bool>& found) {
  const Tensor x = RandomTensor<float>({4}, -1, 1, 21);
  for (size_t s = 0; s < found.size(); ++s) {
    ref->Step(found[s]);
    run->Step(found[s], x);
    ASSERT_EQ(run->scale(), ref->scale) << "step " << s;
    ASSERT_EQ(run->good(), ref->good) << "step " << s;
    ASSERT_EQ(run->bad(), ref->bad) << "step " << s;
  }
}

TEST(UpdateLossScalingOp, ThousandGoodStepsDoubleTheScaleByDefault) {
  RefScaling ref{32768.0f};
  ScalingRun run(ref);
  const Tensor x = RandomTensor<float>({4}, -1, 1, 22);
  for (int s = 1; s < 1000; ++s) {
    EXPECT_EQ(ToVector<float>(run.Step(false, x)), ToVector<float>(x));
    ASSERT_EQ(run.scale(), 32768.0f) << s;
    ASSERT_EQ(run.good(), s);
    ASSERT_EQ(run.bad(), 0);
  }
  run.Step(false, x);
  EXPECT_EQ(run.scale(), 65536.0f);
  EXPECT_EQ(run.good(), 0);
  EXPECT_EQ(run.bad(), 0);
}

TEST(UpdateLossScalingOp, TwoBadStepsLowerTheScaleByDefault) {
  RefScaling ref{65536.0f};
  ScalingRun run(ref);
  const Tensor x = RandomTensor<float>({4}, -1, 1, 23);
  run.Step(false, x);
  run.Step(false, x);
  EXPECT_EQ(run.good(), 2);
  // A bad step: good steps reset, one bad step counted, the scale kept,
  // the gradients zeroed.
  EXPECT_EQ(ToVector<float>(run.Step(true, x)), std::vector<float>(4, 0.0f));
  EXPECT_EQ(run.scale(), 65536.0f);
  EXPECT_EQ(run.good(), 0);
  EXPECT_EQ(run.bad(), 1);
  // The second in a row: scale * 0.8 (in float32), bad steps reset.
  EXPECT_EQ(ToVector<float>(run.Step(true, x)), std::vector<float>(4, 0.0f));
  EXPECT_EQ(run.scale(), 65536.0f * 0.8f);
  EXPECT_EQ(run.bad(), 0);
  // A finite step between two bad ones resets the count.
  run.Step(true, x);
  run.Step(false, x);
  run.Step(true, x);
  EXPECT_EQ(run.scale(), 65536.0f * 0.8f);
  EXPECT_EQ(run.bad(), 1);
  EXPECT_EQ(run.good(), 0);
}

TEST(UpdateLossScalingOp, ScaleNeverBelowOne) {
  RefScaling ref{1.5f};
  ref.decr_every = 1;
  ref.decr_ratio = 0.5f;
  ScalingRun run(ref);
  const Tensor x = RandomTensor<float>({4}, -1, 1, 24);
  run.Step(true, x);
  EXPECT_EQ(run.scale(), 1.0f);
  run.Step(true, x);
  EXPECT_EQ(run.scale(), 1.0f);
  EXPECT_EQ(run.bad(), 0);
}

TEST(UpdateLossScalingOp, KeepsTheScaleWhenTheIncreaseIsNotFinite) {
  RefScaling ref{std::numeric_limits<float>::max() / 1.5f};
  ref.incr_every = 1;
  ScalingRun run(ref);
  const Tensor x = RandomTensor<float>({4}, -1, 1, 25);
  run.Step(false, x);
  EXPECT_EQ(run.scale(), ref.scale);
  EXPECT_EQ(run.good(), 0);
  EXPECT_TRUE(std::isfinite(run.scale()));
}

// Random runs of finite and non-finite steps under several attrs, against
// the reference after every step.
TEST(UpdateLossScalingOp, MatchesTheReferenceStepByStep) {
  struct Attrs {
    int32_t incr_every, decr_every;
    float incr_ratio, decr_ratio;
    double p_bad;
  };
  std::mt19937 rng(26);
  for (const Attrs& a :
       {Attrs{5, 3, 2.0f, 0.5f, 0.3}, Attrs{1, 1, 1.5f, 0.9f, 0.5},
        Attrs{7, 2, 3.0f, 0.25f, 0.1}, Attrs{3, 4, 1000.0f, 0.999f, 0.05}}) {
    RefScaling ref{1024.0f,      0,           0, a.incr_every, a.decr_every,
                   a.incr_ratio, a.decr_ratio};
    ScalingRun run(ref);
    std::bernoulli_distribution bad(a.p_bad);
    std::vector<bool> found;
    for (int s = 0; s < 400; ++s) found.push_back(bad(rng));
    SCOPED_TRACE(::testing::Message()
                 << "incr " << a.incr_every << " decr " << a.decr_every);
    ExpectSameSteps(&run, &ref, found);
  }
}

// Counts that start at or past their thresholds (the attr lowered between
// runs) fire on their next step.
TEST(UpdateLossScalingOp, CountsPastTheThresholdFireNext) {
  RefScaling start{8.0f, 12, 0, 10};
  ScalingRun run(start);
  run.Step(false, RandomTensor<float>({4}, -1, 1, 27));
  EXPECT_EQ(run.scale(), 16.0f);
  EXPECT_EQ(run.good(), 0);
  RefScaling bad_start{8.0f, 0, 5, 1000, 2, 2.0f, 0.5f};
  ScalingRun run2(bad_start);
  run2.Step(true, RandomTensor<float>({4}, -1, 1, 28));
  EXPECT_EQ(run2.scale(), 4.0f);
  EXPECT_EQ(run2.bad(), 0);
}

TensorMap StateFeeds(int32_t found, float scale = 512.0f) {
  return {{"found", Int(found)},
          {"scale", Float(scale)},
          {"good", Int(0)},
          {"bad", Int(0)}};
}

// Out: X on a finite step, zeros of X's shape on a step with an Inf or a
// NaN; X of every float dtype, in place and into vars of their own.
TEST(UpdateLossScalingOp, ZeroesTheGradientsOfASkippedStep) {
  const TensorMap xs = {
      {"f", RandomTensor<float>({3, 4}, -1, 1, 29)},
      {"d", RandomTensor<double>({5}, -1, 1, 30)},
      {"h", ToHalf<float16>(RandomTensor<float>({7}, -1, 1, 31))},
      {"b", ToHalf<bfloat16>(RandomTensor<float>({2, 2}, -1, 1, 32))}};
  const std::vector<std::string> names = {"f", "d", "h", "b"};
  for (bool in_place : {true, false}) {
    std::vector<std::string> outs;
    for (const auto& n : names) outs.push_back(in_place ? n : n + "_out");
    for (int32_t found : {0, 1}) {
      TensorMap feeds = StateFeeds(found);
      for (const auto& [n, t] : xs) feeds[n] = t;
      auto out = RunOp(UpdateOp(names, outs), feeds);
      for (size_t i = 0; i < names.size(); ++i) {
        const Tensor& x = xs.at(names[i]);
        const Tensor& o = out.at(outs[i]);
        ASSERT_EQ(o.dtype(), x.dtype());
        ASSERT_EQ(o.shape(), x.shape());
        std::vector<char> want(x.bytes(), 0);
        if (found == 0) std::memcpy(want.data(), x.raw_data(), x.bytes());
        EXPECT_EQ(std::memcmp(o.raw_data(), want.data(), x.bytes()), 0)
            << names[i] << " found " << found << " in place " << in_place;
      }
    }
  }
}

TEST(UpdateLossScalingOp, SparseRows) {
  Tensor values = RandomTensor<float>({3, 2}, -1, 1, 33);
  const std::vector<int64_t> rows = {4, 1, 4};
  for (bool in_place : {true, false}) {
    const std::string so = in_place ? "sp" : "sp_out";
    for (int32_t found : {0, 1}) {
      auto r = RunOpOnSparse(UpdateOp({"sp"}, {so}), StateFeeds(found),
                             {{"sp", MakeSelectedRows(6, rows, values)}});
      const SelectedRows& o = r.sparse.at(so);
      EXPECT_EQ(o.rows(), rows);
      EXPECT_EQ(o.height(), 6);
      EXPECT_EQ(ToVector<float>(o.value()),
                found ? std::vector<float>(6, 0.0f) : ToVector<float>(values));
      EXPECT_EQ(ToVector<int32_t>(r.dense.at("bad"))[0], found);
    }
  }
}

TEST(UpdateLossScalingOp, Float64Scaling) {
  TensorMap feeds = {{"x", RandomTensor<float>({2}, -1, 1, 34)},
                     {"found", Int(1)},
                     {"scale", MakeTensor<double>({1}, {3.0})},
                     {"good", Int(4)},
                     {"bad", Int(1)}};
  auto out = RunOp(UpdateOp({"x"}, {"x"}), feeds);
  EXPECT_EQ(out.at("scale").dtype(), DataType::kFloat64);
  EXPECT_EQ(ToVector<double>(out.at("scale"))[0],
            3.0 * static_cast<double>(0.8f));
  EXPECT_EQ(ToVector<int32_t>(out.at("good"))[0], 0);
  EXPECT_EQ(ToVector<int32_t>(out.at("bad"))[0], 0);
}

TEST(UpdateLossScalingOp, ChecksItsAttrs) {
  TensorMap feeds = StateFeeds(0);
  feeds["x"] = RandomTensor<float>({2}, -1, 1, 35);
  auto error = [&](const AttributeMap& attrs) {
    return ErrorOf(UpdateOp({"x"}, {"x"}, attrs), feeds);
  };
  struct Bad {
    AttributeMap attrs;
    std::string attr;
  };
  for (const Bad& b :
       {Bad{{{"incr_every_n_steps", 0}}, "incr_every_n_steps"},
        Bad{{{"incr_every_n_steps", -3}}, "incr_every_n_steps"},
        Bad{{{"decr_every_n_nan_or_inf", 0}}, "decr_every_n_nan_or_inf"},
        Bad{{{"incr_ratio", 1.0f}}, "incr_ratio"},
        Bad{{{"incr_ratio", 0.5f}}, "incr_ratio"},
        Bad{{{"incr_ratio", kNaN}}, "incr_ratio"},
        Bad{{{"decr_ratio", 0.0f}}, "decr_ratio"},
        Bad{{{"decr_ratio", 1.0f}}, "decr_ratio"},
        Bad{{{"decr_ratio", -0.5f}}, "decr_ratio"},
        Bad{{{"decr_ratio", kNaN}}, "decr_ratio"}}) {
    const std::string msg = error(b.attrs);
    EXPECT_NE(msg.find("update_loss_scaling"), std::string::npos) << msg;
    EXPECT_NE(msg.find(b.attr), std::string::npos) << msg;
  }
  EXPECT_EQ(error({{"incr_every_n_steps", 1},
                   {"decr_every_n_nan_or_inf", 1},
                   {"incr_ratio", 1.0001f},
                   {"decr_ratio", 0.9999f}}),
            "");
}

TEST(UpdateLossScalingOp, ChecksItsInputs) {
  TensorMap good = StateFeeds(0);
  good["x"] = RandomTensor<float>({2}, -1, 1, 36);
  auto expect = [&](const std::string& slot, const Tensor& value,
                    const std::vector<std::string>& in) {
    TensorMap feeds = good;
    feeds[slot] = value;
    const std::string msg = ErrorOf(UpdateOp({"x"}, {"x"}), feeds);
    EXPECT_NE(msg.find("update_loss_scaling"), std::string::npos) << msg;
    for (const auto& s : in) EXPECT_NE(msg.find(s), std::string::npos) << msg;
  };
  expect("found", Float(1), {"FoundInfinite 'found'", "float32", "int32"});
  expect("found", MakeTensor<int32_t>({2}, {0, 1}),
         {"FoundInfinite 'found'", "one element"});
  expect("scale", Int(8), {"PrevLossScaling 'scale'", "float32 or float64"});
  expect("scale", MakeTensor<float>({1, 2}, {1, 2}),
         {"PrevLossScaling 'scale'", "one element"});
  expect("good", Float(0), {"InGoodSteps 'good'", "int32"});
  expect("bad", MakeTensor<int64_t>({1}, {0}), {"InBadSteps 'bad'", "int32"});
  expect("x", Int(1), {"X[0] 'x'", "int32"});
  const std::string msg = ErrorOf(UpdateOp({"x", "y"}, {"x"}), [&] {
    TensorMap m = good;
    m["y"] = good.at("x");
    return m;
  }());
  EXPECT_NE(msg.find("2 X but 1 Out"), std::string::npos) << msg;
}

TEST(LossScalingOps, HaveNoGradient) {
  EXPECT_FALSE(OpRegistry::Global().Get("check_finite_and_unscale").has_grad());
  EXPECT_FALSE(OpRegistry::Global().Get("update_loss_scaling").has_grad());
}

}  // namespace
}  // namespace fluid
