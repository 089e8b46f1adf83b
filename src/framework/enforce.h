// Errors. Library code reports bad input by throwing fluid::Error; only the
// edges (the trainer command, the Python bindings) catch it. The code lets an
// edge map the error to an exit status or an exception type.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace fluid {

enum class ErrorCode {
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kUnimplemented,
  kAborted,
  kInternal,
};

const char* ErrorCodeName(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

namespace internal {

inline void StreamAll(std::ostringstream&) {}
template <typename T, typename... Rest>
void StreamAll(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  StreamAll(os, rest...);
}

template <typename... Args>
[[noreturn]] void Throw(ErrorCode code, const Args&... args) {
  std::ostringstream os;
  StreamAll(os, args...);
  throw Error(code, os.str());
}

}  // namespace internal

}  // namespace fluid

// FLUID_ENFORCE(cond, msg...) throws an invalid-argument error when cond is
// false. The message pieces are streamed, so shapes and names compose freely.
#define FLUID_ENFORCE(cond, ...)                                             \
  do {                                                                       \
    if (!(cond))                                                             \
      ::fluid::internal::Throw(::fluid::ErrorCode::kInvalidArgument,         \
                               __VA_ARGS__);                                 \
  } while (0)

#define FLUID_ENFORCE_CODE(cond, code, ...)                                  \
  do {                                                                       \
    if (!(cond)) ::fluid::internal::Throw(code, __VA_ARGS__);                \
  } while (0)

#define FLUID_THROW(code, ...) ::fluid::internal::Throw(code, __VA_ARGS__)
