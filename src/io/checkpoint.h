// Checkpoints: saving the persistable variables of a scope to a directory and
// loading them back, so that a crash at any moment leaves a loadable
// checkpoint behind.
//
// Layout of a checkpoint root `dir`:
//   dir/ckpt-<step>/<file>        one file per tensor: its raw bytes
//                                 (little-endian, row-major), nothing else
//   dir/ckpt-<step>/manifest.pb   proto::CheckpointManifest: step, epoch,
//                                 position in the epoch and, per tensor,
//                                 name, file, dtype, shape, byte count and
//                                 CRC-32 of the file; sealed by the CRC-32
//                                 of the manifest itself (version 3)
//   dir/LATEST                    "ckpt-<step>": the checkpoint to load
//
// Saving writes everything into dir/ckpt-<step>.tmp, renames that to
// dir/ckpt-<step> and only then rewrites LATEST (atomically): LATEST is the
// commit point, and it always names a complete checkpoint. Afterwards, of the
// checkpoints older than the new one, one is kept (the one LATEST named
// before, or failing that the newest) and the others are removed, so two
// remain. Checkpoints of later steps, left by an abandoned run, are kept
// until a save of that step replaces them. Re-saving the step LATEST names
// moves the old directory aside to dir/ckpt-<step>.old for the moment of the
// swap; a reader that finds ckpt-<step> missing reads ckpt-<step>.old.
//
// Loading is all or nothing: every expected variable is checked against the
// manifest and its file (dtype, shape, size, CRC) before anything is written
// into the scope, and every mismatch is reported in one error. Each file is
// checked to be a regular file of the size the manifest gives before it is
// read, so a device, a fifo or a huge file in a checkpoint is an error, not
// an allocation failure.
//
// A damaged checkpoint (missing or corrupt manifest, a manifest failing its
// checksum or whose fields contradict each other, a file missing, truncated
// or failing its CRC) is skipped and the next older one is tried: the one
// LATEST names first, then the older ones beside it, newest first. Without
// a usable LATEST every complete checkpoint in the directory is a
// candidate. A checkpoint that is intact (its manifest's checksum vouches
// for it) but does not match the program, or that the caller's
// CheckpointFitCheck refuses, is an error, never skipped: it means the wrong
// directory, program or settings, which an older one would not set right.
// Manifests older builds wrote (versions 1 and 2) carry no checksum; they
// are read with every other check, and since such a mismatch may be damage
// there, it is skipped like damage, and is the error only when no older
// checkpoint is usable.
//
// None of these functions may run concurrently on the same `dir`; one saver
// per directory (in data-parallel training, rank 0).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "proto/framework.pb.h"
#include "src/framework/scope.h"
#include "src/framework/types.h"
#include "src/io/file_system.h"

namespace fluid {

// Where training stood when the checkpoint was taken.
struct CheckpointInfo {
  int64_t step = 0;
  int64_t epoch = 0;
  // Set by loading: the checkpoint directory loaded, and why each newer
  // checkpoint (or LATEST) was passed over, one line each.
  // (Explicit initializers keep CheckpointInfo{step, epoch} warning-free.)
  std::string path = {};
  std::vector<std::string> skipped = {};
  // Where in epoch `epoch` training stood: samples of the epoch's shuffled
  // order trained on by all ranks together (0: its start), and the samples
  // per step over all ranks and how many ranks shared them (0: not
  // recorded, as in checkpoints taken only at epoch ends by older builds).
  int64_t epoch_samples = 0;
  int64_t global_batch = 0;
  int64_t nranks = 0;
  // The layout training ran under (saved with the checkpoint, read back by
  // loading; nranks 0: not recorded), and per tensor how it was split
  // across ranks (absent: replicated). Every tensor is saved whole, so
  // none of this limits where the checkpoint loads.
  proto::CheckpointManifest::Layout layout = {};
  std::map<std::string, std::string> splits = {};
};

// "np 4, sharding stage 3, bf16, gradient merge 4": the layout in words
// ("" when not recorded).
std::string DescribeLayout(const proto::CheckpointManifest::Layout& layout);

// A caller's check that a checkpoint's position (step, epoch,
// epoch_samples, global_batch, nranks; path) suits the run about to
// continue from it, made before anything is loaded: throws fluid::Error
// saying why not (an epoch beyond the run's last, a position beyond its
// data). See LoadCheckpoint for what a refusal does.
using CheckpointFitCheck = std::function<void(const CheckpointInfo&)>;

// What a loader expects to find: one persistable variable of a program.
// -1 in `shape` matches any size in that dimension.
struct CheckpointVarSpec {
  std::string name;
  DataType dtype = DataType::kFloat32;
  Shape shape;
};

// Names of the persistable vars of block 0, sorted: what a checkpoint holds.
std::vector<std::string> PersistableVars(const proto::ProgramDesc& program);
// The same vars with their dtypes and declared shapes, sorted by name.
std::vector<CheckpointVarSpec> PersistableVarSpecs(
    const proto::ProgramDesc& program);
// The vars `names` of block 0 as the program declares them, in that order;
// a name the program lacks is a kNotFound error naming it.
std::vector<CheckpointVarSpec> VarSpecs(const proto::ProgramDesc& program,
                                        const std::vector<std::string>& names);

// Saves the tensors `var_names` (looked up in `scope` and its ancestors) as
// checkpoint `info.step` under `dir`, creating `dir` if needed. Each variable
// must hold an initialized tensor of known shape (device tensors are copied
// to the host before anything is written); otherwise nothing is
// written and the error lists every offending variable. An existing
// checkpoint of the same step is replaced. Failures after the commit point
// (removing old checkpoints) are ignored: the next save retries them.
void SaveCheckpoint(const Scope& scope,
                    const std::vector<std::string>& var_names,
                    const std::string& dir, const CheckpointInfo& info,
                    FileSystem* fs = DefaultFileSystem());

// Loads the newest intact checkpoint (see above: LATEST's, else an older
// one) into `scope` and returns its step and epoch, its path and what was
// skipped. The checkpoint must hold exactly the variables of `expected`
// (but for fp16's loss-scaling state, src/framework/loss_scaling_state.h:
// missing, the scope keeps its value; extra, it is left out), with matching
// dtypes and shapes, and `scope` must not hold a non-tensor
// under any of those names. Otherwise nothing in `scope` changes and one
// kInvalidArgument error lists every mismatch:
//   checkpoint 'dir/ckpt-20' does not match the program: fc_0.w: shape
//   [784, 512] in checkpoint, [784, 256] in program; fc_1.b: missing from
//   checkpoint
// With no intact checkpoint the error is that of the newest damaged one
// (kInvalidArgument: "checkpoint 'dir/ckpt-20' is damaged: ..."; kNotFound
// for a missing manifest), or with none at all, kNotFound (no LATEST, or
// LATEST naming nothing) or kInvalidArgument (a corrupt LATEST); when
// several were tried, the message lists them all.
//
// Variables are written into `scope` itself (created there when absent;
// ancestors are not consulted). A variable that already holds a host tensor
// of the same dtype and shape is overwritten in place, so views of its buffer
// stay valid; any other is replaced by a fresh host tensor. Peak memory is
// the checkpoint's size on top of the scope's, since everything is verified
// before anything is committed.
CheckpointInfo LoadCheckpoint(Scope* scope,
                              const std::vector<CheckpointVarSpec>& expected,
                              const std::string& dir,
                              FileSystem* fs = DefaultFileSystem());
// Like LoadCheckpoint, but the checkpoint may hold more than `expected`:
// only the expected variables are checked and loaded (the parameters out of
// a checkpoint of all persistable vars, say). A missing expected variable
// or a dtype or shape mismatch is the same error as LoadCheckpoint's.
CheckpointInfo LoadCheckpointVars(
    Scope* scope, const std::vector<CheckpointVarSpec>& expected,
    const std::string& dir, FileSystem* fs = DefaultFileSystem());
// Expects exactly the persistable vars of `program` (PersistableVarSpecs).
CheckpointInfo LoadCheckpoint(Scope* scope, const proto::ProgramDesc& program,
                              const std::string& dir,
                              FileSystem* fs = DefaultFileSystem());

// True once a checkpoint has been committed to `dir` (dir/LATEST exists).
// Deliberately not "a loadable checkpoint exists": a damaged checkpoint must
// make LoadCheckpoint fail loudly, not make a trainer quietly start over.
bool HasCheckpoint(const std::string& dir,
                   FileSystem* fs = DefaultFileSystem());

// Like LoadCheckpoint for a program, but "no intact checkpoint" is not an
// error: returns false with `why_none` saying what was found, and `scope` is
// unchanged. A checkpoint that does not match the program, or that `fits`
// (when given) refuses, still throws (see above for unsealed manifests).
bool TryLoadCheckpoint(Scope* scope, const proto::ProgramDesc& program,
                       const std::string& dir, CheckpointInfo* info,
                       std::string* why_none,
                       FileSystem* fs = DefaultFileSystem(),
                       const CheckpointFitCheck& fits = nullptr);

// Makes LATEST name the checkpoint at `checkpoint_path` (a path LoadCheckpoint
// returned in CheckpointInfo::path). A job that resumed from an older
// checkpoint because the newer ones are damaged calls this, so that its
// next save keeps the checkpoint it resumed from as the fallback.
void RepointLatest(const std::string& dir, const std::string& checkpoint_path,
                   FileSystem* fs = DefaultFileSystem());

// Creates `dir` if needed and writes and removes a probe file there, so that
// a directory checkpoints cannot be written to is found before training
// rather than after the first epoch. The error (the file system's code and
// errno) names the directory and the cause.
void CheckCheckpointDirWritable(const std::string& dir,
                                FileSystem* fs = DefaultFileSystem());

// Removes every checkpoint (ckpt-*, complete or not) and LATEST from `dir`,
// leaving any other file; returns how many checkpoints went. For starting
// over in a directory whose checkpoints are all unusable.
int RemoveCheckpoints(const std::string& dir,
                      FileSystem* fs = DefaultFileSystem());

}  // namespace fluid
