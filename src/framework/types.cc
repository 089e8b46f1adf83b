#include "src/framework/types.h"

#include <sstream>

namespace fluid {

size_t SizeOf(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
    case DataType::kInt32:
      return 4;
    case DataType::kFloat64:
    case DataType::kInt64:
      return 8;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
    case DataType::kBool:
      return 1;
  }
  FLUID_THROW(ErrorCode::kInternal, "unknown dtype ", static_cast<int>(dtype));
}

const char* DataTypeName(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kFloat16:
      return "float16";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kBool:
      return "bool";
  }
  return "unknown";
}

DataType FromProto(proto::DataType dtype) {
  switch (dtype) {
    case proto::FP32:
      return DataType::kFloat32;
    case proto::FP64:
      return DataType::kFloat64;
    case proto::INT32:
      return DataType::kInt32;
    case proto::INT64:
      return DataType::kInt64;
    case proto::FP16:
      return DataType::kFloat16;
    case proto::BF16:
      return DataType::kBFloat16;
    case proto::BOOL:
      return DataType::kBool;
  }
  FLUID_THROW(ErrorCode::kInvalidArgument, "unknown dtype code ",
              static_cast<int>(dtype));
}

proto::DataType ToProto(DataType dtype) {
  return static_cast<proto::DataType>(static_cast<int>(dtype));
}

std::string Place::ToString() const {
  // Spelt as `trainer --place` takes it.
  if (kind == Kind::kCPU) return "cpu";
  return "cuda:" + std::to_string(device);
}

Shape::Shape(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) push_back(d);
}

Shape::Shape(const std::vector<int64_t>& dims) {
  for (int64_t d : dims) push_back(d);
}

void Shape::push_back(int64_t d) {
  FLUID_ENFORCE(rank_ < kMaxRank, "shape rank exceeds ", kMaxRank);
  dims_[rank_++] = d;
}

void Shape::resize(int rank, int64_t fill) {
  FLUID_ENFORCE(rank >= 0 && rank <= kMaxRank, "bad rank ", rank);
  for (int i = rank_; i < rank; ++i) dims_[i] = fill;
  rank_ = rank;
}

int64_t Shape::numel() const { return Product(0, rank_); }

int64_t Shape::Product(int begin, int end) const {
  int64_t n = 1;
  bool overflow = false;
  for (int i = begin; i < end; ++i) {
    if (dims_[i] < 0) return -1;
    overflow = overflow || !CheckedMul(n, dims_[i], &n);
  }
  FLUID_ENFORCE(!overflow, "shape ", *this, " is too large: its element ",
                "count overflows int64");
  return n;
}

bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}

bool ShapeBytes(const Shape& shape, DataType dtype, int64_t* bytes) {
  int64_t n = static_cast<int64_t>(SizeOf(dtype));
  for (int64_t d : shape)
    if (d >= 0 && !CheckedMul(n, d, &n)) return false;
  *bytes = n;
  return true;
}

void ThrowShapeTooLarge(const std::string& what, const Shape& shape,
                        DataType dtype) {
  FLUID_THROW(ErrorCode::kInvalidArgument, what, " of shape ", shape, " (",
              DataTypeName(dtype), ") is too large: its size in bytes ",
              "overflows int64, more than any allocation can hold");
}

int64_t TensorBytes(const Shape& shape, DataType dtype, const char* what) {
  int64_t bytes = 0;
  if (shape.IsFullyKnown() && ShapeBytes(shape, dtype, &bytes)) return bytes;
  const std::string subject = what != nullptr ? what : "a tensor";
  FLUID_ENFORCE(shape.IsFullyKnown(), "cannot allocate ", subject,
                " of unknown shape ", shape);
  ThrowShapeTooLarge(subject, shape, dtype);
}

bool Shape::IsFullyKnown() const {
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] < 0) return false;
  return true;
}

std::string Shape::ToString() const {
  std::ostringstream os;
  os << "[";
  for (int i = 0; i < rank_; ++i) os << (i ? ", " : "") << dims_[i];
  os << "]";
  return os.str();
}

bool Shape::operator==(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] != o.dims_[i]) return false;
  return true;
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  return os << s.ToString();
}

std::ostream& operator<<(std::ostream& os, DataType t) {
  return os << DataTypeName(t);
}

bool ShapeMatches(const Shape& declared, const Shape& actual) {
  if (declared.rank() != actual.rank()) return false;
  for (int i = 0; i < declared.rank(); ++i)
    if (declared[i] >= 0 && declared[i] != actual[i]) return false;
  return true;
}

bool ShapesCompatible(const Shape& a, const Shape& b) {
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (a[i] >= 0 && b[i] >= 0 && a[i] != b[i]) return false;
  return true;
}

}  // namespace fluid
