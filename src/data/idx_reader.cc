#include "src/data/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "src/io/crc32.h"

namespace fluid {

int64_t Dataset::size() const {
  if (tensors.empty() || tensors[0].shape().rank() == 0) return 0;
  return tensors[0].shape()[0];
}

uint32_t ContentDigest(const Tensor& t) {
  constexpr size_t kWholeBytes = size_t{4} << 20;
  constexpr int64_t kSampledRows = 1024;
  const int32_t dtype = static_cast<int32_t>(t.dtype());
  uint32_t crc = Crc32(&dtype, sizeof(dtype));
  for (int64_t d : t.shape()) crc = Crc32Extend(crc, &d, sizeof(d));
  if (!t.shape().IsFullyKnown() || t.numel() == 0 || !t.initialized() ||
      !t.place().is_cpu())
    return crc;
  const char* data = static_cast<const char*>(t.raw_data());
  const size_t bytes = t.bytes();
  const int64_t rows = t.shape().rank() == 0 ? 1 : t.shape()[0];
  if (bytes <= kWholeBytes || rows <= kSampledRows)
    return Crc32Extend(crc, data, bytes);
  const size_t row_bytes = bytes / static_cast<size_t>(rows);
  for (int64_t k = 0; k < kSampledRows; ++k) {
    const int64_t row = k * (rows - 1) / (kSampledRows - 1);
    crc = Crc32Extend(crc, data + static_cast<size_t>(row) * row_bytes,
                      row_bytes);
  }
  return crc;
}

void Dataset::Check(const std::string& what) const {
  FLUID_ENFORCE(names.size() == tensors.size(), what, ": ", names.size(),
                " names for ", tensors.size(), " tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Shape& s = tensors[i].shape();
    FLUID_ENFORCE(s.rank() >= 1 && s.IsFullyKnown(), what, ": tensor '",
                  names[i], "' has shape ", s,
                  "; it needs a known sample dim 0");
    FLUID_ENFORCE(s[0] == size(), what, ": tensor '", names[i], "' holds ",
                  s[0], " samples but '", names[0], "' holds ", size());
    FLUID_ENFORCE(tensors[i].initialized() || tensors[i].numel() == 0, what,
                  ": tensor '", names[i], "' holds no data");
  }
}

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the readers assume a little-endian host");

// Bounds a single read: gzread takes an unsigned count, and growing the
// buffer as data arrives means a corrupt header cannot make us allocate
// more than the file really holds plus one chunk.
constexpr size_t kChunk = size_t{64} << 20;

size_t ElementSize(uint8_t type) {
  switch (static_cast<IdxType>(type)) {
    case IdxType::kUInt8:
    case IdxType::kInt8:
      return 1;
    case IdxType::kInt16:
      return 2;
    case IdxType::kInt32:
    case IdxType::kFloat32:
      return 4;
    case IdxType::kFloat64:
      return 8;
  }
  return 0;
}

std::string Hex(uint32_t v, int width) {
  std::ostringstream os;
  os << "0x" << std::hex;
  os.width(width);
  os.fill('0');
  os << v;
  return os.str();
}

// Closes the file however we leave.
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) {
      int err = errno;
      FLUID_THROW(
          err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kInvalidArgument,
          "cannot open IDX file '", path,
          "': ", err != 0 ? std::strerror(err) : "zlib could not open it");
    }
    gzbuffer(file_, 1 << 17);
  }
  ~GzReader() {
    if (file_ != nullptr) gzclose(file_);
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to n bytes; fewer only at the end of the data. A corrupt
  // gzip stream is an error.
  size_t Read(void* dst, size_t n) {
    size_t total = 0;
    while (total < n) {
      unsigned want = static_cast<unsigned>(std::min(n - total, kChunk));
      int got = gzread(file_, static_cast<char*>(dst) + total, want);
      if (got < 0) {
        int code = Z_OK;
        const char* msg = gzerror(file_, &code);
        // A gzip stream cut short: report it as truncation by the caller.
        if (code == Z_BUF_ERROR) break;
        FLUID_THROW(ErrorCode::kInvalidArgument, "IDX file '", path_,
                    "' is corrupt: ", msg);
      }
      if (got == 0) break;
      total += static_cast<size_t>(got);
    }
    return total;
  }

  // Why the data ended early, when zlib knows (a truncated gzip stream).
  std::string EndReason() {
    int code = Z_OK;
    const char* msg = gzerror(file_, &code);
    if (code == Z_OK || msg == nullptr || *msg == '\0') return "";
    return std::string(" (") + msg + ")";
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

void SwapToHost(std::vector<uint8_t>* data, size_t elem) {
  if (elem == 1) return;
  for (size_t i = 0; i + elem <= data->size(); i += elem)
    std::reverse(data->begin() + i, data->begin() + i + elem);
}

std::string DimsString(const std::vector<int64_t>& dims) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < dims.size(); ++i) os << (i ? ", " : "") << dims[i];
  os << "]";
  return os.str();
}

std::string FindSplitFile(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  for (const std::string& candidate :
       {(fs::path(dir) / (name + ".gz")).string(),
        (fs::path(dir) / name).string()}) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  FLUID_THROW(ErrorCode::kNotFound, "dataset directory '", dir,
              "' has neither '", name, ".gz' nor '", name, "'");
}

}  // namespace

IdxArray ReadIdx(const std::string& path) {
  GzReader in(path);
  uint8_t magic[4];
  size_t got = in.Read(magic, 4);
  FLUID_ENFORCE(got == 4, "IDX file '", path, "' is truncated: ", got,
                " bytes, less than the 4-byte magic", in.EndReason());
  uint32_t magic_word = (uint32_t{magic[0]} << 24) |
                        (uint32_t{magic[1]} << 16) | (uint32_t{magic[2]} << 8) |
                        magic[3];
  FLUID_ENFORCE(magic[0] == 0 && magic[1] == 0, "'", path,
                "' is not an IDX file: bad magic ", Hex(magic_word, 8),
                " (want 0x0000TTNN: type TT, NN dims)");
  size_t elem = ElementSize(magic[2]);
  FLUID_ENFORCE(elem != 0, "IDX file '", path, "' has unsupported type ",
                Hex(magic[2], 2), " in its magic ", Hex(magic_word, 8),
                " (known: 0x08 ubyte, 0x09 byte, 0x0b short, 0x0c int, ",
                "0x0d float, 0x0e double)");
  const int ndims = magic[3];
  FLUID_ENFORCE(ndims >= 1, "IDX file '", path, "' declares 0 dims");

  IdxArray out;
  out.type = static_cast<IdxType>(magic[2]);
  std::vector<uint8_t> raw_dims(4 * static_cast<size_t>(ndims));
  got = in.Read(raw_dims.data(), raw_dims.size());
  FLUID_ENFORCE(got == raw_dims.size(), "IDX file '", path,
                "' is truncated in its header: ", ndims, " dims need ",
                raw_dims.size(), " bytes, found ", got, in.EndReason());
  uint64_t numel = 1;
  for (int i = 0; i < ndims; ++i) {
    const uint8_t* b = &raw_dims[4 * i];
    uint32_t d = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
                 (uint32_t{b[2]} << 8) | b[3];
    out.dims.push_back(d);
    FLUID_ENFORCE(d == 0 || numel <= (uint64_t{1} << 48) / d, "IDX file '",
                  path, "' declares absurd dims ", DimsString(out.dims), "...");
    numel *= d;
  }

  const size_t need = static_cast<size_t>(numel) * elem;
  while (out.data.size() < need) {
    size_t old = out.data.size();
    size_t chunk = std::min(need - old, kChunk);
    out.data.resize(old + chunk);
    size_t n = in.Read(out.data.data() + old, chunk);
    if (n < chunk) {
      out.data.resize(old + n);
      break;
    }
  }
  FLUID_ENFORCE(out.data.size() == need, "IDX file '", path,
                "' is truncated: dims ", DimsString(out.dims), " of ", elem,
                "-byte elements need ", need, " data bytes, found ",
                out.data.size(), in.EndReason());
  uint8_t extra;
  FLUID_ENFORCE(in.Read(&extra, 1) == 0, "IDX file '", path,
                "' has bytes after the ", need, " data bytes its header ",
                "declares (dims ", DimsString(out.dims), ")");
  SwapToHost(&out.data, elem);
  return out;
}

Tensor ReadIdxImages(const std::string& path) {
  IdxArray a = ReadIdx(path);
  FLUID_ENFORCE(a.type == IdxType::kUInt8, "IDX image file '", path,
                "' has element type ", Hex(static_cast<uint8_t>(a.type), 2),
                "; images must be unsigned bytes (0x08)");
  FLUID_ENFORCE(a.dims.size() == 3, "IDX image file '", path, "' has dims ",
                DimsString(a.dims), "; images must be [N, H, W]");
  Tensor t;
  float* p = t.mutable_data<float>(Shape{a.dims[0], 1, a.dims[1], a.dims[2]});
  for (size_t i = 0; i < a.data.size(); ++i)
    p[i] = static_cast<float>(a.data[i]) / 255.0f;
  return t;
}

Tensor ReadIdxLabels(const std::string& path) {
  IdxArray a = ReadIdx(path);
  FLUID_ENFORCE(a.type == IdxType::kUInt8, "IDX label file '", path,
                "' has element type ", Hex(static_cast<uint8_t>(a.type), 2),
                "; labels must be unsigned bytes (0x08)");
  FLUID_ENFORCE(a.dims.size() == 1, "IDX label file '", path, "' has dims ",
                DimsString(a.dims), "; labels must be [N]");
  Tensor t;
  int64_t* p = t.mutable_data<int64_t>(Shape{a.dims[0], 1});
  for (size_t i = 0; i < a.data.size(); ++i) p[i] = a.data[i];
  return t;
}

Dataset LoadMnistFamily(const std::string& dir, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  std::string images_path = FindSplitFile(dir, prefix + "-images-idx3-ubyte");
  std::string labels_path = FindSplitFile(dir, prefix + "-labels-idx1-ubyte");
  Dataset d;
  d.names = {"image", "label"};
  d.tensors = {ReadIdxImages(images_path), ReadIdxLabels(labels_path)};
  FLUID_ENFORCE(d.tensors[0].shape()[0] == d.tensors[1].shape()[0], "'",
                images_path, "' holds ", d.tensors[0].shape()[0],
                " images but '", labels_path, "' holds ",
                d.tensors[1].shape()[0], " labels");
  return d;
}

}  // namespace fluid
