// Loading checkpoints: verification of each candidate (manifest, file
// kinds and sizes before reading, CRCs), the fallback to the newest intact
// one, and the match against the program. The format is in checkpoint.h.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "src/framework/enforce.h"
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
using checkpoint_internal::kManifestVersion;
using checkpoint_internal::kMaxManifestBytes;
using checkpoint_internal::Located;
using checkpoint_internal::LocateLatest;
using checkpoint_internal::ParseCheckpointName;
using checkpoint_internal::Str;

// A manifest must not send the reader outside the checkpoint directory.
bool IsPlainFileName(const std::string& f) {
  return !f.empty() && f != "." && f != ".." &&
         f.find('/') == std::string::npos && f.find('\0') == std::string::npos;
}

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

proto::CheckpointManifest ReadManifest(FileSystem* fs, const Located& loc) {
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
  proto::CheckpointManifest m;
  // step and epoch are always written and serialize last, so a manifest cut
  // short anywhere lacks them even when the prefix happens to parse.
  FLUID_ENFORCE(m.ParseFromString(bytes) && m.has_step() && m.has_epoch(),
                "checkpoint '", loc.path,
                "' has a corrupt or truncated manifest '", path, "'");
  FLUID_ENFORCE(m.version() <= kManifestVersion, "checkpoint '", loc.path,
                "' has manifest version ", m.version(),
                "; this build reads up to ", kManifestVersion);
  FLUID_ENFORCE(m.version() < 2 || m.has_position(), "checkpoint '", loc.path,
                "' has a corrupt or truncated manifest '", path, "': version ",
                m.version(), " without the epoch position");
  FLUID_ENFORCE(m.step() == loc.step, "checkpoint '", loc.path,
                "': its manifest says step ", m.step());
  return m;
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
    problems->push_back(Str("file '", path, "' is corrupt: crc32 ", Hex32(crc),
                            ", the manifest says ", Hex32(e.crc32())));
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
  std::map<std::string, VerifiedVar> vars;
};

// Reads the checkpoint at `loc` and checks its manifest and every file
// (kind, size, CRC). One error lists every problem: kNotFound for a missing
// manifest, otherwise the code of the first failure.
Verified ReadVerified(FileSystem* fs, const Located& loc) {
  const proto::CheckpointManifest manifest = ReadManifest(fs, loc);
  Verified out;
  out.step = manifest.step();
  out.epoch = manifest.epoch();
  out.position = manifest.position();
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
    if (!allow_extra && !wanted.count(kv.first))
      problems[kv.first].push_back("in checkpoint, not in program");
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

// Loads the newest intact checkpoint of `dir`. False (and `failures` says
// why) when there is none; a mismatch with the program throws.
bool LoadNewestIntact(Scope* scope,
                      const std::vector<CheckpointVarSpec>& expected,
                      const std::string& dir, FileSystem* fs,
                      CheckpointInfo* info, std::vector<Error>* failures,
                      bool allow_extra = false) {
  FLUID_ENFORCE(scope != nullptr, "LoadCheckpoint: null scope");
  FLUID_ENFORCE(fs != nullptr, "LoadCheckpoint: null file system");
  std::vector<Error> latest_problem;
  const std::vector<Located> candidates = Candidates(fs, dir, &latest_problem);
  std::vector<std::string> skipped;
  for (const Error& e : latest_problem) skipped.push_back(e.what());
  for (const Located& loc : candidates) {
    Verified ckpt;
    try {
      ckpt = ReadVerified(fs, loc);
    } catch (const Error& e) {
      failures->push_back(e);
      skipped.push_back(e.what());
      continue;
    }
    auto staged = MatchProgram(&ckpt, expected, *scope, loc.path, allow_extra);
    Commit(&staged, scope);
    info->step = ckpt.step;
    info->epoch = ckpt.epoch;
    info->epoch_samples = ckpt.position.epoch_samples();
    info->global_batch = ckpt.position.global_batch();
    info->nranks = ckpt.position.nranks();
    info->path = loc.path;
    info->skipped = std::move(skipped);
    return true;
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
  if (!LoadNewestIntact(scope, expected, dir, fs, &info, &failures))
    ThrowNoneIntact(dir, failures);
  return info;
}

CheckpointInfo LoadCheckpointVars(
    Scope* scope, const std::vector<CheckpointVarSpec>& expected,
    const std::string& dir, FileSystem* fs) {
  CheckpointInfo info;
  std::vector<Error> failures;
  if (!LoadNewestIntact(scope, expected, dir, fs, &info, &failures,
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
                       std::string* why_none, FileSystem* fs) {
  FLUID_ENFORCE(info != nullptr && why_none != nullptr,
                "TryLoadCheckpoint: null output");
  std::vector<Error> failures;
  if (LoadNewestIntact(scope, PersistableVarSpecs(program), dir, fs, info,
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
