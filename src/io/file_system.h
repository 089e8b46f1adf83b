// FileSystem: every file operation the checkpoint code needs, behind an
// interface so tests can substitute one that fails (or "crashes") at a chosen
// call, after LevelDB's Env.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fluid {

// What Stat reports about a path (after following symbolic links).
struct FileStat {
  enum class Kind { kRegular, kDirectory, kOther };  // kOther: device, fifo...
  Kind kind = Kind::kOther;
  uint64_t size = 0;  // bytes, for a regular file
};

// A small file-system interface. Paths are plain strings joined with '/'.
// Failures throw fluid::Error: kNotFound for a missing path, kIO for any
// other failed system call (with Error::os_errno() set), kInvalidArgument for
// a path of the wrong kind (a directory where a file is expected and the
// like).
//
// Implementations must be thread-safe; callers own the objects they create,
// except DefaultFileSystem(), which lives for the whole process.
class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Replaces `path` with `bytes` atomically and durably: a reader (or the
  // file system after a crash) sees the old file or the whole new one, never
  // a prefix. The parent directory must exist. The checkpoint protocol relies
  // on this for its commit point (the LATEST file).
  virtual void WriteFile(const std::string& path, std::string_view bytes) = 0;
  virtual std::string ReadFile(const std::string& path) = 0;
  // Creates `path` and any missing parents; an existing directory is fine.
  virtual void CreateDir(const std::string& path) = 0;
  // Names (not paths) of the entries of a directory, sorted, without "." and
  // "..".
  virtual std::vector<std::string> ListDir(const std::string& path) = 0;
  // Removes a file or a directory tree; a missing path is not an error.
  virtual void RemoveAll(const std::string& path) = 0;
  // Renames a file or a directory, durably. `to` must not be a non-empty
  // directory.
  virtual void Rename(const std::string& from, const std::string& to) = 0;
  virtual bool Exists(const std::string& path) = 0;
  // The kind and size of `path`, without opening it (so a device, a fifo or
  // a huge file can be refused before it is read).
  virtual FileStat Stat(const std::string& path) = 0;
};

// The local POSIX file system. Writes go through a temp file, fsync and
// rename, followed by an fsync of the directory. Thread-safe.
FileSystem* DefaultFileSystem();

// Reads `path` after checking that it is a regular file of at most `limit`
// bytes (a device, a fifo, a directory or a huge file where a small file
// belongs is an error naming the path, not an endless read).
std::string ReadFileAtMost(FileSystem* fs, const std::string& path,
                           uint64_t limit);

// "a" + "b" -> "a/b" (no doubled '/').
std::string JoinPath(const std::string& dir, const std::string& name);

}  // namespace fluid
