#include "src/framework/enforce.h"

#include <algorithm>
#include <cstdio>

namespace fluid {

namespace {

bool IsControl(unsigned char c) { return c < 0x20 || c == 0x7f; }

void AppendEscaped(std::string* out, std::string_view text) {
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (!IsControl(c)) {
      out->push_back(ch);
      continue;
    }
    char hex[5];
    std::snprintf(hex, sizeof(hex), "\\x%02x", c);
    out->append(hex);
  }
}

}  // namespace

std::string Quote(std::string_view text, size_t max_bytes) {
  std::string out = "'";
  AppendEscaped(&out, text.substr(0, max_bytes));
  if (text.size() <= max_bytes) return out + "'";
  return out + "...' (" + std::to_string(text.size()) + " bytes)";
}

std::string SanitizeMessage(std::string_view message) {
  std::string out;
  const size_t keep = std::min(message.size(), kMaxErrorMessageBytes);
  out.reserve(keep + 32);
  AppendEscaped(&out, message.substr(0, keep));
  if (message.size() > keep)
    out += "... (message cut at " + std::to_string(keep) + " of " +
           std::to_string(message.size()) + " bytes)";
  return out;
}

std::string OpContextPrefix(const OpContext& context) {
  std::string out =
      "in op " + Quote(context.type) + " (#" + std::to_string(context.index);
  if (context.block_id != 0)
    out += " of block " + std::to_string(context.block_id);
  if (!context.built_at.empty()) {
    const std::string_view at = context.built_at;
    out += ", built at ";
    if (at.size() > kMaxQuotedBytes) out += "...";
    out += SanitizeMessage(at.size() > kMaxQuotedBytes
                               ? at.substr(at.size() - kMaxQuotedBytes)
                               : at);
  }
  return out + "): ";
}

Error Error::WithOpContext(const OpContext& context) const {
  if (op_context_ != nullptr) return *this;
  return Error(Composed{}, code_, OpContextPrefix(context) + what(), os_errno_,
               std::make_shared<const OpContext>(context));
}

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
