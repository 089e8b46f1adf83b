// Inference model directories: a round trip of program and parameters, the
// swap that replaces a model whole, and the errors naming what is wrong.
#include "src/io/inference_model.h"

#include <gtest/gtest.h>

#include <vector>

#include "src/framework/operator.h"
#include "src/framework/program_desc.h"
#include "src/io/checkpoint.h"
#include "tests/io/checkpoint_testing.h"

namespace fluid {
namespace {

using checkpoint_testing::Bytes;
using checkpoint_testing::List;
using checkpoint_testing::SetVar;
using checkpoint_testing::TempDir;
using checkpoint_testing::WriteRaw;

// y = x * w + b, and an optimizer-like persistable the model does not read.
proto::ProgramDesc Program() {
  proto::ProgramDesc p = NewProgram();
  proto::BlockDesc* b = p.mutable_blocks(0);
  AddVarDesc(b, "x", DataType::kFloat32, Shape{-1, 2});
  AddVarDesc(b, "w", DataType::kFloat32, Shape{2, 3}, true)
      ->set_trainable(true);
  AddVarDesc(b, "b", DataType::kFloat32, Shape{3}, true)->set_trainable(true);
  AddVarDesc(b, "lr", DataType::kFloat32, Shape{1}, true);
  auto add = [&](proto::OpDesc op) {
    *b->add_ops() = op;
    InferShapeAtCompileTime(op, b);
  };
  add(MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"h"}}}));
  add(MakeOp("elementwise_add", {{"X", {"h"}}, {"Y", {"b"}}},
             {{"Out", {"y"}}}));
  return p;
}

void Fill(Scope* scope, float base) {
  SetVar<float>(scope, "w", Shape{2, 3}, {base, 1, 2, 3, 4, 5});
  SetVar<float>(scope, "b", Shape{3}, {base, -1, 0.5f});
  SetVar<float>(scope, "lr", Shape{1}, {0.1f});
}

std::string LoadError(const std::string& dir, InferenceModelFiles files = {}) {
  Scope scope;
  try {
    LoadInferenceModel(&scope, dir, files);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(InferenceModel, RoundTripsProgramNamesAndParameters) {
  TempDir tmp;
  Scope scope;
  Fill(&scope, 7);
  const std::string dir = tmp / "model";
  SaveInferenceModel(scope, Program(), {"x"}, {"y"}, dir);
  EXPECT_EQ(List(dir),
            (std::vector<std::string>{"LATEST", "__model__", "ckpt-0"}));
  EXPECT_EQ(List(tmp.path()), std::vector<std::string>{"model"});

  Scope loaded;
  const proto::InferenceModel m = LoadInferenceModel(&loaded, dir);
  EXPECT_EQ(m.feed_names(0), "x");
  EXPECT_EQ(m.fetch_names(0), "y");
  EXPECT_EQ(m.program().blocks(0).ops_size(), 2);
  EXPECT_EQ(Bytes(loaded, "w"), Bytes(scope, "w"));
  EXPECT_EQ(Bytes(loaded, "b"), Bytes(scope, "b"));
  EXPECT_EQ(loaded.FindLocalVar("lr"), nullptr);  // not read by the model
}

TEST(InferenceModel, ASecondSaveReplacesTheFirstWhole) {
  TempDir tmp;
  Scope scope;
  const std::string dir = tmp / "model";
  InferenceModelFiles files{"net.pb", "params"};
  Fill(&scope, 1);
  SaveInferenceModel(scope, Program(), {"x"}, {"y"}, dir, files);
  Fill(&scope, 2);
  SaveInferenceModel(scope, Program(), {"x"}, {"y"}, dir, files);
  EXPECT_EQ(List(dir), (std::vector<std::string>{"net.pb", "params"}));
  EXPECT_EQ(List(tmp.path()), std::vector<std::string>{"model"});
  Scope loaded;
  LoadInferenceModel(&loaded, dir, files);
  EXPECT_EQ(Bytes(loaded, "w"), Bytes(scope, "w"));
}

TEST(InferenceModel, AFailedSaveLeavesNothingBehind) {
  TempDir tmp;
  Scope scope;  // holds no parameters
  EXPECT_THROW(SaveInferenceModel(scope, Program(), {"x"}, {"y"}, tmp / "m"),
               Error);
  EXPECT_TRUE(List(tmp.path()).empty());
}

TEST(InferenceModel, RefusesToReplaceADirectoryOfOtherFiles) {
  TempDir tmp;
  Scope scope;
  Fill(&scope, 1);
  DefaultFileSystem()->CreateDir(tmp / "d");
  WriteRaw(tmp / "d/notes.txt", "mine");
  try {
    SaveInferenceModel(scope, Program(), {"x"}, {"y"}, tmp / "d");
    FAIL() << "replaced a directory of other files";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not an inference model directory"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(List(tmp / "d"), std::vector<std::string>{"notes.txt"});
}

TEST(InferenceModel, LoadErrorsNameTheFileAndTheVar) {
  TempDir tmp;
  Scope scope;
  Fill(&scope, 1);
  const std::string dir = tmp / "model";
  EXPECT_NE(LoadError(dir).find("__model__"), std::string::npos);
  SaveInferenceModel(scope, Program(), {"x"}, {"y"}, dir);
  std::filesystem::remove_all(dir + "/ckpt-0/" + List(dir + "/ckpt-0")[0]);
  const std::string missing = LoadError(dir);
  EXPECT_NE(missing.find("ckpt-0"), std::string::npos) << missing;
  WriteRaw(dir + "/__model__", "garbage");
  EXPECT_NE(LoadError(dir).find("does not parse"), std::string::npos)
      << LoadError(dir);
}

// The loader save_vars / load_params use: a subset of a checkpoint loads;
// what is missing or misshapen is named with the checkpoint.
TEST(LoadCheckpointVars, LoadsTheExpectedSubsetAndNamesMismatches) {
  TempDir tmp;
  Scope scope;
  Fill(&scope, 3);
  SaveCheckpoint(scope, {"b", "lr", "w"}, tmp.path(), CheckpointInfo{4, 1});
  Scope loaded;
  const CheckpointInfo info =
      LoadCheckpointVars(&loaded, VarSpecs(Program(), {"w"}), tmp.path());
  EXPECT_EQ(info.step, 4);
  EXPECT_EQ(Bytes(loaded, "w"), Bytes(scope, "w"));
  EXPECT_EQ(loaded.FindLocalVar("b"), nullptr);

  auto error = [&](const std::vector<CheckpointVarSpec>& specs) {
    Scope s;
    try {
      LoadCheckpointVars(&s, specs, tmp.path());
    } catch (const Error& e) {
      EXPECT_EQ(s.FindLocalVar("w"), nullptr);  // nothing loaded
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string missing =
      error({{"w", DataType::kFloat32, Shape{2, 3}},
             {"velocity", DataType::kFloat32, Shape{2, 3}}});
  EXPECT_NE(missing.find("ckpt-4' does not match the program: velocity: "
                         "missing from checkpoint"),
            std::string::npos)
      << missing;
  const std::string shape = error({{"w", DataType::kFloat32, Shape{2, 4}}});
  EXPECT_NE(shape.find("w: shape [2, 3] in checkpoint, [2, 4] in program"),
            std::string::npos)
      << shape;
  EXPECT_THROW(VarSpecs(Program(), {"nope"}), Error);
}

}  // namespace
}  // namespace fluid
