// The CUDA kernels of check_finite_and_unscale and update_loss_scaling
// against their CPU kernels: gradient lists longer than one launch's list
// (48), of every float dtype, dense and sparse, in place and not, with Inf
// and NaN in the first, a middle and the last launch; the state machine
// step by step. Both places divide once with IEEE rounding and step the
// state with the same products, so the results are compared to the bit
// (NaN included), not within a tolerance. Every test skips, saying why,
// without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/sparse_inputs.h"

namespace fluid {
namespace {

using testing::CudaStepsMatchCpu;
using testing::MakeSelectedRows;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::RunOpOnSparse;
using testing::SparseMap;
using testing::TensorMap;

constexpr DataType kAllFloats[] = {DataType::kFloat32, DataType::kFloat64,
                                   DataType::kFloat16, DataType::kBFloat16};

Tensor Int(int32_t v) { return MakeTensor<int32_t>({1}, {v}); }
Tensor Float(float v) { return MakeTensor<float>({1}, {v}); }

// A random tensor of any float dtype (16-bit values rounded from float32).
Tensor Random(DataType dt, const Shape& shape, double lo, double hi,
              uint64_t seed) {
  if (!IsHalfDtype(dt)) return RandomTensor(dt, shape, lo, hi, seed);
  Tensor f = RandomTensor<float>(shape, lo, hi, seed);
  Tensor t;
  t.set_dtype(dt);
  t.Resize(shape);
  auto* bits = static_cast<uint16_t*>(t.raw_mutable_data());
  for (int64_t i = 0; i < f.numel(); ++i) {
    const float v = f.data<float>()[i];
    bits[i] =
        dt == DataType::kFloat16 ? FloatToFp16Bits(v) : FloatToBf16Bits(v);
  }
  return t;
}

// Element i of `t` set to `v` (+-Inf or NaN), in t's dtype.
void Poison(Tensor* t, int64_t i, float v) {
  switch (t->dtype()) {
    case DataType::kFloat32:
      t->data<float>()[i] = v;
      break;
    case DataType::kFloat64:
      t->data<double>()[i] = v;
      break;
    case DataType::kFloat16:
      t->data<float16>()[i] = FromFloat<float16>(v);
      break;
    default:
      t->data<bfloat16>()[i] = FromFloat<bfloat16>(v);
      break;
  }
}

::testing::AssertionResult SameBits(const Tensor& cpu, const Tensor& gpu,
                                    const std::string& what) {
  if (cpu.dtype() != gpu.dtype() || cpu.shape() != gpu.shape())
    return ::testing::AssertionFailure()
           << what << ": " << DataTypeName(gpu.dtype()) << " " << gpu.shape()
           << " on CUDA, " << DataTypeName(cpu.dtype()) << " " << cpu.shape()
           << " on CPU";
  if (cpu.bytes() > 0 &&
      std::memcmp(cpu.raw_data(), gpu.raw_data(), cpu.bytes()) != 0)
    return ::testing::AssertionFailure() << what << ": bits differ";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult SameOutputs(const TensorMap& cpu,
                                       const TensorMap& gpu) {
  for (const auto& [name, t] : cpu) {
    auto r = SameBits(t, gpu.at(name), name);
    if (!r) return r;
  }
  return ::testing::AssertionSuccess();
}

// `count` gradients cycling through the float dtypes and through sizes from
// 0 to a few thousand elements.
TensorMap Grads(int count, uint64_t seed, std::vector<std::string>* names) {
  const Shape shapes[] = {{3, 5}, {1}, {0}, {2049}, {7, 1, 3}, {300}};
  TensorMap m;
  for (int i = 0; i < count; ++i) {
    names->push_back("g" + std::to_string(i));
    m[names->back()] =
        Random(kAllFloats[i % 4], shapes[i % 6], -1e3, 1e3, seed + i);
  }
  return m;
}

proto::OpDesc UnscaleOp(const std::vector<std::string>& xs,
                        const std::vector<std::string>& outs) {
  return MakeOp("check_finite_and_unscale", {{"X", xs}, {"Scale", {"scale"}}},
                {{"Out", outs}, {"FoundInfinite", {"found"}}});
}

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

std::vector<std::string> Suffixed(const std::vector<std::string>& names,
                                  const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back(n + suffix);
  return out;
}

// 110 gradients: three launches of up to 48.
TEST(CheckFiniteAndUnscaleCuda, GradientListsMatchCpu) {
  REQUIRE_GPU();
  std::vector<std::string> names;
  TensorMap in = Grads(110, 100, &names);
  for (const char* suffix : {"", "_out"}) {
    const auto op = UnscaleOp(names, Suffixed(names, suffix));
    for (float scale : {1024.0f, 26214.4f}) {
      in["scale"] = Float(scale);
      auto cpu = RunOp(op, in, 1, Place::CPU());
      EXPECT_EQ(cpu.at("found").data<int32_t>()[0], 0);
      EXPECT_TRUE(SameOutputs(cpu, RunOp(op, in, 1, Place::CUDA(0))))
          << "scale " << scale << " out '" << suffix << "'";
    }
    in["scale"] = MakeTensor<double>({1}, {512.0});
    EXPECT_TRUE(SameOutputs(RunOp(op, in, 1, Place::CPU()),
                            RunOp(op, in, 1, Place::CUDA(0))))
        << "float64 scale";
  }
}

// One Inf or NaN in a gradient of the first, a middle or the last launch,
// at its first or last element, in each dtype.
TEST(CheckFiniteAndUnscaleCuda, FindsInfAndNanLikeCpu) {
  REQUIRE_GPU();
  std::vector<std::string> names;
  const TensorMap clean = Grads(110, 200, &names);
  const auto op = UnscaleOp(names, names);
  for (int k : {0, 3, 51, 52, 109}) {
    const std::string& g = names[k];
    const int64_t n = clean.at(g).numel();
    if (n == 0) continue;
    for (int64_t i : {int64_t{0}, n - 1}) {
      for (float v : {std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity(),
                      std::numeric_limits<float>::quiet_NaN()}) {
        TensorMap in = clean;
        in["scale"] = Float(8.0f);
        Tensor bad;  // a buffer of its own: `clean` shares its buffers
        bad.CopyFrom(clean.at(g));
        Poison(&bad, i, v);
        in[g] = bad;
        auto cpu = RunOp(op, in, 1, Place::CPU());
        EXPECT_EQ(cpu.at("found").data<int32_t>()[0], 1)
            << g << "[" << i << "]";
        EXPECT_TRUE(SameOutputs(cpu, RunOp(op, in, 1, Place::CUDA(0))))
            << g << "[" << i << "] = " << v << " ("
            << DataTypeName(in[g].dtype()) << ")";
      }
    }
  }
}

TEST(LossScalingOpsCuda, SparseRowsMatchCpu) {
  REQUIRE_GPU();
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < 700; ++r) rows.push_back((r * 13) % 500);
  for (DataType dt : kAllFloats) {
    Tensor values = Random(dt, {700, 16}, -4, 4, 300);
    Tensor poisoned;
    poisoned.CopyFrom(values);
    Poison(&poisoned, 700 * 16 - 1, std::numeric_limits<float>::quiet_NaN());
    const TensorMap dense = {{"d", Random(dt, {5, 3}, -1, 1, 301)},
                             {"scale", Float(64.0f)},
                             {"found", Int(0)},
                             {"good", Int(0)},
                             {"bad", Int(1)}};
    for (const Tensor* v : {&values, &poisoned}) {
      for (const char* so : {"sp", "sp_out"}) {
        const SparseMap sparse = {{"sp", MakeSelectedRows(500, rows, *v)}};
        for (const auto& op : {UnscaleOp({"d", "sp"}, {"d", so}),
                               UpdateOp({"sp", "d"}, {so, "d"})}) {
          TensorMap feeds = dense;
          if (op.type() == "update_loss_scaling")
            feeds["found"] = Int(v == &poisoned ? 1 : 0);
          auto cpu = RunOpOnSparse(op, feeds, sparse, Place::CPU());
          auto gpu = RunOpOnSparse(op, feeds, sparse, Place::CUDA(0));
          const std::string what = op.type() + " " + DataTypeName(dt) + " " +
                                   so + (v == &poisoned ? " NaN" : "");
          EXPECT_TRUE(SameOutputs(cpu.dense, gpu.dense)) << what;
          const SelectedRows& c = cpu.sparse.at(so);
          const SelectedRows& g = gpu.sparse.at(so);
          EXPECT_EQ(c.rows(), g.rows()) << what;
          EXPECT_EQ(c.height(), g.height()) << what;
          EXPECT_TRUE(SameBits(c.value(), g.value(), so)) << what;
        }
      }
    }
  }
}

// Out: X, or zeros on a step with an Inf or a NaN, for 110 gradients in
// place and not.
TEST(UpdateLossScalingCuda, ZeroesOrPassesGradientListsLikeCpu) {
  REQUIRE_GPU();
  std::vector<std::string> names;
  TensorMap in = Grads(110, 400, &names);
  in["scale"] = Float(4096.0f);
  in["good"] = Int(5);
  in["bad"] = Int(0);
  for (const char* suffix : {"", "_out"}) {
    const auto op = UpdateOp(names, Suffixed(names, suffix));
    for (int32_t found : {0, 1}) {
      in["found"] = Int(found);
      EXPECT_TRUE(SameOutputs(RunOp(op, in, 1, Place::CPU()),
                              RunOp(op, in, 1, Place::CUDA(0))))
          << "found " << found << " out '" << suffix << "'";
    }
  }
}

// The state after every prefix of a run of steps that crosses both
// thresholds several times, the scale in float32 and float64.
TEST(UpdateLossScalingCuda, StateMachineMatchesCpuStepByStep) {
  REQUIRE_GPU();
  const std::vector<int32_t> flags = {0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0,
                                      1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0};
  const auto op = UpdateOp({"x"}, {"x"},
                           {{"incr_every_n_steps", 3},
                            {"decr_every_n_nan_or_inf", 2},
                            {"incr_ratio", 3.0f},
                            {"decr_ratio", 0.3f}});
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64}) {
    const TensorMap state = {
        {"scale", testing::FilledTensor(dt, {1}, 7.0)},
        {"good", Int(0)},
        {"bad", Int(0)},
        {"x", Random(DataType::kFloat16, {33}, -1, 1, 500)}};
    std::vector<Tensor> found;
    for (int32_t f : flags) {
      found.push_back(Int(f));
      EXPECT_TRUE(CudaStepsMatchCpu(op, state, "found", found, 0.0))
          << DataTypeName(dt) << " after " << found.size() << " steps";
    }
  }
}

}  // namespace
}  // namespace fluid
