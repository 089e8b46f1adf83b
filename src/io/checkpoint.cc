#include "src/io/checkpoint.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <utility>

#include "src/framework/enforce.h"
#include "src/framework/program_desc.h"
#include "src/io/crc32.h"

// Tensor files hold the host's bytes as they are; the format says
// little-endian, so a big-endian build would need a byte swap here.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint files are little-endian; add byte swapping for this host"
#endif

namespace fluid {

namespace {

constexpr const char* kLatest = "LATEST";
constexpr const char* kManifest = "manifest.pb";
constexpr const char* kPrefix = "ckpt-";
constexpr const char* kStagingSuffix = ".tmp";
constexpr const char* kAsideSuffix = ".old";
constexpr const char* kTensorExt = ".tensor";
constexpr int64_t kManifestVersion = 1;
constexpr const char* kProbe = "LATEST.probe";
// Upper bounds for the control files; anything larger is damage.
constexpr uint64_t kMaxLatestBytes = 4096;
constexpr uint64_t kMaxManifestBytes = uint64_t{64} << 20;
// File-name stems longer than this are cut and made unique with "~<index>",
// keeping the whole name well under NAME_MAX (255).
constexpr size_t kMaxStem = 200;

std::string CheckpointName(int64_t step) {
  return kPrefix + std::to_string(step);
}

// "ckpt-<digits><suffix>" -> step and suffix; false for anything else.
bool ParseCheckpointName(const std::string& name, int64_t* step,
                         std::string* suffix) {
  const size_t plen = std::strlen(kPrefix);
  if (name.compare(0, plen, kPrefix) != 0) return false;
  size_t i = plen;
  int64_t v = 0;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) {
    if (i - plen >= 18) return false;  // would overflow int64
    v = v * 10 + (name[i] - '0');
    ++i;
  }
  if (i == plen) return false;
  *step = v;
  *suffix = name.substr(i);
  return true;
}

// Var names may hold '/', '@' and anything else: keep [A-Za-z0-9._-] and
// write every other byte as %XX, which is injective and never produces '/'
// or '~'. The ".tensor" extension keeps "." and ".." (and manifest.pb) out of
// reach.
class FileNamer {
 public:
  std::string Name(const std::string& var, size_t index) {
    static const char kHex[] = "0123456789ABCDEF";
    std::string stem;
    for (unsigned char c : var) {
      if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
        stem.push_back(static_cast<char>(c));
      } else {
        stem.push_back('%');
        stem.push_back(kHex[c >> 4]);
        stem.push_back(kHex[c & 15]);
      }
    }
    bool unique = true;
    if (stem.size() > kMaxStem) {
      stem.resize(kMaxStem);
      unique = false;
    }
    // Names differing only in case collide on case-insensitive file systems.
    std::string folded = stem;
    for (char& c : folded) c = static_cast<char>(std::tolower(c));
    if (!unique || !used_.insert(folded).second) {
      // Stems hold no '~', so the index after it makes the name unique.
      stem += "~" + std::to_string(index);
    }
    return stem + kTensorExt;
  }

 private:
  std::set<std::string> used_;
};

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

std::string Join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

template <typename... Args>
std::string Str(const Args&... args) {
  std::ostringstream os;
  internal::StreamAll(os, args...);
  return os.str();
}

// Undoes a same-step swap cut short by a crash: ckpt-N.old with no ckpt-N
// goes back; ckpt-N.old next to ckpt-N is a leftover.
void RecoverSwaps(FileSystem* fs, const std::string& dir) {
  for (const std::string& entry : fs->ListDir(dir)) {
    int64_t step;
    std::string suffix;
    if (!ParseCheckpointName(entry, &step, &suffix) || suffix != kAsideSuffix)
      continue;
    std::string base = entry.substr(0, entry.size() - suffix.size());
    if (fs->Exists(JoinPath(dir, base))) {
      fs->RemoveAll(JoinPath(dir, entry));
    } else {
      fs->Rename(JoinPath(dir, entry), JoinPath(dir, base));
    }
  }
}

// Reads a control file (LATEST, a manifest) after checking that it is a
// regular file of at most `limit` bytes: a damaged checkpoint may hold a
// device, a fifo or a huge file where a small file belongs.
std::string ReadSmallFile(FileSystem* fs, const std::string& path,
                          uint64_t limit) {
  const FileStat st = fs->Stat(path);
  FLUID_ENFORCE(st.kind == FileStat::Kind::kRegular, "'", path,
                "' is not a regular file");
  FLUID_ENFORCE(st.size <= limit, "'", path, "' has ", st.size,
                " bytes, more than the ", limit, " such a file may hold");
  std::string bytes = fs->ReadFile(path);
  FLUID_ENFORCE(bytes.size() <= limit, "'", path, "' grew to ", bytes.size(),
                " bytes while being read");
  return bytes;
}

// The checkpoint LATEST names, or "" when there is none (or it is unreadable:
// then there is no previous checkpoint worth favouring).
std::string LatestName(FileSystem* fs, const std::string& dir) {
  try {
    std::string content =
        ReadSmallFile(fs, JoinPath(dir, kLatest), kMaxLatestBytes);
    while (!content.empty() &&
           std::isspace(static_cast<unsigned char>(content.back())))
      content.pop_back();
    return content;
  } catch (const Error&) {
    return "";
  }
}

// After the commit: of the checkpoints older than `step`, keeps one (the
// previous commit `previous` when it is among them, else the newest) and
// removes the others and every leftover of an interrupted save. The previous
// commit is preferred over a newer but never committed checkpoint, which a
// crash may have left behind: the former is what the job resumed from.
// Best effort: the checkpoint is already safe, and the next save tries again.
void Prune(FileSystem* fs, const std::string& dir, int64_t step,
           const std::string& previous) {
  try {
    std::vector<std::pair<int64_t, std::string>> older;
    for (const std::string& entry : fs->ListDir(dir)) {
      int64_t s;
      std::string suffix;
      if (ParseCheckpointName(entry, &s, &suffix)) {
        if (suffix == kStagingSuffix || suffix == kAsideSuffix) {
          fs->RemoveAll(JoinPath(dir, entry));
        } else if (suffix.empty() && s < step) {
          older.emplace_back(s, entry);
        }
      } else if (entry.size() > std::strlen(kLatest) &&
                 entry.compare(0, std::strlen(kLatest), kLatest) == 0) {
        fs->RemoveAll(JoinPath(dir, entry));  // a torn write's temp file
      }
    }
    std::string keep;
    for (const auto& [s, entry] : older) {
      if (entry == previous) keep = entry;
    }
    if (keep.empty() && !older.empty())
      keep = std::max_element(older.begin(), older.end())->second;
    for (const auto& [s, entry] : older) {
      if (entry != keep) fs->RemoveAll(JoinPath(dir, entry));
    }
  } catch (const Error&) {
  }
}

struct Located {
  std::string path;  // dir/ckpt-<step> (or its .old during a swap)
  int64_t step = 0;
};

Located LocateLatest(FileSystem* fs, const std::string& dir) {
  const std::string latest = JoinPath(dir, kLatest);
  std::string content;
  try {
    content = ReadSmallFile(fs, latest, kMaxLatestBytes);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotFound) throw;
    FLUID_THROW(ErrorCode::kNotFound, "no checkpoint in '", dir, "': '", latest,
                "' does not exist");
  }
  while (!content.empty() &&
         std::isspace(static_cast<unsigned char>(content.back())))
    content.pop_back();
  Located loc;
  std::string suffix;
  FLUID_ENFORCE(
      ParseCheckpointName(content, &loc.step, &suffix) && suffix.empty(), "'",
      latest, "' is corrupt: it holds '", content.substr(0, 64),
      "', not 'ckpt-<step>'");
  loc.path = JoinPath(dir, content);
  if (!fs->Exists(loc.path)) {
    std::string aside = loc.path + kAsideSuffix;
    FLUID_ENFORCE_CODE(fs->Exists(aside), ErrorCode::kNotFound, "'", latest,
                       "' names checkpoint '", loc.path,
                       "', which does not exist");
    loc.path = aside;
  }
  return loc;
}

proto::CheckpointManifest ReadManifest(FileSystem* fs, const Located& loc) {
  const std::string path = JoinPath(loc.path, kManifest);
  std::string bytes;
  try {
    bytes = ReadSmallFile(fs, path, kMaxManifestBytes);
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
      problems->push_back(
          Str("file '", path, "' is not a regular file (",
              st.kind == FileStat::Kind::kDirectory ? "a directory"
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
    for (const std::string& p : kv.second) report.push_back(kv.first + ": " + p);
  FLUID_ENFORCE(report.empty(), "checkpoint '", loc.path, "' is damaged: ",
                Join(report, "; "));
  return out;
}

// Matches a verified checkpoint against what the program expects and turns
// it into tensors; one kInvalidArgument error lists every mismatch.
std::vector<std::pair<std::string, Tensor>> MatchProgram(
    Verified* ckpt, const std::vector<CheckpointVarSpec>& expected,
    const Scope& scope, const std::string& path) {
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
      mine.push_back(
          Str("dtype ", v.dtype, " in checkpoint, ", spec.dtype, " in program"));
      fits = false;
    }
    if (!ShapeMatches(spec.shape, v.shape)) {
      mine.push_back(
          Str("shape ", v.shape, " in checkpoint, ", spec.shape, " in program"));
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
    if (!wanted.count(kv.first))
      problems[kv.first].push_back("in checkpoint, not in program");
  }
  std::vector<std::string> report;
  for (const auto& kv : problems)
    for (const std::string& p : kv.second) report.push_back(kv.first + ": " + p);
  FLUID_ENFORCE(report.empty(), "checkpoint '", path,
                "' does not match the program: ", Join(report, "; "));
  return staged;
}

// Writes checked tensors into `scope`; nothing here throws on bad input.
void Commit(std::vector<std::pair<std::string, Tensor>>* staged,
            Scope* scope) {
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
                      CheckpointInfo* info, std::vector<Error>* failures) {
  FLUID_ENFORCE(scope != nullptr, "LoadCheckpoint: null scope");
  FLUID_ENFORCE(fs != nullptr, "LoadCheckpoint: null file system");
  std::vector<Error> latest_problem;
  const std::vector<Located> candidates =
      Candidates(fs, dir, &latest_problem);
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
    auto staged = MatchProgram(&ckpt, expected, *scope, loc.path);
    Commit(&staged, scope);
    info->step = ckpt.step;
    info->epoch = ckpt.epoch;
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

std::vector<std::string> PersistableVars(const proto::ProgramDesc& program) {
  std::vector<std::string> names;
  for (const CheckpointVarSpec& s : PersistableVarSpecs(program))
    names.push_back(s.name);
  return names;
}

std::vector<CheckpointVarSpec> PersistableVarSpecs(
    const proto::ProgramDesc& program) {
  FLUID_ENFORCE(program.blocks_size() > 0, "program has no blocks");
  std::vector<CheckpointVarSpec> specs;
  for (const proto::VarDesc& v : program.blocks(0).vars()) {
    if (v.persistable())
      specs.push_back(CheckpointVarSpec{v.name(), VarDtype(v), VarShape(v)});
  }
  std::sort(specs.begin(), specs.end(),
            [](const CheckpointVarSpec& a, const CheckpointVarSpec& b) {
              return a.name < b.name;
            });
  return specs;
}

void SaveCheckpoint(const Scope& scope,
                    const std::vector<std::string>& var_names,
                    const std::string& dir, const CheckpointInfo& info,
                    FileSystem* fs) {
  FLUID_ENFORCE(fs != nullptr, "SaveCheckpoint: null file system");
  FLUID_ENFORCE(!dir.empty(), "SaveCheckpoint: empty directory");
  FLUID_ENFORCE(info.step >= 0, "checkpoint step must be >= 0, got ",
                info.step);

  // Check every variable before touching the disk.
  std::vector<std::string> problems;
  std::vector<const Tensor*> tensors;
  // Device tensors are saved from host copies, made before anything is
  // written (so a failing copy leaves no partial checkpoint).
  std::vector<std::unique_ptr<Tensor>> host_copies;
  std::set<std::string> seen;
  for (const std::string& name : var_names) {
    if (!seen.insert(name).second) {
      problems.push_back(Str(name, ": listed twice"));
      continue;
    }
    if (name.empty()) {
      problems.push_back("empty variable name");
      continue;
    }
    const Variable* var = scope.FindVar(name);
    if (var == nullptr) {
      problems.push_back(Str(name, ": not in the scope"));
      continue;
    }
    if (!var->IsTensor()) {
      problems.push_back(Str(name, ": holds a non-tensor value"));
      continue;
    }
    if (!var->HasValue()) {
      problems.push_back(Str(name, ": was never written"));
      continue;
    }
    const Tensor* t = &var->GetTensor();
    if (!t->shape().IsFullyKnown()) {
      problems.push_back(Str(name, ": unknown shape ", t->shape()));
    } else if (t->bytes() > 0 && !t->initialized()) {
      problems.push_back(Str(name, ": tensor has no memory"));
    } else if (t->bytes() > 0 && !t->place().is_cpu()) {
      host_copies.push_back(std::make_unique<Tensor>());
      host_copies.back()->CopyFrom(*t, Place::CPU());
      tensors.push_back(host_copies.back().get());
    } else {
      tensors.push_back(t);
    }
  }
  FLUID_ENFORCE(problems.empty(), "cannot save checkpoint to '", dir,
                "': ", Join(problems, "; "));

  const std::string name = CheckpointName(info.step);
  const std::string final_dir = JoinPath(dir, name);
  const std::string staging = final_dir + kStagingSuffix;
  const std::string aside = final_dir + kAsideSuffix;
  std::string previous;
  try {
    fs->CreateDir(dir);
    RecoverSwaps(fs, dir);
    previous = LatestName(fs, dir);
    fs->RemoveAll(staging);
    fs->CreateDir(staging);

    proto::CheckpointManifest manifest;
    manifest.set_version(kManifestVersion);
    FileNamer namer;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = *tensors[i];
      std::string_view bytes;
      if (t.bytes() > 0)
        bytes =
            std::string_view(static_cast<const char*>(t.raw_data()), t.bytes());
      auto* e = manifest.add_entries();
      e->set_name(var_names[i]);
      e->set_file(namer.Name(var_names[i], i));
      e->set_dtype(ToProto(t.dtype()));
      for (int64_t d : t.shape()) e->add_shape(d);
      e->set_crc32(Crc32(bytes));
      e->set_bytes(bytes.size());
      fs->WriteFile(JoinPath(staging, e->file()), bytes);
    }
    manifest.set_step(info.step);
    manifest.set_epoch(info.epoch);
    std::string mbytes;
    FLUID_ENFORCE(manifest.SerializeToString(&mbytes),
                  "cannot serialize the manifest");
    fs->WriteFile(JoinPath(staging, kManifest), mbytes);

    // A directory cannot be renamed over a non-empty one, so an existing
    // checkpoint of this step steps aside first; readers fall back to it.
    if (fs->Exists(final_dir)) fs->Rename(final_dir, aside);
    fs->Rename(staging, final_dir);
    fs->RemoveAll(aside);
    fs->WriteFile(JoinPath(dir, kLatest), name);  // the commit point
  } catch (const Error& e) {
    FLUID_RETHROW(e, "cannot save checkpoint '", final_dir, "': ", e.what());
  }
  Prune(fs, dir, info.step, previous);
}

CheckpointInfo LoadCheckpoint(Scope* scope,
                              const std::vector<CheckpointVarSpec>& expected,
                              const std::string& dir, FileSystem* fs) {
  CheckpointInfo info;
  std::vector<Error> failures;
  if (!LoadNewestIntact(scope, expected, dir, fs, &info, &failures))
    ThrowNoneIntact(dir, failures);
  return info;
}

CheckpointInfo LoadCheckpoint(Scope* scope, const proto::ProgramDesc& program,
                              const std::string& dir, FileSystem* fs) {
  return LoadCheckpoint(scope, PersistableVarSpecs(program), dir, fs);
}

bool HasCheckpoint(const std::string& dir, FileSystem* fs) {
  FLUID_ENFORCE(fs != nullptr, "HasCheckpoint: null file system");
  return fs->Exists(JoinPath(dir, kLatest));
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

void RepointLatest(const std::string& dir, const std::string& checkpoint_path,
                   FileSystem* fs) {
  FLUID_ENFORCE(fs != nullptr, "RepointLatest: null file system");
  const size_t slash = checkpoint_path.find_last_of('/');
  const std::string entry = slash == std::string::npos
                                ? checkpoint_path
                                : checkpoint_path.substr(slash + 1);
  int64_t step;
  std::string suffix;
  FLUID_ENFORCE(ParseCheckpointName(entry, &step, &suffix) &&
                    (suffix.empty() || suffix == kAsideSuffix),
                "RepointLatest: '", checkpoint_path, "' is not a checkpoint");
  FLUID_ENFORCE(JoinPath(dir, entry) == checkpoint_path, "RepointLatest: '",
                checkpoint_path, "' is not in '", dir, "'");
  // ckpt-N.old stands in for a missing ckpt-N, so LATEST names ckpt-N.
  fs->WriteFile(JoinPath(dir, kLatest), CheckpointName(step));
}

void CheckCheckpointDirWritable(const std::string& dir, FileSystem* fs) {
  FLUID_ENFORCE(fs != nullptr, "CheckCheckpointDirWritable: null file system");
  const std::string probe = JoinPath(dir, kProbe);
  try {
    fs->CreateDir(dir);
    fs->WriteFile(probe, "probe");
    fs->RemoveAll(probe);
  } catch (const Error& e) {
    FLUID_RETHROW(e, "checkpoint directory '", dir,
                  "' is not writable: ", e.what());
  }
}

int RemoveCheckpoints(const std::string& dir, FileSystem* fs) {
  FLUID_ENFORCE(fs != nullptr, "RemoveCheckpoints: null file system");
  if (!fs->Exists(dir)) return 0;
  int removed = 0;
  for (const std::string& entry : fs->ListDir(dir)) {
    int64_t step;
    std::string suffix;
    if (ParseCheckpointName(entry, &step, &suffix)) {
      fs->RemoveAll(JoinPath(dir, entry));
      ++removed;
    } else if (entry.compare(0, std::strlen(kLatest), kLatest) == 0) {
      fs->RemoveAll(JoinPath(dir, entry));  // LATEST and its temp files
    }
  }
  return removed;
}

}  // namespace fluid
