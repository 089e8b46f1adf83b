#include "src/io/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "src/framework/enforce.h"

namespace fluid {

namespace {

ErrorCode CodeFor(int err) {
  return err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIO;
}

[[noreturn]] void ThrowErrno(int err, const char* what,
                             const std::string& path) {
  FLUID_THROW_OS(CodeFor(err), err, "cannot ", what, " '", path,
                 "': ", std::strerror(err));
}

std::string ParentDir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Makes the entries of `dir` (a created, renamed or removed child) durable.
// Some file systems refuse fsync on a directory (EINVAL); there is nothing
// more to do on those.
void SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) ThrowErrno(errno, "open directory", dir);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) ThrowErrno(err, "sync directory", dir);
}

class PosixFileSystem : public FileSystem {
 public:
  void WriteFile(const std::string& path, std::string_view bytes) override {
    // A per-process, per-call temp name: concurrent writers of one path never
    // share a temp file, and the rename decides who wins.
    std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                      std::to_string(counter_.fetch_add(1));
    int fd =
        ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) ThrowErrno(errno, "create", tmp);
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        ThrowErrno(err, "write", tmp);
      }
      done += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      ThrowErrno(err, "sync", tmp);
    }
    if (::close(fd) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      ThrowErrno(err, "close", tmp);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      ThrowErrno(err, "rename into place", path);
    }
    SyncDir(ParentDir(path));
  }

  std::string ReadFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) ThrowErrno(errno, "open", path);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      ThrowErrno(err, "stat", path);
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      FLUID_THROW(ErrorCode::kInvalidArgument, "cannot read '", path,
                  "': it is a directory");
    }
    // Read to EOF rather than trusting st_size (the file may be changing),
    // but size the buffer by st_size so a large file is not copied twice.
    std::string out(static_cast<size_t>(std::max<off_t>(st.st_size, 0)), '\0');
    size_t done = 0;
    char probe[4096];
    while (true) {
      bool full = done == out.size();
      char* dst = full ? probe : &out[done];
      size_t room = full ? sizeof(probe) : out.size() - done;
      ssize_t n = ::read(fd, dst, room);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        ::close(fd);
        ThrowErrno(err, "read", path);
      }
      if (n == 0) break;
      if (full) out.append(probe, static_cast<size_t>(n));
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    out.resize(done);
    return out;
  }

  void CreateDir(const std::string& path) override {
    std::error_code ec;
    bool created = std::filesystem::create_directories(path, ec);
    if (ec) ThrowErrno(ec.value(), "create directory", path);
    if (!std::filesystem::is_directory(path, ec))
      FLUID_THROW_OS(ErrorCode::kIO, ENOTDIR, "cannot create directory '", path,
                     "': it exists and is not a directory");
    if (created) SyncDir(ParentDir(path));
  }

  std::vector<std::string> ListDir(const std::string& path) override {
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) ThrowErrno(errno, "list", path);
    std::vector<std::string> names;
    while (true) {
      errno = 0;
      struct dirent* e = ::readdir(d);
      if (e == nullptr) break;
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) ThrowErrno(err, "list", path);
    std::sort(names.begin(), names.end());
    return names;
  }

  void RemoveAll(const std::string& path) override {
    std::error_code ec;
    std::uintmax_t n = std::filesystem::remove_all(path, ec);
    if (ec) ThrowErrno(ec.value(), "remove", path);
    if (n > 0) SyncDir(ParentDir(path));
  }

  void Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      int err = errno;
      FLUID_THROW_OS(CodeFor(err), err, "cannot rename '", from, "' to '", to,
                     "': ", std::strerror(err));
    }
    std::string from_dir = ParentDir(from), to_dir = ParentDir(to);
    SyncDir(to_dir);
    if (from_dir != to_dir) SyncDir(from_dir);
  }

  bool Exists(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  }

  FileStat Stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) ThrowErrno(errno, "stat", path);
    FileStat out;
    if (S_ISREG(st.st_mode)) {
      out.kind = FileStat::Kind::kRegular;
      out.size = static_cast<uint64_t>(std::max<off_t>(st.st_size, 0));
    } else if (S_ISDIR(st.st_mode)) {
      out.kind = FileStat::Kind::kDirectory;
    }
    return out;
  }

 private:
  std::atomic<uint64_t> counter_{0};
};

}  // namespace

FileSystem* DefaultFileSystem() {
  // Never destroyed, so it stays usable from other static destructors.
  static FileSystem* fs = new PosixFileSystem();
  return fs;
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

std::string ReadFileAtMost(FileSystem* fs, const std::string& path,
                           uint64_t limit) {
  const FileStat st = fs->Stat(path);
  FLUID_ENFORCE(st.kind == FileStat::Kind::kRegular, Quote(path),
                " is not a regular file");
  FLUID_ENFORCE(st.size <= limit, Quote(path), " has ", st.size,
                " bytes, more than the ", limit, " such a file may hold");
  std::string bytes = fs->ReadFile(path);
  FLUID_ENFORCE(bytes.size() <= limit, Quote(path), " grew to ", bytes.size(),
                " bytes while being read");
  return bytes;
}

}  // namespace fluid
