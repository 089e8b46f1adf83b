// Loading checkpoints: verification of each candidate (manifest, file
// kinds and sizes before reading, CRCs), the fallback to the newest intact
// one, and the match against the program. The format is in checkpoint.h.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "src/framework/enforce.h"
#include "src/framework/gradient_merge_state.h"
#include "src/framework/loss_scaling_state.h"
#include "src/framework/program_desc.h"
#include "src/framework/timeline.h"
#include "src/io/checkpoint.h"
#include "src/io/checkpoint_internal.h"
#include "src/io/crc32.h"

namespace fluid {

namespace {

using checkpoint_internal::Join;
using checkpoint_internal::kAsideSuffix;
using checkpoint_internal::kManifest;
using checkpoint_internal::kManifestSealBytes;
using checkpoint_internal::kManifestSealTag;
using checkpoint_internal::kManifestVersion;
using checkpoint_internal::kMaxManifestBytes;
using checkpoint_internal::kSealedManifestVersion;
using checkpoint_internal::Located;
using checkpoint_internal::LocateLatest;
using checkpoint_internal::ParseCheckpointName;
using checkpoint_internal::Str;

// A manifest must not send the reader outside the checkpoint directory.
bool IsPlainFileName(const std::string& f) {
  return !f.empty() && f != "." && f != ".." &&
         f.find('/') == std::string::npos && f.find('\0') == std::string::npos;
}

// Parses `body` as a manifest exactly as every build writes one: it must
// hold no field this build does not know and be what serializing it gives
// back, byte for byte. (A flipped bit that still parses would otherwise
// slip through as, say, an unknown field or a field out of its place.)
bool ParseCanonical(const std::string& body, proto::CheckpointManifest* m) {
  if (!m->ParseFromString(body) || !m->unknown_fields().empty()) return false;
  if (m->has_position() && !m->position().unknown_fields().empty())
    return false;
  if (m->has_layout() && !m->layout().unknown_fields().empty()) return false;
  for (const auto& e : m->entries())
    if (!e.unknown_fields().empty()) return false;
  std::string again;
  return m->SerializeToString(&again) && again == body;
}

uint32_t LittleEndian32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// The fields of a manifest that must agree with each other whatever the
// run: what is wrong, or "" when nothing is.
std::string InconsistentFields(const proto::CheckpointManifest& m) {
  if (m.step() < 0) return Str("step ", m.step(), " is negative");
  if (m.epoch() < 0) return Str("epoch ", m.epoch(), " is negative");
  if (m.version() < 1) return Str("version ", m.version());
  if (m.version() == 2 && !m.has_position())
    return "version 2 without the epoch position";
  if (m.version() == 1 && m.has_position())
    return "version 1 with an epoch position";
  if (m.version() < 4 && m.has_layout())
    return Str("version ", m.version(), " with a layout");
  if (m.has_layout() &&
      (m.layout().nranks() < 1 || m.layout().sharding_stage() < 0 ||
       m.layout().gradient_merge_steps() < 1))
    return Str("the layout is impossible (", m.layout().nranks(),
               " rank(s), sharding stage ", m.layout().sharding_stage(),
               ", gradient merge ", m.layout().gradient_merge_steps(), ")");
  if (!m.has_position()) return "";
  const auto& p = m.position();
  // Every build records a position with the batch it trained with: the
  // samples are a whole number of steps, the batch a whole number per rank.
  if (p.global_batch() <= 0 || p.nranks() <= 0)
    return Str("the position has global batch ", p.global_batch(), " on ",
               p.nranks(), " rank(s)");
  if (p.global_batch() % p.nranks() != 0)
    return Str("the global batch ", p.global_batch(),
               " does not divide among its ", p.nranks(), " rank(s)");
  if (p.epoch_samples() < 0 || p.epoch_samples() % p.global_batch() != 0)
    return Str("the position, sample ", p.epoch_samples(),
               ", is not a whole number of steps of ", p.global_batch(),
               " samples");
  return "";
}

// A manifest and whether its checksum sealed it (version 3 on); manifests
// of versions 1 and 2 have none.
struct Manifest {
  proto::CheckpointManifest m;
  bool sealed = false;
};

Manifest ReadManifest(FileSystem* fs, const Located& loc) {
  const std::string path = JoinPath(loc.path, kManifest);
  std::string bytes;
  try {
    bytes = ReadFileAtMost(fs, path, kMaxManifestBytes);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotFound)
      FLUID_RETHROW(e, "checkpoint '", loc.path, "': ", e.what());
    FLUID_THROW(ErrorCode::kNotFound, "checkpoint '", loc.path,
                "' has no manifest: '", path, "' does not exist");
  }
  const size_t n = bytes.size();
  const bool has_seal = n >= kManifestSealBytes &&
                        static_cast<unsigned char>(
                            bytes[n - kManifestSealBytes]) == kManifestSealTag;
  uint32_t stored = 0, actual = 0;
  if (has_seal) {
    stored = LittleEndian32(bytes.data() + n - 4);
    actual = Crc32(bytes.data(), n - kManifestSealBytes);
  }
  Manifest out;
  out.sealed = has_seal && stored == actual;
  // Without a valid seal the bytes may still be an older build's manifest
  // (one that happens to end in the seal's tag byte included); a damaged
  // seal leaves an unknown field, which ParseCanonical refuses.
  const bool parsed = ParseCanonical(
      out.sealed ? bytes.substr(0, n - kManifestSealBytes) : bytes, &out.m);
  const proto::CheckpointManifest& m = out.m;
  FLUID_ENFORCE(parsed || !has_seal, "checkpoint '", loc.path,
                "' has a damaged manifest '", path,
                "': its checksum does not match (crc32 ", Crc32Text(actual),
                " of its first ", n - kManifestSealBytes,
                " bytes, the manifest says ", Crc32Text(stored), ")");
  // step and epoch are always written and serialize after the entries, so
  // a manifest cut short there lacks them even when the prefix parses.
  FLUID_ENFORCE(parsed && m.has_step() && m.has_epoch(), "checkpoint '",
                loc.path, "' has a corrupt or truncated manifest '", path, "'");
  FLUID_ENFORCE(m.version() <= kManifestVersion, "checkpoint '", loc.path,
                "' has manifest version ", m.version(),
                "; this build reads up to ", kManifestVersion);
  FLUID_ENFORCE(out.sealed || m.version() < kSealedManifestVersion,
                "checkpoint '", loc.path, "' has a damaged manifest '", path,
                "': version ", m.version(), " without its checksum");
  FLUID_ENFORCE(!out.sealed || m.version() >= kSealedManifestVersion,
                "checkpoint '", loc.path, "' has a damaged manifest '", path,
                "': a checksum on a version ", m.version(), " manifest");
  const std::string wrong = InconsistentFields(m);
  FLUID_ENFORCE(wrong.empty(), "checkpoint '", loc.path,
                "' has a corrupt or truncated manifest '", path, "': ", wrong);
  FLUID_ENFORCE(m.step() == loc.step, "checkpoint '", loc.path,
                "': its manifest says step ", m.step());
  return out;
}

// Reads the file of one manifest entry into `data` and checks its size and
// CRC; on failure appends what is wrong to `problems` and returns false.
bool ReadEntryFile(FileSystem* fs, const std::string& ckpt,
                   const proto::CheckpointManifest::Entry& e,
                   std::vector<std::string>* problems, std::string* data) {
  if (!IsPlainFileName(e.file())) {
    problems->push_back(Str("manifest names an invalid file '", e.file(), "'"));
    return false;
  }
  const std::string path = JoinPath(ckpt, e.file());
  auto wrong_size = [&](uint64_t size) {
    problems->push_back(size < e.bytes()
                            ? Str("file '", path, "' is truncated: ", size,
                                  " of ", e.bytes(), " bytes")
                            : Str("file '", path, "' has ", size,
                                  " bytes, the manifest says ", e.bytes()));
    return false;
  };
  try {
    // Kind and size first: a device, a fifo or a file far larger than the
    // manifest says must be refused before a single byte is read.
    const FileStat st = fs->Stat(path);
    if (st.kind != FileStat::Kind::kRegular) {
      problems->push_back(Str("file '", path, "' is not a regular file (",
                              st.kind == FileStat::Kind::kDirectory
                                  ? "a directory"
                                  : "a device, fifo or socket",
                              "), the manifest says ", e.bytes(), " bytes"));
      return false;
    }
    if (st.size != e.bytes()) return wrong_size(st.size);
    *data = fs->ReadFile(path);
  } catch (const Error& err) {
    problems->push_back(err.code() == ErrorCode::kNotFound
                            ? Str("file '", path, "' is missing")
                            : Str(err.what()));
    return false;
  }
  if (data->size() != e.bytes()) return wrong_size(data->size());
  uint32_t crc = Crc32(*data);
  if (crc != e.crc32()) {
    problems->push_back(Str("file '", path, "' is corrupt: crc32 ",
                            Crc32Text(crc), ", the manifest says ",
                            Crc32Text(e.crc32())));
    return false;
  }
  return true;
}

// The entry's own dtype and shape, or a description of why it has none.
bool EntryShape(const proto::CheckpointManifest::Entry& e, Shape* shape,
                std::vector<std::string>* problems) {
  bool ok = e.shape_size() <= Shape::kMaxRank && e.has_crc32() && e.has_bytes();
  // The manifest is untrusted input: multiply without overflowing.
  uint64_t bytes = SizeOf(FromProto(e.dtype()));
  for (int64_t d : e.shape()) {
    ok = ok && d >= 0 &&
         !__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes);
  }
  ok = ok && bytes == e.bytes();
  if (ok) *shape = Shape(e.shape().begin(), e.shape().end());
  if (!ok) {
    problems->push_back(
        "its manifest entry is invalid (bad shape, or "
        "missing or inconsistent size or crc32)");
  }
  return ok;
}

// The checkpoints worth trying, newest first: the one LATEST names, then the
// older complete ones beside it (the retained fallback). When LATEST is
// missing, corrupt or names nothing, `latest_problem` says why and every
// complete checkpoint in `dir` is a candidate; newer checkpoints than the one
// LATEST names were never committed and are not.
std::vector<Located> Candidates(FileSystem* fs, const std::string& dir,
                                std::vector<Error>* latest_problem) {
  std::vector<Located> out;
  int64_t below = std::numeric_limits<int64_t>::max();
  try {
    out.push_back(LocateLatest(fs, dir));
    below = out.front().step;
  } catch (const Error& e) {
    latest_problem->push_back(e);
  }
  std::vector<std::string> entries;
  try {
    entries = fs->ListDir(dir);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotFound) throw;
  }
  std::set<std::string> present(entries.begin(), entries.end());
  std::vector<Located> older;
  for (const std::string& entry : entries) {
    Located loc;
    std::string suffix;
    if (!ParseCheckpointName(entry, &loc.step, &suffix) || loc.step >= below)
      continue;
    // ckpt-N.old stands in for ckpt-N during a same-step swap.
    const bool aside =
        suffix == kAsideSuffix &&
        !present.count(entry.substr(0, entry.size() - suffix.size()));
    if (!suffix.empty() && !aside) continue;
    loc.path = JoinPath(dir, entry);
    older.push_back(loc);
  }
  std::sort(older.begin(), older.end(),
            [](const Located& a, const Located& b) { return a.step > b.step; });
  out.insert(out.end(), older.begin(), older.end());
  return out;
}

// A checkpoint whose manifest and files passed every check that does not
// depend on the program.
struct VerifiedVar {
  DataType dtype = DataType::kFloat32;
  Shape shape;
  std::string data;
};
struct Verified {
  int64_t step = 0;
  int64_t epoch = 0;
  proto::CheckpointManifest::Position position;
  proto::CheckpointManifest::Layout layout;
  std::map<std::string, std::string> splits;
  std::map<std::string, VerifiedVar> vars;
  int64_t version = 0;
  bool sealed = false;  // the manifest's checksum vouches for it
};

// Reads the checkpoint at `loc` and checks its manifest and every file
// (kind, size, CRC). One error lists every problem: kNotFound for a missing
// manifest, otherwise the code of the first failure.
Verified ReadVerified(FileSystem* fs, const Located& loc) {
  const Manifest read = ReadManifest(fs, loc);
  const proto::CheckpointManifest& manifest = read.m;
  Verified out;
  out.version = manifest.version();
  out.sealed = read.sealed;
  out.step = manifest.step();
  out.epoch = manifest.epoch();
  out.position = manifest.position();
  out.layout = manifest.layout();
  for (const auto& e : manifest.entries())
    if (!e.split().empty()) out.splits[e.name()] = e.split();
  // Problems per var name; std::map keeps the report sorted by name.
  std::map<std::string, std::vector<std::string>> problems;
  std::set<std::string> seen;
  for (const auto& e : manifest.entries()) {
    std::vector<std::string>& mine = problems[e.name()];
    if (!seen.insert(e.name()).second) {
      mine.push_back("listed twice in the manifest");
      out.vars.erase(e.name());
      continue;
    }
    VerifiedVar v;
    if (!EntryShape(e, &v.shape, &mine)) continue;
    v.dtype = FromProto(e.dtype());
    if (!ReadEntryFile(fs, loc.path, e, &mine, &v.data)) continue;
    out.vars.emplace(e.name(), std::move(v));
  }
  std::vector<std::string> report;
  for (const auto& kv : problems)
    for (const std::string& p : kv.second)
      report.push_back(kv.first + ": " + p);
  FLUID_ENFORCE(report.empty(), "checkpoint '", loc.path,
                "' is damaged: ", Join(report, "; "));
  return out;
}

// Matches a verified checkpoint against what the program expects and turns
// it into tensors; one kInvalidArgument error lists every mismatch.
std::vector<std::pair<std::string, Tensor>> MatchProgram(
    Verified* ckpt, const std::vector<CheckpointVarSpec>& expected,
    const Scope& scope, const std::string& path, bool allow_extra) {
  std::map<std::string, std::vector<std::string>> problems;
  std::vector<std::pair<std::string, Tensor>> staged;
  std::set<std::string> wanted;
  for (const CheckpointVarSpec& spec : expected) {
    FLUID_ENFORCE(wanted.insert(spec.name).second, "LoadCheckpoint: '",
                  spec.name, "' is expected twice");
    std::vector<std::string>& mine = problems[spec.name];
    const Variable* held = scope.FindLocalVar(spec.name);
    if (held != nullptr && !held->IsTensor())
      mine.push_back("the scope holds a non-tensor under this name");
    auto it = ckpt->vars.find(spec.name);
    if (it == ckpt->vars.end()) {
      // A checkpoint of another precision: the scaling starts afresh; of
      // a job without gradient merge: a merged step starts afresh.
      if (!IsLossScalingState(spec.name) && !IsGradientMergeState(spec.name))
        mine.push_back("missing from checkpoint");
      continue;
    }
    VerifiedVar& v = it->second;
    bool fits = true;
    if (v.dtype != spec.dtype) {
      mine.push_back(Str("dtype ", v.dtype, " in checkpoint, ", spec.dtype,
                         " in program"));
      fits = false;
    }
    if (!ShapeMatches(spec.shape, v.shape)) {
      mine.push_back(Str("shape ", v.shape, " in checkpoint, ", spec.shape,
                         " in program"));
      fits = false;
    }
    if (!fits) continue;
    Tensor t(v.dtype, v.shape);
    void* dst = t.raw_mutable_data(Place::CPU());
    if (!v.data.empty()) std::memcpy(dst, v.data.data(), v.data.size());
    std::string().swap(v.data);  // keep peak memory at one copy
    staged.emplace_back(spec.name, std::move(t));
  }
  for (const auto& kv : ckpt->vars) {
    if (allow_extra || wanted.count(kv.first) || IsLossScalingState(kv.first))
      continue;
    if (!IsGradientMergeState(kv.first)) {
      problems[kv.first].push_back("in checkpoint, not in program");
    } else if (IsGradMergeAccumulatorName(kv.first) &&
               kv.second.data.find_first_not_of('\0') != std::string::npos) {
      // Left out, these gradients would be lost from the update.
      problems[kv.first].push_back(
          "gradients of an unfinished gradient-merge step, which a job "
          "without gradient merge cannot apply: resume with the gradient "
          "merge that saved it, or from a checkpoint saved at the end of a "
          "merged step");
    }
  }
  std::vector<std::string> report;
  for (const auto& kv : problems)
    for (const std::string& p : kv.second)
      report.push_back(kv.first + ": " + p);
  FLUID_ENFORCE(report.empty(), "checkpoint '", path,
                "' does not match the program: ", Join(report, "; "));
  return staged;
}

// Writes checked tensors into `scope`; nothing here throws on bad input.
void Commit(std::vector<std::pair<std::string, Tensor>>* staged, Scope* scope) {
  for (auto& [name, src] : *staged) {
    Tensor* dst = scope->Var(name)->GetMutableTensor();
    if (dst->initialized() && dst->place().is_cpu() &&
        dst->dtype() == src.dtype() && dst->shape() == src.shape()) {
      if (src.bytes() > 0)
        std::memcpy(dst->raw_mutable_data(Place::CPU()), src.raw_data(),
                    src.bytes());
    } else if (dst->initialized() && !dst->place().is_cpu()) {
      // A var that lives on a device stays there (its kernels expect it);
      // views into a coalesced buffer keep pointing into it.
      dst->CopyFrom(src, dst->place());
    } else {
      *dst = std::move(src);
    }
  }
}

// Loads the newest usable checkpoint of `dir`: intact, matching `expected`
// and passing `fits`. False (and `failures` says why) when every one is
// damaged. A sealed checkpoint that does not match the program or fails
// `fits` throws: its manifest is what was saved, so the program, the
// directory or the settings are wrong, and an older checkpoint would not
// set that right. An unsealed (version 1 or 2) manifest carries no checksum,
// so such a mismatch may be damage: the checkpoint is skipped, and when no
// older one is usable the error names it (and every other) and throws.
bool LoadNewestIntact(Scope* scope,
                      const std::vector<CheckpointVarSpec>& expected,
                      const std::string& dir, FileSystem* fs,
                      const CheckpointFitCheck& fits, CheckpointInfo* info,
                      std::vector<Error>* failures, bool allow_extra = false) {
  FLUID_ENFORCE(scope != nullptr, "LoadCheckpoint: null scope");
  FLUID_ENFORCE(fs != nullptr, "LoadCheckpoint: null file system");
  scope->Settle();  // writes a step left in flight
  std::vector<Error> latest_problem;
  const std::vector<Located> candidates = Candidates(fs, dir, &latest_problem);
  std::vector<std::string> skipped;
  for (const Error& e : latest_problem) skipped.push_back(e.what());
  bool misfit = false;  // an unsealed checkpoint did not match
  for (const Located& loc : candidates) {
    Verified ckpt;
    try {
      ckpt = ReadVerified(fs, loc);
    } catch (const Error& e) {
      failures->push_back(e);
      skipped.push_back(e.what());
      continue;
    }
    CheckpointInfo found;
    found.step = ckpt.step;
    found.epoch = ckpt.epoch;
    found.epoch_samples = ckpt.position.epoch_samples();
    found.global_batch = ckpt.position.global_batch();
    found.nranks = ckpt.position.nranks();
    found.layout = ckpt.layout;
    found.splits = ckpt.splits;
    found.path = loc.path;
    std::vector<std::pair<std::string, Tensor>> staged;
    try {
      if (fits) {
        try {
          fits(found);
        } catch (const Error& e) {
          FLUID_RETHROW(e, "checkpoint '", loc.path,
                        "' does not fit this run: ", e.what());
        }
      }
      staged = MatchProgram(&ckpt, expected, *scope, loc.path, allow_extra);
    } catch (const Error& e) {
      if (ckpt.sealed) throw;
      failures->push_back(
          Error(e, Str(e.what(), " (its version ", ckpt.version,
                       " manifest has no checksum, so this may be damage)")));
      skipped.push_back(failures->back().what());
      misfit = true;
      continue;
    }
    Commit(&staged, scope);
    found.skipped = std::move(skipped);
    *info = std::move(found);
    return true;
  }
  if (misfit) {
    if (failures->size() == 1) throw failures->front();
    std::vector<std::string> all;
    for (const Error& e : *failures) all.push_back(e.what());
    FLUID_RETHROW(failures->front(), "no usable checkpoint in '", dir,
                  "': ", Join(all, "; "));
  }
  // The first damaged checkpoint decides the code; with none, LATEST does.
  failures->insert(failures->end(), latest_problem.begin(),
                   latest_problem.end());
  return false;
}

// One error for "no intact checkpoint": the single cause as it is, or all of
// them.
[[noreturn]] void ThrowNoneIntact(const std::string& dir,
                                  const std::vector<Error>& failures) {
  FLUID_ENFORCE_CODE(!failures.empty(), ErrorCode::kNotFound,
                     "no checkpoint in '", dir, "'");
  if (failures.size() == 1) throw failures.front();
  std::vector<std::string> all;
  for (const Error& e : failures) all.push_back(e.what());
  FLUID_RETHROW(failures.front(), "no intact checkpoint in '", dir,
                "': ", Join(all, "; "));
}

}  // namespace

CheckpointInfo LoadCheckpoint(Scope* scope,
                              const std::vector<CheckpointVarSpec>& expected,
                              const std::string& dir, FileSystem* fs) {
  TimelineScope span(TimelineTrack::kCheckpoints, "load checkpoint");
  CheckpointInfo info;
  std::vector<Error> failures;
  if (!LoadNewestIntact(scope, expected, dir, fs, nullptr, &info, &failures))
    ThrowNoneIntact(dir, failures);
  return info;
}

CheckpointInfo LoadCheckpointVars(
    Scope* scope, const std::vector<CheckpointVarSpec>& expected,
    const std::string& dir, FileSystem* fs) {
  CheckpointInfo info;
  std::vector<Error> failures;
  if (!LoadNewestIntact(scope, expected, dir, fs, nullptr, &info, &failures,
                        /*allow_extra=*/true))
    ThrowNoneIntact(dir, failures);
  return info;
}

CheckpointInfo LoadCheckpoint(Scope* scope, const proto::ProgramDesc& program,
                              const std::string& dir, FileSystem* fs) {
  return LoadCheckpoint(scope, PersistableVarSpecs(program), dir, fs);
}

bool TryLoadCheckpoint(Scope* scope, const proto::ProgramDesc& program,
                       const std::string& dir, CheckpointInfo* info,
                       std::string* why_none, FileSystem* fs,
                       const CheckpointFitCheck& fits) {
  FLUID_ENFORCE(info != nullptr && why_none != nullptr,
                "TryLoadCheckpoint: null output");
  std::vector<Error> failures;
  if (LoadNewestIntact(scope, PersistableVarSpecs(program), dir, fs, fits, info,
                       &failures))
    return true;
  try {
    ThrowNoneIntact(dir, failures);
  } catch (const Error& e) {
    *why_none = e.what();
  }
  return false;
}

}  // namespace fluid
