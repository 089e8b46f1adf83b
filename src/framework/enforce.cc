#include "src/framework/enforce.h"

namespace fluid {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kAlreadyExists:
      return "already exists";
    case ErrorCode::kUnimplemented:
      return "unimplemented";
    case ErrorCode::kAborted:
      return "aborted";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kResourceExhausted:
      return "resource exhausted";
    case ErrorCode::kIO:
      return "I/O error";
  }
  return "unknown";
}

}  // namespace fluid
