// The CUDA kernels of is_empty, lod_reset (forward and gradient),
// split_lod_batch (forward and gradient) and chunk_eval against their CPU
// kernels (one host-side kernel serves both
// places; these check that inputs and outputs cross to and from the
// device). Every test skips, saying why, without a CUDA build or a visible
// device.
#include <gtest/gtest.h>

#include <vector>

#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::MakeTensor;
using testing::RandomTensor;

TEST(LoDResetOpsCuda, IsEmpty) {
  REQUIRE_GPU();
  testing::CudaCheckOptions o;
  o.grad = false;
  auto op = MakeOp("is_empty", {{"X", {"x"}}}, {{"Out", {"out"}}});
  EXPECT_TRUE(CudaMatchesCpu(op, {{"x", MakeTensor<float>({0, 3}, {})}}, o));
  EXPECT_TRUE(CudaMatchesCpu(
      op, {{"x", RandomTensor(DataType::kFloat64, {2, 3}, -1, 1, 1)}}, o));
}

TEST(LoDResetOpsCuda, LoDReset) {
  REQUIRE_GPU();
  Tensor x = RandomTensor(DataType::kFloat64, {5, 2}, -1, 1, 2);
  x.set_lod({0, 5});
  auto by_attr = MakeOp("lod_reset", {{"X", {"x"}}}, {{"Out", {"out"}}},
                        {{"target_lod", std::vector<int32_t>{0, 2, 5}}});
  EXPECT_TRUE(CudaMatchesCpu(by_attr, {{"x", x}}));
  auto by_y =
      MakeOp("lod_reset", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"out"}}});
  EXPECT_TRUE(CudaMatchesCpu(
      by_y, {{"x", x}, {"y", MakeTensor<int64_t>({3}, {0, 1, 5})}}));
}

TEST(LoDResetOpsCuda, SplitLoDBatch) {
  REQUIRE_GPU();
  Tensor x = RandomTensor(DataType::kFloat64, {6, 2}, -1, 1, 3);
  x.set_lod({0, 1, 3, 3, 6});
  auto op = MakeOp("split_lod_batch", {{"X", {"x"}}},
                   {{"Out", {"out0", "out1"}}}, {{"num", int32_t{2}}});
  EXPECT_TRUE(CudaMatchesCpu(op, {{"x", x}}));
}

TEST(LoDResetOpsCuda, ChunkEval) {
  REQUIRE_GPU();
  testing::CudaCheckOptions o;
  o.grad = false;
  auto op = MakeOp("chunk_eval", {{"Inference", {"inf"}}, {"Label", {"lab"}}},
                   {{"Precision", {"p"}},
                    {"Recall", {"r"}},
                    {"F1-Score", {"f"}},
                    {"NumInferChunks", {"ni"}},
                    {"NumLabelChunks", {"nl"}},
                    {"NumCorrectChunks", {"nc"}}},
                   {{"num_chunk_types", 2}});
  Tensor inf = MakeTensor<int64_t>({8, 1}, {0, 1, 4, 2, 4, 2, 3, 1});
  Tensor lab = MakeTensor<int64_t>({8, 1}, {0, 1, 4, 2, 3, 2, 3, 0});
  inf.set_lod({0, 5, 8});
  lab.set_lod({0, 5, 8});
  EXPECT_TRUE(CudaMatchesCpu(op, {{"inf", inf}, {"lab", lab}}, o));
}

}  // namespace
}  // namespace fluid
