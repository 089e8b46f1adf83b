// The CUDA kernels of linear_chain_crf (forward and gradient),
// crf_decoding, edit_distance and sequence_erase against their CPU
// kernels, in LoD and padded mode, through sequences of different lengths
// (empty ones included). Every test skips, saying why, without a CUDA
// build or a visible device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::kFloatTypes;
using testing::MakeTensor;
using testing::RandomTensor;

using Slots = std::vector<std::pair<std::string, std::vector<std::string>>>;

Slots CrfInputs(bool label, bool padded) {
  Slots in{{"Emission", {"x"}}, {"Transition", {"w"}}};
  if (label) in.push_back({"Label", {"label"}});
  if (padded) in.push_back({"Length", {"length"}});
  return in;
}

// Scores within +-2 * scale (emissions) and +-scale (transitions).
testing::TensorMap CrfBatch(DataType dt, bool padded, uint64_t seed,
                            double scale = 1) {
  const int64_t d = 4;
  const LoD lod{0, 3, 3, 8, 9};
  const double h = 2 * scale;
  Tensor x = padded ? RandomTensor(dt, {4, 5, d}, -h, h, seed)
                    : RandomTensor(dt, {lod.back(), d}, -h, h, seed);
  if (!padded) x.set_lod(lod);
  const int64_t rows = padded ? 20 : lod.back();
  std::vector<int64_t> labels;
  for (int64_t r = 0; r < rows; ++r) labels.push_back((r * 5 + 1) % d);
  testing::TensorMap in{
      {"x", x},
      {"w", RandomTensor(dt, {d + 2, d}, -scale, scale, seed + 1)},
      {"label",
       MakeTensor<int64_t>(padded ? Shape({4, 5}) : Shape({rows, 1}), labels)}};
  if (padded) in["length"] = MakeTensor<int64_t>({4}, {3, 0, 5, 1});
  return in;
}

// Scale 60: a column's shifted exponentials underflow in float32, so the
// recursions' exact fallbacks run too.
TEST(LinearChainCrfOpCuda, ForwardAndGradient) {
  REQUIRE_GPU();
  uint64_t seed = 700;
  for (DataType dt : kFloatTypes) {
    for (bool padded : {false, true}) {
      for (double scale : {1.0, 60.0}) {
        auto op = MakeOp("linear_chain_crf", CrfInputs(true, padded),
                         {{"Alpha", {"alpha"}},
                          {"EmissionExps", {"ex"}},
                          {"TransitionExps", {"wx"}},
                          {"LogLikelihood", {"nll"}}});
        EXPECT_TRUE(CudaMatchesCpu(op, CrfBatch(dt, padded, seed++, scale)))
            << DataTypeName(dt) << (padded ? " padded" : " LoD") << " scale "
            << scale;
      }
    }
  }
}

TEST(CrfDecodingOpCuda, WithAndWithoutLabel) {
  REQUIRE_GPU();
  testing::CudaCheckOptions no_grad;
  no_grad.grad = false;
  uint64_t seed = 720;
  for (DataType dt : kFloatTypes) {
    for (bool padded : {false, true}) {
      for (bool label : {false, true}) {
        auto op = MakeOp("crf_decoding", CrfInputs(label, padded),
                         {{"ViterbiPath", {"path"}}});
        auto in = CrfBatch(dt, padded, seed++);
        if (!label) in.erase("label");
        EXPECT_TRUE(CudaMatchesCpu(op, in, no_grad))
            << DataTypeName(dt) << (padded ? " padded" : " LoD")
            << (label ? " label" : "");
      }
    }
  }
}

Tensor Seqs(const std::vector<int64_t>& flat, const LoD& lod) {
  Tensor t = MakeTensor<int64_t>({static_cast<int64_t>(flat.size()), 1}, flat);
  t.set_lod(lod);
  return t;
}

TEST(EditDistanceOpCuda, LoDAndPadded) {
  REQUIRE_GPU();
  testing::CudaCheckOptions no_grad;
  no_grad.grad = false;
  for (bool normalized : {false, true}) {
    auto op = MakeOp("edit_distance", {{"Hyps", {"h"}}, {"Refs", {"r"}}},
                     {{"Out", {"out"}}, {"SequenceNum", {"n"}}},
                     {{"normalized", normalized}});
    EXPECT_TRUE(
        CudaMatchesCpu(op,
                       {{"h", Seqs({1, 2, 3, 4, 5, 6, 7, 1, 1}, {0, 4, 4, 9})},
                        {"r", Seqs({2, 3, 4, 1, 7, 7, 1, 6, 5}, {0, 3, 5, 9})}},
                       no_grad))
        << normalized;
    auto padded = MakeOp("edit_distance",
                         {{"Hyps", {"h"}},
                          {"Refs", {"r"}},
                          {"HypsLength", {"hl"}},
                          {"RefsLength", {"rl"}}},
                         {{"Out", {"out"}}, {"SequenceNum", {"n"}}},
                         {{"normalized", normalized}});
    EXPECT_TRUE(CudaMatchesCpu(
        padded,
        {{"h", MakeTensor<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6})},
         {"r", MakeTensor<int64_t>({2, 4}, {1, 3, 0, 0, 6, 5, 4, 4})},
         {"hl", MakeTensor<int64_t>({2}, {3, 2})},
         {"rl", MakeTensor<int64_t>({2}, {2, 4})}},
        no_grad))
        << normalized;
  }
}

TEST(SequenceEraseOpCuda, Int32AndInt64) {
  REQUIRE_GPU();
  testing::CudaCheckOptions no_grad;
  no_grad.grad = false;
  auto op = MakeOp("sequence_erase", {{"X", {"x"}}}, {{"Out", {"out"}}},
                   {{"tokens", std::vector<int32_t>{2, 5}}});
  EXPECT_TRUE(CudaMatchesCpu(
      op, {{"x", Seqs({2, 1, 5, 3, 2, 2, 4}, {0, 4, 6, 7})}}, no_grad));
  Tensor x32 = MakeTensor<int32_t>({4, 1}, {5, 5, 1, 2});
  x32.set_lod({0, 1, 4});
  EXPECT_TRUE(CudaMatchesCpu(op, {{"x", x32}}, no_grad));
}

}  // namespace
}  // namespace fluid
