// The CUDA kernels of c_softmax_with_cross_entropy against its CPU kernels:
// one rank alone (no communicator; forward and gradient), and two
// in-process ranks on the device, whose row statistics the communicator
// reduces from device memory (staged through host memory, as for every
// transport that cannot move device memory itself). Also labels outside
// [0, C), which the CUDA kernels skip. float32 and float64. Every test
// skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "src/distributed/communicator.h"
#include "src/framework/op_registry.h"
#include "src/framework/program_desc.h"
#include "tests/testing/cuda_op_check.h"
#include "tests/testing/in_process_ranks.h"

namespace fluid {
namespace {

using testing::CudaMatchesCpu;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunRanks;
using testing::TensorsClose;
using testing::ToVector;

proto::OpDesc CSoftmaxOp(int nranks, int ignore_index = -100) {
  return MakeOp("c_softmax_with_cross_entropy",
                {{"Logits", {"logits"}}, {"Label", {"label"}}},
                {{"Softmax", {"softmax"}}, {"Loss", {"loss"}}},
                {{"ring_id", int32_t{0}},
                 {"nranks", int32_t{nranks}},
                 {"ignore_index", int32_t{ignore_index}}});
}

Tensor LabelTensor(const Shape& logits, const std::vector<int64_t>& labels) {
  Shape s = logits;
  s[s.rank() - 1] = 1;
  return MakeTensor<int64_t>(s, labels);
}

// Labels (i * 7 + 2) % classes, every `every`-th row (if > 0) `ignore`.
std::vector<int64_t> Labels(int64_t rows, int64_t classes, int every,
                            int ignore) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < rows; ++i)
    v.push_back(every > 0 && i % every == 1 ? ignore : (i * 7 + 2) % classes);
  return v;
}

// Logits in [-3, 3], every third row shifted by 1e4.
template <typename T>
Tensor Logits(const Shape& shape, uint64_t seed) {
  Tensor t = RandomTensor<T>(shape, -3, 3, seed);
  const int64_t classes = shape[shape.rank() - 1];
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (i / classes % 3 == 2) p[i] += T(1e4);
  return t;
}

// One rank alone: the CUDA kernels are the CPU kernels, forward and
// gradient (CudaMatchesCpu feeds the grad op random Loss@GRAD).
template <typename T>
void CheckAlone() {
  struct Case {
    Shape x;
    int every;
    int ignore_index;
  };
  const std::vector<Case> cases = {{{1, 1}, 0, -100},    {{3, 7}, 0, -100},
                                   {{64, 10}, 4, -100},  {{3, 1001}, 2, -1},
                                   {{2, 3, 5}, 2, -100}, {{6, 4}, 0, 0},
                                   {{70000, 3}, 5, -100}};
  uint64_t seed = 700;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << c.x << " ignore_index " << c.ignore_index);
    const int64_t classes = c.x[c.x.rank() - 1];
    const int64_t rows = c.x.numel() / classes;
    EXPECT_TRUE(CudaMatchesCpu(
        CSoftmaxOp(1, c.ignore_index),
        {{"logits", Logits<T>(c.x, seed++)},
         {"label",
          LabelTensor(c.x, Labels(rows, classes, c.every, c.ignore_index))}}));
  }
}

TEST(CSoftmaxWithCrossEntropyOpCuda, AloneFloat) {
  REQUIRE_GPU();
  CheckAlone<float>();
}

TEST(CSoftmaxWithCrossEntropyOpCuda, AloneDouble) {
  REQUIRE_GPU();
  CheckAlone<double>();
}

// What one run of the forward op and its grad op gives (in host memory).
struct Outputs {
  Tensor softmax, loss, dlogits;
};

// The op and its grad op on `place` with `comm`, fed this rank's block of
// the logits, the labels and Loss@GRAD.
Outputs RunOnRing(Communicator* comm, const Place& place, const Tensor& logits,
                  const Tensor& label, const Tensor& dloss, int nranks) {
  const proto::OpDesc fwd = CSoftmaxOp(nranks);
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "logits", logits.dtype(), logits.shape());
  AddVarDesc(block, "label", DataType::kInt64, label.shape());
  AddVarDesc(block, GradVarName("loss"), dloss.dtype(), dloss.shape());
  *block->add_ops() = fwd;
  InferShapeAtCompileTime(fwd, block);
  for (const proto::OpDesc& g :
       OpRegistry::Global().Get(fwd.type()).grad_maker()(fwd)) {
    *block->add_ops() = g;
    InferShapeAtCompileTime(g, block);
  }
  Executor exe(place);
  exe.mutable_device_context()->set_communicator(comm);
  Scope scope;
  std::vector<Tensor> got;
  exe.RunOnce(
      program, &scope,
      {{"logits", logits}, {"label", label}, {GradVarName("loss"), dloss}},
      {"softmax", "loss", GradVarName("logits")}, &got);
  return {got[0], got[1], got[2]};
}

// Columns [rank w, (rank + 1) w) of [rows, classes] `t`, w = classes / 2.
template <typename T>
Tensor HalfOf(const Tensor& t, int rank) {
  const int64_t rows = t.shape()[0], classes = t.shape()[1], w = classes / 2;
  Tensor out;
  T* p = out.mutable_data<T>(Shape{rows, w});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < w; ++j)
      p[i * w + j] = t.data<T>()[i * classes + rank * w + j];
  return out;
}

// Two ranks, each with its half of the classes: the device's results are
// the CPU's (run over the same ring), and the loss is the same bits on
// both ranks.
template <typename T>
void CheckTwoRanks() {
  const std::vector<Shape> shapes = {{5, 2}, {17, 40}, {3, 2002}, {300, 64}};
  uint64_t seed = 800;
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(::testing::Message() << "whole logits " << shape);
    const Tensor whole = Logits<T>(shape, seed++);
    const Tensor label =
        LabelTensor(shape, Labels(shape[0], shape[1], 3, -100));
    const Tensor dloss = RandomTensor<T>({shape[0], 1}, -1, 1, seed++);
    std::vector<Tensor> losses(2);
    RunRanks(2, [&](int rank, Communicator* comm) {
      const Tensor mine = HalfOf<T>(whole, rank);
      const Outputs cpu = RunOnRing(comm, Place::CPU(), mine, label, dloss, 2);
      const Outputs gpu =
          RunOnRing(comm, Place::CUDA(0), mine, label, dloss, 2);
      const std::string at = "rank " + std::to_string(rank) + " ";
      EXPECT_TRUE(TensorsClose(cpu.softmax, gpu.softmax, -1, at + "Softmax"));
      EXPECT_TRUE(TensorsClose(cpu.loss, gpu.loss, -1, at + "Loss"));
      EXPECT_TRUE(
          TensorsClose(cpu.dlogits, gpu.dlogits, -1, at + "Logits@GRAD"));
      losses[rank] = gpu.loss;
    });
    EXPECT_EQ(std::memcmp(losses[0].raw_data(), losses[1].raw_data(),
                          losses[0].bytes()),
              0);
  }
}

TEST(CSoftmaxWithCrossEntropyOpCuda, TwoRanksFloat) {
  REQUIRE_GPU();
  CheckTwoRanks<float>();
}

TEST(CSoftmaxWithCrossEntropyOpCuda, TwoRanksDouble) {
  REQUIRE_GPU();
  CheckTwoRanks<double>();
}

// The CPU kernels reject a label outside [0, C); the CUDA kernels skip such
// a row on every rank: loss 0, gradient 0, its softmax still computed.
TEST(CSoftmaxWithCrossEntropyOpCuda, OutOfRangeLabelsAreSkipped) {
  REQUIRE_GPU();
  const Tensor whole = RandomTensor<double>({4, 8}, -1, 1, 900);
  const Tensor label = LabelTensor({4, 8}, {1, 8, -3, 6});
  const Tensor dloss = RandomTensor<double>({4, 1}, -1, 1, 901);
  RunRanks(2, [&](int rank, Communicator* comm) {
    const Outputs gpu = RunOnRing(comm, Place::CUDA(0),
                                  HalfOf<double>(whole, rank), label, dloss, 2);
    const std::vector<double> loss = ToVector<double>(gpu.loss);
    EXPECT_EQ(loss[1], 0.0);
    EXPECT_EQ(loss[2], 0.0);
    EXPECT_GT(loss[0], 0.0);
    EXPECT_GT(loss[3], 0.0);
    const std::vector<double> dx = ToVector<double>(gpu.dlogits);
    const std::vector<double> sm = ToVector<double>(gpu.softmax);
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(dx[1 * 4 + j], 0.0) << j;
      EXPECT_EQ(dx[2 * 4 + j], 0.0) << j;
      EXPECT_GT(sm[1 * 4 + j], 0.0) << j;
    }
  });
}

}  // namespace
}  // namespace fluid
