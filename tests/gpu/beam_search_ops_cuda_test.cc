// The CUDA kernels of beam_search and beam_search_decode against their CPU
// kernels: the same values and the same LoDs, through ended prefixes, a
// pruned source and an empty step, in float32 and float64. Every test
// skips, saying why, without a CUDA build or a visible device.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "src/framework/tensor_array.h"
#include "tests/testing/cuda_op_check.h"

namespace fluid {
namespace {

using testing::kFloatTypes;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunOp;
using testing::TensorMap;

void ExpectSame(const Tensor& cpu, const Tensor& cuda,
                const std::string& what) {
  ASSERT_EQ(cpu.shape(), cuda.shape()) << what;
  ASSERT_EQ(cpu.dtype(), cuda.dtype()) << what;
  EXPECT_EQ(cpu.lod(), cuda.lod()) << what;
  EXPECT_EQ(0, std::memcmp(cpu.raw_data(), cuda.raw_data(), cpu.bytes()))
      << what;
}

Tensor WithLoD(Tensor t, const LoD& lod) {
  t.set_lod(lod);
  return t;
}

// Three sources; rows 2 and 5 ended (end_id 0); source 2 has no prefixes.
TensorMap Step(DataType dt, uint64_t seed) {
  const std::vector<int64_t> pre{3, 1, 0, 2, 4, 0};
  return {{"pre_ids", WithLoD(MakeTensor<int64_t>({6, 1}, pre), {0, 3, 6, 6})},
          {"pre_scores",
           WithLoD(RandomTensor(dt, {6, 1}, -2, 0, seed), {0, 2, 4, 6})},
          {"ids", MakeTensor<int64_t>({6, 3}, {1, 2, 0, 3, 4, 5, 6, 7, 8, 0, 1,
                                               2, 3, 4, 5, 6, 7, 8})},
          {"scores", RandomTensor(dt, {6, 3}, 0.05, 1, seed + 1)}};
}

TEST(BeamSearchOpCuda, MatchesCpu) {
  REQUIRE_GPU();
  uint64_t seed = 900;
  for (DataType dt : kFloatTypes) {
    for (bool accumulated : {true, false}) {
      for (int beam : {1, 2, 4, 9}) {
        auto op = MakeOp("beam_search",
                         {{"pre_ids", {"pre_ids"}},
                          {"pre_scores", {"pre_scores"}},
                          {"ids", {"ids"}},
                          {"scores", {"scores"}}},
                         {{"selected_ids", {"si"}},
                          {"selected_scores", {"ss"}},
                          {"parent_idx", {"pi"}}},
                         {{"beam_size", beam},
                          {"end_id", 0},
                          {"is_accumulated", accumulated}});
        const TensorMap in = Step(dt, seed++);
        auto cpu = RunOp(op, in);
        auto cuda = RunOp(op, in, 1, Place::CUDA(0));
        const std::string what =
            std::string(DataTypeName(dt)) + " beam " + std::to_string(beam);
        for (const char* out : {"si", "ss", "pi"})
          ExpectSame(cpu[out], cuda[out], what + " " + out);
      }
    }
  }
}

std::vector<Tensor> Decode(const LoDTensorArray& ids,
                           const LoDTensorArray& scores, DataType dt,
                           const Place& place) {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "ids", DataType::kInt64, Shape{-1, 1}, true)
      ->set_type(proto::VarDesc::LOD_TENSOR_ARRAY);
  AddVarDesc(b, "scores", dt, Shape{-1, 1}, true)
      ->set_type(proto::VarDesc::LOD_TENSOR_ARRAY);
  proto::OpDesc op = MakeOp(
      "beam_search_decode", {{"Ids", {"ids"}}, {"Scores", {"scores"}}},
      {{"SentenceIds", {"sent_ids"}}, {"SentenceScores", {"sent_scores"}}},
      {{"beam_size", 2}, {"end_id", 9}});
  *b->add_ops() = op;
  InferShapeAtCompileTime(op, b);
  Scope scope;
  LoDTensorArray* a = scope.Var("ids")->GetMutable<LoDTensorArray>();
  LoDTensorArray* s = scope.Var("scores")->GetMutable<LoDTensorArray>();
  for (size_t t = 0; t < ids.size(); ++t) {
    a->emplace_back().CopyFrom(ids[t], place);
    s->emplace_back().CopyFrom(scores[t], place);
  }
  Executor exe(place);
  std::vector<Tensor> out, host(2);
  exe.RunOnce(p, &scope, {}, {"sent_ids", "sent_scores"}, &out);
  for (size_t i = 0; i < 2; ++i) host[i].CopyFrom(out[i], Place::CPU());
  return host;
}

TEST(BeamSearchDecodeOpCuda, MatchesCpu) {
  REQUIRE_GPU();
  for (DataType dt : kFloatTypes) {
    auto ids = [](const std::vector<int64_t>& v, const LoD& lod) {
      return WithLoD(
          MakeTensor<int64_t>({static_cast<int64_t>(v.size()), 1}, v), lod);
    };
    auto scores = [&](int64_t rows, const LoD& lod, uint64_t seed) {
      return WithLoD(RandomTensor(dt, {rows, 1}, -3, 0, seed), lod);
    };
    // Source 1 ends at step 2 and is pruned at step 3.
    const LoDTensorArray id_steps{
        ids({1, 2}, {0, 1, 2}), ids({3, 9, 4}, {0, 2, 3}),
        ids({5, 9, 9}, {0, 2, 3}), ids({6, 9}, {0, 2, 2})};
    const LoDTensorArray score_steps{
        scores(2, {0, 1, 2}, 1), scores(3, {0, 2, 3}, 2),
        scores(3, {0, 1, 2, 3}, 3), scores(2, {0, 1, 2, 2}, 4)};
    auto cpu = Decode(id_steps, score_steps, dt, Place::CPU());
    auto cuda = Decode(id_steps, score_steps, dt, Place::CUDA(0));
    ExpectSame(cpu[0], cuda[0], std::string(DataTypeName(dt)) + " ids");
    ExpectSame(cpu[1], cuda[1], std::string(DataTypeName(dt)) + " scores");
  }
}

}  // namespace
}  // namespace fluid
