// The layer registry: each layer of src/builder/layers.cc declares, next to
// its typed function, its name, its arguments (name, kind, default) and a
// function building it from those arguments. Every front end that builds a
// layer by name (the Python package, through one generic binding) goes
// through BuildLayer, so a layer is written once.
//
// Registration reads like a declaration:
//
//   REGISTER_LAYER(fc)
//       .Doc("Fully connected layer.")
//       .Var("input")
//       .Int("size")
//       .String("act", "")
//       .Param("param_attr")
//       .SetBuild([](ProgramBuilder* b, const LayerArgs& a) {
//         return Fc(b, a.Var("input"), a.Int("size"), a.String("act"));
//       });
//
// The registry is built on first use, refuses duplicate layer and argument
// names, and lists the known names when a lookup fails. Registration happens
// during static initialisation of the library; lookups afterwards are
// read-only and safe from any thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {

// What an argument holds. kVar names a variable of the program being built;
// kString is any other text (a new var's name, an activation, a dtype).
enum class LayerArgKind {
  kVar,
  kVarList,
  kInt,
  kIntList,
  kFloat,
  kBool,
  kString,
  kParamAttr,
};
// "var", "var list", "int", ... as front ends list them.
const char* LayerArgKindName(LayerArgKind kind);

// A value given for an argument, before it is checked against the layer's
// declaration. std::monostate is "not given" (Python's None): the default
// of an optional argument. A param-attr argument also takes a bool: true is
// the default attr, false is "no such parameter" (Fluid's bias_attr=False).
using LayerValue =
    std::variant<std::monostate, bool, int64_t, double, std::string,
                 std::vector<int64_t>, std::vector<std::string>, ParamAttr,
                 std::vector<ParamAttr>>;
using LayerValues = std::map<std::string, LayerValue>;

// "None", "a bool", "an int", ... for messages.
const char* LayerValueTypeName(const LayerValue& value);

struct LayerArgSpec {
  std::string name;
  LayerArgKind kind;
  bool required = true;
  LayerValue default_value;  // when not required
};

class LayerSchema;

// The checked arguments of one layer call: every declared argument holds a
// value of its kind (the given one or its default). Getters name the
// argument; reading one the layer did not declare, or as another kind, is a
// kInternal error (a mistake in the registration, not in the input).
class LayerArgs {
 public:
  // Checks `given` against `schema`: an unknown argument, a missing required
  // one or a value of the wrong type is a kInvalidArgument error naming the
  // layer and the argument.
  LayerArgs(const LayerSchema& schema, const LayerValues& given);

  const std::string& Var(const std::string& name) const;
  const std::vector<std::string>& VarList(const std::string& name) const;
  int64_t Int(const std::string& name) const;
  // An int argument that must fit in 32 bits (sizes of a window, an axis).
  int Int32(const std::string& name) const;
  const std::vector<int64_t>& IntList(const std::string& name) const;
  double Float(const std::string& name) const;
  bool Bool(const std::string& name) const;
  const std::string& String(const std::string& name) const;
  // nullopt when the caller passed false: the layer goes without this
  // parameter.
  std::optional<ParamAttr> Param(const std::string& name) const;
  // A param-attr argument that may also be a list of attrs, one per
  // parameter (fc's param_attr, one per input): a single attr is
  // repeated `count` times; a list must have `count` attrs.
  std::vector<ParamAttr> ParamList(const std::string& name, size_t count) const;

  const std::string& layer() const;

 private:
  const LayerValue& Get(const std::string& name, LayerArgKind kind) const;

  const LayerSchema* schema_;
  std::map<std::string, LayerValue> values_;
};

// Appends the layer's ops through the builder and returns its output vars
// (one for most layers).
using LayerFn =
    std::function<std::vector<std::string>(ProgramBuilder*, const LayerArgs&)>;
using SingleOutputLayerFn =
    std::function<std::string(ProgramBuilder*, const LayerArgs&)>;

class LayerSchema {
 public:
  explicit LayerSchema(std::string type) : type_(std::move(type)) {}

  LayerSchema& Doc(std::string doc) {
    doc_ = std::move(doc);
    return *this;
  }
  // Without a default an argument is required.
  LayerSchema& Var(const std::string& name);
  LayerSchema& VarList(const std::string& name);
  LayerSchema& Int(const std::string& name);
  LayerSchema& Int(const std::string& name, int64_t default_value);
  LayerSchema& IntList(const std::string& name);
  LayerSchema& IntList(const std::string& name,
                       std::vector<int64_t> default_value);
  LayerSchema& Float(const std::string& name);
  LayerSchema& Float(const std::string& name, double default_value);
  LayerSchema& Bool(const std::string& name);
  LayerSchema& Bool(const std::string& name, bool default_value);
  LayerSchema& String(const std::string& name);
  LayerSchema& String(const std::string& name, std::string default_value);
  // Always optional: by default the layer's own initialiser and a generated
  // name.
  LayerSchema& Param(const std::string& name);

  LayerSchema& SetBuild(LayerFn fn);
  LayerSchema& SetBuild(SingleOutputLayerFn fn);
  // Applies `declare` (a function of LayerSchema&) to this schema: a family
  // of layers with one signature declares it once.
  template <typename Declare>
  LayerSchema& With(Declare&& declare) {
    declare(*this);
    return *this;
  }

  const std::string& type() const { return type_; }
  const std::string& doc() const { return doc_; }
  const std::vector<LayerArgSpec>& args() const { return args_; }
  const LayerArgSpec* FindArg(const std::string& name) const;

  // Checks `values` and builds the layer; see BuildLayer.
  std::vector<std::string> Build(ProgramBuilder* b,
                                 const LayerValues& values) const;

 private:
  LayerSchema& AddArg(const std::string& name, LayerArgKind kind, bool required,
                      LayerValue default_value);

  std::string type_;
  std::string doc_;
  std::vector<LayerArgSpec> args_;
  LayerFn build_;
};

class LayerRegistry {
 public:
  // The registry the REGISTER_LAYER declarations fill.
  static LayerRegistry& Global();

  // A duplicate type is a kAlreadyExists error.
  LayerSchema& Register(const std::string& type);
  bool Has(const std::string& type) const;
  // An unknown type is a kNotFound error listing the known types.
  const LayerSchema& Get(const std::string& type) const;
  std::vector<std::string> Types() const;

 private:
  std::map<std::string, std::unique_ptr<LayerSchema>> schemas_;
};

// Builds the registered layer `type` with `values` (argument name -> value):
// checks them (see LayerArgs), checks that every var argument names a var
// of the main program (kNotFound otherwise), and returns the layer's
// output vars.
std::vector<std::string> BuildLayer(ProgramBuilder* b, const std::string& type,
                                    const LayerValues& values);

}  // namespace fluid

// FLUID_CONCAT comes from src/framework/op_registry.h.
#define REGISTER_LAYER(type)                                  \
  [[maybe_unused]] static ::fluid::LayerSchema& FLUID_CONCAT( \
      fluid_layer_schema_, type) =                            \
      ::fluid::LayerRegistry::Global().Register(#type)
