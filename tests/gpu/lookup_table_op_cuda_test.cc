// The CUDA kernels of lookup_table against its CPU kernels: the lookup with
// and without a padding id, the dense gradient (repeated ids summed), the
// sparse gradient, and the error for an id out of range. Every test skips,
// saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/cuda_op_check.h"
#include "tests/testing/sparse_rows.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::ErrorOf;
using testing::kFloatTypes;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOpSparse;
using testing::TensorMap;
using testing::TensorsClose;

proto::OpDesc Lookup(int64_t pad, bool sparse) {
  return MakeOp("lookup_table", {{"W", {"w"}}, {"Ids", {"ids"}}},
                {{"Out", {"out"}}},
                {{"padding_idx", pad}, {"is_sparse", sparse}});
}

const std::vector<int64_t> kIds = {4, 0, 4, 9, 2, 4, 9, 1};

TEST(LookupTableOpCuda, ForwardAndDenseGrad) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    for (int64_t pad : {int64_t{-1}, int64_t{4}}) {
      TensorMap in = {{"w", RandomTensor(dt, {10, 33}, -1, 1, 3)},
                      {"ids", MakeTensor<int64_t>({8, 1}, kIds)}};
      EXPECT_TRUE(CudaMatchesCpu(Lookup(pad, false), in))
          << DataTypeName(dt) << " padding " << pad;
    }
  }
}

TEST(LookupTableOpCuda, SparseGrad) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    auto op = MakeOp("lookup_table_grad",
                     {{"W", {"w"}}, {"Ids", {"ids"}}, {"Out@GRAD", {"dout"}}},
                     {{"W@GRAD", {"dw"}}},
                     {{"padding_idx", int64_t{9}}, {"is_sparse", true}});
    TensorMap in = {{"w", RandomTensor(dt, {10, 33}, -1, 1, 3)},
                    {"ids", MakeTensor<int64_t>({8, 1}, kIds)},
                    {"dout", RandomTensor(dt, {8, 33}, -1, 1, 4)}};
    auto cpu = RunOpSparse(op, in, Place::CPU()).sparse["dw"];
    auto gpu = RunOpSparse(op, in, Place::CUDA(0)).sparse["dw"];
    EXPECT_EQ(cpu.rows(), gpu.rows());
    EXPECT_EQ(cpu.height(), gpu.height());
    EXPECT_TRUE(TensorsClose(cpu.value(), gpu.value(), 0, "values"));
  }
}

TEST(LookupTableOpCuda, IdOutOfRange) {
  REQUIRE_GPU();
  TensorMap in = {{"w", RandomTensor(DataType::kFloat32, {5, 2}, -1, 1, 1)},
                  {"ids", MakeTensor<int64_t>({2, 1}, {1, 7})}};
  std::string msg = ErrorOf(
      [&] { testing::RunOp(Lookup(-1, false), in, 1, Place::CUDA(0)); });
  EXPECT_NE(msg.find("Ids 'ids' holds id 7 at position 1"), std::string::npos)
      << msg;
}

// c_embedding (a vocabulary-parallel block of rows 5-9 of a 20-row table):
// the lookup and its dense gradient on CUDA against the CPU's.
TEST(CEmbeddingOpCuda, ForwardAndDenseGrad) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    for (int64_t pad : {int64_t{-1}, int64_t{9}}) {
      auto op = MakeOp("c_embedding", {{"W", {"w"}}, {"Ids", {"ids"}}},
                       {{"Out", {"out"}}},
                       {{"padding_idx", pad},
                        {"nranks", int32_t{4}},
                        {"start_index", int64_t{5}}});
      TensorMap in = {
          {"w", RandomTensor(dt, {5, 33}, -1, 1, 3)},
          {"ids", MakeTensor<int64_t>({8, 1}, {6, 0, 9, 19, 5, 6, 12, 9})}};
      EXPECT_TRUE(CudaMatchesCpu(op, in)) << DataTypeName(dt) << " " << pad;
    }
  }
}

}  // namespace
}  // namespace fluid
