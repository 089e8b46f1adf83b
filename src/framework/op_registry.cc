#include "src/framework/op_registry.h"

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

}  // namespace

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
  for (const auto& a : fwd->attrs())
    g.attrs_.push_back(
        {a.name, a.default_value, "as in " + fwd->type() + ": " + a.doc});
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
