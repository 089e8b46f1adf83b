#include "src/io/checkpoint.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <set>
#include <string_view>
#include <utility>

#include "src/framework/enforce.h"
#include "src/framework/program_desc.h"
#include "src/framework/timeline.h"
#include "src/io/checkpoint_internal.h"
#include "src/io/crc32.h"

namespace fluid {

namespace checkpoint_internal {

std::string CheckpointName(int64_t step) {
  return kPrefix + std::to_string(step);
}

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

std::string Join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string SealManifest(const proto::CheckpointManifest& manifest) {
  FLUID_ENFORCE(manifest.version() >= kSealedManifestVersion,
                "SealManifest: a version ", manifest.version(),
                " manifest has no checksum");
  std::string bytes;
  FLUID_ENFORCE(manifest.SerializeToString(&bytes),
                "cannot serialize the manifest");
  const uint32_t crc = Crc32(bytes);
  bytes.push_back(static_cast<char>(kManifestSealTag));
  for (int i = 0; i < 4; ++i)
    bytes.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  return bytes;
}

Located LocateLatest(FileSystem* fs, const std::string& dir) {
  const std::string latest = JoinPath(dir, kLatest);
  std::string content;
  try {
    content = ReadFileAtMost(fs, latest, kMaxLatestBytes);
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

}  // namespace checkpoint_internal

namespace {

using checkpoint_internal::CheckpointName;
using checkpoint_internal::Join;
using checkpoint_internal::kAsideSuffix;
using checkpoint_internal::kLatest;
using checkpoint_internal::kManifest;
using checkpoint_internal::kManifestVersion;
using checkpoint_internal::kMaxLatestBytes;
using checkpoint_internal::kMaxStem;
using checkpoint_internal::kPrefix;
using checkpoint_internal::kProbe;
using checkpoint_internal::kStagingSuffix;
using checkpoint_internal::kTensorExt;
using checkpoint_internal::Located;
using checkpoint_internal::LocateLatest;
using checkpoint_internal::ParseCheckpointName;
using checkpoint_internal::SealManifest;
using checkpoint_internal::Str;

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

// The checkpoint LATEST names, or "" when there is none (or it is unreadable:
// then there is no previous checkpoint worth favouring).
std::string LatestName(FileSystem* fs, const std::string& dir) {
  try {
    std::string content =
        ReadFileAtMost(fs, JoinPath(dir, kLatest), kMaxLatestBytes);
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

// The tensor `name` holds in `scope`, or nullptr with `*problem` saying why
// it cannot be saved.
const Tensor* SavableTensor(const Scope& scope, const std::string& name,
                            std::string* problem) {
  if (name.empty()) {
    *problem = "empty variable name";
    return nullptr;
  }
  const Variable* var = scope.FindVar(name);
  if (var == nullptr) {
    *problem = Str(name, ": not in the scope");
  } else if (var->IsSelectedRows()) {
    *problem = Str(name,
                   ": holds sparse rows (SELECTED_ROWS, a step's "
                   "gradient), which checkpoints never save");
  } else if (!var->IsTensor()) {
    *problem = Str(name, ": holds a non-tensor value");
  } else if (!var->HasValue()) {
    *problem = Str(name, ": was never written");
  } else {
    const Tensor* t = &var->GetTensor();
    if (!t->shape().IsFullyKnown()) {
      *problem = Str(name, ": unknown shape ", t->shape());
    } else if (t->bytes() > 0 && !t->initialized()) {
      *problem = Str(name, ": tensor has no memory");
    } else {
      return t;
    }
  }
  return nullptr;
}

// The tensors of `var_names`, in that order, checked before anything
// touches the disk: every problem is reported in one error. Device tensors
// are saved from host copies, made here into `host_copies` (so a failing
// copy leaves no partial checkpoint).
std::vector<const Tensor*> TensorsToSave(
    const Scope& scope, const std::vector<std::string>& var_names,
    const std::string& dir, std::vector<std::unique_ptr<Tensor>>* host_copies) {
  std::vector<std::string> problems;
  std::vector<const Tensor*> tensors;
  std::set<std::string> seen;
  for (const std::string& name : var_names) {
    if (!seen.insert(name).second) {
      problems.push_back(Str(name, ": listed twice"));
      continue;
    }
    std::string problem;
    const Tensor* t = SavableTensor(scope, name, &problem);
    if (t == nullptr) {
      problems.push_back(problem);
    } else if (t->bytes() > 0 && !t->place().is_cpu()) {
      host_copies->push_back(std::make_unique<Tensor>());
      host_copies->back()->CopyFrom(*t, Place::CPU());
      tensors.push_back(host_copies->back().get());
    } else {
      tensors.push_back(t);
    }
  }
  FLUID_ENFORCE(problems.empty(), "cannot save checkpoint to '", dir,
                "': ", Join(problems, "; "));
  return tensors;
}

// Writes each tensor's file and then the manifest into the empty directory
// `staging`.
void WriteStaging(FileSystem* fs, const std::string& staging,
                  const std::vector<std::string>& var_names,
                  const std::vector<const Tensor*>& tensors,
                  const CheckpointInfo& info) {
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
    const auto split = info.splits.find(var_names[i]);
    if (split != info.splits.end()) e->set_split(split->second);
    e->set_crc32(Crc32(bytes));
    e->set_bytes(bytes.size());
    fs->WriteFile(JoinPath(staging, e->file()), bytes);
  }
  manifest.set_step(info.step);
  manifest.set_epoch(info.epoch);
  if (info.global_batch > 0) {
    auto* pos = manifest.mutable_position();
    pos->set_epoch_samples(info.epoch_samples);
    pos->set_global_batch(info.global_batch);
    pos->set_nranks(info.nranks);
  }
  if (info.layout.nranks() > 0) *manifest.mutable_layout() = info.layout;
  fs->WriteFile(JoinPath(staging, kManifest), SealManifest(manifest));
}

// Moves the complete `staging` to `final_dir` (checkpoint `name` of `dir`)
// and points LATEST at it.
void Commit(FileSystem* fs, const std::string& dir, const std::string& name,
            const std::string& staging, const std::string& final_dir) {
  const std::string aside = final_dir + kAsideSuffix;
  // A directory cannot be renamed over a non-empty one, so an existing
  // checkpoint of this step steps aside first; readers fall back to it.
  if (fs->Exists(final_dir)) fs->Rename(final_dir, aside);
  fs->Rename(staging, final_dir);
  fs->RemoveAll(aside);
  fs->WriteFile(JoinPath(dir, kLatest), name);  // the commit point
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
    // A handle kept across runs (an overlapped gather) holds no values.
    if (v.persistable() && v.type() != proto::VarDesc::COMM_HANDLE)
      specs.push_back(CheckpointVarSpec{v.name(), VarDtype(v), VarShape(v)});
  }
  std::sort(specs.begin(), specs.end(),
            [](const CheckpointVarSpec& a, const CheckpointVarSpec& b) {
              return a.name < b.name;
            });
  return specs;
}

std::vector<CheckpointVarSpec> VarSpecs(const proto::ProgramDesc& program,
                                        const std::vector<std::string>& names) {
  FLUID_ENFORCE(program.blocks_size() > 0, "program has no blocks");
  std::vector<CheckpointVarSpec> specs;
  for (const std::string& n : names) {
    const proto::VarDesc* v = FindVarDesc(program.blocks(0), n);
    FLUID_ENFORCE_CODE(v != nullptr, ErrorCode::kNotFound, "the program has ",
                       "no var '", n, "' to load");
    specs.push_back(CheckpointVarSpec{n, VarDtype(*v), VarShape(*v)});
  }
  return specs;
}

std::string DescribeLayout(const proto::CheckpointManifest::Layout& layout) {
  if (layout.nranks() < 1) return "";
  std::string out = Str("np ", layout.nranks());
  if (layout.sharding_stage() > 0)
    out += Str(", sharding stage ", layout.sharding_stage());
  out += layout.amp().empty() ? ", float32" : ", " + layout.amp();
  if (layout.gradient_merge_steps() > 1)
    out += Str(", gradient merge ", layout.gradient_merge_steps());
  return out;
}

void SaveCheckpoint(const Scope& scope,
                    const std::vector<std::string>& var_names,
                    const std::string& dir, const CheckpointInfo& info,
                    FileSystem* fs) {
  FLUID_ENFORCE(fs != nullptr, "SaveCheckpoint: null file system");
  FLUID_ENFORCE(!dir.empty(), "SaveCheckpoint: empty directory");
  scope.Settle();  // writes a step left in flight
  FLUID_ENFORCE(info.step >= 0, "checkpoint step must be >= 0, got ",
                info.step);
  TimelineScope span(TimelineTrack::kCheckpoints, "save checkpoint");
  std::vector<std::unique_ptr<Tensor>> host_copies;
  const std::vector<const Tensor*> tensors =
      TensorsToSave(scope, var_names, dir, &host_copies);
  if (span.active()) {
    int64_t bytes = 0;
    for (const Tensor* t : tensors)
      if (t != nullptr) bytes += static_cast<int64_t>(t->bytes());
    span.set_bytes(bytes);
  }

  const std::string name = CheckpointName(info.step);
  const std::string final_dir = JoinPath(dir, name);
  const std::string staging = final_dir + kStagingSuffix;
  std::string previous;
  try {
    fs->CreateDir(dir);
    RecoverSwaps(fs, dir);
    previous = LatestName(fs, dir);
    fs->RemoveAll(staging);
    fs->CreateDir(staging);
    WriteStaging(fs, staging, var_names, tensors, info);
    Commit(fs, dir, name, staging, final_dir);
  } catch (const Error& e) {
    FLUID_RETHROW(e, "cannot save checkpoint '", final_dir, "': ", e.what());
  }
  Prune(fs, dir, info.step, previous);
}

bool HasCheckpoint(const std::string& dir, FileSystem* fs) {
  FLUID_ENFORCE(fs != nullptr, "HasCheckpoint: null file system");
  return fs->Exists(JoinPath(dir, kLatest));
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
