// Loading survives damage: a corrupt newest checkpoint gives way to the
// older one kept beside it, a missing LATEST to a scan of the directory,
// and files are checked (kind, size) before a byte of them is read.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include "src/io/checkpoint.h"
#include "tests/io/checkpoint_testing.h"

namespace fluid {
namespace {

using checkpoint_testing::ExpectModel;
using checkpoint_testing::LoadError;
using checkpoint_testing::LoadModel;
using checkpoint_testing::ModelProgram;
using checkpoint_testing::OnlyFileOf;
using checkpoint_testing::SaveModel;
using checkpoint_testing::SetModel;
using checkpoint_testing::TempDir;
using checkpoint_testing::WriteRaw;
using ::testing::HasSubstr;
using ::testing::Not;

void FlipByte(const std::string& path, size_t at) {
  std::string bytes = DefaultFileSystem()->ReadFile(path);
  ASSERT_LT(at, bytes.size()) << path;
  bytes[at] ^= 0x20;
  WriteRaw(path, bytes);
}

CheckpointInfo Load(Scope* scope, const std::string& dir) {
  return LoadCheckpoint(scope, ModelProgram(), dir);
}

TEST(CheckpointFallbackTest, CorruptNewestFallsBackToThePreviousOne) {
  TempDir dir;
  SaveModel(dir.path(), 10);
  SaveModel(dir.path(), 20);
  const std::string bad = OnlyFileOf(dir / "ckpt-20", "fc_0.w");
  FlipByte(bad, 5);
  Scope scope;
  CheckpointInfo info = Load(&scope, dir.path());
  EXPECT_EQ(info.step, 10);
  EXPECT_EQ(info.epoch, 1);
  EXPECT_EQ(info.path, dir / "ckpt-10");
  ExpectModel(scope, 10);
  ASSERT_EQ(info.skipped.size(), 1u);
  EXPECT_THAT(info.skipped[0],
              HasSubstr("checkpoint '" + dir / "ckpt-20" + "' is damaged"));
  EXPECT_THAT(info.skipped[0], HasSubstr("file '" + bad + "' is corrupt"));
  // The damaged one stays for inspection; the next save prunes it.
  EXPECT_TRUE(std::filesystem::exists(dir / "ckpt-20"));
}

TEST(CheckpointFallbackTest, MissingManifestOrFileFallsBackToo) {
  TempDir dir;
  SaveModel(dir.path(), 10);
  SaveModel(dir.path(), 20);
  std::filesystem::remove(OnlyFileOf(dir / "ckpt-20", "global_step"));
  EXPECT_EQ(LoadModel(dir.path()), 10);
  std::filesystem::remove(dir / "ckpt-20/manifest.pb");
  EXPECT_EQ(LoadModel(dir.path()), 10);
}

// A job that resumed from the fallback points LATEST at it, so that its
// next save keeps that checkpoint (not the damaged one) as the fallback.
TEST(CheckpointFallbackTest, RepointedLatestKeepsWhatTheJobResumedFrom) {
  TempDir dir;
  SaveModel(dir.path(), 10);
  SaveModel(dir.path(), 20);
  FlipByte(OnlyFileOf(dir / "ckpt-20", "fc_0.w"), 2);
  Scope scope;
  CheckpointInfo info = Load(&scope, dir.path());
  ASSERT_EQ(info.step, 10);
  RepointLatest(dir.path(), info.path);
  EXPECT_EQ(DefaultFileSystem()->ReadFile(dir / "LATEST"), "ckpt-10");
  SaveModel(dir.path(), 14);
  EXPECT_TRUE(std::filesystem::exists(dir / "ckpt-10"));
  FlipByte(OnlyFileOf(dir / "ckpt-14", "global_step"), 0);
  EXPECT_EQ(LoadModel(dir.path()), 10);
}

TEST(CheckpointFallbackTest, NewerUncommittedCheckpointsAreNotCandidates) {
  TempDir dir;
  SaveModel(dir.path(), 10);
  SaveModel(dir.path(), 20);
  SaveModel(dir.path(), 30);  // keeps ckpt-20 and ckpt-30
  WriteRaw(dir / "LATEST", "ckpt-20");
  FlipByte(OnlyFileOf(dir / "ckpt-20", "fc_0.w"), 0);
  // Nothing older than ckpt-20 is left, and ckpt-30 was never committed as
  // far as LATEST says: no intact checkpoint.
  Scope scope;
  Error e = LoadError(&scope, ModelProgram(), dir.path());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("ckpt-20' is damaged"));
  EXPECT_THAT(e.what(), Not(HasSubstr("ckpt-30")));
  EXPECT_TRUE(scope.LocalVarNames().empty());
}

TEST(CheckpointFallbackTest, EveryDamagedCheckpointIsNamedWhenNoneIsIntact) {
  TempDir dir;
  SaveModel(dir.path(), 10);
  SaveModel(dir.path(), 20);
  FlipByte(OnlyFileOf(dir / "ckpt-20", "fc_0.w"), 0);
  FlipByte(OnlyFileOf(dir / "ckpt-10", "global_step"), 0);
  Scope scope;
  SetModel(&scope, 99);
  Error e = LoadError(&scope, ModelProgram(), dir.path());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("no intact checkpoint in '" + dir.path()));
  EXPECT_THAT(e.what(), HasSubstr("ckpt-20' is damaged: fc_0.w"));
  EXPECT_THAT(e.what(), HasSubstr("ckpt-10' is damaged: global_step"));
  ExpectModel(scope, 99);
}

TEST(CheckpointFallbackTest, AnIntactCheckpointOfAnotherProgramIsAnError) {
  TempDir dir;
  SaveModel(dir.path(), 10);
  Scope other;
  SetModel(&other, 20);
  SaveCheckpoint(other, {"fc_0.w", "global_step"}, dir.path(),
                 CheckpointInfo{20, 2});
  // ckpt-10 would match, but a mismatch means the wrong directory or the
  // wrong program: never quietly go back to an older checkpoint for it.
  Scope scope;
  Error e = LoadError(&scope, ModelProgram(), dir.path());
  EXPECT_THAT(e.what(), HasSubstr("ckpt-20' does not match the program"));
}

TEST(CheckpointFallbackTest, WithoutLatestTheNewestIntactIsFoundByScanning) {
  TempDir dir;
  SaveModel(dir.path(), 10);
  SaveModel(dir.path(), 20);
  std::filesystem::remove(dir / "LATEST");
  EXPECT_FALSE(HasCheckpoint(dir.path()));
  Scope scope;
  CheckpointInfo info = Load(&scope, dir.path());
  EXPECT_EQ(info.step, 20);
  ExpectModel(scope, 20);
  ASSERT_EQ(info.skipped.size(), 1u);
  EXPECT_THAT(info.skipped[0], HasSubstr("LATEST' does not exist"));

  // Damaged newest and garbage in LATEST: the scan still finds ckpt-10.
  WriteRaw(dir / "LATEST", "garbage");
  FlipByte(OnlyFileOf(dir / "ckpt-20", "fc_0.w"), 3);
  Scope again;
  info = Load(&again, dir.path());
  EXPECT_EQ(info.step, 10);
  ASSERT_EQ(info.skipped.size(), 2u);
  EXPECT_THAT(info.skipped[0], HasSubstr("corrupt"));
  EXPECT_THAT(info.skipped[1], HasSubstr("ckpt-20' is damaged"));
}

TEST(CheckpointFallbackTest, LatestNamingAMissingCheckpointFallsBack) {
  TempDir dir;
  SaveModel(dir.path(), 10);
  WriteRaw(dir / "LATEST", "ckpt-40");
  EXPECT_EQ(LoadModel(dir.path()), 10);
}

TEST(CheckpointFallbackTest, TryLoadReportsNothingUsableWithoutThrowing) {
  TempDir dir;
  Scope scope;
  CheckpointInfo info;
  std::string why;
  EXPECT_FALSE(
      TryLoadCheckpoint(&scope, ModelProgram(), dir.path(), &info, &why));
  EXPECT_THAT(why, HasSubstr("LATEST"));
  SaveModel(dir.path(), 10);
  FlipByte(OnlyFileOf(dir / "ckpt-10", "fc_0.w"), 1);
  EXPECT_FALSE(
      TryLoadCheckpoint(&scope, ModelProgram(), dir.path(), &info, &why));
  EXPECT_THAT(why, HasSubstr("ckpt-10' is damaged"));
  EXPECT_TRUE(scope.LocalVarNames().empty());
  SaveModel(dir.path(), 20);
  EXPECT_TRUE(
      TryLoadCheckpoint(&scope, ModelProgram(), dir.path(), &info, &why));
  EXPECT_EQ(info.step, 20);
}

TEST(CheckpointFallbackTest, RemoveCheckpointsLeavesOtherFiles) {
  TempDir dir;
  SaveModel(dir.path(), 10);
  SaveModel(dir.path(), 20);
  WriteRaw(dir / "notes.txt", "mine");
  EXPECT_EQ(RemoveCheckpoints(dir.path()), 2);
  EXPECT_EQ(DefaultFileSystem()->ListDir(dir.path()),
            std::vector<std::string>{"notes.txt"});
  EXPECT_EQ(RemoveCheckpoints(dir / "missing"), 0);
}

// ------------------------------------------- files checked before reading

class CheckpointFileKindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SaveModel(dir_.path(), 10);
    file_ = OnlyFileOf(dir_ / "ckpt-10", "fc_0.w");
  }
  TempDir dir_;
  std::string file_;
};

TEST_F(CheckpointFileKindTest, HugeSparseFileIsRefusedBeforeReading) {
  // 30 GB of holes: reading it whole would exhaust memory.
  const uint64_t huge = uint64_t{30} << 30;
  ASSERT_EQ(::truncate(file_.c_str(), static_cast<off_t>(huge)), 0);
  Scope scope;
  Error e = LoadError(&scope, ModelProgram(), dir_.path());
  EXPECT_THAT(e.what(),
              HasSubstr("fc_0.w: file '" + file_ + "' has " +
                        std::to_string(huge) + " bytes, the manifest says 48"));
}

TEST_F(CheckpointFileKindTest, SymlinkToADeviceIsRefused) {
  std::filesystem::remove(file_);
  std::filesystem::create_symlink("/dev/zero", file_);
  Scope scope;
  Error e = LoadError(&scope, ModelProgram(), dir_.path());
  EXPECT_THAT(e.what(), HasSubstr("fc_0.w: file '" + file_ +
                                  "' is not a regular file (a device, fifo or "
                                  "socket), the manifest says 48 bytes"));
}

TEST_F(CheckpointFileKindTest, FifoIsRefusedWithoutBlocking) {
  std::filesystem::remove(file_);
  ASSERT_EQ(::mkfifo(file_.c_str(), 0600), 0);
  Scope scope;
  EXPECT_THAT(LoadError(&scope, ModelProgram(), dir_.path()).what(),
              HasSubstr("is not a regular file"));
}

TEST_F(CheckpointFileKindTest, DirectoryIsRefused) {
  std::filesystem::remove(file_);
  std::filesystem::create_directory(file_);
  Scope scope;
  EXPECT_THAT(LoadError(&scope, ModelProgram(), dir_.path()).what(),
              HasSubstr("is not a regular file (a directory)"));
}

TEST_F(CheckpointFileKindTest, DeviceManifestAndLatestAreRefused) {
  const std::string manifest = dir_ / "ckpt-10/manifest.pb";
  std::filesystem::remove(manifest);
  std::filesystem::create_symlink("/dev/zero", manifest);
  Scope scope;
  EXPECT_THAT(LoadError(&scope, ModelProgram(), dir_.path()).what(),
              HasSubstr("'" + manifest + "' is not a regular file"));
  std::filesystem::remove(dir_ / "LATEST");
  std::filesystem::create_symlink("/dev/zero", dir_ / "LATEST");
  EXPECT_THAT(LoadError(&scope, ModelProgram(), dir_.path()).what(),
              HasSubstr("LATEST' is not a regular file"));
}

// ------------------------------------------------ writable before training

TEST(CheckpointDirProbeTest, WritableDirectoryIsCreatedAndLeftClean) {
  TempDir dir;
  CheckCheckpointDirWritable(dir / "a/b");
  EXPECT_TRUE(std::filesystem::is_directory(dir / "a/b"));
  EXPECT_TRUE(DefaultFileSystem()->ListDir(dir / "a/b").empty());
}

TEST(CheckpointDirProbeTest, UnwritableDirectoryNamesItAndTheCause) {
  TempDir dir;
  WriteRaw(dir / "file", "x");
  try {
    CheckCheckpointDirWritable(dir / "file/ckpt");
    FAIL() << "a directory under a regular file passed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIO);
    EXPECT_EQ(e.os_errno(), ENOTDIR);
    EXPECT_THAT(e.what(), HasSubstr("checkpoint directory '" +
                                    dir / "file/ckpt" + "' is not writable"));
  }
  try {
    CheckCheckpointDirWritable("/proc/fluid-forbidden");
    FAIL() << "a directory under /proc passed";
  } catch (const Error& e) {
    EXPECT_NE(e.os_errno(), 0);
    EXPECT_THAT(e.what(), HasSubstr("/proc/fluid-forbidden"));
  }
}

TEST(CheckpointDirProbeTest, SaveErrorsKeepTheErrno) {
  TempDir dir;
  WriteRaw(dir / "file", "x");
  Scope scope;
  SetModel(&scope, 1);
  try {
    SaveCheckpoint(scope, {"fc_0.w"}, dir / "file", CheckpointInfo{1, 0});
    FAIL() << "saved over a regular file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIO);
    EXPECT_EQ(e.os_errno(), ENOTDIR);
  }
}

}  // namespace
}  // namespace fluid
