// chunk_eval on tagging worked out by hand (IOB with two chunk types, a
// LoD batch and the same batch padded with SeqLength, excluded types),
// and its errors. tests/python/test_chunk_eval.py checks every scheme on
// random tags against a chunk decoder written in Python.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/framework/program_desc.h"
#include "tests/testing/gradient_checker.h"

namespace fluid {
namespace {

using testing::ErrorOf;
using testing::MakeTensor;
using testing::RunOp;
using testing::TensorMap;
using testing::ToVector;

const char* const kOutputs[] = {"Precision",      "Recall",
                                "F1-Score",       "NumInferChunks",
                                "NumLabelChunks", "NumCorrectChunks"};

proto::OpDesc ChunkEval(bool padded, std::vector<int32_t> excluded = {},
                        const std::string& scheme = "IOB") {
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"Inference", {"inf"}}, {"Label", {"lab"}}};
  if (padded) in.push_back({"SeqLength", {"len"}});
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const char* slot : kOutputs) out.push_back({slot, {slot}});
  return MakeOp("chunk_eval", in, out,
                {{"num_chunk_types", 2},
                 {"chunk_scheme", scheme},
                 {"excluded_chunk_types", excluded}});
}

Tensor Tags(const Shape& shape, const std::vector<int64_t>& ids, LoD lod) {
  Tensor t = MakeTensor<int64_t>(shape, ids);
  t.set_lod(std::move(lod));
  return t;
}

// IOB, 2 types: B0=0 I0=1 B1=2 I1=3 O=4. Two sequences, [0, 5) and [5, 8):
// label chunks (0,1,t0) (3,4,t1) | (5,6,t1) (7,7,t0);
// inferred     (0,1,t0) (3,3,t1) | (5,6,t1) (7,7,t0) (I0 after O begins).
const std::vector<int64_t> kLabel = {0, 1, 4, 2, 3, 2, 3, 0};
const std::vector<int64_t> kInfer = {0, 1, 4, 2, 4, 2, 3, 1};

void ExpectCounts(const TensorMap& out, int64_t infer, int64_t label,
                  int64_t correct) {
  EXPECT_EQ(ToVector<int64_t>(out.at("NumInferChunks"))[0], infer);
  EXPECT_EQ(ToVector<int64_t>(out.at("NumLabelChunks"))[0], label);
  EXPECT_EQ(ToVector<int64_t>(out.at("NumCorrectChunks"))[0], correct);
  const float p = static_cast<float>(correct) / infer;
  const float r = static_cast<float>(correct) / label;
  EXPECT_FLOAT_EQ(ToVector<float>(out.at("Precision"))[0], p);
  EXPECT_FLOAT_EQ(ToVector<float>(out.at("Recall"))[0], r);
  EXPECT_FLOAT_EQ(ToVector<float>(out.at("F1-Score"))[0], 2 * p * r / (p + r));
}

TEST(ChunkEvalOp, LoDBatch) {
  const LoD lod = {0, 5, 8};
  TensorMap in = {{"inf", Tags({8, 1}, kInfer, lod)},
                  {"lab", Tags({8, 1}, kLabel, lod)}};
  ExpectCounts(RunOp(ChunkEval(false), in), 4, 4, 3);
  ExpectCounts(RunOp(ChunkEval(false, {1}), in), 2, 2, 2);  // type 0 only
}

TEST(ChunkEvalOp, PaddedBatchWithSeqLength) {
  // The same sequences padded to 5 with O (never read past the length).
  std::vector<int64_t> inf(kInfer.begin(), kInfer.end());
  std::vector<int64_t> lab(kLabel.begin(), kLabel.end());
  inf.insert(inf.end(), {0, 0});
  lab.insert(lab.end(), {2, 2});
  TensorMap in = {{"inf", Tags({2, 5}, inf, {})},
                  {"lab", Tags({2, 5}, lab, {})},
                  {"len", MakeTensor<int64_t>({2}, {5, 3})}};
  ExpectCounts(RunOp(ChunkEval(true), in), 4, 4, 3);
}

TEST(ChunkEvalOp, NoChunksGiveZeros) {
  TensorMap in = {{"inf", Tags({2, 1}, {4, 4}, {0, 2})},
                  {"lab", Tags({2, 1}, {4, 4}, {0, 2})}};
  TensorMap out = RunOp(ChunkEval(false), in);
  for (const char* slot : {"Precision", "Recall", "F1-Score"})
    EXPECT_EQ(ToVector<float>(out.at(slot))[0], 0.0f) << slot;
  EXPECT_EQ(ToVector<int64_t>(out.at("NumInferChunks"))[0], 0);
}

TEST(ChunkEvalOp, CompileTimeShapes) {
  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* block = program.mutable_blocks(0);
  AddVarDesc(block, "inf", DataType::kInt64, Shape{-1, 1});
  AddVarDesc(block, "lab", DataType::kInt64, Shape{-1, 1});
  InferShapeAtCompileTime(ChunkEval(false), block);
  EXPECT_EQ(VarShape(GetVarDesc(*block, "Precision")), Shape({1}));
  EXPECT_EQ(VarDtype(GetVarDesc(*block, "Precision")), DataType::kFloat32);
  EXPECT_EQ(VarDtype(GetVarDesc(*block, "NumCorrectChunks")), DataType::kInt64);
}

TEST(ChunkEvalOp, Errors) {
  TensorMap in = {{"inf", Tags({2, 1}, {0, 5}, {0, 2})},
                  {"lab", Tags({2, 1}, {0, 1}, {0, 2})}};
  std::string msg = ErrorOf(ChunkEval(false), in);
  EXPECT_NE(msg.find("tag id 5 out of range [0, 4]"), std::string::npos) << msg;
  in["inf"] = Tags({2, 1}, {0, 1}, {0, 1, 2});
  msg = ErrorOf(ChunkEval(false), in);
  EXPECT_NE(msg.find("must carry the same LoD"), std::string::npos) << msg;
  msg = ErrorOf(ChunkEval(false, {}, "BIO"), in);
  EXPECT_NE(msg.find("BIO"), std::string::npos) << msg;
  TensorMap padded = {{"inf", Tags({1, 2}, {0, 1}, {})},
                      {"lab", Tags({1, 2}, {0, 1}, {})},
                      {"len", MakeTensor<int64_t>({1}, {3})}};
  msg = ErrorOf(ChunkEval(true), padded);
  EXPECT_NE(msg.find("SeqLength[0] = 3 outside [0, 2]"), std::string::npos)
      << msg;
}

}  // namespace
}  // namespace fluid
