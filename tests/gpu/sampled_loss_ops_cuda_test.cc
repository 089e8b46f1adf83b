// The CUDA kernels of nce and hierarchical_sigmoid against their CPU
// kernels: forward (nce's samples equal, drawn by the same host code) and
// the dense gradients, each sampler and tree, float32 and float64; the
// sparse gradients against the CPU's. Every test skips, saying why,
// without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/sparse_rows.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::RunOpSparse;
using testing::TensorMap;
using testing::TensorsClose;

using Slots = std::vector<std::pair<std::string, std::vector<std::string>>>;

constexpr int32_t kClasses = 12;

Slots NceInputs(int32_t sampler) {
  Slots in{{"Input", {"x"}}, {"Label", {"label"}},     {"Weight", {"w"}},
           {"Bias", {"b"}},  {"SampleWeight", {"sw"}}, {"Step", {"step"}}};
  if (sampler == 2) {
    in.push_back({"CustomDistProbs", {"probs"}});
    in.push_back({"CustomDistAlias", {"alias"}});
    in.push_back({"CustomDistAliasProbs", {"alias_probs"}});
  }
  return in;
}

AttributeMap NceAttrs(int32_t sampler, bool sparse) {
  return {{"num_total_classes", kClasses},
          {"num_neg_samples", int32_t{5}},
          {"sampler", sampler},
          {"seed", int32_t{3}},
          {"is_sparse", sparse}};
}

TensorMap NceBatch(DataType dt, int32_t sampler, int64_t n, int64_t d,
                   uint64_t seed) {
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < n * 2; ++i) labels.push_back((i * 5 + 1) % kClasses);
  TensorMap in{{"x", RandomTensor(dt, {n, d}, -1, 1, seed)},
               {"label", MakeTensor<int64_t>({n, 2}, labels)},
               {"w", RandomTensor(dt, {kClasses, d}, -1, 1, seed + 1)},
               {"b", RandomTensor(dt, {kClasses, 1}, -1, 1, seed + 2)},
               {"sw", RandomTensor(dt, {n, 1}, 0.5, 2, seed + 3)},
               {"step", MakeTensor<int64_t>({1}, {11})}};
  if (sampler == 2) {
    // Class c has weight c + 1; every class keeps its slot with
    // probability n P(c) when below 1, else aliases to the last class.
    std::vector<float> p, keep;
    std::vector<int32_t> alias;
    const float total = kClasses * (kClasses + 1) / 2.0f;
    for (int32_t c = 0; c < kClasses; ++c) p.push_back((c + 1) / total);
    for (int32_t c = 0; c < kClasses; ++c) {
      keep.push_back(std::min(1.0f, p[c] * kClasses));
      alias.push_back(keep.back() < 1.0f ? kClasses - 1 : -1);
    }
    in["probs"] = MakeTensor<float>({kClasses}, p);
    in["alias"] = MakeTensor<int32_t>({kClasses}, alias);
    in["alias_probs"] = MakeTensor<float>({kClasses}, keep);
  }
  return in;
}

TEST(NceOpCuda, ForwardAndGradient) {
  REQUIRE_GPU();
  uint64_t seed = 900;
  for (DataType dt : kFloatTypes) {
    for (int32_t sampler : {0, 1, 2}) {
      for (int64_t d : {int64_t{3}, int64_t{200}}) {
        auto op = MakeOp("nce", NceInputs(sampler),
                         {{"Cost", {"cost"}},
                          {"SampleLogits", {"logits"}},
                          {"SampleLabels", {"samples"}},
                          {"StepOut", {"step_out"}}},
                         NceAttrs(sampler, false));
        testing::CudaCheckOptions opt;
        if (dt == DataType::kFloat32) opt.tolerance = 1e-4;
        EXPECT_TRUE(
            CudaMatchesCpu(op, NceBatch(dt, sampler, 40, d, seed++), opt))
            << DataTypeName(dt) << " sampler " << sampler << " D " << d;
      }
    }
  }
}

Slots NceGradInputs(int32_t sampler) {
  Slots in;
  for (const auto& slot : NceInputs(sampler))
    if (slot.first != "Step") in.push_back(slot);
  in.push_back({"SampleLogits", {"logits"}});
  in.push_back({"SampleLabels", {"samples"}});
  in.push_back({"Cost@GRAD", {"dcost"}});
  return in;
}

void ExpectSparseClose(const SelectedRows& cpu, const SelectedRows& gpu,
                       const std::string& what) {
  EXPECT_EQ(cpu.rows(), gpu.rows()) << what;
  EXPECT_EQ(cpu.height(), gpu.height()) << what;
  EXPECT_TRUE(TensorsClose(cpu.value(), gpu.value(), 1e-12, what));
}

TEST(NceOpCuda, SparseGradients) {
  REQUIRE_GPU();
  for (int32_t sampler : {0, 2}) {
    TensorMap in = NceBatch(DataType::kFloat64, sampler, 30, 7, 950);
    auto fwd = MakeOp("nce", NceInputs(sampler),
                      {{"Cost", {"cost"}},
                       {"SampleLogits", {"logits"}},
                       {"SampleLabels", {"samples"}}},
                      NceAttrs(sampler, true));
    TensorMap out = RunOp(fwd, in);
    in["logits"] = out["logits"];
    in["samples"] = out["samples"];
    in["dcost"] = RandomTensor<double>({30, 1}, -1, 1, 951);
    auto op = MakeOp("nce_grad", NceGradInputs(sampler),
                     {{"Input@GRAD", {"dx"}},
                      {"Weight@GRAD", {"dw"}},
                      {"Bias@GRAD", {"db"}}},
                     NceAttrs(sampler, true));
    auto cpu = RunOpSparse(op, in, Place::CPU());
    auto gpu = RunOpSparse(op, in, Place::CUDA(0));
    ExpectSparseClose(cpu.sparse["dw"], gpu.sparse["dw"], "dw");
    ExpectSparseClose(cpu.sparse["db"], gpu.sparse["db"], "db");
    EXPECT_TRUE(TensorsClose(cpu.dense["dx"], gpu.dense["dx"], 1e-12, "dx"));
  }
}

// A custom tree over 6 inner nodes, paths of 1 to 4 nodes.
TensorMap CustomTree(int64_t n) {
  std::vector<int64_t> table, code;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = 1 + i % 4;
    for (int64_t j = 0; j < 4; ++j) {
      table.push_back(j < len ? (i + 2 * j) % 6 : -1);
      code.push_back((i + j) % 2);
    }
  }
  return {{"table", MakeTensor<int64_t>({n, 4}, table)},
          {"code", MakeTensor<int64_t>({n, 4}, code)}};
}

Slots HsInputs(bool custom) {
  Slots in{{"X", {"x"}}, {"W", {"w"}}, {"Label", {"label"}}, {"Bias", {"b"}}};
  if (custom) {
    in.push_back({"PathTable", {"table"}});
    in.push_back({"PathCode", {"code"}});
  }
  return in;
}

TensorMap HsBatch(DataType dt, bool custom, int64_t n, int64_t d,
                  int64_t classes, uint64_t seed) {
  const int64_t nodes = custom ? 6 : classes - 1;
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < n; ++i) labels.push_back((i * 7 + 2) % classes);
  TensorMap in{{"x", RandomTensor(dt, {n, d}, -1, 1, seed)},
               {"w", RandomTensor(dt, {nodes, d}, -1, 1, seed + 1)},
               {"label", MakeTensor<int64_t>({n, 1}, labels)},
               {"b", RandomTensor(dt, {nodes, 1}, -1, 1, seed + 2)}};
  if (custom)
    for (auto& kv : CustomTree(n)) in[kv.first] = kv.second;
  return in;
}

TEST(HierarchicalSigmoidOpCuda, ForwardAndGradient) {
  REQUIRE_GPU();
  uint64_t seed = 980;
  for (DataType dt : kFloatTypes) {
    for (bool custom : {false, true}) {
      for (int64_t d : {int64_t{3}, int64_t{150}}) {
        auto op = MakeOp("hierarchical_sigmoid", HsInputs(custom),
                         {{"Out", {"out"}}, {"PreOut", {"pre"}}},
                         {{"num_classes", int32_t{custom ? 6 : 23}}});
        testing::CudaCheckOptions opt;
        if (dt == DataType::kFloat32) opt.tolerance = 1e-4;
        EXPECT_TRUE(CudaMatchesCpu(
            op, HsBatch(dt, custom, 33, d, custom ? 6 : 23, seed++), opt))
            << DataTypeName(dt) << (custom ? " custom" : " default") << " D "
            << d;
      }
    }
  }
}

TEST(HierarchicalSigmoidOpCuda, SparseWGradient) {
  REQUIRE_GPU();
  for (bool custom : {false, true}) {
    const int32_t classes = custom ? 6 : 23;
    TensorMap in = HsBatch(DataType::kFloat64, custom, 20, 5, classes, 990);
    auto fwd = MakeOp("hierarchical_sigmoid", HsInputs(custom),
                      {{"Out", {"out"}}, {"PreOut", {"pre"}}},
                      {{"num_classes", classes}});
    in["pre"] = RunOp(fwd, in)["pre"];
    in["dout"] = RandomTensor<double>({20, 1}, -1, 1, 991);
    Slots gin = HsInputs(custom);
    gin.push_back({"PreOut", {"pre"}});
    gin.push_back({"Out@GRAD", {"dout"}});
    auto op =
        MakeOp("hierarchical_sigmoid_grad", gin,
               {{"X@GRAD", {"dx"}}, {"W@GRAD", {"dw"}}, {"Bias@GRAD", {"db"}}},
               {{"num_classes", classes}, {"is_sparse", true}});
    auto cpu = RunOpSparse(op, in, Place::CPU());
    auto gpu = RunOpSparse(op, in, Place::CUDA(0));
    ExpectSparseClose(cpu.sparse["dw"], gpu.sparse["dw"], "dw");
    EXPECT_TRUE(TensorsClose(cpu.dense["db"], gpu.dense["db"], 1e-12, "db"));
    EXPECT_TRUE(TensorsClose(cpu.dense["dx"], gpu.dense["dx"], 1e-12, "dx"));
  }
}

}  // namespace
}  // namespace fluid
