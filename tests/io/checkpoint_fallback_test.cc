// Loading survives damage: a corrupt newest checkpoint gives way to the
// older one kept beside it, a missing LATEST to a scan of the directory,
// and files are checked (kind, size) before a byte of them is read.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "src/io/checkpoint.h"
#include "src/io/checkpoint_internal.h"
#include "src/io/crc32.h"
#include "tests/io/checkpoint_testing.h"

namespace fluid {
namespace {

using checkpoint_testing::ExpectModel;
using checkpoint_testing::LoadError;
using checkpoint_testing::LoadModel;
using checkpoint_testing::ModelNames;
using checkpoint_testing::ModelProgram;
using checkpoint_testing::OnlyFileOf;
using checkpoint_testing::ReadManifestOf;
using checkpoint_testing::SaveModel;
using checkpoint_testing::SetModel;
using checkpoint_testing::SetVar;
using checkpoint_testing::TempDir;
using checkpoint_testing::WriteRaw;
using checkpoint_testing::WriteSealedManifest;
using checkpoint_testing::WriteUnsealedManifest;
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

// ------------------------------------------------------ the manifest

// Checkpoint `step` of the test model, at sample 64 of epoch step / 10 with a
// global batch of 32 on 2 ranks, so that every field of the manifest is set.
void SaveWithPosition(const std::string& dir, int64_t step) {
  Scope scope;
  SetModel(&scope, static_cast<int>(step));
  CheckpointInfo info{step, step / 10};
  info.epoch_samples = 64;
  info.global_batch = 32;
  info.nranks = 2;
  SaveCheckpoint(scope, ModelNames(), dir, info);
}

std::string Where(const CheckpointInfo& info) {
  std::ostringstream os;
  os << "loaded step " << info.step << ", epoch " << info.epoch << ", sample "
     << info.epoch_samples << ", global batch " << info.global_batch << " on "
     << info.nranks << " rank(s)";
  return os.str();
}

// What went wrong with one flipped bit, or "" when the load did what it
// must: fall back to the intact ckpt-10, with its own values and position,
// saying why ckpt-20 was skipped.
std::string FallbackProblem(const std::string& dir) {
  Scope scope;
  CheckpointInfo info;
  try {
    info = Load(&scope, dir);
  } catch (const Error& e) {
    return std::string("refused although ckpt-10 is intact: ") + e.what();
  }
  std::ostringstream wrong;
  if (info.step != 10 || info.epoch != 1 || info.epoch_samples != 64 ||
      info.global_batch != 32 || info.nranks != 2) {
    wrong << Where(info);
  } else if (info.skipped.size() != 1 ||
             info.skipped[0].find("checkpoint '" + dir + "/ckpt-20'") ==
                 std::string::npos ||
             info.skipped[0].find("manifest") == std::string::npos) {
    wrong << "fell back without saying that ckpt-20's manifest is damaged: "
          << (info.skipped.empty() ? "" : info.skipped[0]);
  } else {
    Scope want;
    SetModel(&want, 10);
    for (const std::string& name : ModelNames()) {
      if (checkpoint_testing::Bytes(scope, name) !=
          checkpoint_testing::Bytes(want, name))
        wrong << name << " is not ckpt-10's";
    }
  }
  return wrong.str();
}

// A bit flipped anywhere in the newest checkpoint's manifest, one bit at a
// time, every bit: the load falls back to the intact older checkpoint and
// says why, and with no older one it is refused naming the manifest. Never
// a resume at another epoch, step or position, and never a refusal while
// an intact checkpoint lies beside the damaged one.
TEST(CheckpointManifestTest, EveryFlippedBitFallsBackOrIsRefused) {
  TempDir dir, alone;
  SaveWithPosition(dir.path(), 10);
  SaveWithPosition(dir.path(), 20);
  SaveWithPosition(alone.path(), 20);
  const std::string path = dir / "ckpt-20/manifest.pb";
  const std::string lone = alone / "ckpt-20/manifest.pb";
  const std::string good = DefaultFileSystem()->ReadFile(path);
  ASSERT_EQ(DefaultFileSystem()->ReadFile(lone), good);
  std::vector<std::string> problems;
  for (size_t bit = 0; bit < good.size() * 8; ++bit) {
    std::string bad = good;
    bad[bit / 8] = static_cast<char>(bad[bit / 8] ^ (1 << (bit % 8)));
    WriteRaw(path, bad);
    const std::string problem = FallbackProblem(dir.path());
    if (!problem.empty())
      problems.push_back("bit " + std::to_string(bit) + ": " + problem);

    WriteRaw(lone, bad);
    Scope scope;
    try {
      const CheckpointInfo info = Load(&scope, alone.path());
      problems.push_back("bit " + std::to_string(bit) +
                         ", no older checkpoint: " + Where(info));
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.find("checkpoint '" + alone / "ckpt-20'") == std::string::npos ||
          what.find("manifest") == std::string::npos)
        problems.push_back("bit " + std::to_string(bit) +
                           ", no older checkpoint: refused, but not naming "
                           "the manifest: " +
                           what);
      if (!scope.LocalVarNames().empty())
        problems.push_back("bit " + std::to_string(bit) +
                           ": a refused load wrote into the scope");
    }
  }
  // What went wrong, by kind, with an example of each.
  std::map<std::string, std::pair<int, std::string>> kinds;
  for (const std::string& p : problems) {
    const char* kind = "other";
    if (p.find("refused although") != std::string::npos) {
      kind = "refused while an intact checkpoint lies beside it";
    } else if (p.find("loaded step 20, epoch 2, sample 64") !=
               std::string::npos) {
      kind = "took the damaged manifest as intact";
    } else if (p.find("loaded step") != std::string::npos) {
      kind = "resumed at a wrong step, epoch or position";
    }
    if (kinds[kind].first++ == 0) kinds[kind].second = p;
  }
  std::ostringstream report;
  for (const auto& [kind, seen] : kinds)
    report << seen.first << " x " << kind << ", e.g. " << seen.second << "\n";
  EXPECT_EQ(problems.size(), 0u)
      << "with " << good.size() * 8 << " flipped bits:\n"
      << report.str();
}

// The layout training ran under, and each tensor's split, go into the
// manifest and come back with the checkpoint; a checkpoint saved without
// them (outside a trainer) loads with an empty layout.
TEST(CheckpointManifestTest, LayoutAndSplitsRoundTrip) {
  TempDir dir;
  Scope scope;
  SetModel(&scope, 10);
  CheckpointInfo info{10, 1};
  info.layout.set_nranks(4);
  info.layout.set_sharding_stage(2);
  info.layout.set_amp("bf16");
  info.layout.set_gradient_merge_steps(4);
  const std::string first = ModelNames().front();
  info.splits[first] = "1/4 per rank (sharding stage 2)";
  SaveCheckpoint(scope, ModelNames(), dir.path(), info);
  const proto::CheckpointManifest m = ReadManifestOf(dir / "ckpt-10");
  EXPECT_EQ(m.layout().nranks(), 4);
  for (const auto& e : m.entries())
    EXPECT_EQ(e.split(), e.name() == first ? info.splits[first] : "");
  Scope loaded;
  const CheckpointInfo back = Load(&loaded, dir.path());
  ExpectModel(loaded, 10);
  EXPECT_EQ(DescribeLayout(back.layout),
            "np 4, sharding stage 2, bf16, gradient merge 4");
  EXPECT_EQ(back.splits, info.splits);

  TempDir plain;
  SaveModel(plain.path(), 10);
  Scope again;
  const CheckpointInfo none = Load(&again, plain.path());
  EXPECT_FALSE(ReadManifestOf(plain / "ckpt-10").has_layout());
  EXPECT_EQ(DescribeLayout(none.layout), "");
  EXPECT_TRUE(none.splits.empty());
}

// Gradient merge's state (the micro-step counter and the accumulators)
// crosses layouts: a job without gradient merge leaves it out of a
// checkpoint saved at the end of a merged step (zero accumulators) and
// refuses, naming the cause, one saved with gradients still accumulated;
// a job with gradient merge loads a checkpoint without it and keeps its
// startup values.
TEST(CheckpointManifestTest, GradientMergeStateCrossesLayouts) {
  const std::string acc = "fc_0.w@GRAD@GRAD_MERGE";
  auto save = [&](const std::string& dir, float accumulated) {
    Scope scope;
    SetModel(&scope, 10);
    SetVar<float>(&scope, acc, Shape{3, 4},
                  std::vector<float>(12, accumulated));
    SetVar<int64_t>(&scope, "@GRAD_MERGE_STEP@", Shape{1}, {4});
    std::vector<std::string> names = ModelNames();
    names.push_back(acc);
    names.push_back("@GRAD_MERGE_STEP@");
    SaveCheckpoint(scope, names, dir, CheckpointInfo{10, 1});
  };
  TempDir merged_end, mid;
  save(merged_end.path(), 0.0f);
  save(mid.path(), 0.5f);
  Scope plain;
  Load(&plain, merged_end.path());
  ExpectModel(plain, 10);
  EXPECT_EQ(plain.FindLocalVar(acc), nullptr);
  Scope refused;
  EXPECT_THAT(LoadError(&refused, ModelProgram(), mid.path()).what(),
              HasSubstr(acc + ": gradients of an unfinished gradient-merge "
                              "step"));

  proto::ProgramDesc with_merge = ModelProgram();
  AddVarDesc(with_merge.mutable_blocks(0), acc, DataType::kFloat32, Shape{3, 4},
             true);
  AddVarDesc(with_merge.mutable_blocks(0), "@GRAD_MERGE_STEP@",
             DataType::kInt64, Shape{1}, true);
  TempDir without;
  SaveModel(without.path(), 10);
  Scope merging;
  SetVar<float>(&merging, acc, Shape{3, 4}, std::vector<float>(12, 0.0f));
  LoadCheckpoint(&merging, with_merge, without.path());
  ExpectModel(merging, 10);
  EXPECT_EQ(merging.GetVar(acc)->GetTensor().data<float>()[0], 0.0f);
}

TEST(CheckpointManifestTest, ManifestsAreSealedWithTheirChecksum) {
  TempDir dir;
  SaveWithPosition(dir.path(), 10);
  const std::string bytes =
      DefaultFileSystem()->ReadFile(dir / "ckpt-10/manifest.pb");
  const proto::CheckpointManifest m = ReadManifestOf(dir / "ckpt-10");
  EXPECT_EQ(m.version(), 4);
  EXPECT_EQ(checkpoint_internal::SealManifest(m), bytes);
  const std::string body = m.SerializeAsString();
  ASSERT_EQ(bytes.size(), body.size() + 5);
  EXPECT_EQ(bytes.substr(0, body.size()), body);
  EXPECT_EQ(static_cast<unsigned char>(bytes[body.size()]), 0x35);  // 6, I32
  const uint32_t crc = Crc32(body);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(static_cast<unsigned char>(bytes[body.size() + 1 + i]),
              (crc >> (8 * i)) & 0xff);
}

// Older builds wrote versions 1 (no position) and 2 (a position) without a
// checksum: they still load, with every other check.
TEST(CheckpointManifestTest, OlderBuildsUnsealedManifestsStillLoad) {
  TempDir dir;
  SaveModel(dir.path(), 10);
  proto::CheckpointManifest v1 = ReadManifestOf(dir / "ckpt-10");
  WriteUnsealedManifest(dir / "ckpt-10", v1, 1);
  EXPECT_EQ(LoadModel(dir.path()), 10);

  SaveWithPosition(dir.path(), 20);
  WriteUnsealedManifest(dir / "ckpt-20", ReadManifestOf(dir / "ckpt-20"), 2);
  Scope scope;
  const CheckpointInfo info = Load(&scope, dir.path());
  EXPECT_EQ(info.step, 20);
  EXPECT_EQ(info.epoch, 2);
  EXPECT_EQ(info.epoch_samples, 64);
  EXPECT_EQ(info.global_batch, 32);
  EXPECT_EQ(info.nranks, 2);
  EXPECT_TRUE(info.skipped.empty());
  ExpectModel(scope, 20);
}

// A version 3 or 4 manifest without its seal (cut off, or turned into an
// unknown field by a flipped bit) is damage, as is a seal on a version that
// never had one.
TEST(CheckpointManifestTest, AMissingOrMisplacedSealIsDamage) {
  TempDir dir;
  SaveWithPosition(dir.path(), 10);
  SaveWithPosition(dir.path(), 20);
  const proto::CheckpointManifest m = ReadManifestOf(dir / "ckpt-20");
  WriteRaw(dir / "ckpt-20/manifest.pb", m.SerializeAsString());
  Scope scope;
  CheckpointInfo info = Load(&scope, dir.path());
  EXPECT_EQ(info.step, 10);
  ASSERT_EQ(info.skipped.size(), 1u);
  EXPECT_THAT(info.skipped[0],
              HasSubstr("ckpt-20' has a damaged manifest '" +
                        dir / "ckpt-20/manifest.pb': version 4 without its "
                              "checksum"));

  proto::CheckpointManifest v2 = m;
  v2.set_version(2);
  std::string sealed = v2.SerializeAsString();
  const uint32_t crc = Crc32(sealed);
  sealed.push_back(static_cast<char>(0x35));
  for (int i = 0; i < 4; ++i)
    sealed.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  WriteRaw(dir / "ckpt-20/manifest.pb", sealed);
  Scope again;
  info = Load(&again, dir.path());
  EXPECT_EQ(info.step, 10);
  ASSERT_EQ(info.skipped.size(), 1u);
  EXPECT_THAT(info.skipped[0], HasSubstr("a checksum on a version 2 manifest"));
}

// Fields that contradict each other are damage even under a valid seal (a
// build that wrote them would be wrong): the older checkpoint is loaded.
TEST(CheckpointManifestTest, FieldsThatContradictEachOtherAreDamage) {
  const std::vector<
      std::pair<std::function<void(proto::CheckpointManifest*)>, std::string>>
      cases = {
          {[](proto::CheckpointManifest* m) { m->set_epoch(-1); },
           "epoch -1 is negative"},
          {[](proto::CheckpointManifest* m) {
             m->mutable_position()->set_epoch_samples(40);
           },
           "the position, sample 40, is not a whole number of steps of 32 "
           "samples"},
          {[](proto::CheckpointManifest* m) {
             m->mutable_position()->set_epoch_samples(-32);
           },
           "the position, sample -32"},
          {[](proto::CheckpointManifest* m) {
             m->mutable_position()->set_global_batch(33);
           },
           "the global batch 33 does not divide among its 2 rank(s)"},
          {[](proto::CheckpointManifest* m) {
             m->mutable_position()->set_nranks(0);
           },
           "the position has global batch 32 on 0 rank(s)"},
          {[](proto::CheckpointManifest* m) {
             m->mutable_position()->set_global_batch(0);
           },
           "the position has global batch 0 on 2 rank(s)"},
          {[](proto::CheckpointManifest* m) { m->set_version(0); },
           "version 0"},
          {[](proto::CheckpointManifest* m) {
             m->set_version(3);
             m->mutable_layout()->set_nranks(2);
           },
           "version 3 with a layout"},
          {[](proto::CheckpointManifest* m) {
             m->mutable_layout()->set_nranks(0);
           },
           "the layout is impossible (0 rank(s), sharding stage 0, "
           "gradient merge 1)"},
          {[](proto::CheckpointManifest* m) {
             m->mutable_layout()->set_nranks(2);
             m->mutable_layout()->set_gradient_merge_steps(0);
           },
           "the layout is impossible (2 rank(s), sharding stage 0, "
           "gradient merge 0)"},
      };
  for (const auto& [edit, why] : cases) {
    TempDir dir;
    SaveWithPosition(dir.path(), 10);
    SaveWithPosition(dir.path(), 20);
    proto::CheckpointManifest m = ReadManifestOf(dir / "ckpt-20");
    edit(&m);
    if (m.version() >= 3) {
      WriteSealedManifest(dir / "ckpt-20", m);
    } else {
      WriteUnsealedManifest(dir / "ckpt-20", m, static_cast<int>(m.version()));
    }
    Scope scope;
    const CheckpointInfo info = Load(&scope, dir.path());
    EXPECT_EQ(info.step, 10) << why;
    ExpectModel(scope, 10);
    ASSERT_EQ(info.skipped.size(), 1u) << why;
    EXPECT_THAT(info.skipped[0], HasSubstr("ckpt-20' has a corrupt or "
                                           "truncated manifest"))
        << why;
    EXPECT_THAT(info.skipped[0], HasSubstr(why));
  }
}

// Without a checksum, a manifest that does not match the program may be a
// flipped bit in a name: the older checkpoint is used, saying why; with no
// older one the mismatch is the error, as for a sealed manifest.
TEST(CheckpointManifestTest, AnUnsealedMismatchFallsBackLikeDamage) {
  TempDir dir;
  SaveModel(dir.path(), 10);
  SaveModel(dir.path(), 20);
  proto::CheckpointManifest m = ReadManifestOf(dir / "ckpt-20");
  m.mutable_entries(0)->set_name("fc_0.v");  // one bit off "fc_0.w"
  WriteUnsealedManifest(dir / "ckpt-20", m, 1);
  Scope scope;
  CheckpointInfo info = Load(&scope, dir.path());
  EXPECT_EQ(info.step, 10);
  ExpectModel(scope, 10);
  ASSERT_EQ(info.skipped.size(), 1u);
  EXPECT_THAT(info.skipped[0],
              HasSubstr("ckpt-20' does not match the program: fc_0.v: in "
                        "checkpoint, not in program; fc_0.w: missing from "
                        "checkpoint (its version 1 manifest has no checksum, "
                        "so this may be damage)"));

  std::filesystem::remove_all(dir / "ckpt-10");
  Scope none;
  Error e = LoadError(&none, ModelProgram(), dir.path());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("ckpt-20' does not match the program"));
  EXPECT_TRUE(none.LocalVarNames().empty());
  CheckpointInfo unused;
  std::string why;
  EXPECT_THROW(
      TryLoadCheckpoint(&none, ModelProgram(), dir.path(), &unused, &why),
      Error);
}

// The caller's check of the position: a sealed checkpoint that fails it is
// refused (the run's settings are wrong, not the checkpoint); an unsealed
// one is skipped like damage.
TEST(CheckpointManifestTest, TheCallersFitCheckRefusesOrSkips) {
  TempDir dir;
  SaveWithPosition(dir.path(), 10);
  SaveWithPosition(dir.path(), 20);
  const CheckpointFitCheck at_most_epoch_1 = [](const CheckpointInfo& at) {
    FLUID_ENFORCE(at.epoch <= 1, "epoch ", at.epoch, " is beyond 1");
  };
  Scope scope;
  CheckpointInfo info;
  std::string why;
  try {
    TryLoadCheckpoint(&scope, ModelProgram(), dir.path(), &info, &why,
                      DefaultFileSystem(), at_most_epoch_1);
    FAIL() << "loaded a checkpoint the fit check refuses";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("checkpoint '" + dir / "ckpt-20" +
                                    "' does not fit this run: epoch 2 is "
                                    "beyond 1"));
  }
  EXPECT_TRUE(scope.LocalVarNames().empty());

  WriteUnsealedManifest(dir / "ckpt-20", ReadManifestOf(dir / "ckpt-20"), 2);
  ASSERT_TRUE(TryLoadCheckpoint(&scope, ModelProgram(), dir.path(), &info, &why,
                                DefaultFileSystem(), at_most_epoch_1));
  EXPECT_EQ(info.step, 10);
  ExpectModel(scope, 10);
  ASSERT_EQ(info.skipped.size(), 1u);
  EXPECT_THAT(info.skipped[0], HasSubstr("does not fit this run: epoch 2 is "
                                         "beyond 1 (its version 2 manifest "
                                         "has no checksum"));
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
