// Errors. Library code reports bad input by throwing fluid::Error; only the
// edges (the trainer command, the Python bindings) catch it. The code lets an
// edge map the error to an exit status or an exception type.
#pragma once

#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace fluid {

enum class ErrorCode {
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kUnimplemented,
  kAborted,
  kInternal,
  // Out of host or device memory.
  kResourceExhausted,
  // A file-system or other operating-system call failed; Error::os_errno()
  // holds the errno value when there is one.
  kIO,
};

const char* ErrorCodeName(ErrorCode code);

// The longest message an Error carries; longer ones are cut (see
// SanitizeMessage).
constexpr size_t kMaxErrorMessageBytes = 2048;
// The most bytes of one name Quote echoes.
constexpr size_t kMaxQuotedBytes = 200;

// `text` as it may be echoed in a message: in single quotes, control bytes
// (and DEL) written as \xNN, cut after `max_bytes` bytes of the original
// with "... (N bytes)" naming its full length. Names read from input (var
// names in a model.pb, paths, flags) go through here, so that a message is
// one short printable line whatever the input holds.
std::string Quote(std::string_view text, size_t max_bytes = kMaxQuotedBytes);

// `message` with control bytes escaped as Quote does (so it stays on one
// line) and cut to kMaxErrorMessageBytes. Every Error's message passes
// through here.
std::string SanitizeMessage(std::string_view message);

// The keys of `map`, in its order, separated by ", ": the list an
// "unknown X; known: ..." message names.
template <typename Map>
std::string JoinKeys(const Map& map) {
  std::ostringstream out;
  const char* sep = "";
  for (const auto& kv : map) {
    out << sep << kv.first;
    sep = ", ";
  }
  return out.str();
}

// Where in a program an error arose: the op that was running. The executor
// records it when an error escapes an op, so that code handling the error
// can tell which op failed without reading the message.
struct OpContext {
  std::string type;  // the op's type, e.g. "mul"
  int index = -1;    // the op's position in its block
  int block_id = 0;
  // The line of the user's code that built the op ("train.py:42 in net()",
  // the first entry of its op_callstack attribute); empty for ops built
  // by C++ or loaded without one.
  std::string built_at = {};
};

// What an error's message starts with once it has left op `context`:
// "in op 'mul' (#3): " for an op of block 0, "in op 'mul' (#3 of block 1): "
// for another block, "in op 'mul' (#3, built at train.py:42 in net()): "
// for an op that records where it was built (the end of a long place is
// kept, its control bytes escaped).
std::string OpContextPrefix(const OpContext& context);

// Copies are cheap and never throw: the op context is shared.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message, int os_errno = 0)
      : std::runtime_error(SanitizeMessage(message)),
        code_(code),
        os_errno_(os_errno) {}
  // An error that adds to `cause`: `message` (which usually ends with
  // cause.what()) with the code, the errno and the op context of `cause`.
  // FLUID_RETHROW throws one of these. The message is not prefixed again:
  // the cause's prefix is in it when the caller embeds cause.what().
  Error(const Error& cause, const std::string& message)
      : std::runtime_error(SanitizeMessage(message)),
        code_(cause.code_),
        os_errno_(cause.os_errno_),
        op_context_(cause.op_context_) {}

  ErrorCode code() const { return code_; }
  // The errno of the failed system call behind this error, 0 if none. Kept
  // when an error is rethrown with more context (FLUID_RETHROW), so an edge
  // can tell "permission denied" from "no such file".
  int os_errno() const { return os_errno_; }
  // The op this error escaped from, or nullptr when it arose outside any op
  // (preparing a program, feeding, fetching, or outside an executor). Kept
  // through FLUID_RETHROW.
  const OpContext* op_context() const { return op_context_.get(); }

  // This error as it leaves op `context`: the same code and errno, the
  // context recorded, and the message prefixed with OpContextPrefix(context).
  // An error that already carries a context (one that escaped an op run by
  // an executor inside this op) comes back unchanged, so the message names
  // the innermost op, once.
  Error WithOpContext(const OpContext& context) const;

 private:
  struct Composed {};  // the message is already sanitized
  Error(Composed, ErrorCode code, const std::string& message, int os_errno,
        std::shared_ptr<const OpContext> op_context)
      : std::runtime_error(message),
        code_(code),
        os_errno_(os_errno),
        op_context_(std::move(op_context)) {}

  ErrorCode code_;
  int os_errno_;
  std::shared_ptr<const OpContext> op_context_;
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

// Like Throw, recording the errno of the failed system call.
template <typename... Args>
[[noreturn]] void ThrowOs(ErrorCode code, int os_errno, const Args&... args) {
  std::ostringstream os;
  StreamAll(os, args...);
  throw Error(code, os.str(), os_errno);
}

// Throws a new message with the code, errno and op context of `cause`.
template <typename... Args>
[[noreturn]] void Rethrow(const Error& cause, const Args&... args) {
  std::ostringstream os;
  StreamAll(os, args...);
  throw Error(cause, os.str());
}

}  // namespace internal

}  // namespace fluid

// FLUID_ENFORCE(cond, msg...) throws an invalid-argument error when cond is
// false. The message pieces are streamed, so shapes and names compose freely.
#define FLUID_ENFORCE(cond, ...)                                     \
  do {                                                               \
    if (!(cond))                                                     \
      ::fluid::internal::Throw(::fluid::ErrorCode::kInvalidArgument, \
                               __VA_ARGS__);                         \
  } while (0)

#define FLUID_ENFORCE_CODE(cond, code, ...)                   \
  do {                                                        \
    if (!(cond)) ::fluid::internal::Throw(code, __VA_ARGS__); \
  } while (0)

#define FLUID_THROW(code, ...) ::fluid::internal::Throw(code, __VA_ARGS__)

// FLUID_THROW_OS(code, err, msg...) also records the errno `err`.
#define FLUID_THROW_OS(code, err, ...) \
  ::fluid::internal::ThrowOs(code, err, __VA_ARGS__)

// FLUID_RETHROW(cause, msg...) throws a new error with the code, errno and
// op context of `cause` (a fluid::Error) and the given message, which
// usually ends with cause.what().
#define FLUID_RETHROW(cause, ...) ::fluid::internal::Rethrow(cause, __VA_ARGS__)
