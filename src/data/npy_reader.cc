#include "src/data/npy_reader.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

namespace fluid {

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the npy reader assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;  // numpy pads the header to this

// The header is a Python dict literal; these are the only values it holds.
struct PyValue {
  enum class Kind { kString, kBool, kTuple, kOther } kind = Kind::kOther;
  std::string str;
  bool boolean = false;
  std::vector<int64_t> ints;
};

// A parser for exactly the dict numpy writes:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path)
      : s_(text), path_(path) {}

  std::map<std::string, PyValue> ParseDict() {
    std::map<std::string, PyValue> dict;
    Expect('{');
    while (true) {
      SkipSpace();
      if (Peek() == '}') break;
      std::string key = ParseString();
      SkipSpace();
      Expect(':');
      SkipSpace();
      dict[key] = ParseValue(key);
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      SkipSpace();
      if (Peek() != '}') Fail("expected ',' or '}'");
    }
    ++pos_;
    return dict;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) {
    FLUID_THROW(ErrorCode::kInvalidArgument, "npy file '", path_,
                "' has a malformed header (", what, " at offset ", pos_,
                "): ", s_);
  }
  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void SkipSpace() {
    while (pos_ < s_.size() &&
           std::isspace(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
  }
  void Expect(char c) {
    SkipSpace();
    if (Peek() != c) Fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string ParseString() {
    char q = Peek();
    if (q != '\'' && q != '"') Fail("expected a quoted string");
    size_t end = s_.find(q, pos_ + 1);
    if (end == std::string::npos) Fail("unterminated string");
    std::string out = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return out;
  }
  bool ConsumeWord(const char* w) {
    size_t n = std::strlen(w);
    if (s_.compare(pos_, n, w) != 0) return false;
    pos_ += n;
    return true;
  }
  PyValue ParseValue(const std::string& key) {
    PyValue v;
    char c = Peek();
    if (c == '\'' || c == '"') {
      v.kind = PyValue::Kind::kString;
      v.str = ParseString();
    } else if (ConsumeWord("True")) {
      v.kind = PyValue::Kind::kBool;
      v.boolean = true;
    } else if (ConsumeWord("False")) {
      v.kind = PyValue::Kind::kBool;
      v.boolean = false;
    } else if (c == '(') {
      v.kind = PyValue::Kind::kTuple;
      ++pos_;
      while (true) {
        SkipSpace();
        if (Peek() == ')') break;
        if (!std::isdigit(static_cast<unsigned char>(Peek())))
          Fail("expected a non-negative integer in the shape");
        int64_t d = 0;
        while (std::isdigit(static_cast<unsigned char>(Peek()))) {
          if (d > (int64_t{1} << 56)) Fail("dimension too large");
          d = d * 10 + (s_[pos_++] - '0');
        }
        if (Peek() == 'L') ++pos_;  // Python 2 longs
        v.ints.push_back(d);
        SkipSpace();
        if (Peek() == ',') {
          ++pos_;
        } else if (Peek() != ')') {
          Fail("expected ',' or ')' in the shape");
        }
      }
      ++pos_;
    } else if (c == '[') {
      FLUID_THROW(ErrorCode::kUnimplemented, "npy file '", path_,
                  "' holds a structured array ('", key,
                  "' is a list); only plain numeric arrays are supported");
    } else {
      Fail("unexpected value for '" + key + "'");
    }
    return v;
  }

  const std::string& s_;
  const std::string& path_;
  size_t pos_ = 0;
};

struct NpyDtype {
  DataType dtype;    // in memory
  size_t file_size;  // bytes per element in the file
  bool widen_u8;     // |u1 read as int32
};

NpyDtype ParseDescr(const std::string& descr, const std::string& path) {
  if (descr == "<f4") return {DataType::kFloat32, 4, false};
  if (descr == "<f8") return {DataType::kFloat64, 8, false};
  if (descr == "<i4") return {DataType::kInt32, 4, false};
  if (descr == "<i8") return {DataType::kInt64, 8, false};
  if (descr == "|u1" || descr == "<u1" || descr == ">u1")
    return {DataType::kInt32, 1, true};
  if (!descr.empty() && descr[0] == '>')
    FLUID_THROW(ErrorCode::kUnimplemented, "npy file '", path,
                "' is big-endian (dtype '", descr,
                "'); only little-endian files are supported");
  FLUID_THROW(ErrorCode::kUnimplemented, "npy file '", path, "' has dtype '",
              descr, "'; supported: <f4, <f8, <i4, <i8, |u1");
}

const char* DescrOf(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return "<f4";
    case DataType::kFloat64:
      return "<f8";
    case DataType::kInt32:
      return "<i4";
    case DataType::kInt64:
      return "<i8";
    case DataType::kFloat16:
      return "<f2";
    case DataType::kBFloat16:
      return "<u2";  // numpy has no bfloat16: its bits
    case DataType::kBool:
      return "|b1";
  }
  return "?";
}

uint64_t ReadLE(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

}  // namespace

Tensor LoadNpy(const std::string& path) {
  errno = 0;
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) {
    int err = errno;
    FLUID_THROW(
        err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kInvalidArgument,
        "cannot open npy file '", path, "': ", std::strerror(err));
  }
  FLUID_ENFORCE(std::fseek(f.get(), 0, SEEK_END) == 0, "cannot seek in '", path,
                "'");
  const long file_size = std::ftell(f.get());
  FLUID_ENFORCE(file_size >= 0, "cannot tell the size of '", path, "'");
  std::rewind(f.get());

  unsigned char pre[12];
  size_t got = std::fread(pre, 1, 8, f.get());
  FLUID_ENFORCE(got == 8, "npy file '", path, "' is truncated: ", got,
                " bytes, less than the 8-byte magic and version");
  FLUID_ENFORCE(std::memcmp(pre, kMagic, kMagicLen) == 0, "'", path,
                "' is not an npy file: bad magic (want \\x93NUMPY)");
  const int major = pre[6], minor = pre[7];
  FLUID_ENFORCE(major >= 1 && major <= 3 && minor == 0, "npy file '", path,
                "' has format version ", major, ".", minor,
                "; supported: 1.0, 2.0, 3.0");
  const int len_bytes = major == 1 ? 2 : 4;
  got = std::fread(pre + 8, 1, len_bytes, f.get());
  FLUID_ENFORCE(got == static_cast<size_t>(len_bytes), "npy file '", path,
                "' is truncated in its header length");
  const uint64_t header_len = ReadLE(pre + 8, len_bytes);
  const uint64_t data_offset = 8 + len_bytes + header_len;
  FLUID_ENFORCE(data_offset <= static_cast<uint64_t>(file_size), "npy file '",
                path, "' is truncated: its header claims ", header_len,
                " bytes but the file has ", file_size, " in all");
  std::string header(header_len, '\0');
  got = std::fread(&header[0], 1, header_len, f.get());
  FLUID_ENFORCE(got == header_len, "npy file '", path,
                "' could not be read: ", std::strerror(errno));

  auto dict = HeaderParser(header, path).ParseDict();
  auto field = [&](const char* key, PyValue::Kind kind) -> const PyValue& {
    auto it = dict.find(key);
    FLUID_ENFORCE(it != dict.end(), "npy file '", path, "' header lacks '", key,
                  "': ", header);
    FLUID_ENFORCE(it->second.kind == kind, "npy file '", path,
                  "' header has an unexpected value for '", key, "': ", header);
    return it->second;
  };
  NpyDtype dt = ParseDescr(field("descr", PyValue::Kind::kString).str, path);
  if (field("fortran_order", PyValue::Kind::kBool).boolean)
    FLUID_THROW(ErrorCode::kUnimplemented, "npy file '", path,
                "' is in Fortran order; only C-order arrays are supported ",
                "(save np.ascontiguousarray(a))");
  const std::vector<int64_t>& dims = field("shape", PyValue::Kind::kTuple).ints;
  FLUID_ENFORCE(static_cast<int>(dims.size()) <= Shape::kMaxRank, "npy file '",
                path, "' has rank ", dims.size(), "; at most ", Shape::kMaxRank,
                " is supported");
  Shape shape(dims);
  uint64_t numel = 1;
  for (int64_t d : dims) {
    FLUID_ENFORCE(d == 0 || numel <= (uint64_t{1} << 56) / d, "npy file '",
                  path, "' has absurd shape ", shape);
    numel *= d;
  }
  const uint64_t data_bytes = numel * dt.file_size;
  const uint64_t have = file_size - data_offset;
  FLUID_ENFORCE(have >= data_bytes, "npy file '", path,
                "' is truncated: ", "shape ", shape, " needs ", data_bytes,
                " data bytes, found ", have);
  FLUID_ENFORCE(have == data_bytes, "npy file '", path, "' has ",
                have - data_bytes, " bytes after the ", data_bytes,
                " data bytes its header declares");

  Tensor t(dt.dtype, shape);
  void* dst = t.raw_mutable_data();
  if (dt.widen_u8) {
    std::vector<unsigned char> bytes(numel);
    got = std::fread(bytes.data(), 1, numel, f.get());
    FLUID_ENFORCE(got == numel, "npy file '", path, "' could not be read");
    int32_t* p = static_cast<int32_t*>(dst);
    for (uint64_t i = 0; i < numel; ++i) p[i] = bytes[i];
  } else {
    got = std::fread(dst, 1, data_bytes, f.get());
    FLUID_ENFORCE(got == data_bytes, "npy file '", path, "' could not be read");
  }
  return t;
}

void SaveNpy(const std::string& path, const Tensor& tensor) {
  const Shape& shape = tensor.shape();
  FLUID_ENFORCE(shape.IsFullyKnown(), "SaveNpy '", path, "': tensor shape ",
                shape, " is not fully known");
  FLUID_ENFORCE(tensor.initialized() || tensor.numel() == 0, "SaveNpy '", path,
                "': tensor holds no data");
  FLUID_ENFORCE(tensor.numel() == 0 || tensor.place().is_cpu(), "SaveNpy '",
                path, "': only host tensors can be saved");

  std::ostringstream dict;
  dict << "{'descr': '" << DescrOf(tensor.dtype())
       << "', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < shape.rank(); ++i) dict << (i ? ", " : "") << shape[i];
  if (shape.rank() == 1) dict << ",";
  dict << "), }";
  std::string header = dict.str();

  // Pad with spaces so that the data starts on a 64-byte boundary, ending
  // the header with '\n' as numpy does.
  int major = 1;
  size_t prefix = 10;
  if (header.size() + 1 + kAlign > 65535) {  // the padded length is a uint16
    major = 2;
    prefix = 12;
  }
  size_t total = prefix + header.size() + 1;
  header.append((kAlign - total % kAlign) % kAlign, ' ');
  header.push_back('\n');

  std::string out(kMagic, kMagicLen);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  uint64_t len = header.size();
  for (size_t i = 0; i < prefix - 8; ++i)
    out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  out += header;

  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(counter++);
  {
    errno = 0;
    File f(std::fopen(tmp.c_str(), "wb"));
    if (!f)
      FLUID_THROW(ErrorCode::kInvalidArgument, "cannot write npy file '", tmp,
                  "': ", std::strerror(errno));
    bool ok = std::fwrite(out.data(), 1, out.size(), f.get()) == out.size();
    if (ok && tensor.bytes() > 0)
      ok = std::fwrite(tensor.raw_data(), 1, tensor.bytes(), f.get()) ==
           tensor.bytes();
    ok = ok && std::fflush(f.get()) == 0;
    int err = errno;
    ok = std::fclose(f.release()) == 0 && ok;
    if (!ok) {
      std::remove(tmp.c_str());
      FLUID_THROW(ErrorCode::kInvalidArgument, "writing npy file '", tmp,
                  "' failed: ", std::strerror(err != 0 ? err : errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    FLUID_THROW(ErrorCode::kInvalidArgument, "cannot rename '", tmp, "' to '",
                path, "': ", std::strerror(err));
  }
}

}  // namespace fluid
