#include "src/framework/program_desc.h"

#include <sstream>

namespace fluid {

const proto::VarDesc* FindVarDesc(const proto::BlockDesc& block,
                                  const std::string& name) {
  for (const auto& v : block.vars())
    if (v.name() == name) return &v;
  return nullptr;
}

proto::VarDesc* FindMutableVarDesc(proto::BlockDesc* block,
                                   const std::string& name) {
  for (auto& v : *block->mutable_vars())
    if (v.name() == name) return &v;
  return nullptr;
}

const proto::VarDesc& GetVarDesc(const proto::BlockDesc& block,
                                 const std::string& name) {
  const proto::VarDesc* v = FindVarDesc(block, name);
  FLUID_ENFORCE_CODE(v != nullptr, ErrorCode::kNotFound, "variable ",
                     Quote(name), " is not declared in block ", block.idx());
  return *v;
}

proto::VarDesc* AddVarDesc(proto::BlockDesc* block, const std::string& name,
                           DataType dtype, const Shape& shape,
                           bool persistable) {
  FLUID_ENFORCE_CODE(FindVarDesc(*block, name) == nullptr,
                     ErrorCode::kAlreadyExists, "variable ", Quote(name),
                     " is already declared");
  proto::VarDesc* v = block->add_vars();
  v->set_name(name);
  v->set_dtype(ToProto(dtype));
  SetVarShape(v, shape);
  v->set_persistable(persistable);
  return v;
}

Shape VarShape(const proto::VarDesc& var) {
  return Shape(var.shape().begin(), var.shape().end());
}

void SetVarShape(proto::VarDesc* var, const Shape& shape) {
  CheckShapeFits(shape, VarDtype(*var), "variable " + Quote(var->name()));
  var->clear_shape();
  for (int64_t d : shape) var->add_shape(d);
}

DataType VarDtype(const proto::VarDesc& var) { return FromProto(var.dtype()); }

namespace {

std::vector<std::string> SlotNames(
    const google::protobuf::RepeatedPtrField<proto::OpDesc::Var>& vars,
    const std::string& slot) {
  for (const auto& v : vars)
    if (v.parameter() == slot)
      return std::vector<std::string>(v.arguments().begin(),
                                      v.arguments().end());
  return {};
}

void SetSlot(google::protobuf::RepeatedPtrField<proto::OpDesc::Var>* vars,
             const std::string& slot, const std::vector<std::string>& names) {
  proto::OpDesc::Var* target = nullptr;
  for (auto& v : *vars)
    if (v.parameter() == slot) target = &v;
  if (target == nullptr) {
    target = vars->Add();
    target->set_parameter(slot);
  }
  target->clear_arguments();
  for (const auto& n : names) target->add_arguments(n);
}

std::vector<std::string> AllNames(
    const google::protobuf::RepeatedPtrField<proto::OpDesc::Var>& vars) {
  std::vector<std::string> out;
  for (const auto& v : vars)
    for (const auto& a : v.arguments()) out.push_back(a);
  return out;
}

void RenameIn(google::protobuf::RepeatedPtrField<proto::OpDesc::Var>* vars,
              const std::string& from, const std::string& to) {
  for (auto& v : *vars)
    for (auto& a : *v.mutable_arguments())
      if (a == from) a = to;
}

}  // namespace

std::vector<std::string> OpInput(const proto::OpDesc& op,
                                 const std::string& slot) {
  return SlotNames(op.inputs(), slot);
}
std::vector<std::string> OpOutput(const proto::OpDesc& op,
                                  const std::string& slot) {
  return SlotNames(op.outputs(), slot);
}
void SetOpInput(proto::OpDesc* op, const std::string& slot,
                const std::vector<std::string>& names) {
  SetSlot(op->mutable_inputs(), slot, names);
}
void SetOpOutput(proto::OpDesc* op, const std::string& slot,
                 const std::vector<std::string>& names) {
  SetSlot(op->mutable_outputs(), slot, names);
}
std::vector<std::string> OpInputNames(const proto::OpDesc& op) {
  return AllNames(op.inputs());
}
std::vector<std::string> OpOutputNames(const proto::OpDesc& op) {
  return AllNames(op.outputs());
}
void RenameOpInput(proto::OpDesc* op, const std::string& from,
                   const std::string& to) {
  RenameIn(op->mutable_inputs(), from, to);
}
void RenameOpOutput(proto::OpDesc* op, const std::string& from,
                    const std::string& to) {
  RenameIn(op->mutable_outputs(), from, to);
}

bool HasOpAttr(const proto::OpDesc& op, const std::string& name) {
  for (const auto& a : op.attrs())
    if (a.name() == name) return true;
  return false;
}

Attribute GetOpAttr(const proto::OpDesc& op, const std::string& name) {
  for (const auto& a : op.attrs())
    if (a.name() == name) return AttributeFromProto(a);
  FLUID_THROW(ErrorCode::kNotFound, "op '", op.type(), "' has no attribute '",
              name, "'");
}

void SetOpAttr(proto::OpDesc* op, const std::string& name,
               const Attribute& value) {
  for (auto& a : *op->mutable_attrs()) {
    if (a.name() == name) {
      AttributeToProto(name, value, &a);
      return;
    }
  }
  AttributeToProto(name, value, op->add_attrs());
}

int OpRoleOf(const proto::OpDesc& op) {
  if (!HasOpAttr(op, kOpRoleAttr)) return 0;
  return GetOpAttrAs<int32_t>(op, kOpRoleAttr);
}

std::vector<std::string> OpRoleNames(const proto::OpDesc& op) {
  const int role = OpRoleOf(op);
  std::vector<std::string> names;
  const std::pair<OpRole, const char*> phases[] = {
      {OpRole::kBackward, "backward"},
      {OpRole::kOptimize, "optimize"},
      {OpRole::kCollective, "collective"},
      {OpRole::kReader, "reader"}};
  for (const auto& [bit, name] : phases)
    if (role & static_cast<int>(bit)) names.push_back(name);
  if (names.empty()) names.push_back("forward");
  if (role & static_cast<int>(OpRole::kLoss)) names.push_back("loss");
  return names;
}

std::vector<std::string> OpRoleVarOf(const proto::OpDesc& op) {
  if (!HasOpAttr(op, kOpRoleVarAttr)) return {};
  return GetOpAttrAs<std::vector<std::string>>(op, kOpRoleVarAttr);
}

std::vector<std::string> OpCallstackOf(const proto::OpDesc& op) {
  for (const auto& a : op.attrs())
    if (a.name() == kOpCallstackAttr && a.type() == proto::STRINGS)
      return {a.strings().begin(), a.strings().end()};
  return {};
}

void ClearOpAnnotations(proto::ProgramDesc* program) {
  for (auto& block : *program->mutable_blocks())
    for (auto& op : *block.mutable_ops()) {
      auto* attrs = op.mutable_attrs();
      for (int i = attrs->size() - 1; i >= 0; --i)
        if (IsOpAnnotationAttr(attrs->Get(i).name()))
          attrs->DeleteSubrange(i, 1);
    }
}

proto::ProgramDesc NewProgram() {
  proto::ProgramDesc p;
  p.set_version(kProgramVersion);
  proto::BlockDesc* b = p.add_blocks();
  b->set_idx(0);
  b->set_parent_idx(-1);
  return p;
}

void CheckProgram(const proto::ProgramDesc& program, const std::string& what) {
  FLUID_ENFORCE(program.version() <= kProgramVersion, what,
                " has program version ", program.version(),
                ", newer than this build understands (", kProgramVersion,
                "); upgrade the framework");
  FLUID_ENFORCE(program.blocks_size() > 0, what, " has no blocks");
}

void CheckJob(const proto::TrainingJob& job, const std::string& what) {
  FLUID_ENFORCE(job.version() <= kProgramVersion, what, " has job version ",
                job.version(), ", newer than this build understands (",
                kProgramVersion, "); upgrade the framework");
  CheckProgram(job.startup(), what + ": startup program");
  CheckProgram(job.main(), what + ": main program");
  if (job.has_test()) CheckProgram(job.test(), what + ": test program");
}

std::string OpToString(const proto::OpDesc& op) {
  std::ostringstream os;
  auto slots = [&os](const auto& vars) {
    bool first = true;
    for (const auto& v : vars) {
      os << (first ? "" : ", ") << v.parameter() << "=[";
      for (int i = 0; i < v.arguments_size(); ++i)
        os << (i ? ", " : "") << v.arguments(i);
      os << "]";
      first = false;
    }
  };
  os << op.type() << "(";
  slots(op.inputs());
  os << ") -> (";
  slots(op.outputs());
  os << ")";
  return os.str();
}

std::string ProgramToString(const proto::ProgramDesc& program) {
  std::ostringstream os;
  for (const auto& block : program.blocks())
    for (const auto& op : block.ops()) os << OpToString(op) << "\n";
  return os.str();
}

}  // namespace fluid
