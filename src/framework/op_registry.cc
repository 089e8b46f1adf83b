#include "src/framework/op_registry.h"

#include <cmath>
#include <sstream>

#include "src/framework/grad_op_maker.h"

namespace fluid {

const SlotSpec* OpSchema::FindInput(const std::string& name) const {
  for (const auto& s : inputs_)
    if (s.name == name) return &s;
  return nullptr;
}

const SlotSpec* OpSchema::FindOutput(const std::string& name) const {
  for (const auto& s : outputs_)
    if (s.name == name) return &s;
  return nullptr;
}

namespace {

void CheckSlots(
    const OpSchema& schema, const std::vector<SlotSpec>& specs,
    const google::protobuf::RepeatedPtrField<proto::OpDesc::Var>& bound,
    const char* kind) {
  for (const auto& v : bound) {
    const SlotSpec* spec = nullptr;
    for (const auto& s : specs)
      if (s.name == v.parameter()) spec = &s;
    FLUID_ENFORCE(spec != nullptr, "op '", schema.type(), "' has no ", kind,
                  " slot '", v.parameter(), "'");
    FLUID_ENFORCE(spec->duplicable || v.arguments_size() <= 1, "op '",
                  schema.type(), "' ", kind, " slot '", v.parameter(),
                  "' takes one variable, got ", v.arguments_size());
  }
  for (const auto& s : specs) {
    if (s.dispensable) continue;
    bool found = false;
    for (const auto& v : bound)
      if (v.parameter() == s.name && v.arguments_size() > 0) found = true;
    FLUID_ENFORCE(found, "op '", schema.type(), "' needs ", kind, " slot '",
                  s.name, "'");
  }
}

// A bound as a reader would write it: whole numbers without a fraction.
std::string BoundText(double v) {
  std::ostringstream os;
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e18) {
    os << static_cast<int64_t>(v);
  } else {
    os << v;
  }
  return os.str();
}

enum class Numbers { kNone, kScalar, kList };

// The numbers an attribute holds (each element of a list): kNone for a
// string or a bool.
Numbers NumbersOf(const Attribute& value, std::vector<double>* out) {
  return std::visit(
      [out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, float> ||
                      std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
          out->push_back(static_cast<double>(v));
          return Numbers::kScalar;
        } else if constexpr (std::is_same_v<T, std::vector<int32_t>> ||
                             std::is_same_v<T, std::vector<float>> ||
                             std::is_same_v<T, std::vector<int64_t>>) {
          for (auto x : v) out->push_back(static_cast<double>(x));
          return Numbers::kList;
        } else {
          return Numbers::kNone;
        }
      },
      value);
}

void CheckAttrRange(const std::string& op_type, const AttrSpec& spec,
                    const Attribute& value) {
  if (spec.has_range) {
    std::vector<double> numbers;
    const Numbers kind = NumbersOf(value, &numbers);
    for (size_t i = 0; i < numbers.size(); ++i) {
      const double v = numbers[i];
      if (v >= spec.min && v <= spec.max) continue;  // false for NaN
      const std::string where =
          kind == Numbers::kList ? "element " + std::to_string(i) + " " : "";
      FLUID_THROW(ErrorCode::kInvalidArgument, "attribute '", spec.name,
                  "' of op '", op_type, "': ", where, BoundText(v),
                  " is out of its range [", BoundText(spec.min), ", ",
                  BoundText(spec.max), "] (", spec.doc, ")");
    }
  }
  if (!spec.choices.empty()) {
    if (const auto* s = std::get_if<std::string>(&value)) {
      bool known = false;
      for (const auto& c : spec.choices) known = known || c == *s;
      if (!known) {
        std::string all;
        for (const auto& c : spec.choices)
          all += (all.empty() ? "" : ", ") + Quote(c);
        FLUID_THROW(ErrorCode::kInvalidArgument, "attribute '", spec.name,
                    "' of op '", op_type, "' is ", Quote(*s),
                    "; it takes one of ", all);
      }
    }
  }
}

}  // namespace

OpSchema& OpSchema::InRange(double lo, double hi) {
  FLUID_ENFORCE(!attrs_.empty(), "op '", type_,
                "': InRange follows the Attr it constrains");
  FLUID_ENFORCE(lo <= hi, "op '", type_, "': empty range for attribute '",
                attrs_.back().name, "'");
  AttrSpec& spec = attrs_.back();
  spec.has_range = true;
  spec.min = lo;
  spec.max = hi;
  CheckAttrRange(type_, spec, spec.default_value);
  return *this;
}

OpSchema& OpSchema::OneOf(std::vector<std::string> choices) {
  FLUID_ENFORCE(!attrs_.empty(), "op '", type_,
                "': OneOf follows the Attr it constrains");
  AttrSpec& spec = attrs_.back();
  spec.choices = std::move(choices);
  CheckAttrRange(type_, spec, spec.default_value);
  return *this;
}

void OpSchema::Validate(const proto::OpDesc& op) const {
  CheckSlots(*this, inputs_, op.inputs(), "input");
  CheckSlots(*this, outputs_, op.outputs(), "output");
}

AttributeMap OpSchema::ResolveAttrs(const proto::OpDesc& op) const {
  AttributeMap attrs;
  for (const auto& spec : attrs_) attrs[spec.name] = spec.default_value;
  for (const auto& a : op.attrs()) {
    Attribute value = AttributeFromProto(a);
    auto it = attrs.find(a.name());
    if (it != attrs.end() && it->second.index() != value.index()) {
      FLUID_THROW(ErrorCode::kInvalidArgument, "attribute '", a.name(),
                  "' of op '", type_, "' should be ",
                  AttrTypeName(it->second.index()), ", got ",
                  AttrTypeName(value.index()));
    }
    // Attrs the schema does not declare (op_role, op_role_var, and attrs
    // added by tools) are kept as they are.
    attrs[a.name()] = std::move(value);
  }
  for (const auto& spec : attrs_)
    CheckAttrRange(type_, spec, attrs.find(spec.name)->second);
  return attrs;
}

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = new OpRegistry();
  return *registry;
}

OpSchema& OpRegistry::Register(const std::string& type) {
  FLUID_ENFORCE_CODE(schemas_.count(type) == 0, ErrorCode::kAlreadyExists,
                     "op type '", type, "' is registered twice");
  auto& slot = schemas_[type];
  slot = std::make_unique<OpSchema>(type);
  return *slot;
}

bool OpRegistry::RegisterKernel(const std::string& type, Place::Kind place,
                                DataType dtype, KernelFn fn) {
  auto& m = kernels_[type];
  KernelKey key{place, dtype};
  FLUID_ENFORCE_CODE(m.count(key) == 0, ErrorCode::kAlreadyExists,
                     "kernel for op '", type, "' (", DataTypeName(dtype),
                     ") registered twice");
  m[key] = fn;
  return true;
}

bool OpRegistry::RegisterAnyDtypeKernel(const std::string& type,
                                        Place::Kind place, KernelFn fn) {
  auto& m = any_dtype_kernels_[type];
  FLUID_ENFORCE_CODE(m.count(place) == 0, ErrorCode::kAlreadyExists,
                     "any-dtype kernel for op '", type, "' (",
                     place == Place::Kind::kCPU ? "CPU" : "CUDA",
                     ") registered twice");
  m[place] = fn;
  return true;
}

OpSchema& OpSchema::SetGrad(GradSpec spec) {
  auto shared = std::make_shared<const GradSpec>(std::move(spec));
  grad_spec_ = shared;
  grad_maker_ = [shared](const proto::OpDesc& fwd) {
    return std::vector<proto::OpDesc>{MakeGradOp(fwd, *shared)};
  };
  return *this;
}

OpSchema& OpRegistry::RegisterGrad(const std::string& grad_type) {
  const OpSchema* fwd = nullptr;
  for (const auto& kv : schemas_) {
    const GradSpec* spec = kv.second->grad_spec();
    if (spec != nullptr && spec->type == grad_type) fwd = kv.second.get();
  }
  FLUID_ENFORCE_CODE(fwd != nullptr, ErrorCode::kNotFound, "gradient op '",
                     grad_type,
                     "': no registered op names it in SetGrad "
                     "(register the forward op first)");
  const GradSpec& spec = *fwd->grad_spec();
  auto slot = [&](const std::vector<SlotSpec>& slots, const std::string& name) {
    for (const auto& s : slots)
      if (s.name == name) return s;
    FLUID_THROW(ErrorCode::kNotFound, "gradient op '", grad_type, "': op '",
                fwd->type(), "' has no slot '", name, "'");
  };
  OpSchema& g = Register(grad_type);
  auto add = [&g](const SlotSpec& s, bool input, const std::string& name,
                  const std::string& doc, bool dispensable) {
    SlotSpec out{name, doc, s.duplicable, dispensable};
    (input ? g.inputs_ : g.outputs_).push_back(out);
  };
  for (const auto& n : spec.inputs) {
    SlotSpec s = slot(fwd->inputs(), n);
    add(s, true, n, "forward input: " + s.doc, s.dispensable);
  }
  for (const auto& n : spec.outputs) {
    SlotSpec s = slot(fwd->outputs(), n);
    add(s, true, n, "forward output: " + s.doc, s.dispensable);
  }
  for (const auto& n : spec.out_grads)
    add(slot(fwd->outputs(), n), true, GradSlot(n), "gradient of " + n, false);
  for (const auto& n : spec.in_grads)
    add(slot(fwd->inputs(), n), false, GradSlot(n), "gradient of " + n, true);
  for (const auto& a : fwd->attrs()) {
    AttrSpec copy = a;
    copy.doc = "as in " + fwd->type() + ": " + a.doc;
    g.attrs_.push_back(std::move(copy));
  }
  return g;
}

bool OpRegistry::Has(const std::string& type) const {
  return schemas_.count(type) > 0;
}

const OpSchema& OpRegistry::Get(const std::string& type) const {
  auto it = schemas_.find(type);
  if (it == schemas_.end()) {
    FLUID_THROW(ErrorCode::kNotFound, "unknown op type ", Quote(type),
                "; known types: ", JoinKeys(schemas_));
  }
  return *it->second;
}

bool OpRegistry::HasKernel(const std::string& type, Place::Kind place,
                           DataType dtype) const {
  auto any = any_dtype_kernels_.find(type);
  if (any != any_dtype_kernels_.end() && any->second.count(place) != 0)
    return true;
  auto it = kernels_.find(type);
  return it != kernels_.end() && it->second.count(KernelKey{place, dtype}) != 0;
}

KernelFn OpRegistry::GetKernel(const std::string& type, const Place& place,
                               DataType dtype) const {
  auto any = any_dtype_kernels_.find(type);
  if (any != any_dtype_kernels_.end()) {
    auto k = any->second.find(place.kind);
    if (k != any->second.end()) return k->second;
  }
  auto it = kernels_.find(type);
  if (it != kernels_.end()) {
    auto k = it->second.find(KernelKey{place.kind, dtype});
    if (k != it->second.end()) return k->second;
  }
  std::ostringstream have;
  if (it != kernels_.end()) {
    bool first = true;
    for (const auto& kv : it->second) {
      have << (first ? "" : ", ")
           << (kv.first.place == Place::Kind::kCPU ? "CPU/" : "CUDA/")
           << DataTypeName(kv.first.dtype);
      first = false;
    }
  }
  FLUID_THROW(ErrorCode::kUnimplemented, "op '", type, "' has no kernel for ",
              place.ToString(), "/", DataTypeName(dtype), "; it has: [",
              have.str(), "]");
}

std::vector<std::string> OpRegistry::Types() const {
  std::vector<std::string> out;
  for (const auto& kv : schemas_) out.push_back(kv.first);
  return out;
}

namespace {

// The schema of the op whose gradient `grad_type` is ("mul" for "mul_grad"),
// or null.
const OpSchema* ForwardSchemaOf(const std::string& grad_type) {
  static const std::string kSuffix = "_grad";
  if (grad_type.size() <= kSuffix.size() ||
      grad_type.compare(grad_type.size() - kSuffix.size(), kSuffix.size(),
                        kSuffix) != 0) {
    return nullptr;
  }
  const std::string fwd =
      grad_type.substr(0, grad_type.size() - kSuffix.size());
  const OpRegistry& registry = OpRegistry::Global();
  return registry.Has(fwd) ? &registry.Get(fwd) : nullptr;
}

// Whether `grad` reads, under each slot name it shares with `fwd`, the
// variables `fwd` read or wrote there (and shares at least one).
bool IsGradientOf(const proto::OpDesc& grad, const proto::OpDesc& fwd) {
  int shared = 0;
  for (const auto& g : grad.inputs()) {
    for (const auto* slots : {&fwd.inputs(), &fwd.outputs()}) {
      for (const auto& f : *slots) {
        if (f.parameter() != g.parameter()) continue;
        if (f.arguments_size() != g.arguments_size()) return false;
        for (int k = 0; k < f.arguments_size(); ++k)
          if (f.arguments(k) != g.arguments(k)) return false;
        ++shared;
      }
    }
  }
  return shared > 0;
}

// The first attribute both schemas declare whose values differ, or "".
std::string FirstDifferentAttr(const OpSchema& fwd_schema,
                               const AttributeMap& fwd,
                               const OpSchema& grad_schema,
                               const AttributeMap& grad) {
  for (const AttrSpec& spec : fwd_schema.attrs()) {
    // A control-flow op's block and its gradient's are different blocks.
    if (spec.name == "sub_block") continue;
    bool declared = false;
    for (const AttrSpec& g : grad_schema.attrs())
      declared = declared || g.name == spec.name;
    if (!declared) continue;
    auto f = fwd.find(spec.name);
    auto g = grad.find(spec.name);
    if (f == fwd.end() || g == grad.end()) continue;
    if (!SameAttribute(f->second, g->second)) return spec.name;
  }
  return "";
}

}  // namespace

void CheckGradOpAttrs(const proto::BlockDesc& block) {
  const OpRegistry& registry = OpRegistry::Global();
  std::map<std::string, std::vector<int>> by_type;  // forward ops so far
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::OpDesc& op = block.ops(i);
    by_type[op.type()].push_back(i);
    const OpSchema* fwd_schema = ForwardSchemaOf(op.type());
    if (fwd_schema == nullptr || !registry.Has(op.type())) continue;
    auto candidates = by_type.find(fwd_schema->type());
    if (candidates == by_type.end()) continue;
    const OpSchema& grad_schema = registry.Get(op.type());
    const AttributeMap grad_attrs = grad_schema.ResolveAttrs(op);
    // The nearest forward op it agrees with; else report the nearest one.
    int nearest = -1;
    std::string differs;
    AttributeMap nearest_attrs;
    bool agrees = false;
    for (auto it = candidates->second.rbegin();
         it != candidates->second.rend() && !agrees; ++it) {
      const proto::OpDesc& fwd = block.ops(*it);
      if (!IsGradientOf(op, fwd)) continue;
      AttributeMap fwd_attrs = fwd_schema->ResolveAttrs(fwd);
      std::string name =
          FirstDifferentAttr(*fwd_schema, fwd_attrs, grad_schema, grad_attrs);
      agrees = name.empty();
      if (nearest < 0) {
        nearest = *it;
        differs = name;
        nearest_attrs = std::move(fwd_attrs);
      }
    }
    if (agrees || nearest < 0) continue;
    FLUID_THROW(ErrorCode::kInvalidArgument, "op #", i, " ", Quote(op.type()),
                " has ", differs, " = ",
                AttributeText(grad_attrs.find(differs)->second),
                " but the op it differentiates, #", nearest, " ",
                Quote(fwd_schema->type()), ", has ", differs, " = ",
                AttributeText(nearest_attrs.find(differs)->second),
                ": a gradient op must carry its forward op's attributes, or "
                "it computes a wrong gradient (regenerate the gradient ops, "
                "e.g. with append_backward, instead of editing them)");
  }
}

proto::OpDesc MakeOp(
    const std::string& type,
    const std::vector<std::pair<std::string, std::vector<std::string>>>& in,
    const std::vector<std::pair<std::string, std::vector<std::string>>>& out,
    const AttributeMap& attrs) {
  proto::OpDesc op;
  op.set_type(type);
  for (const auto& kv : in) SetOpInput(&op, kv.first, kv.second);
  for (const auto& kv : out) SetOpOutput(&op, kv.first, kv.second);
  for (const auto& kv : attrs) SetOpAttr(&op, kv.first, kv.second);
  return op;
}

}  // namespace fluid
