#include "src/framework/tensor.h"

#include <cstdlib>
#include <new>

#include "src/framework/memory.h"

namespace fluid {

namespace {
constexpr size_t kAlignment = 64;
}

Buffer::Buffer(size_t bytes, Place place) : size_(bytes), place_(place) {
  data_ = Allocate(place, bytes == 0 ? kAlignment : bytes);
}

Buffer::~Buffer() { Free(place_, data_, size_ == 0 ? kAlignment : size_); }

void* Tensor::raw_mutable_data(Place place) {
  const size_t need = static_cast<size_t>(TensorBytes(shape_, dtype_));
  if (!buffer_ || buffer_->place() != place ||
      buffer_->size() < offset_ + need) {
    buffer_ = std::make_shared<Buffer>(need, place);
    offset_ = 0;
  }
  place_ = place;
  return static_cast<char*>(buffer_->data()) + offset_;
}

const void* Tensor::raw_data() const {
  FLUID_ENFORCE(buffer_ != nullptr,
                "tensor has no memory: it was never written or fed");
  return static_cast<const char*>(buffer_->data()) + offset_;
}

void Tensor::CheckType(DataType want) const {
  FLUID_ENFORCE(dtype_ == want, "tensor holds ", DataTypeName(dtype_), " but ",
                DataTypeName(want), " was requested");
}

void Tensor::ShareDataWith(const Tensor& other) {
  buffer_ = other.buffer_;
  offset_ = other.offset_;
  dtype_ = other.dtype_;
  shape_ = other.shape_;
  place_ = other.place_;
}

void Tensor::ShareBuffer(std::shared_ptr<Buffer> buffer, size_t byte_offset,
                         DataType dtype, const Shape& shape) {
  FLUID_ENFORCE(buffer != nullptr, "ShareBuffer: null buffer");
  const size_t bytes =
      static_cast<size_t>(TensorBytes(shape, dtype, "a ShareBuffer view"));
  FLUID_ENFORCE(
      byte_offset <= buffer->size() && bytes <= buffer->size() - byte_offset,
      "ShareBuffer: view of ", bytes, " bytes at offset ", byte_offset,
      " exceeds buffer of ", buffer->size(), " bytes");
  place_ = buffer->place();
  buffer_ = std::move(buffer);
  offset_ = byte_offset;
  dtype_ = dtype;
  shape_ = shape;
}

Tensor Tensor::Slice(int64_t begin, int64_t end) const {
  FLUID_ENFORCE(shape_.rank() >= 1, "cannot slice a scalar");
  FLUID_ENFORCE(0 <= begin && begin <= end && end <= shape_[0], "slice [",
                begin, ", ", end, ") out of range for shape ", shape_);
  Tensor t;
  Shape s = shape_;
  s[0] = end - begin;
  size_t row =
      static_cast<size_t>(shape_.Product(1, shape_.rank())) * SizeOf(dtype_);
  t.ShareBuffer(buffer_, offset_ + begin * row, dtype_, s);
  return t;
}

LoDLevels Tensor::all_lod() const {
  if (!has_lod()) return {};
  LoDLevels levels = outer_lod_;
  levels.push_back(lod_);
  return levels;
}

void Tensor::set_all_lod(LoDLevels levels) {
  clear_lod();
  if (levels.empty()) return;
  lod_ = std::move(levels.back());
  levels.pop_back();
  outer_lod_ = std::move(levels);
}

void Tensor::CopyFrom(const Tensor& src) { CopyFrom(src, src.place()); }

void Tensor::CopyFrom(const Tensor& src, const Place& place) {
  if (&src == this && place == place_) return;
  dtype_ = src.dtype_;
  shape_ = src.shape_;
  lod_ = src.lod_;
  outer_lod_ = src.outer_lod_;
  if (src.bytes() == 0) {
    raw_mutable_data(place);
    return;
  }
  Tensor keep = src;  // src may be this tensor, or a view of its buffer
  void* dst = raw_mutable_data(place);
  CopyBytes(place, dst, keep.place(), keep.raw_data(), keep.bytes());
}

}  // namespace fluid
