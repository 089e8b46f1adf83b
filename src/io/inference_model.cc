#include "src/io/inference_model.h"

#include <cstdint>

#include "src/framework/enforce.h"
#include "src/framework/program_desc.h"
#include "src/framework/prune.h"
#include "src/io/checkpoint.h"

namespace fluid {

namespace {

constexpr uint64_t kMaxModelFileBytes = uint64_t{1} << 30;
constexpr int64_t kInferenceModelVersion = 1;

std::string WithoutTrailingSlash(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

std::string ParamsRoot(const std::string& dir,
                       const InferenceModelFiles& files) {
  return files.params_dir.empty() ? dir : JoinPath(dir, files.params_dir);
}

void CheckFileName(const std::string& name, const std::string& what) {
  FLUID_ENFORCE(!name.empty() && name != "." && name != ".." &&
                    name.find('/') == std::string::npos,
                what, " '", name, "' must be a plain file name");
}

// Moves the finished `staging` directory to `dir`, replacing a previous
// model there.
void Publish(FileSystem* fs, const std::string& staging, const std::string& dir,
             const InferenceModelFiles& files) {
  if (!fs->Exists(dir)) {
    fs->Rename(staging, dir);
    return;
  }
  FLUID_ENFORCE(fs->Stat(dir).kind == FileStat::Kind::kDirectory, "'", dir,
                "' exists and is not a directory; not replacing it with an "
                "inference model");
  FLUID_ENFORCE(
      fs->ListDir(dir).empty() || fs->Exists(JoinPath(dir, files.model_file)),
      "'", dir, "' holds files but no '", files.model_file,
      "': not an inference model directory, not replacing it");
  const std::string aside = dir + ".old";
  fs->RemoveAll(aside);
  fs->Rename(dir, aside);
  fs->Rename(staging, dir);
  fs->RemoveAll(aside);
}

}  // namespace

proto::InferenceModel SaveInferenceModel(
    const Scope& scope, const proto::ProgramDesc& program,
    const std::vector<std::string>& feeds,
    const std::vector<std::string>& fetches, const std::string& dir_in,
    const InferenceModelFiles& files, FileSystem* fs) {
  CheckFileName(files.model_file, "model file name");
  if (!files.params_dir.empty())
    CheckFileName(files.params_dir, "params file name");
  const std::string dir = WithoutTrailingSlash(dir_in);
  FLUID_ENFORCE(!dir.empty(), "save_inference_model: empty directory name");
  proto::InferenceModel model;
  model.set_version(kInferenceModelVersion);
  *model.mutable_program() = Prune(program, feeds, fetches);
  for (const auto& f : feeds) model.add_feed_names(f);
  for (const auto& f : fetches) model.add_fetch_names(f);
  std::string bytes;
  FLUID_ENFORCE(model.SerializeToString(&bytes), "cannot serialize the model");

  const std::string staging = dir + ".tmp";
  fs->RemoveAll(staging);
  try {
    fs->CreateDir(staging);
    fs->WriteFile(JoinPath(staging, files.model_file), bytes);
    SaveCheckpoint(scope, PersistableVars(model.program()),
                   ParamsRoot(staging, files), CheckpointInfo{0, 0}, fs);
    Publish(fs, staging, dir, files);
  } catch (...) {
    fs->RemoveAll(staging);
    throw;
  }
  return model;
}

proto::InferenceModel LoadInferenceModel(Scope* scope,
                                         const std::string& dir_in,
                                         const InferenceModelFiles& files,
                                         FileSystem* fs) {
  FLUID_ENFORCE(scope != nullptr, "LoadInferenceModel: null scope");
  const std::string dir = WithoutTrailingSlash(dir_in);
  const std::string path = JoinPath(dir, files.model_file);
  FLUID_ENFORCE_CODE(fs->Exists(path), ErrorCode::kNotFound,
                     "no inference model in '", dir, "': '", path,
                     "' does not exist");
  const std::string bytes = ReadFileAtMost(fs, path, kMaxModelFileBytes);
  proto::InferenceModel model;
  FLUID_ENFORCE(!bytes.empty() && model.ParseFromString(bytes), "'", path,
                "' is truncated or corrupt: it does not parse as an "
                "inference model");
  FLUID_ENFORCE(model.version() <= kInferenceModelVersion, "'", path,
                "' has version ", model.version(), "; this build reads up to ",
                kInferenceModelVersion);
  CheckProgram(model.program(), "'" + path + "'");
  const proto::BlockDesc& block = model.program().blocks(0);
  for (const auto* names : {&model.feed_names(), &model.fetch_names()})
    for (const auto& n : *names)
      FLUID_ENFORCE(FindVarDesc(block, n) != nullptr, "'", path,
                    "': its program has no var '", n, "'");
  LoadCheckpoint(scope, model.program(), ParamsRoot(dir, files), fs);
  return model;
}

}  // namespace fluid
