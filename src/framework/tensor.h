// Tensor: a typed, shaped view of a reference-counted buffer.
//
// Several tensors may share one Buffer at different offsets; that is how a
// bucket of gradients becomes one contiguous allocation (each gradient is a
// view into it). A Tensor is a cheap value: copying it shares the buffer.
// Resizing never shrinks the buffer, so a tensor reused across steps with the
// same or a smaller shape allocates only once. Not thread-safe.
#pragma once

#include <cstring>
#include <memory>
#include <utility>

#include "src/framework/lod.h"
#include "src/framework/types.h"

namespace fluid {

// One allocation. Owns its memory; freed when the last tensor lets go.
class Buffer {
 public:
  Buffer(size_t bytes, Place place);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const Place& place() const { return place_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  Place place_;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(DataType dtype, const Shape& shape) : dtype_(dtype), shape_(shape) {}

  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Place& place() const { return place_; }
  int64_t numel() const { return shape_.numel(); }
  // numel() * SizeOf(dtype()); an error when the shape is unknown or too
  // large (see TensorBytes).
  size_t bytes() const {
    return static_cast<size_t>(TensorBytes(shape_, dtype_));
  }
  // True once memory has been attached (by mutable_data or sharing).
  bool initialized() const { return buffer_ != nullptr; }
  // Lets go of the memory (freed once no view shares it), keeping dtype,
  // shape and LoD: what a reader of the shape alone still asks for (the
  // executor's eager deletion). Allocates nothing.
  void ReleaseBuffer() {
    buffer_.reset();
    offset_ = 0;
  }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  size_t offset() const { return offset_; }

  // Sets shape and dtype; memory is (re)allocated lazily by mutable_data.
  void Resize(const Shape& shape) { shape_ = shape; }
  void set_dtype(DataType dtype) { dtype_ = dtype; }

  // Ensures the buffer holds numel() elements of the current dtype and
  // returns them. Reuses the existing buffer whenever it is large enough.
  void* raw_mutable_data(Place place = Place::CPU());
  template <typename T>
  T* mutable_data(Place place = Place::CPU()) {
    dtype_ = DataTypeOf<T>::value;
    return static_cast<T*>(raw_mutable_data(place));
  }
  template <typename T>
  T* mutable_data(const Shape& shape, Place place = Place::CPU()) {
    Resize(shape);
    return mutable_data<T>(place);
  }

  const void* raw_data() const;
  template <typename T>
  const T* data() const {
    CheckType(DataTypeOf<T>::value);
    return static_cast<const T*>(raw_data());
  }
  template <typename T>
  T* data() {
    CheckType(DataTypeOf<T>::value);
    return static_cast<T*>(const_cast<void*>(raw_data()));
  }

  // LoD (src/framework/lod.h): lod() is the offsets of the sequences
  // packed along dim 0 (the finest level), empty for a tensor that is no
  // sequence batch. A tensor of several levels (Fluid's multi-level LoD:
  // sources -> sentences -> words) also holds the levels above it,
  // coarsest first, each indexing the sequences of the level below. Copies
  // (CopyFrom) carry every level; views (ShareDataWith, Slice) none: whoever
  // makes a view of a sequence batch decides whether its rows are the same.
  const LoD& lod() const { return lod_; }
  bool has_lod() const { return !lod_.empty(); }
  // set_lod sets one level (dropping any above it).
  void set_lod(LoD lod) {
    lod_ = std::move(lod);
    outer_lod_.clear();
  }
  void clear_lod() {
    lod_.clear();
    outer_lod_.clear();
  }
  // The levels above lod(), coarsest first (empty for one level or none).
  const LoDLevels& outer_lod() const { return outer_lod_; }
  // How many levels: 0 (no LoD), 1, or more.
  int lod_levels() const {
    return has_lod() ? 1 + static_cast<int>(outer_lod_.size()) : 0;
  }
  // Every level, coarsest first, lod() last (Fluid's LoDTensor::lod()).
  LoDLevels all_lod() const;
  // Sets every level, coarsest first (empty: no LoD). Checked with
  // CheckLoDLevels by whoever takes them from outside.
  void set_all_lod(LoDLevels levels);

  // Makes this tensor a view of `other`'s memory (same buffer and offset)
  // with other's dtype and shape.
  void ShareDataWith(const Tensor& other);
  // Views `shape` elements of `dtype` starting `byte_offset` bytes into
  // `buffer`. The view must fit inside the buffer.
  void ShareBuffer(std::shared_ptr<Buffer> buffer, size_t byte_offset,
                   DataType dtype, const Shape& shape);
  // A view of rows [begin, end) along dim 0.
  Tensor Slice(int64_t begin, int64_t end) const;
  // Deep copy into this tensor's own memory (reusing it when large enough).
  void CopyFrom(const Tensor& src);
  // Deep copy into memory at `place` (host <-> device as needed).
  void CopyFrom(const Tensor& src, const Place& place);

 private:
  void CheckType(DataType want) const;

  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;
  DataType dtype_ = DataType::kFloat32;
  Shape shape_;
  Place place_;
  LoD lod_;
  LoDLevels outer_lod_;
};

}  // namespace fluid
