// send_v2 and recv_v2 on the device: two in-process ranks, each with an
// executor on the GPU, move a float32 tensor with sequence offsets from
// device memory to device memory (staged through host memory, as for
// every transport that cannot move device memory itself), with the
// receive issued ahead (recv_v2 with a Handle, the value put in place by
// its c_wait, as a pipeline runs it) and without. The received tensor is
// the sent one bit for bit, offsets included. Skips, saying why, without a
// CUDA build or a visible device.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "src/distributed/communicator.h"
#include "src/framework/executor.h"
#include "src/framework/program_desc.h"
#include "tests/testing/cuda_op_check.h"
#include "tests/testing/in_process_ranks.h"

namespace fluid {
namespace {

using testing::RandomTensor;
using testing::RunRanks;

void AddHandle(proto::BlockDesc* block, const std::string& name) {
  AddVarDesc(block, name, DataType::kFloat32, Shape{})
      ->set_type(proto::VarDesc::COMM_HANDLE);
}

// Rank 0 sends `x` twice; rank 1 receives it ahead and then in place.
proto::ProgramDesc Program(int rank, const Tensor& x) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  const std::vector<int64_t> declared = {-1, x.shape()[1]};
  if (rank == 0) {
    AddVarDesc(block, "x", x.dtype(), x.shape());
    for (const char* h : {"h0", "h1"}) {
      AddHandle(block, h);
      *block->add_ops() = MakeOp("send_v2", {{"X", {"x"}}}, {{"Handle", {h}}},
                                 {{"peer", int32_t{1}}});
    }
    for (const char* h : {"h0", "h1"})
      *block->add_ops() = MakeOp("c_wait", {{"Handle", {h}}}, {});
    return program;
  }
  AddVarDesc(block, "early", x.dtype(), x.shape());
  AddVarDesc(block, "inline", x.dtype(), x.shape());
  AddHandle(block, "h");
  *block->add_ops() =
      MakeOp("recv_v2", {}, {{"Out", {"early"}}, {"Handle", {"h"}}},
             {{"peer", int32_t{0}}, {"out_shape", declared}});
  *block->add_ops() =
      MakeOp("c_wait", {{"Handle", {"h"}}}, {{"Out", {"early"}}});
  *block->add_ops() = MakeOp("recv_v2", {}, {{"Out", {"inline"}}},
                             {{"peer", int32_t{0}}, {"out_shape", declared}});
  return program;
}

TEST(P2POpCuda, DeviceTensorsArriveWholeAheadAndInline) {
  REQUIRE_GPU();
  Tensor x = RandomTensor<float>({5, 3}, -1, 1, 77);
  x.set_lod(LoD{0, 2, 5});
  std::vector<Tensor> got;
  RunRanks(2, [&](int rank, Communicator* comm) {
    Executor exe(Place::CUDA(0));
    exe.mutable_device_context()->set_communicator(comm);
    Scope scope;
    std::vector<Tensor> fetched;
    if (rank == 0) {
      exe.RunOnce(Program(0, x), &scope, {{"x", x}}, {}, &fetched);
    } else {
      exe.RunOnce(Program(1, x), &scope, {}, {"early", "inline"}, &fetched);
      got = fetched;
    }
  });
  ASSERT_EQ(got.size(), 2u);
  for (const Tensor& t : got) {
    ASSERT_EQ(t.shape(), x.shape());
    EXPECT_EQ(t.lod(), x.lod());
    EXPECT_EQ(std::memcmp(t.raw_data(), x.raw_data(), x.bytes()), 0);
  }
}

}  // namespace
}  // namespace fluid
