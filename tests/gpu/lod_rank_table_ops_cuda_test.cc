// lod_rank_table, max_sequence_len, lod_tensor_to_array,
// array_to_lod_tensor, reorder_lod_tensor_by_rank, shrink_rnn_memory and
// their gradients run on the CUDA place against the CPU place: one program
// over sequences of lengths 2, 0, 3, 2, 1 (values and LoDs, float32 and
// float64). The test skips, saying why, without a CUDA build or a visible
// device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/backward.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::kFloatTypes;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::ToVector;

std::vector<double> Doubles(const Tensor& t) {
  if (t.dtype() == DataType::kFloat64) return ToVector<double>(t);
  const std::vector<float> f = ToVector<float>(t);
  return std::vector<double>(f.begin(), f.end());
}

void Op(proto::BlockDesc* b, const proto::OpDesc& op) {
  *b->add_ops() = op;
  InferShapeAtCompileTime(op, b);
}

// loss = mean(array_to_lod_tensor(lod_tensor_to_array(x)) * r)
//      + mean(reorder(x) * r) + mean(shrink(m, 1) * rm), with its backward.
proto::ProgramDesc Program(DataType dt) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "x", dt, {-1, 2})->set_lod_level(1);
  AddVarDesc(b, "m", dt, {-1, 3});
  AddVarDesc(b, "r", dt, {-1, 2})->set_stop_gradient(true);
  AddVarDesc(b, "rm", dt, {-1, 3})->set_stop_gradient(true);
  AddVarDesc(b, "one", DataType::kInt64, {1})->set_stop_gradient(true);
  FindMutableVarDesc(b, "x")->set_stop_gradient(false);
  FindMutableVarDesc(b, "m")->set_stop_gradient(false);
  Op(b, MakeOp("lod_rank_table", {{"X", {"x"}}}, {{"Out", {"table"}}}));
  Op(b, MakeOp("max_sequence_len", {{"RankTable", {"table"}}},
               {{"Out", {"maxlen"}}}));
  Op(b, MakeOp("lod_tensor_to_array", {{"X", {"x"}}, {"RankTable", {"table"}}},
               {{"Out", {"arr"}}}));
  FindMutableVarDesc(b, "arr")->set_type(proto::VarDesc::LOD_TENSOR_ARRAY);
  Op(b, MakeOp("read_from_array", {{"X", {"arr"}}, {"I", {"one"}}},
               {{"Out", {"step1"}}}));
  Op(b,
     MakeOp("array_to_lod_tensor", {{"X", {"arr"}}, {"RankTable", {"table"}}},
            {{"Out", {"back"}}}));
  Op(b, MakeOp("reorder_lod_tensor_by_rank",
               {{"X", {"x"}}, {"RankTable", {"table"}}}, {{"Out", {"reord"}}}));
  Op(b, MakeOp("shrink_rnn_memory",
               {{"X", {"m"}}, {"I", {"one"}}, {"RankTable", {"table"}}},
               {{"Out", {"shrunk"}}}));
  Op(b, MakeOp("elementwise_mul", {{"X", {"back"}}, {"Y", {"r"}}},
               {{"Out", {"p1"}}}));
  Op(b, MakeOp("elementwise_mul", {{"X", {"reord"}}, {"Y", {"r"}}},
               {{"Out", {"p2"}}}));
  Op(b, MakeOp("elementwise_mul", {{"X", {"shrunk"}}, {"Y", {"rm"}}},
               {{"Out", {"p3"}}}));
  Op(b, MakeOp("sum", {{"X", {"p1", "p2"}}}, {{"Out", {"p12"}}}));
  Op(b, MakeOp("mean", {{"X", {"p12"}}}, {{"Out", {"l1"}}}));
  Op(b, MakeOp("mean", {{"X", {"p3"}}}, {{"Out", {"l2"}}}));
  Op(b, MakeOp("sum", {{"X", {"l1", "l2"}}}, {{"Out", {"loss"}}}));
  AppendBackward(&p, "loss");
  return p;
}

std::vector<Tensor> RunOn(DataType dt, const Place& place) {
  Tensor x = RandomTensor(dt, {8, 2}, -1, 1, 31);
  x.set_lod(LoDFromLengths({2, 0, 3, 2, 1}, "test"));
  Executor exe(place);
  Scope scope;
  std::vector<Tensor> out, host;
  exe.RunOnce(
      Program(dt), &scope,
      {{"x", x},
       {"m", RandomTensor(dt, {5, 3}, -1, 1, 32)},
       {"r", RandomTensor(dt, {8, 2}, -1, 1, 33)},
       {"rm", RandomTensor(dt, {3, 3}, -1, 1, 34)},
       {"one", MakeTensor<int64_t>({1}, {1})}},
      {"maxlen", "step1", "back", "reord", "shrunk", "x@GRAD", "m@GRAD"}, &out);
  for (const Tensor& t : out) {
    host.emplace_back().CopyFrom(t, Place::CPU());
    host.back().set_lod(t.lod());
  }
  return host;
}

TEST(LoDRankTableOpsCuda, MatchCpu) {
  REQUIRE_GPU();
  const char* names[] = {"maxlen", "step1",  "back",  "reord",
                         "shrunk", "x@GRAD", "m@GRAD"};
  for (DataType dt : kFloatTypes) {
    const std::vector<Tensor> cpu = RunOn(dt, Place::CPU());
    const std::vector<Tensor> cuda = RunOn(dt, Place::CUDA(0));
    ASSERT_EQ(cpu.size(), cuda.size());
    for (size_t k = 0; k < cpu.size(); ++k) {
      SCOPED_TRACE(std::string(DataTypeName(dt)) + " " + names[k]);
      ASSERT_EQ(cpu[k].shape(), cuda[k].shape());
      EXPECT_EQ(cpu[k].lod(), cuda[k].lod());
      if (cpu[k].dtype() == DataType::kInt64) {
        EXPECT_EQ(ToVector<int64_t>(cpu[k]), ToVector<int64_t>(cuda[k]));
        continue;
      }
      const std::vector<double> va = Doubles(cpu[k]), vc = Doubles(cuda[k]);
      for (size_t i = 0; i < va.size(); ++i)
        EXPECT_NEAR(va[i], vc[i], dt == DataType::kFloat64 ? 1e-12 : 1e-6)
            << "element " << i;
    }
  }
}

}  // namespace
}  // namespace fluid
