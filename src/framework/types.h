// Element types, places and shapes: the small value types every other part
// of the framework passes around.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "proto/framework.pb.h"
#include "src/framework/enforce.h"
#include "src/framework/float16.h"

namespace fluid {

enum class DataType {
  kFloat32 = 0,
  kFloat64 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kFloat16 = 4,
  kBFloat16 = 5,
  kBool = 6,  // one byte, 0 or 1 (compare and logical ops)
};
// The largest DataType value (for range checks of dtype attrs).
constexpr int kMaxDataType = static_cast<int>(DataType::kBool);

// float32, float64, float16 or bfloat16.
inline bool IsFloatDtype(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64 ||
         t == DataType::kFloat16 || t == DataType::kBFloat16;
}
// float16 or bfloat16.
inline bool IsHalfDtype(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBFloat16;
}

size_t SizeOf(DataType dtype);
const char* DataTypeName(DataType dtype);
DataType FromProto(proto::DataType dtype);
proto::DataType ToProto(DataType dtype);

template <typename T>
struct DataTypeOf;
template <>
struct DataTypeOf<float> {
  static constexpr DataType value = DataType::kFloat32;
};
template <>
struct DataTypeOf<double> {
  static constexpr DataType value = DataType::kFloat64;
};
template <>
struct DataTypeOf<int32_t> {
  static constexpr DataType value = DataType::kInt32;
};
template <>
struct DataTypeOf<int64_t> {
  static constexpr DataType value = DataType::kInt64;
};
template <>
struct DataTypeOf<float16> {
  static constexpr DataType value = DataType::kFloat16;
};
template <>
struct DataTypeOf<bfloat16> {
  static constexpr DataType value = DataType::kBFloat16;
};
template <>
struct DataTypeOf<bool> {
  static constexpr DataType value = DataType::kBool;
};

// Where a tensor's memory lives.
struct Place {
  enum class Kind { kCPU = 0, kCUDA = 1 };
  Kind kind = Kind::kCPU;
  int device = 0;

  static Place CPU() { return Place{}; }
  static Place CUDA(int device) { return Place{Kind::kCUDA, device}; }
  bool is_cpu() const { return kind == Kind::kCPU; }
  bool operator==(const Place& o) const {
    return kind == o.kind && (kind == Kind::kCPU || device == o.device);
  }
  bool operator!=(const Place& o) const { return !(*this == o); }
  std::string ToString() const;
};

// A shape with inline storage: shape arithmetic on the hot path (runtime
// shape inference) never touches the heap. -1 marks an unknown dimension.
class Shape {
 public:
  static constexpr int kMaxRank = 8;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims);
  template <typename It>
  Shape(It begin, It end) {
    for (; begin != end; ++begin) push_back(*begin);
  }

  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  const int64_t* begin() const { return dims_; }
  const int64_t* end() const { return dims_ + rank_; }
  void push_back(int64_t d);
  void resize(int rank, int64_t fill = 0);

  // Product of all dims; -1 if any is unknown. A product that does not fit
  // in int64 is an error saying the shape is too large (never a wrapped
  // value).
  int64_t numel() const;
  // Product of dims in [begin, end); -1 and errors as numel().
  int64_t Product(int begin, int end) const;
  bool IsFullyKnown() const;
  std::vector<int64_t> ToVector() const {
    return std::vector<int64_t>(begin(), end());
  }
  std::string ToString() const;

  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  int64_t dims_[kMaxRank] = {0};
  int rank_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

// Checked shape arithmetic: every element count and byte size of a tensor
// is computed here, so that no product of dims (or of dims and element
// size) can wrap around into a small allocation.
//
// *out = a * b for a, b >= 0; false (and *out untouched) when the product
// overflows int64.
bool CheckedMul(int64_t a, int64_t b, int64_t* out);
// *bytes = the size of a `dtype` tensor of `shape`, counting only its known
// dims (so -1 dims count as 1); false when that overflows int64.
bool ShapeBytes(const Shape& shape, DataType dtype, int64_t* bytes);
// The one error for a shape whose size overflows: "`what` of shape S
// (dtype) is too large: ...". `what` names the tensor or variable.
[[noreturn]] void ThrowShapeTooLarge(const std::string& what,
                                     const Shape& shape, DataType dtype);
// Throws ThrowShapeTooLarge's error when ShapeBytes fails. For checks made
// where a variable is named (builder, Prepare, shape inference).
inline void CheckShapeFits(const Shape& shape, DataType dtype,
                           const std::string& what) {
  int64_t bytes = 0;
  if (!ShapeBytes(shape, dtype, &bytes)) ThrowShapeTooLarge(what, shape, dtype);
}
// The size in bytes of a fully known `shape` of `dtype`; an error saying the
// shape is too large (or unknown) otherwise. `what` (may be null: "a
// tensor") names the tensor in the error; nothing is formatted unless it is
// thrown, since kernels size their outputs through here on every step.
int64_t TensorBytes(const Shape& shape, DataType dtype,
                    const char* what = nullptr);
std::ostream& operator<<(std::ostream& os, DataType t);

// True when a runtime shape fits a declared one (-1 matches anything).
bool ShapeMatches(const Shape& declared, const Shape& actual);
// Symmetric: same rank, and every dim equal where both are known.
bool ShapesCompatible(const Shape& a, const Shape& b);

// Op roles: which phase of training an op belongs to. Stored as the int attr
// "op_role" on every op; the transpiler navigates by these, never by names.
enum class OpRole : int {
  kForward = 0x0,
  kBackward = 0x1,
  kOptimize = 0x2,
  kCollective = 0x4,
  kReader = 0x8,
  kLoss = 0x100,
};
constexpr const char* kOpRoleAttr = "op_role";
constexpr const char* kOpRoleVarAttr = "op_role_var";
// Where the user's code built an op (Fluid's op_callstack): a strings attr,
// "file:line in function()" innermost first, that the Python bindings set
// on the ops a layer, an optimizer or a schedule appends. It never changes
// what a program computes: error messages name its first entry, and
// whatever compares programs (across ranks, or one op with another) leaves
// it out.
constexpr const char* kOpCallstackAttr = "op_callstack";
// The fluid.name_scope an op was built in ("/encoder/layer_1/"), for
// reading programs; like op_callstack, it never changes what they compute.
constexpr const char* kOpNamescopeAttr = "op_namescope";
// Whether an attr only annotates its op (op_callstack, op_namescope):
// comparisons of ops and programs leave such attrs out.
// An op whose string attr op_skip_if names a variable is skipped (neither
// shape inference nor kernel runs) on a run where that variable's first
// element is nonzero: how the optimizer's updates skip a step whose
// gradients overflowed (mixed precision's check_finite_and_unscale writes
// the flag). The variable must be int32.
constexpr const char* kOpSkipIfAttr = "op_skip_if";
inline bool IsOpAnnotationAttr(const std::string& name) {
  return name == kOpCallstackAttr || name == kOpNamescopeAttr;
}
inline int operator|(OpRole a, OpRole b) {
  return static_cast<int>(a) | static_cast<int>(b);
}

// Gradient naming: the gradient of x is "x@GRAD"; an output slot bound to the
// empty name is not computed.
constexpr const char* kGradSuffix = "@GRAD";
constexpr const char* kEmptyVarName = "@EMPTY@";
inline std::string GradVarName(const std::string& name) {
  return name + kGradSuffix;
}

}  // namespace fluid
