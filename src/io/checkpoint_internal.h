// Internals shared by the checkpoint writer (checkpoint.cc) and reader
// (checkpoint_load.cc): names, limits, and locating the checkpoint LATEST
// names. Not part of the public API; see checkpoint.h for the format.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "proto/framework.pb.h"
#include "src/framework/enforce.h"
#include "src/io/file_system.h"

// Tensor files hold the host's bytes as they are; the format says
// little-endian, so a big-endian build would need a byte swap here.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint files are little-endian; add byte swapping for this host"
#endif

namespace fluid {
namespace checkpoint_internal {

inline constexpr const char* kLatest = "LATEST";
inline constexpr const char* kManifest = "manifest.pb";
inline constexpr const char* kPrefix = "ckpt-";
inline constexpr const char* kStagingSuffix = ".tmp";
inline constexpr const char* kAsideSuffix = ".old";
inline constexpr const char* kTensorExt = ".tensor";
// Version 1: no position; 2 adds the position within the epoch; 3 seals
// the manifest with its own CRC-32 (see SealManifest), the position being
// there when the run recorded one; 4 (what this build writes) adds the
// layout training ran under and each tensor's split. Older builds refuse
// a newer version by its number; this build reads 1 and 2 without a
// checksum, checking every field it can.
inline constexpr int64_t kManifestVersion = 4;
inline constexpr int64_t kSealedManifestVersion = 3;
// A sealed manifest.pb ends with field 6 of CheckpointManifest as a fixed32
// (the tag byte (6 << 3) | 5, then 4 bytes little-endian): the CRC-32 of
// every byte before it. The field is not declared in proto/framework.proto
// (the reader checks it from the bytes and parses only what it covers);
// field number 6 of CheckpointManifest is taken by it.
inline constexpr unsigned char kManifestSealTag = (6 << 3) | 5;
inline constexpr size_t kManifestSealBytes = 5;
inline constexpr const char* kProbe = "LATEST.probe";
// Upper bounds for the control files; anything larger is damage.
inline constexpr uint64_t kMaxLatestBytes = 4096;
inline constexpr uint64_t kMaxManifestBytes = uint64_t{64} << 20;
// File-name stems longer than this are cut and made unique with "~<index>",
// keeping the whole name well under NAME_MAX (255).
inline constexpr size_t kMaxStem = 200;

// "ckpt-<step>".
std::string CheckpointName(int64_t step);
// "ckpt-<digits><suffix>" -> step and suffix; false for anything else.
bool ParseCheckpointName(const std::string& name, int64_t* step,
                         std::string* suffix);

std::string Join(const std::vector<std::string>& parts, const char* sep);

template <typename... Args>
std::string Str(const Args&... args) {
  std::ostringstream os;
  internal::StreamAll(os, args...);
  return os.str();
}

struct Located {
  std::string path;  // dir/ckpt-<step> (or its .old during a swap)
  int64_t step = 0;
};

// The bytes of manifest.pb for `manifest` (of version >= 3): its
// serialization, then the seal holding the CRC-32 of that serialization.
std::string SealManifest(const proto::CheckpointManifest& manifest);

// The checkpoint LATEST names: kNotFound when LATEST or the checkpoint is
// missing, kInvalidArgument when LATEST is corrupt.
Located LocateLatest(FileSystem* fs, const std::string& dir);

}  // namespace checkpoint_internal
}  // namespace fluid
