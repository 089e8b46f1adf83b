#include "src/builder/layer_registry.h"

#include <limits>
#include <sstream>

#include "src/framework/program_desc.h"

namespace fluid {

const char* LayerArgKindName(LayerArgKind kind) {
  switch (kind) {
    case LayerArgKind::kVar:
      return "var";
    case LayerArgKind::kVarList:
      return "var list";
    case LayerArgKind::kInt:
      return "int";
    case LayerArgKind::kIntList:
      return "int list";
    case LayerArgKind::kFloat:
      return "float";
    case LayerArgKind::kBool:
      return "bool";
    case LayerArgKind::kString:
      return "string";
    case LayerArgKind::kParamAttr:
      return "param attr";
  }
  return "?";
}

const char* LayerValueTypeName(const LayerValue& value) {
  static const char* const kNames[] = {"None",
                                       "a bool",
                                       "an int",
                                       "a float",
                                       "a string",
                                       "a list of ints",
                                       "a list of strings",
                                       "a param attr",
                                       "a list of param attrs"};
  static_assert(std::variant_size_v<LayerValue> ==
                sizeof(kNames) / sizeof(kNames[0]));
  return kNames[value.index()];
}

namespace {

// What an argument of `kind` must be, for messages.
const char* KindExpected(LayerArgKind kind) {
  switch (kind) {
    case LayerArgKind::kVar:
      return "a var name";
    case LayerArgKind::kVarList:
      return "a list of var names";
    case LayerArgKind::kInt:
      return "an int";
    case LayerArgKind::kIntList:
      return "a list of ints";
    case LayerArgKind::kFloat:
      return "a float";
    case LayerArgKind::kBool:
      return "a bool";
    case LayerArgKind::kString:
      return "a string";
    case LayerArgKind::kParamAttr:
      return "a param attr or a bool";
  }
  return "?";
}

template <typename T>
bool Holds(const LayerValue& v) {
  return std::holds_alternative<T>(v);
}

bool IsEmptyList(const LayerValue& v) {
  if (auto* ints = std::get_if<std::vector<int64_t>>(&v)) return ints->empty();
  if (auto* strs = std::get_if<std::vector<std::string>>(&v))
    return strs->empty();
  return false;
}

// `v` in the form an argument of `kind` stores, or nullopt when it cannot
// stand for one. An int stands for a float; an empty list, whatever a front
// end made of it, for any list.
std::optional<LayerValue> Coerce(LayerArgKind kind, const LayerValue& v) {
  switch (kind) {
    case LayerArgKind::kVar:
    case LayerArgKind::kString:
      if (Holds<std::string>(v)) return v;
      break;
    case LayerArgKind::kVarList:
      if (Holds<std::vector<std::string>>(v)) return v;
      if (IsEmptyList(v)) return LayerValue(std::vector<std::string>{});
      // A name is a list of one (Fluid's fc(input=x) for input=[x]).
      if (auto* s = std::get_if<std::string>(&v))
        return LayerValue(std::vector<std::string>{*s});
      break;
    case LayerArgKind::kInt:
      if (Holds<int64_t>(v)) return v;
      break;
    case LayerArgKind::kIntList:
      if (Holds<std::vector<int64_t>>(v)) return v;
      if (IsEmptyList(v)) return LayerValue(std::vector<int64_t>{});
      // An int is a list of one (Fluid's filter_size=3 for [3, 3]).
      if (auto* i = std::get_if<int64_t>(&v))
        return LayerValue(std::vector<int64_t>{*i});
      break;
    case LayerArgKind::kFloat:
      if (Holds<double>(v)) return v;
      if (auto* i = std::get_if<int64_t>(&v))
        return LayerValue(static_cast<double>(*i));
      break;
    case LayerArgKind::kBool:
      if (Holds<bool>(v)) return v;
      break;
    case LayerArgKind::kParamAttr:
      if (Holds<ParamAttr>(v) || Holds<bool>(v) ||
          Holds<std::vector<ParamAttr>>(v))
        return v;
      break;
  }
  return std::nullopt;
}

std::string ArgNames(const LayerSchema& schema) {
  std::ostringstream os;
  for (size_t i = 0; i < schema.args().size(); ++i)
    os << (i ? ", " : "") << schema.args()[i].name;
  return os.str();
}

}  // namespace

// ---- LayerArgs ----

LayerArgs::LayerArgs(const LayerSchema& schema, const LayerValues& given)
    : schema_(&schema) {
  const std::string layer = "layer " + Quote(schema.type());
  for (const auto& kv : given)
    FLUID_ENFORCE(schema.FindArg(kv.first) != nullptr, layer,
                  ": unknown argument ", Quote(kv.first),
                  "; its arguments: ", ArgNames(schema));
  for (const LayerArgSpec& spec : schema.args()) {
    auto it = given.find(spec.name);
    FLUID_ENFORCE(it != given.end() || !spec.required, layer,
                  ": missing argument ", Quote(spec.name), " (",
                  KindExpected(spec.kind), ")");
    if (it == given.end() ||
        (!spec.required && Holds<std::monostate>(it->second))) {
      values_[spec.name] = spec.default_value;
      continue;
    }
    std::optional<LayerValue> v = Coerce(spec.kind, it->second);
    FLUID_ENFORCE(v.has_value(), layer, ": argument ", Quote(spec.name),
                  " must be ", KindExpected(spec.kind), ", got ",
                  LayerValueTypeName(it->second));
    values_[spec.name] = std::move(*v);
  }
}

std::vector<ParamAttr> LayerArgs::ParamList(const std::string& name,
                                            size_t count) const {
  const LayerValue& v = Get(name, LayerArgKind::kParamAttr);
  auto* list = std::get_if<std::vector<ParamAttr>>(&v);
  if (list == nullptr) {
    std::optional<ParamAttr> one = Param(name);
    FLUID_ENFORCE(one.has_value(), "layer ", Quote(layer()), ": argument ",
                  Quote(name),
                  " cannot be false: the layer cannot go without this "
                  "parameter");
    return std::vector<ParamAttr>(count, *one);
  }
  FLUID_ENFORCE(list->size() == count, "layer ", Quote(layer()), ": argument ",
                Quote(name), " is a list of ", list->size(),
                " param attrs but the layer has ", count,
                " such parameters (one per input)");
  return *list;
}

const std::string& LayerArgs::layer() const { return schema_->type(); }

const LayerValue& LayerArgs::Get(const std::string& name,
                                 LayerArgKind kind) const {
  const LayerArgSpec* spec = schema_->FindArg(name);
  FLUID_ENFORCE_CODE(spec != nullptr, ErrorCode::kInternal, "layer ",
                     Quote(layer()), " reads argument ", Quote(name),
                     ", which it does not declare");
  FLUID_ENFORCE_CODE(spec->kind == kind, ErrorCode::kInternal, "layer ",
                     Quote(layer()), " reads argument ", Quote(name), " as ",
                     LayerArgKindName(kind), " but declares it ",
                     LayerArgKindName(spec->kind));
  return values_.at(name);
}

const std::string& LayerArgs::Var(const std::string& name) const {
  return std::get<std::string>(Get(name, LayerArgKind::kVar));
}

const std::vector<std::string>& LayerArgs::VarList(
    const std::string& name) const {
  return std::get<std::vector<std::string>>(Get(name, LayerArgKind::kVarList));
}

int64_t LayerArgs::Int(const std::string& name) const {
  return std::get<int64_t>(Get(name, LayerArgKind::kInt));
}

int LayerArgs::Int32(const std::string& name) const {
  int64_t v = Int(name);
  FLUID_ENFORCE(v >= std::numeric_limits<int32_t>::min() &&
                    v <= std::numeric_limits<int32_t>::max(),
                "layer ", Quote(layer()), ": argument ", Quote(name), " is ", v,
                ", out of the 32-bit range it takes");
  return static_cast<int>(v);
}

const std::vector<int64_t>& LayerArgs::IntList(const std::string& name) const {
  return std::get<std::vector<int64_t>>(Get(name, LayerArgKind::kIntList));
}

double LayerArgs::Float(const std::string& name) const {
  return std::get<double>(Get(name, LayerArgKind::kFloat));
}

bool LayerArgs::Bool(const std::string& name) const {
  return std::get<bool>(Get(name, LayerArgKind::kBool));
}

const std::string& LayerArgs::String(const std::string& name) const {
  return std::get<std::string>(Get(name, LayerArgKind::kString));
}

std::optional<ParamAttr> LayerArgs::Param(const std::string& name) const {
  const LayerValue& v = Get(name, LayerArgKind::kParamAttr);
  if (auto* attr = std::get_if<ParamAttr>(&v)) return *attr;
  FLUID_ENFORCE(!Holds<std::vector<ParamAttr>>(v), "layer ", Quote(layer()),
                ": argument ", Quote(name),
                " takes one param attr, not a list");
  if (std::get<bool>(v)) return ParamAttr{};
  return std::nullopt;
}

// ---- LayerSchema ----

LayerSchema& LayerSchema::AddArg(const std::string& name, LayerArgKind kind,
                                 bool required, LayerValue default_value) {
  FLUID_ENFORCE_CODE(FindArg(name) == nullptr, ErrorCode::kAlreadyExists,
                     "layer ", Quote(type_), " declares argument ", Quote(name),
                     " twice");
  args_.push_back({name, kind, required, std::move(default_value)});
  return *this;
}

LayerSchema& LayerSchema::Var(const std::string& name) {
  return AddArg(name, LayerArgKind::kVar, true, {});
}
LayerSchema& LayerSchema::VarList(const std::string& name) {
  return AddArg(name, LayerArgKind::kVarList, true, {});
}
LayerSchema& LayerSchema::Int(const std::string& name) {
  return AddArg(name, LayerArgKind::kInt, true, {});
}
LayerSchema& LayerSchema::Int(const std::string& name, int64_t value) {
  return AddArg(name, LayerArgKind::kInt, false, value);
}
LayerSchema& LayerSchema::IntList(const std::string& name) {
  return AddArg(name, LayerArgKind::kIntList, true, {});
}
LayerSchema& LayerSchema::IntList(const std::string& name,
                                  std::vector<int64_t> value) {
  return AddArg(name, LayerArgKind::kIntList, false, std::move(value));
}
LayerSchema& LayerSchema::Float(const std::string& name) {
  return AddArg(name, LayerArgKind::kFloat, true, {});
}
LayerSchema& LayerSchema::Float(const std::string& name, double value) {
  return AddArg(name, LayerArgKind::kFloat, false, value);
}
LayerSchema& LayerSchema::Bool(const std::string& name) {
  return AddArg(name, LayerArgKind::kBool, true, {});
}
LayerSchema& LayerSchema::Bool(const std::string& name, bool value) {
  return AddArg(name, LayerArgKind::kBool, false, value);
}
LayerSchema& LayerSchema::String(const std::string& name) {
  return AddArg(name, LayerArgKind::kString, true, {});
}
LayerSchema& LayerSchema::String(const std::string& name, std::string value) {
  return AddArg(name, LayerArgKind::kString, false, std::move(value));
}
LayerSchema& LayerSchema::Param(const std::string& name) {
  return AddArg(name, LayerArgKind::kParamAttr, false, ParamAttr{});
}

LayerSchema& LayerSchema::SetBuild(LayerFn fn) {
  build_ = std::move(fn);
  return *this;
}

LayerSchema& LayerSchema::SetBuild(SingleOutputLayerFn fn) {
  build_ = [fn = std::move(fn)](ProgramBuilder* b, const LayerArgs& a) {
    return std::vector<std::string>{fn(b, a)};
  };
  return *this;
}

const LayerArgSpec* LayerSchema::FindArg(const std::string& name) const {
  for (const auto& a : args_)
    if (a.name == name) return &a;
  return nullptr;
}

std::vector<std::string> LayerSchema::Build(ProgramBuilder* b,
                                            const LayerValues& values) const {
  FLUID_ENFORCE_CODE(static_cast<bool>(build_), ErrorCode::kInternal, "layer ",
                     Quote(type_), " has no build function");
  LayerArgs args(*this, values);
  const proto::BlockDesc& block = b->main()->blocks(0);
  for (const LayerArgSpec& spec : args_) {
    std::vector<std::string> vars;
    if (spec.kind == LayerArgKind::kVar) vars = {args.Var(spec.name)};
    if (spec.kind == LayerArgKind::kVarList) vars = args.VarList(spec.name);
    for (const auto& var : vars)
      FLUID_ENFORCE_CODE(FindVarDesc(block, var) != nullptr,
                         ErrorCode::kNotFound, "layer ", Quote(type_),
                         ": argument ", Quote(spec.name),
                         " names no variable of the program: ", Quote(var));
  }
  return build_(b, args);
}

// ---- LayerRegistry ----

LayerRegistry& LayerRegistry::Global() {
  // Never destroyed: registrars of other libraries may outlive any order.
  static LayerRegistry* registry = new LayerRegistry();
  return *registry;
}

LayerSchema& LayerRegistry::Register(const std::string& type) {
  FLUID_ENFORCE_CODE(schemas_.count(type) == 0, ErrorCode::kAlreadyExists,
                     "layer ", Quote(type), " is registered twice");
  auto& slot = schemas_[type];
  slot = std::make_unique<LayerSchema>(type);
  return *slot;
}

bool LayerRegistry::Has(const std::string& type) const {
  return schemas_.count(type) != 0;
}

const LayerSchema& LayerRegistry::Get(const std::string& type) const {
  auto it = schemas_.find(type);
  if (it == schemas_.end()) {
    FLUID_THROW(ErrorCode::kNotFound, "unknown layer ", Quote(type),
                "; known layers: ", JoinKeys(schemas_));
  }
  return *it->second;
}

std::vector<std::string> LayerRegistry::Types() const {
  std::vector<std::string> out;
  for (const auto& kv : schemas_) out.push_back(kv.first);
  return out;
}

std::vector<std::string> BuildLayer(ProgramBuilder* b, const std::string& type,
                                    const LayerValues& values) {
  return LayerRegistry::Global().Get(type).Build(b, values);
}

}  // namespace fluid
