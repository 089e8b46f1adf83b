#include "src/framework/program_desc.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "src/framework/op_registry.h"
#include "src/io/job_io.h"

namespace fluid {
namespace {

std::string TempPath(const std::string& name) {
  return "/tmp/fluid_program_desc_test_" + std::to_string(::getpid()) + "_" +
         name;
}

proto::TrainingJob SmallJob() {
  proto::TrainingJob job;
  job.set_version(kProgramVersion);
  *job.mutable_main() = NewProgram();
  *job.mutable_startup() = NewProgram();
  AddVarDesc(job.mutable_main()->mutable_blocks(0), "x", DataType::kFloat32,
             Shape{-1, 4});
  *job.mutable_main()->mutable_blocks(0)->add_ops() =
      MakeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"y"}}},
             {{"x_num_col_dims", 1}});
  job.add_feed_names("x");
  job.set_loss_name("y");
  return job;
}

std::string LoadError(const std::string& path) {
  try {
    LoadJob(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ProgramDesc, JobRoundTrip) {
  std::string path = TempPath("job.pb");
  proto::TrainingJob job = SmallJob();
  SaveJob(job, path);
  proto::TrainingJob back = LoadJob(path);
  EXPECT_EQ(back.SerializeAsString(), job.SerializeAsString());
  ::unlink(path.c_str());
}

TEST(ProgramDesc, MissingTruncatedCorruptAndNewerFilesAreNamedErrors) {
  std::string missing = TempPath("missing.pb");
  EXPECT_NE(LoadError(missing).find(missing), std::string::npos);

  std::string bytes = SmallJob().SerializeAsString();
  std::string truncated = TempPath("truncated.pb");
  std::ofstream(truncated, std::ios::binary)
      << bytes.substr(0, bytes.size() / 2);
  std::string msg = LoadError(truncated);
  EXPECT_NE(msg.find(truncated), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated or corrupt"), std::string::npos) << msg;

  std::string corrupt = TempPath("corrupt.pb");
  std::ofstream(corrupt, std::ios::binary) << "\xff\xff\xff\xff garbage";
  EXPECT_NE(LoadError(corrupt).find("truncated or corrupt"), std::string::npos);

  std::string empty = TempPath("empty.pb");
  std::ofstream(empty, std::ios::binary) << "";
  EXPECT_NE(LoadError(empty).find("empty"), std::string::npos);

  proto::TrainingJob newer = SmallJob();
  newer.mutable_main()->set_version(kProgramVersion + 7);
  std::string newer_path = TempPath("newer.pb");
  SaveJob(newer, newer_path);
  msg = LoadError(newer_path);
  EXPECT_NE(msg.find("newer than this build"), std::string::npos) << msg;
  for (const auto& p : {truncated, corrupt, empty, newer_path})
    ::unlink(p.c_str());
}

TEST(ProgramDesc, OpHelpers) {
  proto::OpDesc op = MakeOp("mul", {{"X", {"a"}}, {"Y", {"b"}}},
                            {{"Out", {"c"}}}, {{"x_num_col_dims", 2}});
  EXPECT_EQ(OpInput(op, "X"), std::vector<std::string>{"a"});
  EXPECT_TRUE(OpInput(op, "Z").empty());
  EXPECT_EQ(GetOpAttrAs<int32_t>(op, "x_num_col_dims"), 2);
  RenameOpInput(&op, "a", "z");
  EXPECT_EQ(OpInputNames(op), (std::vector<std::string>{"z", "b"}));
  SetOpAttr(&op, kOpRoleAttr, OpRole::kBackward | OpRole::kLoss);
  EXPECT_EQ(OpRoleOf(op), 0x101);
  EXPECT_EQ(OpToString(op), "mul(X=[z], Y=[b]) -> (Out=[c])");
  EXPECT_THROW(GetOpAttr(op, "nope"), Error);
}

// Job files are written through FileSystem::WriteFile: a whole new file
// replaces the old one.
TEST(ProgramDesc, JobFileIsReplacedWhole) {
  std::string path = TempPath("atomic.pb");
  proto::TrainingJob job = SmallJob();
  SaveJob(job, path);
  job.add_feed_names("second_feed");
  SaveJob(job, path);
  EXPECT_EQ(LoadJob(path).feed_names_size(), 2);
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace fluid
