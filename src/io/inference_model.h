// Inference models: a forward program pruned to the vars a caller fetches,
// saved with the parameters it reads, for fluid.io.save_inference_model /
// load_inference_model and `trainer --predict`.
//
// Layout of a model directory `dir`:
//   dir/<model_file>          proto::InferenceModel: the program, the feed
//                             and the fetch var names ("__model__" unless
//                             the caller names another file)
//   dir/[<params_dir>/]LATEST, dir/[<params_dir>/]ckpt-0/...
//                             the parameters, as a checkpoint (see
//                             checkpoint.h): by default in `dir` itself, or
//                             in the subdirectory the caller names
//
// Saving writes everything into dir.tmp and renames that to `dir` (an
// existing model directory is moved aside to dir.old for the moment of the
// swap), so `dir` is either the old model or the whole new one, never a
// mixture. An existing `dir` that is neither empty nor a model directory is
// refused rather than replaced.
#pragma once

#include <string>
#include <vector>

#include "proto/framework.pb.h"
#include "src/framework/scope.h"
#include "src/io/file_system.h"

namespace fluid {

// Where in a model directory the program and the parameters go.
struct InferenceModelFiles {
  std::string model_file = "__model__";
  std::string params_dir;  // "" : the model directory itself
};

// Prunes `program` to what `fetches` need given `feeds` (Prune, in
// src/framework/prune.h, with is_test set), and saves it with the
// persistable vars it reads, taken from `scope` (and its ancestors). Returns
// the saved model.
proto::InferenceModel SaveInferenceModel(
    const Scope& scope, const proto::ProgramDesc& program,
    const std::vector<std::string>& feeds,
    const std::vector<std::string>& fetches, const std::string& dir,
    const InferenceModelFiles& files = {},
    FileSystem* fs = DefaultFileSystem());

// Reads the model of `dir` and loads its parameters into `scope`. A missing
// or corrupt model file, or parameters that do not match the program, is an
// error naming the file and the var.
proto::InferenceModel LoadInferenceModel(Scope* scope, const std::string& dir,
                                         const InferenceModelFiles& files = {},
                                         FileSystem* fs = DefaultFileSystem());

}  // namespace fluid
