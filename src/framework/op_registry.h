// The op registry: one OpSchema per op type, holding its slots and attrs,
// shape inference, grad-op maker and kernels keyed by (place, dtype).
//
// Registration reads like a declaration:
//
//   REGISTER_OP(mul)
//       .Doc("Matrix product of X and Y.")
//       .Input("X").Input("Y").Output("Out")
//       .Attr<int32_t>("x_num_col_dims", 1, "dims of X folded into rows")
//       .SetInferShape(MulInferShape)
//       .SetGradMaker(MulGradMaker)
//       .CPUKernel<float>(MulKernel<float>)
//       .CPUKernel<double>(MulKernel<double>);
//
// Kernels for other places (CUDA) register from their own files with
// REGISTER_KERNEL. The registry is built on first use, refuses duplicate
// types, and lists the known types when a lookup fails. Registration happens
// during static initialisation; lookups afterwards are read-only and safe
// from any thread.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/framework/attribute.h"
#include "src/framework/program_desc.h"
#include "src/framework/types.h"

namespace fluid {

class ExecutionContext;
class InferShapeContext;

using KernelFn = void (*)(const ExecutionContext&);
using InferShapeFn = std::function<void(InferShapeContext*)>;
// Emits the ops computing the gradients of `fwd`'s inputs from the gradients
// of its outputs. Gradient names follow GradVarName(); the autodiff later
// blanks out the gradients nobody needs.
using GradMakerFn =
    std::function<std::vector<proto::OpDesc>(const proto::OpDesc& fwd)>;

struct SlotSpec {
  std::string name;
  std::string doc;
  bool duplicable = false;   // may bind several vars
  bool dispensable = false;  // may be absent
};

struct AttrSpec {
  std::string name;
  Attribute default_value;
  std::string doc;
  // What values the attr may take, checked once when an op is instantiated
  // (Executor::Prepare): a number (each element of a list) within
  // [min, max], a string one of `choices`. Unconstrained by default.
  bool has_range = false;
  double min = 0;
  double max = 0;
  std::vector<std::string> choices;
};

// The open end of an attribute's range: .InRange(0, kNoUpperBound).
inline constexpr double kNoUpperBound = std::numeric_limits<double>::infinity();

struct KernelKey {
  Place::Kind place;
  DataType dtype;
  bool operator<(const KernelKey& o) const {
    return place != o.place ? place < o.place : dtype < o.dtype;
  }
};

// The usual gradient of an op: one op of type `type` whose slots are taken
// from the forward op by name. Named fields, set by chaining:
//   GradSpec("conv2d_grad").Inputs({"Input", "Filter"})
//       .OutGrads({"Output"}).InGrads({"Input", "Filter"})
struct GradSpec {
  explicit GradSpec(std::string grad_type) : type(std::move(grad_type)) {}
  GradSpec& Inputs(std::vector<std::string> slots) {
    inputs = std::move(slots);
    return *this;
  }
  GradSpec& Outputs(std::vector<std::string> slots) {
    outputs = std::move(slots);
    return *this;
  }
  GradSpec& OutGrads(std::vector<std::string> slots) {
    out_grads = std::move(slots);
    return *this;
  }
  GradSpec& InGrads(std::vector<std::string> slots) {
    in_grads = std::move(slots);
    return *this;
  }

  std::string type;
  std::vector<std::string> inputs;     // forward inputs the grad op reads
  std::vector<std::string> outputs;    // forward outputs the grad op reads
  std::vector<std::string> out_grads;  // forward outputs whose gradients
                                       // it reads ("<slot>@GRAD" inputs)
  std::vector<std::string> in_grads;   // forward inputs whose gradients it
                                       // writes ("<slot>@GRAD" outputs)
};

class OpSchema {
 public:
  explicit OpSchema(std::string type) : type_(std::move(type)) {}

  OpSchema& Doc(std::string doc) {
    doc_ = std::move(doc);
    return *this;
  }
  OpSchema& Input(const std::string& name, const std::string& doc = "") {
    inputs_.push_back({name, doc, false, false});
    return *this;
  }
  OpSchema& DuplicableInput(const std::string& name,
                            const std::string& doc = "") {
    inputs_.push_back({name, doc, true, false});
    return *this;
  }
  OpSchema& OptionalInput(const std::string& name,
                          const std::string& doc = "") {
    inputs_.push_back({name, doc, false, true});
    return *this;
  }
  OpSchema& Output(const std::string& name, const std::string& doc = "") {
    outputs_.push_back({name, doc, false, false});
    return *this;
  }
  OpSchema& DuplicableOutput(const std::string& name,
                             const std::string& doc = "") {
    outputs_.push_back({name, doc, true, false});
    return *this;
  }
  OpSchema& OptionalOutput(const std::string& name,
                           const std::string& doc = "") {
    outputs_.push_back({name, doc, false, true});
    return *this;
  }
  template <typename T>
  OpSchema& Attr(const std::string& name, T default_value,
                 const std::string& doc = "") {
    AttrSpec spec;
    spec.name = name;
    spec.default_value = Attribute(std::move(default_value));
    spec.doc = doc;
    attrs_.push_back(std::move(spec));
    return *this;
  }
  // Constrains the attr declared last: a number (each element of a list)
  // must lie in [lo, hi] (NaN never does), e.g.
  //   .Attr<int32_t>("x_num_col_dims", 1, "...").InRange(1, Shape::kMaxRank)
  OpSchema& InRange(double lo, double hi);
  // Constrains the string attr declared last to one of `choices`.
  OpSchema& OneOf(std::vector<std::string> choices);
  OpSchema& SetInferShape(InferShapeFn fn) {
    infer_shape_ = std::move(fn);
    return *this;
  }
  // A grad maker of its own, for gradients of an unusual shape.
  OpSchema& SetGradMaker(GradMakerFn fn) {
    grad_maker_ = std::move(fn);
    return *this;
  }
  // The usual gradient (see GradSpec): sets the grad maker, and lets
  // REGISTER_GRAD_OP(spec.type) declare the gradient op from this schema.
  OpSchema& SetGrad(GradSpec spec);
  // The slot whose first var's dtype selects the kernel. By default, the
  // first input slot; ops with no inputs select by their "dtype" attr.
  OpSchema& KernelDtypeFrom(const std::string& slot) {
    kernel_dtype_slot_ = slot;
    return *this;
  }
  template <typename T>
  OpSchema& CPUKernel(KernelFn fn);
  // Ops that manage their own dtypes (communication, control) register one
  // kernel used whatever the dtype.
  OpSchema& AnyDtypeKernel(KernelFn fn);
  // The same, for a kernel that drives any place itself (collectives and
  // control ops work on host and device tensors alike).
  OpSchema& AnyPlaceKernel(KernelFn fn);

  const std::string& type() const { return type_; }
  const std::string& doc() const { return doc_; }
  const std::vector<SlotSpec>& inputs() const { return inputs_; }
  const std::vector<SlotSpec>& outputs() const { return outputs_; }
  const std::vector<AttrSpec>& attrs() const { return attrs_; }
  const InferShapeFn& infer_shape() const { return infer_shape_; }
  const GradMakerFn& grad_maker() const { return grad_maker_; }
  const GradSpec* grad_spec() const { return grad_spec_.get(); }
  bool has_grad() const { return static_cast<bool>(grad_maker_); }
  const std::string& kernel_dtype_slot() const { return kernel_dtype_slot_; }
  const SlotSpec* FindInput(const std::string& name) const;
  const SlotSpec* FindOutput(const std::string& name) const;

  // Checks an OpDesc against this schema (required slots bound, no unknown
  // slots, attr types and ranges) and returns its attrs with defaults
  // filled in.
  AttributeMap ResolveAttrs(const proto::OpDesc& op) const;
  void Validate(const proto::OpDesc& op) const;

 private:
  friend class OpRegistry;  // RegisterGrad fills a schema from another

  std::string type_;
  std::string doc_;
  std::vector<SlotSpec> inputs_;
  std::vector<SlotSpec> outputs_;
  std::vector<AttrSpec> attrs_;
  InferShapeFn infer_shape_;
  GradMakerFn grad_maker_;
  std::shared_ptr<const GradSpec> grad_spec_;
  std::string kernel_dtype_slot_;
};

class OpRegistry {
 public:
  static OpRegistry& Global();

  // Registers a new op type; a duplicate type is a kAlreadyExists error.
  OpSchema& Register(const std::string& type);
  // Registers the gradient op `grad_type` of the forward op whose SetGrad
  // named it: its inputs are the forward slots the spec passes through and
  // the "<slot>@GRAD" of the forward outputs, its outputs the (optional)
  // "<slot>@GRAD" of the forward inputs, each as duplicable as the forward
  // slot; its attrs are the forward attrs with their defaults. The forward
  // op must be registered before (above it, in the same file).
  OpSchema& RegisterGrad(const std::string& grad_type);
  bool RegisterKernel(const std::string& type, Place::Kind place,
                      DataType dtype, KernelFn fn);
  bool RegisterAnyDtypeKernel(const std::string& type, Place::Kind place,
                              KernelFn fn);

  bool Has(const std::string& type) const;
  // An unknown type is a kNotFound error listing the known types.
  const OpSchema& Get(const std::string& type) const;
  // The kernel for (place, dtype); a missing one is an error naming what
  // kernels the op has.
  KernelFn GetKernel(const std::string& type, const Place& place,
                     DataType dtype) const;
  // Whether GetKernel finds a kernel for (place, dtype) (one registered for
  // that dtype, or one for every dtype).
  bool HasKernel(const std::string& type, Place::Kind place,
                 DataType dtype) const;
  std::vector<std::string> Types() const;

 private:
  OpRegistry() = default;
  std::map<std::string, std::unique_ptr<OpSchema>> schemas_;
  std::map<std::string, std::map<KernelKey, KernelFn>> kernels_;
  std::map<std::string, std::map<Place::Kind, KernelFn>> any_dtype_kernels_;
};

// Checks that each gradient op of `block` ("<type>_grad") carries the
// attributes of the forward op it differentiates: the op of <type> before
// it that reads and writes the variables the gradient op reads under the
// same slot names. Every attribute both schemas declare must hold the same
// value (defaults filled in); a gradient op made for other attributes
// computes a wrong gradient without failing, so it is an error naming both
// ops. A gradient op with no forward op in the block is left to its own
// checks.
void CheckGradOpAttrs(const proto::BlockDesc& block);

template <typename T>
OpSchema& OpSchema::CPUKernel(KernelFn fn) {
  OpRegistry::Global().RegisterKernel(type_, Place::Kind::kCPU,
                                      DataTypeOf<T>::value, fn);
  return *this;
}

inline OpSchema& OpSchema::AnyDtypeKernel(KernelFn fn) {
  OpRegistry::Global().RegisterAnyDtypeKernel(type_, Place::Kind::kCPU, fn);
  return *this;
}

inline OpSchema& OpSchema::AnyPlaceKernel(KernelFn fn) {
  OpRegistry::Global().RegisterAnyDtypeKernel(type_, Place::Kind::kCPU, fn);
  OpRegistry::Global().RegisterAnyDtypeKernel(type_, Place::Kind::kCUDA, fn);
  return *this;
}

// Builds an OpDesc: MakeOp("mul", {{"X", {"a"}}, {"Y", {"b"}}},
// {{"Out", {"c"}}}, {{"x_num_col_dims", 1}}).
proto::OpDesc MakeOp(
    const std::string& type,
    const std::vector<std::pair<std::string, std::vector<std::string>>>& in,
    const std::vector<std::pair<std::string, std::vector<std::string>>>& out,
    const AttributeMap& attrs = {});

}  // namespace fluid

#define FLUID_CONCAT_INNER(a, b) a##b
#define FLUID_CONCAT(a, b) FLUID_CONCAT_INNER(a, b)

#define REGISTER_OP(type)                                  \
  [[maybe_unused]] static ::fluid::OpSchema& FLUID_CONCAT( \
      fluid_op_schema_, type) = ::fluid::OpRegistry::Global().Register(#type)

// The gradient op declared by its forward op's SetGrad: slots and attrs
// come from there; the registration adds the doc, shape inference and
// kernels.
#define REGISTER_GRAD_OP(type)                                              \
  [[maybe_unused]] static ::fluid::OpSchema& FLUID_CONCAT(fluid_op_schema_, \
                                                          type) =           \
      ::fluid::OpRegistry::Global().RegisterGrad(#type)

#define REGISTER_KERNEL(type, place_kind, cpp_type, fn)                        \
  [[maybe_unused]] static bool FLUID_CONCAT(FLUID_CONCAT(fluid_kernel_, type), \
                                            __COUNTER__) =                     \
      ::fluid::OpRegistry::Global().RegisterKernel(                            \
          #type, ::fluid::Place::Kind::place_kind,                             \
          ::fluid::DataTypeOf<cpp_type>::value, fn)

// One kernel for every dtype (communication, control ops) at a place.
#define REGISTER_ANY_DTYPE_KERNEL(type, place_kind, fn)     \
  [[maybe_unused]] static bool FLUID_CONCAT(                \
      FLUID_CONCAT(fluid_any_kernel_, type), __COUNTER__) = \
      ::fluid::OpRegistry::Global().RegisterAnyDtypeKernel( \
          #type, ::fluid::Place::Kind::place_kind, fn)

// The float32 and float64 instances of a kernel template at a place:
// REGISTER_FLOAT_KERNELS(relu, kCUDA, ReluKernel).
#define REGISTER_FLOAT_KERNELS(type, place_kind, kernel_template)   \
  REGISTER_KERNEL(type, place_kind, float, kernel_template<float>); \
  REGISTER_KERNEL(type, place_kind, double, kernel_template<double>)
