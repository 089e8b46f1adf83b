#include "src/framework/operator.h"

#include "src/framework/shape_only_inputs.h"

namespace fluid {

namespace {

std::vector<BoundSlot> BindSlots(
    const google::protobuf::RepeatedPtrField<proto::OpDesc::Var>& vars) {
  std::vector<BoundSlot> out;
  out.reserve(vars.size());
  for (const auto& v : vars) {
    BoundSlot s;
    s.name = v.parameter();
    s.args.assign(v.arguments().begin(), v.arguments().end());
    s.vars.assign(s.args.size(), nullptr);
    out.push_back(std::move(s));
  }
  return out;
}

const BoundSlot* FindSlot(const std::vector<BoundSlot>& slots,
                          const std::string& name) {
  for (const auto& s : slots)
    if (s.name == name) return &s;
  return nullptr;
}

const proto::OpDesc::Var* FindDescSlot(
    const google::protobuf::RepeatedPtrField<proto::OpDesc::Var>& vars,
    const std::string& name) {
  for (const auto& v : vars)
    if (v.parameter() == name) return &v;
  return nullptr;
}

const std::string& SlotArg(const proto::OpDesc& op, const proto::OpDesc::Var* v,
                           const std::string& slot, size_t i,
                           const char* kind) {
  FLUID_ENFORCE(v != nullptr && static_cast<int>(i) < v->arguments_size(),
                "op ", Quote(op.type()), " has no ", kind, " '", slot, "'[", i,
                "]");
  return v->arguments(static_cast<int>(i));
}

}  // namespace

DataType KernelDtypeOf(const proto::OpDesc& op, const OpSchema& schema,
                       const AttributeMap& attrs,
                       const proto::BlockDesc& block) {
  std::string slot = schema.kernel_dtype_slot();
  if (slot.empty() && !schema.inputs().empty())
    slot = schema.inputs().front().name;
  if (!slot.empty()) {
    std::vector<std::string> names = OpInput(op, slot);
    if (names.empty()) names = OpOutput(op, slot);
    if (!names.empty()) {
      const proto::VarDesc* v = FindVarDesc(block, names[0]);
      FLUID_ENFORCE_CODE(v != nullptr, ErrorCode::kNotFound, "op ",
                         Quote(op.type()), " uses variable ", Quote(names[0]),
                         ", which is not declared");
      return VarDtype(*v);
    }
  }
  auto it = attrs.find("dtype");
  if (it != attrs.end() && std::holds_alternative<int32_t>(it->second))
    return static_cast<DataType>(std::get<int32_t>(it->second));
  return DataType::kFloat32;
}

OperatorBase::OperatorBase(const proto::OpDesc& desc,
                           const proto::BlockDesc& block, const Place& place)
    : desc_(desc) {
  schema_ = &OpRegistry::Global().Get(desc.type());
  schema_->Validate(desc);
  attrs_ = schema_->ResolveAttrs(desc);
  kernel_dtype_ = KernelDtypeOf(desc, *schema_, attrs_, block);
  kernel_ = OpRegistry::Global().GetKernel(desc.type(), place, kernel_dtype_);
  inputs_ = BindSlots(desc.inputs());
  outputs_ = BindSlots(desc.outputs());
  if (HasOpAttr(desc, kOpSkipIfAttr))
    skip_if_ = GetOpAttrAs<std::string>(desc, kOpSkipIfAttr);
}

bool OperatorBase::SkippedThisRun() const {
  if (skip_if_var_ == nullptr) return false;
  const Tensor& flag = skip_if_var_->GetTensor();
  FLUID_ENFORCE(flag.initialized() && flag.numel() >= 1 &&
                    flag.dtype() == DataType::kInt32,
                "op ", Quote(type()), ": its ", kOpSkipIfAttr, " variable ",
                Quote(skip_if_), " must hold an int32 flag");
  if (flag.place().is_cpu()) return flag.data<int32_t>()[0] != 0;
  Tensor host;
  host.CopyFrom(flag, Place::CPU());
  return host.data<int32_t>()[0] != 0;
}

void OperatorBase::Bind(const Scope& scope) {
  for (auto* slots : {&inputs_, &outputs_}) {
    for (auto& s : *slots) {
      for (size_t i = 0; i < s.args.size(); ++i) {
        if (s.args[i] == kEmptyVarName || s.args[i].empty()) continue;
        s.vars[i] = scope.GetVar(s.args[i]);
      }
    }
  }
  if (!skip_if_.empty()) skip_if_var_ = scope.GetVar(skip_if_);
}

const BoundSlot* OperatorBase::FindInput(const std::string& slot) const {
  return FindSlot(inputs_, slot);
}

const BoundSlot* OperatorBase::FindOutput(const std::string& slot) const {
  return FindSlot(outputs_, slot);
}

// ---- runtime shape inference ----

bool RuntimeInferShapeContext::HasInput(const std::string& slot) const {
  const BoundSlot* s = op_.FindInput(slot);
  return s != nullptr && !s->vars.empty() && s->vars[0] != nullptr;
}

bool RuntimeInferShapeContext::HasOutput(const std::string& slot) const {
  const BoundSlot* s = op_.FindOutput(slot);
  return s != nullptr && !s->vars.empty() && s->vars[0] != nullptr;
}

size_t RuntimeInferShapeContext::InputSize(const std::string& slot) const {
  const BoundSlot* s = op_.FindInput(slot);
  return s ? s->vars.size() : 0;
}

size_t RuntimeInferShapeContext::OutputSize(const std::string& slot) const {
  const BoundSlot* s = op_.FindOutput(slot);
  return s ? s->vars.size() : 0;
}

const std::string& RuntimeInferShapeContext::InputName(const std::string& slot,
                                                       size_t i) const {
  return SlotArg(op_.desc(), FindDescSlot(op_.desc().inputs(), slot), slot, i,
                 "input");
}

const std::string& RuntimeInferShapeContext::OutputName(const std::string& slot,
                                                        size_t i) const {
  return SlotArg(op_.desc(), FindDescSlot(op_.desc().outputs(), slot), slot, i,
                 "output");
}

Variable* RuntimeInferShapeContext::InputVariable(const std::string& slot,
                                                  size_t i) const {
  const BoundSlot* s = op_.FindInput(slot);
  FLUID_ENFORCE(s != nullptr && i < s->vars.size() && s->vars[i] != nullptr,
                "input '", slot, "'[", i, "] is missing");
  return s->vars[i];
}

Variable* RuntimeInferShapeContext::OutputVariable(const std::string& slot,
                                                   size_t i) const {
  const BoundSlot* s = op_.FindOutput(slot);
  if (s == nullptr || i >= s->vars.size()) return nullptr;
  return s->vars[i];
}

const Tensor& RuntimeInferShapeContext::InputTensor(const std::string& slot,
                                                    size_t i) const {
  Variable* v = InputVariable(slot, i);
  const Tensor& t =
      v->IsSelectedRows() ? v->Get<SelectedRows>().value() : v->GetTensor();
  // (A var freed after its last read of values keeps its shape for the
  // ops that read that alone.)
  FLUID_ENFORCE(
      t.initialized() || v->IsSelectedRows() ||
          (t.shape().rank() > 0 &&
           ReadsShapeOnly(op_type(), slot,
                          [this](const char* o) { return HasOutput(o); })),
      "variable ", Quote(InputName(slot, i)), " (input ", slot,
      ") holds no value: feed it, or run the startup program first");
  return t;
}

bool RuntimeInferShapeContext::IsSelectedRowsInput(const std::string& slot,
                                                   size_t i) const {
  return InputVariable(slot, i)->IsSelectedRows();
}

void RuntimeInferShapeContext::SetOutputSelectedRows(const std::string& slot,
                                                     size_t i) {
  if (Variable* v = OutputVariable(slot, i)) v->GetMutableSelectedRows();
}

Shape RuntimeInferShapeContext::GetInputShape(const std::string& slot,
                                              size_t i) const {
  Variable* v = InputVariable(slot, i);
  if (v->IsSelectedRows()) return v->Get<SelectedRows>().dense_shape();
  return InputTensor(slot, i).shape();
}

DataType RuntimeInferShapeContext::GetInputDtype(const std::string& slot,
                                                 size_t i) const {
  return InputTensor(slot, i).dtype();
}

void RuntimeInferShapeContext::SetOutputShape(const std::string& slot,
                                              const Shape& shape, size_t i) {
  Variable* v = OutputVariable(slot, i);
  if (v == nullptr) return;
  if (v->IsSelectedRows()) {  // the kernel sizes the rows and values
    v->GetMutableSelectedRows()->set_height(shape.rank() > 0 ? shape[0] : 0);
    return;
  }
  Tensor* t = v->GetMutableTensor();
  // Named here, where the variable is known, before a kernel allocates it.
  int64_t bytes = 0;
  if (!ShapeBytes(shape, t->dtype(), &bytes))
    ThrowShapeTooLarge("variable " + Quote(OutputName(slot, i)), shape,
                       t->dtype());
  t->Resize(shape);
  t->clear_lod();  // last run's offsets; ShareLoD sets this run's
}

int RuntimeInferShapeContext::InputLoDLevel(const std::string& slot,
                                            size_t i) const {
  return InputTensor(slot, i).lod_levels();
}

LoDLevels RuntimeInferShapeContext::InputAllLoD(const std::string& slot,
                                                size_t i) const {
  return InputTensor(slot, i).all_lod();
}

void RuntimeInferShapeContext::SetOutputAllLoD(const std::string& slot,
                                               const LoDLevels& levels,
                                               size_t i) {
  const BoundSlot* s = op_.FindOutput(slot);
  if (s == nullptr || i >= s->vars.size() || s->vars[i] == nullptr) return;
  if (s->vars[i]->IsSelectedRows()) return;  // sparse rows carry no offsets
  s->vars[i]->GetMutableTensor()->set_all_lod(levels);
}

LoD RuntimeInferShapeContext::InputLoD(const std::string& slot,
                                       size_t i) const {
  return InputTensor(slot, i).lod();
}

void RuntimeInferShapeContext::SetOutputLoD(const std::string& slot,
                                            const LoD& lod, size_t i) {
  const BoundSlot* s = op_.FindOutput(slot);
  if (s == nullptr || i >= s->vars.size() || s->vars[i] == nullptr) return;
  if (s->vars[i]->IsSelectedRows()) return;  // sparse rows carry no offsets
  s->vars[i]->GetMutableTensor()->set_lod(lod);
}

void RuntimeInferShapeContext::SetOutputDtype(const std::string& slot,
                                              DataType dtype, size_t i) {
  Variable* v = OutputVariable(slot, i);
  if (v == nullptr) return;
  if (v->IsSelectedRows()) {
    v->GetMutableSelectedRows()->mutable_value()->set_dtype(dtype);
    return;
  }
  v->GetMutableTensor()->set_dtype(dtype);
}

// ---- compile-time shape inference ----

CompileTimeInferShapeContext::CompileTimeInferShapeContext(
    const proto::OpDesc& op, proto::BlockDesc* block)
    : op_(op), block_(block) {
  const OpSchema& schema = OpRegistry::Global().Get(op.type());
  schema.Validate(op);
  attrs_ = schema.ResolveAttrs(op);
  default_dtype_ = KernelDtypeOf(op, schema, attrs_, *block);
}

bool CompileTimeInferShapeContext::HasInput(const std::string& slot) const {
  const auto* v = FindDescSlot(op_.inputs(), slot);
  return v != nullptr && v->arguments_size() > 0 &&
         v->arguments(0) != kEmptyVarName;
}

bool CompileTimeInferShapeContext::HasOutput(const std::string& slot) const {
  const auto* v = FindDescSlot(op_.outputs(), slot);
  return v != nullptr && v->arguments_size() > 0 &&
         v->arguments(0) != kEmptyVarName;
}

size_t CompileTimeInferShapeContext::InputSize(const std::string& slot) const {
  const auto* v = FindDescSlot(op_.inputs(), slot);
  return v ? v->arguments_size() : 0;
}

size_t CompileTimeInferShapeContext::OutputSize(const std::string& slot) const {
  const auto* v = FindDescSlot(op_.outputs(), slot);
  return v ? v->arguments_size() : 0;
}

const std::string& CompileTimeInferShapeContext::InputName(
    const std::string& slot, size_t i) const {
  return SlotArg(op_, FindDescSlot(op_.inputs(), slot), slot, i, "input");
}

const std::string& CompileTimeInferShapeContext::OutputName(
    const std::string& slot, size_t i) const {
  return SlotArg(op_, FindDescSlot(op_.outputs(), slot), slot, i, "output");
}

Shape CompileTimeInferShapeContext::GetInputShape(const std::string& slot,
                                                  size_t i) const {
  return VarShape(GetVarDesc(*block_, InputName(slot, i)));
}

DataType CompileTimeInferShapeContext::GetInputDtype(const std::string& slot,
                                                     size_t i) const {
  return VarDtype(GetVarDesc(*block_, InputName(slot, i)));
}

proto::VarDesc* CompileTimeInferShapeContext::OutputVar(const std::string& slot,
                                                        size_t i) {
  const auto* v = FindDescSlot(op_.outputs(), slot);
  if (v == nullptr || static_cast<int>(i) >= v->arguments_size())
    return nullptr;
  const std::string& name = v->arguments(static_cast<int>(i));
  if (name == kEmptyVarName || name.empty()) return nullptr;
  proto::VarDesc* var = FindMutableVarDesc(block_, name);
  if (var == nullptr) var = AddVarDesc(block_, name, default_dtype_, Shape{});
  return var;
}

bool CompileTimeInferShapeContext::IsSelectedRowsInput(const std::string& slot,
                                                       size_t i) const {
  return GetVarDesc(*block_, InputName(slot, i)).type() ==
         proto::VarDesc::SELECTED_ROWS;
}

void CompileTimeInferShapeContext::SetOutputSelectedRows(
    const std::string& slot, size_t i) {
  if (proto::VarDesc* v = OutputVar(slot, i))
    v->set_type(proto::VarDesc::SELECTED_ROWS);
}

void CompileTimeInferShapeContext::SetOutputShape(const std::string& slot,
                                                  const Shape& shape,
                                                  size_t i) {
  if (proto::VarDesc* v = OutputVar(slot, i)) SetVarShape(v, shape);
}

void CompileTimeInferShapeContext::SetOutputDtype(const std::string& slot,
                                                  DataType dtype, size_t i) {
  if (proto::VarDesc* v = OutputVar(slot, i)) v->set_dtype(ToProto(dtype));
}

int CompileTimeInferShapeContext::InputLoDLevel(const std::string& slot,
                                                size_t i) const {
  return GetVarDesc(*block_, InputName(slot, i)).lod_level();
}

void CompileTimeInferShapeContext::SetOutputLoDLevel(const std::string& slot,
                                                     int level, size_t i) {
  proto::VarDesc* v = OutputVar(slot, i);
  if (v == nullptr) return;
  // Level 0 stays unset, so that programs without sequences read as before.
  if (level == 0) {
    v->clear_lod_level();
  } else {
    v->set_lod_level(level);
  }
}

void InferShapeAtCompileTime(const proto::OpDesc& op, proto::BlockDesc* block) {
  const OpSchema& schema = OpRegistry::Global().Get(op.type());
  CompileTimeInferShapeContext ctx(op, block);
  if (schema.infer_shape()) schema.infer_shape()(&ctx);
}

// ---- execution context ----

bool ExecutionContext::HasInput(const std::string& slot) const {
  const BoundSlot* s = op_.FindInput(slot);
  return s != nullptr && !s->vars.empty() && s->vars[0] != nullptr;
}

size_t ExecutionContext::InputSize(const std::string& slot) const {
  const BoundSlot* s = op_.FindInput(slot);
  return s ? s->vars.size() : 0;
}

Variable* ExecutionContext::InputVar(const std::string& slot, size_t i) const {
  const BoundSlot* s = op_.FindInput(slot);
  FLUID_ENFORCE(s != nullptr && i < s->vars.size() && s->vars[i] != nullptr,
                "input '", slot, "'[", i, "] is missing");
  return s->vars[i];
}

const Tensor& ExecutionContext::Input(const std::string& slot, size_t i) const {
  const Tensor& t = InputVar(slot, i)->GetTensor();
  FLUID_ENFORCE(
      t.initialized() ||
          (t.shape().rank() > 0 &&
           ReadsShapeOnly(type(), slot,
                          [this](const char* o) { return HasOutput(o); })),
      "variable ", Quote(InputName(slot, i)), " (input ", slot,
      ") holds no value");
  return t;
}

const std::string& ExecutionContext::InputName(const std::string& slot,
                                               size_t i) const {
  const BoundSlot* s = op_.FindInput(slot);
  FLUID_ENFORCE(s != nullptr && i < s->args.size(), "input '", slot, "'[", i,
                "] is missing");
  return s->args[i];
}

bool ExecutionContext::HasOutput(const std::string& slot, size_t i) const {
  const BoundSlot* s = op_.FindOutput(slot);
  return s != nullptr && i < s->vars.size() && s->vars[i] != nullptr;
}

size_t ExecutionContext::OutputSize(const std::string& slot) const {
  const BoundSlot* s = op_.FindOutput(slot);
  return s ? s->vars.size() : 0;
}

Variable* ExecutionContext::OutputVar(const std::string& slot, size_t i) const {
  const BoundSlot* s = op_.FindOutput(slot);
  if (s == nullptr || i >= s->vars.size()) return nullptr;
  return s->vars[i];
}

Tensor* ExecutionContext::Output(const std::string& slot, size_t i) const {
  Variable* v = OutputVar(slot, i);
  return v ? v->GetMutableTensor() : nullptr;
}

const std::string& ExecutionContext::OutputName(const std::string& slot,
                                                size_t i) const {
  const BoundSlot* s = op_.FindOutput(slot);
  FLUID_ENFORCE(s != nullptr && i < s->args.size(), "output '", slot, "'[", i,
                "] is missing");
  return s->args[i];
}

}  // namespace fluid
