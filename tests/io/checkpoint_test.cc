// Checkpoint tests: exact round trips, the all-or-nothing loader and its
// mismatch report, and crash safety, checked by a file system that "dies"
// inside any chosen call of a save.
#include "src/io/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "src/framework/program_desc.h"
#include "src/io/crc32.h"
#include "tests/io/checkpoint_testing.h"

namespace fluid {
namespace {

using checkpoint_testing::BitsAs;
using checkpoint_testing::Bytes;
using checkpoint_testing::ExpectModel;
using checkpoint_testing::List;
using checkpoint_testing::LoadError;
using checkpoint_testing::LoadModel;
using checkpoint_testing::ModelNames;
using checkpoint_testing::ModelProgram;
using checkpoint_testing::ModelSpecs;
using checkpoint_testing::OnlyFileOf;
using checkpoint_testing::ReadManifestOf;
using checkpoint_testing::SaveModel;
using checkpoint_testing::SetModel;
using checkpoint_testing::SetVar;
using checkpoint_testing::TempDir;
using checkpoint_testing::WriteRaw;
using checkpoint_testing::WriteSealedManifest;
using ::testing::HasSubstr;

// Stands in for a process that dies inside a file-system call. Mutating calls
// (WriteFile, CreateDir, RemoveAll, Rename) are numbered from 0; the one
// numbered `crash_at` does part of its work and throws, and so does every
// call after it. What the dying call leaves behind:
//   WriteFile  a prefix of the bytes in a temp file (an atomic write torn
//              part way), or, with torn_target, in the target itself (a
//              non-atomic write; allowed only for files nobody reads until
//              the commit);
//   RemoveAll  the directory with one file gone (a removal cut short);
//   Rename, CreateDir  nothing.
// Not thread-safe (tests drive it from one thread).
class CrashingFileSystem : public FileSystem {
 public:
  explicit CrashingFileSystem(int64_t crash_at = -1)
      : base_(DefaultFileSystem()), crash_at_(crash_at) {}

  // Crash instead in the first WriteFile whose path contains `needle`.
  void CrashOnWriteTo(const std::string& needle, bool torn_target) {
    needle_ = needle;
    torn_target_ = torn_target;
  }
  bool crashed() const { return crashed_; }
  int64_t mutating_calls() const { return calls_; }

  void WriteFile(const std::string& path, std::string_view bytes) override {
    bool hit = !needle_.empty() && path.find(needle_) != std::string::npos;
    if (Begin(hit)) {
      std::string_view prefix = bytes.substr(0, bytes.size() / 2);
      base_->WriteFile(torn_target_ ? path : path + ".tmp.crashed", prefix);
      Die("WriteFile", path);
    }
    base_->WriteFile(path, bytes);
  }
  std::string ReadFile(const std::string& path) override {
    Alive();
    return base_->ReadFile(path);
  }
  void CreateDir(const std::string& path) override {
    if (Begin(false)) Die("CreateDir", path);
    base_->CreateDir(path);
  }
  std::vector<std::string> ListDir(const std::string& path) override {
    Alive();
    return base_->ListDir(path);
  }
  void RemoveAll(const std::string& path) override {
    if (Begin(false)) {
      if (std::filesystem::is_directory(path)) {
        std::vector<std::string> names = base_->ListDir(path);
        if (!names.empty()) base_->RemoveAll(path + "/" + names.front());
      }
      Die("RemoveAll", path);
    }
    base_->RemoveAll(path);
  }
  void Rename(const std::string& from, const std::string& to) override {
    if (Begin(false)) Die("Rename", from);
    base_->Rename(from, to);
  }
  bool Exists(const std::string& path) override {
    Alive();
    return base_->Exists(path);
  }
  FileStat Stat(const std::string& path) override {
    Alive();
    return base_->Stat(path);
  }

 private:
  void Alive() {
    if (crashed_) FLUID_THROW(ErrorCode::kAborted, "process is dead");
  }
  // Counts a mutating call; true when it is the one to crash in.
  bool Begin(bool needle_hit) {
    Alive();
    int64_t n = calls_++;
    return needle_hit || n == crash_at_;
  }
  [[noreturn]] void Die(const char* op, const std::string& path) {
    crashed_ = true;
    FLUID_THROW(ErrorCode::kAborted, "injected crash in ", op, "('", path,
                "')");
  }

  FileSystem* base_;
  int64_t crash_at_;
  std::string needle_;
  bool torn_target_ = false;
  bool crashed_ = false;
  int64_t calls_ = 0;
};

// Nothing but checkpoints and LATEST: no staging, aside or temp leftovers.
void ExpectTidy(const std::string& dir) {
  for (const std::string& name : List(dir)) {
    EXPECT_TRUE(name == "LATEST" || (name.rfind("ckpt-", 0) == 0 &&
                                     name.find('.') == std::string::npos))
        << "leftover '" << name << "' in " << dir;
  }
}

// ---------------------------------------------------------------- round trip

TEST(CheckpointTest, RoundTripIsBitwiseExact) {
  TempDir dir;
  Scope scope;
  const float fnan = BitsAs<float>(0x7fc00123u);  // NaN with a payload
  const double dnan = BitsAs<double>(0x7ff8000000000abcull);
  SetVar<float>(
      &scope, "f32", Shape{2, 5},
      {0.0f, -0.0f, 1.0f / 3, std::numeric_limits<float>::denorm_min(),
       std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(),
       std::numeric_limits<float>::infinity(),
       -std::numeric_limits<float>::infinity(), fnan, 1e-30f});
  SetVar<double>(
      &scope, "f64", Shape{2, 2, 2},
      {0.0, -0.0, 1.0 / 3, std::numeric_limits<double>::denorm_min(),
       std::numeric_limits<double>::max(),
       -std::numeric_limits<double>::infinity(), dnan, 3.141592653589793});
  SetVar<int64_t>(&scope, "i64", Shape{4},
                  {0, -1, std::numeric_limits<int64_t>::min(),
                   std::numeric_limits<int64_t>::max()});
  SetVar<int32_t>(&scope, "i32", Shape{2}, {-7, 1 << 30});
  SetVar<float>(&scope, "zero_size", Shape{3, 0}, {});
  SetVar<double>(&scope, "one", Shape{1}, {2.5});
  SetVar<int64_t>(&scope, "scalar", Shape{}, {42});
  std::vector<std::string> names = {"f32", "f64",       "i64",   "i32",
                                    "one", "zero_size", "scalar"};
  SaveCheckpoint(scope, names, dir.path(), CheckpointInfo{3, 1});

  std::vector<CheckpointVarSpec> specs;
  for (const std::string& n : names) {
    const Tensor& t = scope.GetVar(n)->GetTensor();
    specs.push_back({n, t.dtype(), t.shape()});
  }
  Scope loaded;
  LoadCheckpoint(&loaded, specs, dir.path());
  for (const std::string& n : names) {
    const Tensor& t = loaded.GetVar(n)->GetTensor();
    EXPECT_EQ(t.dtype(), scope.GetVar(n)->GetTensor().dtype()) << n;
    EXPECT_EQ(t.shape(), scope.GetVar(n)->GetTensor().shape()) << n;
    EXPECT_TRUE(t.place().is_cpu()) << n;
    EXPECT_EQ(Bytes(loaded, n), Bytes(scope, n)) << n;
  }
  EXPECT_EQ(loaded.GetVar("zero_size")->GetTensor().numel(), 0);
  EXPECT_EQ(loaded.GetVar("one")->GetTensor().data<double>()[0], 2.5);
}

TEST(CheckpointTest, InfoRoundTrips) {
  TempDir dir;
  Scope scope;
  SetModel(&scope, 1);
  const int64_t big_step = int64_t{1} << 40;
  SaveCheckpoint(scope, ModelNames(), dir.path(), CheckpointInfo{big_step, 17});
  Scope loaded;
  CheckpointInfo info = LoadCheckpoint(&loaded, ModelProgram(), dir.path());
  EXPECT_EQ(info.step, big_step);
  EXPECT_EQ(info.epoch, 17);
  EXPECT_EQ(DefaultFileSystem()->ReadFile(dir / "LATEST"),
            "ckpt-" + std::to_string(big_step));
  ExpectModel(loaded, 1);
}

TEST(CheckpointTest, LayoutAndManifest) {
  TempDir dir;
  SaveModel(dir.path(), 20);
  EXPECT_EQ(List(dir.path()), (std::vector<std::string>{"LATEST", "ckpt-20"}));
  proto::CheckpointManifest m;
  ASSERT_TRUE(m.ParseFromString(
      DefaultFileSystem()->ReadFile(dir / "ckpt-20/manifest.pb")));
  EXPECT_EQ(m.step(), 20);
  EXPECT_EQ(m.epoch(), 2);
  ASSERT_EQ(m.entries_size(), 4);
  std::set<std::string> files = {"manifest.pb"};
  for (const auto& e : m.entries()) {
    files.insert(e.file());
    std::string data =
        DefaultFileSystem()->ReadFile(dir / "ckpt-20/" + e.file());
    EXPECT_EQ(data.size(), e.bytes()) << e.name();
    EXPECT_EQ(Crc32(data), e.crc32()) << e.name();
  }
  const auto& w = m.entries(0);
  EXPECT_EQ(w.name(), "fc_0.w");
  EXPECT_EQ(w.dtype(), proto::FP32);
  EXPECT_EQ(std::vector<int64_t>(w.shape().begin(), w.shape().end()),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(w.bytes(), 48u);
  std::vector<std::string> on_disk = List(dir / "ckpt-20");
  EXPECT_EQ(std::set<std::string>(on_disk.begin(), on_disk.end()), files);
}

TEST(CheckpointTest, AwkwardVarNamesGetSafeUniqueFiles) {
  TempDir dir;
  Scope scope;
  std::vector<std::string> names = {"a/b@GRAD",
                                    "../../escape",
                                    ".",
                                    "..",
                                    "x%41",
                                    "xA",
                                    "W",
                                    "w",
                                    "with space",
                                    "\xe5\x90\x8d",
                                    "manifest.pb",
                                    std::string(300, 'n'),
                                    std::string(300, 'n') + "2"};
  for (size_t i = 0; i < names.size(); ++i)
    SetVar<int32_t>(&scope, names[i], Shape{1}, {static_cast<int32_t>(i)});
  SaveCheckpoint(scope, names, dir.path(), CheckpointInfo{1, 0});

  std::vector<std::string> files = List(dir / "ckpt-1");
  EXPECT_EQ(files.size(), names.size() + 1);  // + manifest.pb
  std::set<std::string> folded;
  for (const std::string& f : files) {
    EXPECT_EQ(f.find('/'), std::string::npos);
    EXPECT_LE(f.size(), 255u);
    std::string lower = f;
    for (char& c : lower) c = static_cast<char>(std::tolower(c));
    EXPECT_TRUE(folded.insert(lower).second) << "case clash: " << f;
    EXPECT_FALSE(std::filesystem::is_directory(dir / "ckpt-1/" + f)) << f;
  }
  std::vector<CheckpointVarSpec> specs;
  for (const std::string& n : names)
    specs.push_back({n, DataType::kInt32, Shape{1}});
  Scope loaded;
  LoadCheckpoint(&loaded, specs, dir.path());
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(loaded.GetVar(names[i])->GetTensor().data<int32_t>()[0],
              static_cast<int32_t>(i))
        << names[i];
  EXPECT_FALSE(std::filesystem::exists("/tmp/escape.tensor"));
}

TEST(CheckpointTest, PersistableVarsAreBlockZeroPersistablesSorted) {
  proto::ProgramDesc p = NewProgram();
  AddVarDesc(p.mutable_blocks(0), "z", DataType::kFloat32, Shape{2}, true);
  AddVarDesc(p.mutable_blocks(0), "tmp", DataType::kFloat32, Shape{2}, false);
  AddVarDesc(p.mutable_blocks(0), "a", DataType::kInt64, Shape{1}, true);
  proto::BlockDesc* sub = p.add_blocks();
  sub->set_idx(1);
  AddVarDesc(sub, "inner", DataType::kFloat32, Shape{2}, true);
  EXPECT_EQ(PersistableVars(p), (std::vector<std::string>{"a", "z"}));
  std::vector<CheckpointVarSpec> specs = PersistableVarSpecs(p);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].dtype, DataType::kInt64);
  EXPECT_EQ(specs[1].shape, Shape{2});
}

TEST(CheckpointTest, HasCheckpoint) {
  TempDir dir;
  EXPECT_FALSE(HasCheckpoint(dir.path()));
  EXPECT_FALSE(HasCheckpoint(dir / "does/not/exist"));
  SaveModel(dir / "nested/run", 5);  // creates the directories
  EXPECT_TRUE(HasCheckpoint(dir / "nested/run"));
  EXPECT_EQ(LoadModel(dir / "nested/run"), 5);
}

TEST(CheckpointTest, NoCheckpointIsNotFound) {
  TempDir dir;
  Scope scope;
  Error e = LoadError(&scope, ModelProgram(), dir.path());
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_THAT(e.what(), HasSubstr("LATEST"));

  WriteRaw(dir / "LATEST", "ckpt-9");
  e = LoadError(&scope, ModelProgram(), dir.path());
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_THAT(e.what(), HasSubstr("ckpt-9"));

  WriteRaw(dir / "LATEST", "garbage");
  e = LoadError(&scope, ModelProgram(), dir.path());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("corrupt"));
  EXPECT_TRUE(scope.LocalVarNames().empty());
}

TEST(CheckpointTest, KeepsOnlyTheNewestTwo) {
  TempDir dir;
  for (int64_t step = 10; step <= 50; step += 10) {
    SaveModel(dir.path(), step);
    EXPECT_EQ(LoadModel(dir.path()), step);
  }
  EXPECT_EQ(List(dir.path()),
            (std::vector<std::string>{"LATEST", "ckpt-40", "ckpt-50"}));
  // A new run starting over at a lower step: its checkpoint is LATEST and is
  // never pruned; the later ones of the old run are left alone.
  SaveModel(dir.path(), 5);
  EXPECT_EQ(LoadModel(dir.path()), 5);
  EXPECT_EQ(List(dir.path()), (std::vector<std::string>{"LATEST", "ckpt-40",
                                                        "ckpt-5", "ckpt-50"}));
  SaveModel(dir.path(), 6);
  SaveModel(dir.path(), 7);
  EXPECT_EQ(List(dir.path()),
            (std::vector<std::string>{"LATEST", "ckpt-40", "ckpt-50", "ckpt-6",
                                      "ckpt-7"}));
}

TEST(CheckpointTest, ResavingTheSameStepReplacesIt) {
  TempDir dir;
  Scope scope;
  SetModel(&scope, 1);
  SaveCheckpoint(scope, ModelNames(), dir.path(), CheckpointInfo{30, 3});
  SetModel(&scope, 30);
  SaveCheckpoint(scope, ModelNames(), dir.path(), CheckpointInfo{30, 3});
  EXPECT_EQ(LoadModel(dir.path()), 30);
  EXPECT_EQ(List(dir.path()), (std::vector<std::string>{"LATEST", "ckpt-30"}));
}

// ---------------------------------------------------------------- save errors

TEST(CheckpointTest, SaveRefusesBadVarsWithOneErrorAndWritesNothing) {
  TempDir dir;
  Scope scope;
  SetModel(&scope, 1);
  scope.Var("never_written");
  *scope.Var("not_a_tensor")->GetMutable<int>() = 3;
  scope.Var("no_memory")->GetMutableTensor()->Resize(Shape{2});
  std::vector<std::string> names = {"fc_0.w",        "absent",
                                    "never_written", "not_a_tensor",
                                    "no_memory",     "fc_0.w"};
  try {
    SaveCheckpoint(scope, names, dir / "out", CheckpointInfo{1, 0});
    FAIL() << "SaveCheckpoint accepted bad vars";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(std::string(e.what()),
              "cannot save checkpoint to '" + dir / "out" +
                  "': absent: not in the scope; never_written: was never "
                  "written; not_a_tensor: holds a non-tensor value; "
                  "no_memory: tensor has no memory; fc_0.w: listed twice");
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
}

TEST(CheckpointTest, SavesFromAncestorScopes) {
  TempDir dir;
  Scope root;
  SetModel(&root, 2);
  Scope& kid = root.NewScope();
  SaveCheckpoint(kid, ModelNames(), dir.path(), CheckpointInfo{2, 0});
  EXPECT_EQ(LoadModel(dir.path()), 2);
}

// --------------------------------------------------------- mismatch reports

TEST(CheckpointTest, MismatchReportNamesEveryVarOnceAndLoadsNothing) {
  TempDir dir;
  Scope saved;
  SetVar<float>(&saved, "fc_0.w", Shape{8, 4}, std::vector<float>(32, 1.0f));
  SetVar<float>(&saved, "fc_0.b", Shape{4}, {1, 2, 3, 4});
  SetVar<double>(&saved, "lr", Shape{1}, {0.1});
  SetVar<float>(&saved, "old_var", Shape{2}, {5, 6});
  SaveCheckpoint(saved, {"fc_0.w", "fc_0.b", "lr", "old_var"}, dir.path(),
                 CheckpointInfo{7, 0});

  proto::ProgramDesc program = NewProgram();
  proto::BlockDesc* b = program.mutable_blocks(0);
  AddVarDesc(b, "fc_0.w", DataType::kFloat32, Shape{8, 2}, true);
  AddVarDesc(b, "fc_0.b", DataType::kFloat32, Shape{4}, true);
  AddVarDesc(b, "lr", DataType::kFloat32, Shape{1}, true);
  AddVarDesc(b, "fc_1.b", DataType::kFloat32, Shape{2}, true);

  Scope scope;
  SetVar<float>(&scope, "fc_0.b", Shape{4}, {9, 9, 9, 9});
  Error e = LoadError(&scope, program, dir.path());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(std::string(e.what()),
            "checkpoint '" + dir / "ckpt-7" +
                "' does not match the program: "
                "fc_0.w: shape [8, 4] in checkpoint, [8, 2] in program; "
                "fc_1.b: missing from checkpoint; "
                "lr: dtype float64 in checkpoint, float32 in program; "
                "old_var: in checkpoint, not in program");
  // fc_0.b matched, but nothing is loaded unless everything matches.
  EXPECT_EQ(scope.LocalVarNames(), std::vector<std::string>{"fc_0.b"});
  EXPECT_EQ(scope.GetVar("fc_0.b")->GetTensor().data<float>()[0], 9.0f);
}

TEST(CheckpointTest, UnknownDimsInTheProgramMatchAnySize) {
  TempDir dir;
  Scope saved;
  SetVar<float>(&saved, "table", Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  SaveCheckpoint(saved, {"table"}, dir.path(), CheckpointInfo{1, 0});
  Scope scope;
  LoadCheckpoint(&scope, {{"table", DataType::kFloat32, Shape{-1, 2}}},
                 dir.path());
  EXPECT_EQ(scope.GetVar("table")->GetTensor().shape(), (Shape{3, 2}));
}

TEST(CheckpointTest, NonTensorInTheScopeIsReported) {
  TempDir dir;
  SaveModel(dir.path(), 1);
  Scope scope;
  *scope.Var("global_step")->GetMutable<int>() = 1;
  Error e = LoadError(&scope, ModelProgram(), dir.path());
  EXPECT_THAT(e.what(), HasSubstr("global_step: the scope holds a non-tensor"));
  EXPECT_EQ(scope.LocalVarNames(), std::vector<std::string>{"global_step"});
}

// ---------------------------------------------------------- damaged files

class CheckpointDamageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SaveModel(dir_.path(), 10);
    SetModel(&scope_, 99);  // what must survive a failed load
    file_ = OnlyFileOf(dir_ / "ckpt-10", "fc_0.w");
    original_ = DefaultFileSystem()->ReadFile(file_);
  }
  Error Load() { return LoadError(&scope_, ModelProgram(), dir_.path()); }
  void ExpectUntouched() { ExpectModel(scope_, 99); }

  TempDir dir_;
  Scope scope_;
  std::string file_;
  std::string original_;
};

TEST_F(CheckpointDamageTest, CorruptByteIsACrcErrorNamingTheVar) {
  std::string bad = original_;
  bad[17] ^= 0x04;
  WriteRaw(file_, bad);
  Error e = Load();
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("fc_0.w: file '" + file_ + "' is corrupt"));
  EXPECT_THAT(e.what(), HasSubstr("crc32"));
  EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("global_step")));
  ExpectUntouched();
}

TEST_F(CheckpointDamageTest, TruncatedFile) {
  WriteRaw(file_, original_.substr(0, 12));
  Error e = Load();
  EXPECT_THAT(e.what(), HasSubstr("fc_0.w: file '" + file_ +
                                  "' is truncated: 12 of 48 bytes"));
  ExpectUntouched();
}

TEST_F(CheckpointDamageTest, OverlongFile) {
  WriteRaw(file_, original_ + "x");
  EXPECT_THAT(Load().what(), HasSubstr("has 49 bytes, the manifest says 48"));
  ExpectUntouched();
}

TEST_F(CheckpointDamageTest, MissingFile) {
  std::filesystem::remove(file_);
  EXPECT_THAT(Load().what(),
              HasSubstr("fc_0.w: file '" + file_ + "' is missing"));
  ExpectUntouched();
}

TEST_F(CheckpointDamageTest, EveryTruncationOfTheManifestIsRejected) {
  const std::string path = dir_ / "ckpt-10/manifest.pb";
  const std::string manifest = DefaultFileSystem()->ReadFile(path);
  for (size_t n = 0; n < manifest.size(); ++n) {
    WriteRaw(path, manifest.substr(0, n));
    Error e = Load();
    EXPECT_THAT(e.what(), HasSubstr("manifest")) << "cut at " << n;
  }
  std::filesystem::remove(path);
  EXPECT_EQ(Load().code(), ErrorCode::kNotFound);
  ExpectUntouched();
}

TEST_F(CheckpointDamageTest, ManifestCannotPointOutsideTheCheckpoint) {
  proto::CheckpointManifest m = ReadManifestOf(dir_ / "ckpt-10");
  m.mutable_entries(0)->set_file("../LATEST");
  WriteSealedManifest(dir_ / "ckpt-10", m);
  EXPECT_THAT(Load().what(),
              HasSubstr("fc_0.w: manifest names an invalid file '../LATEST'"));
  ExpectUntouched();
}

TEST_F(CheckpointDamageTest, EveryProblemIsListed) {
  WriteRaw(file_, original_.substr(0, 4));
  std::filesystem::remove(OnlyFileOf(dir_ / "ckpt-10", "global_step"));
  std::string what = Load().what();
  EXPECT_THAT(what, HasSubstr("fc_0.w: file"));
  EXPECT_THAT(what, HasSubstr("global_step: file"));
  ExpectUntouched();
}

TEST(CheckpointTest, LoadOverwritesInPlaceSoViewsStayValid) {
  TempDir dir;
  SaveModel(dir.path(), 4);
  Scope scope;
  SetModel(&scope, 0);
  Tensor view;
  view.ShareDataWith(scope.GetVar("fc_0.w")->GetTensor());
  LoadCheckpoint(&scope, ModelProgram(), dir.path());
  ExpectModel(scope, 4);
  EXPECT_EQ(view.data<float>()[1], 4.25f);
}

// --------------------------------------------------------------- crashes

// A save that dies while writing a tensor file, the manifest or LATEST
// leaves the previous checkpoint as it was, and the next save succeeds.
struct CrashCase {
  const char* needle;
  bool torn_target;
};

class CheckpointCrashTest : public ::testing::TestWithParam<CrashCase> {};

TEST_P(CheckpointCrashTest, PreviousCheckpointSurvives) {
  TempDir dir;
  SaveModel(dir.path(), 10);
  CrashingFileSystem fs;
  fs.CrashOnWriteTo(GetParam().needle, GetParam().torn_target);
  try {
    SaveModel(dir.path(), 20, &fs);
    FAIL() << "the save did not crash";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kAborted);
    EXPECT_THAT(e.what(),
                HasSubstr("cannot save checkpoint '" + dir / "ckpt-20"));
  }
  ASSERT_TRUE(fs.crashed());
  EXPECT_TRUE(HasCheckpoint(dir.path()));
  EXPECT_EQ(LoadModel(dir.path()), 10);
  SaveModel(dir.path(), 30);
  EXPECT_EQ(LoadModel(dir.path()), 30);
  ExpectTidy(dir.path());
}

INSTANTIATE_TEST_SUITE_P(
    Checkpoint, CheckpointCrashTest,
    ::testing::Values(CrashCase{".tensor", false}, CrashCase{".tensor", true},
                      CrashCase{"manifest.pb", false},
                      CrashCase{"manifest.pb", true},
                      CrashCase{"LATEST", false}),
    [](const ::testing::TestParamInfo<CrashCase>& info) {
      std::string name = std::string(info.param.needle[0] == '.'   ? "Tensor"
                                     : info.param.needle[0] == 'm' ? "Manifest"
                                                                   : "Latest") +
                         (info.param.torn_target ? "TornInPlace" : "Atomic");
      return name;
    });

// Kills a save at every mutating file-system call in turn. After each crash
// the directory must load as exactly the old or the new checkpoint (the new
// one from the commit on, never again the old), and a later save must work
// and clean up after the crash.
void CrashEverywhere(const std::vector<int64_t>& before, int64_t step,
                     int seed_of_new) {
  bool committed = false;
  int64_t crash_at = 0;
  for (;; ++crash_at) {
    SCOPED_TRACE("crash at mutating call " + std::to_string(crash_at));
    TempDir dir;
    for (int64_t s : before) SaveModel(dir.path(), s);
    const int64_t old_step = LoadModel(dir.path());
    CrashingFileSystem fs(crash_at);
    Scope scope;
    SetModel(&scope, seed_of_new);
    try {
      SaveCheckpoint(scope, ModelNames(), dir.path(),
                     CheckpointInfo{step, step / 10}, &fs);
    } catch (const Error& e) {
      EXPECT_TRUE(fs.crashed()) << e.what();
    }
    Scope loaded;
    CheckpointInfo info = LoadCheckpoint(&loaded, ModelProgram(), dir.path());
    const bool is_new =
        info.step == step && Bytes(loaded, "global_step") == [&] {
          Scope s;
          SetModel(&s, seed_of_new);
          return Bytes(s, "global_step");
        }();
    if (is_new) {
      ExpectModel(loaded, seed_of_new);
      committed = true;
    } else {
      EXPECT_FALSE(committed) << "went back to the old checkpoint";
      EXPECT_EQ(info.step, old_step);
      ExpectModel(loaded, static_cast<int>(old_step));
    }
    // The restarted job saves again; what it had loaded stays on disk as the
    // fallback, intact.
    SaveModel(dir.path(), step + 100);
    EXPECT_EQ(LoadModel(dir.path()), step + 100);
    ExpectTidy(dir.path());
    WriteRaw(dir / "LATEST", "ckpt-" + std::to_string(info.step));
    Scope fallback;
    LoadCheckpoint(&fallback, ModelProgram(), dir.path());
    ExpectModel(fallback, is_new ? seed_of_new : static_cast<int>(old_step));
    if (!fs.crashed()) break;  // the save ran to the end
  }
  EXPECT_TRUE(committed);
  EXPECT_GT(crash_at, 8);  // the sweep really went through the save
}

TEST(CheckpointCrashSweepTest, FirstCheckpoint) {
  // No previous checkpoint: before the commit there is simply none.
  for (int64_t crash_at = 0;; ++crash_at) {
    TempDir dir;
    CrashingFileSystem fs(crash_at);
    try {
      SaveModel(dir.path(), 1, &fs);
    } catch (const Error&) {
    }
    if (HasCheckpoint(dir.path())) {
      EXPECT_EQ(LoadModel(dir.path()), 1);
    }
    if (!fs.crashed()) break;
  }
}

TEST(CheckpointCrashSweepTest, NewStep) { CrashEverywhere({10}, 20, 20); }

TEST(CheckpointCrashSweepTest, WhilePruning) {
  CrashEverywhere({10, 20, 30}, 40, 40);
}

TEST(CheckpointCrashSweepTest, ResavingTheLatestStep) {
  // Step 20 saved again with other values: the old ckpt-20 is swapped out.
  CrashEverywhere({10, 20}, 20, 77);
}

// ------------------------------------------------------------- pieces

TEST(CheckpointCrc32Test, KnownAnswersAndExtension) {
  EXPECT_EQ(Crc32(std::string_view("")), 0u);
  EXPECT_EQ(Crc32(std::string_view("123456789")), 0xCBF43926u);
  std::string a = "hello, ", b = "checkpoint";
  EXPECT_EQ(Crc32Extend(Crc32(a), b.data(), b.size()), Crc32(a + b));
}

TEST(CheckpointFileSystemTest, PosixBasics) {
  TempDir dir;
  FileSystem* fs = DefaultFileSystem();
  fs->CreateDir(dir / "a/b");
  fs->CreateDir(dir / "a/b");  // already there: fine
  fs->WriteFile(dir / "a/b/f", "one");
  fs->WriteFile(dir / "a/b/f", std::string("tw\0o", 4));
  EXPECT_EQ(fs->ReadFile(dir / "a/b/f"), std::string("tw\0o", 4));
  fs->WriteFile(dir / "a/b/empty", "");
  EXPECT_EQ(fs->ReadFile(dir / "a/b/empty"), "");
  EXPECT_EQ(fs->ListDir(dir / "a/b"), (std::vector<std::string>{"empty", "f"}));
  fs->Rename(dir / "a/b", dir / "a/c");
  EXPECT_FALSE(fs->Exists(dir / "a/b"));
  EXPECT_TRUE(fs->Exists(dir / "a/c/f"));
  try {
    fs->ReadFile(dir / "nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
  EXPECT_THROW(fs->ReadFile(dir / "a"), Error);
  EXPECT_THROW(fs->WriteFile(dir / "missing/f", "x"), Error);
  fs->RemoveAll(dir / "a");
  fs->RemoveAll(dir / "a");  // already gone: fine
  EXPECT_TRUE(fs->ListDir(dir.path()).empty());
  EXPECT_EQ(JoinPath("x/", "y"), "x/y");
  EXPECT_EQ(JoinPath("x", "y"), "x/y");
}

}  // namespace
}  // namespace fluid
