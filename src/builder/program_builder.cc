#include "src/builder/program_builder.h"

#include "src/framework/operator.h"
#include "src/framework/program_desc.h"

namespace fluid {

ProgramBuilder::ProgramBuilder(proto::ProgramDesc* main,
                               proto::ProgramDesc* startup, uint64_t seed)
    : main_(main), startup_(startup), seed_(seed) {
  FLUID_ENFORCE(main != nullptr && startup != nullptr,
                "ProgramBuilder needs a main and a startup program");
  for (proto::ProgramDesc* p : {main_, startup_}) {
    if (p->blocks_size() == 0) *p = NewProgram();
    if (p->version() == 0) p->set_version(kProgramVersion);
  }
  startup_->set_kind(proto::ProgramDesc::STARTUP);
}

std::string ProgramBuilder::UniqueName(const std::string& prefix) {
  for (;;) {
    std::string name =
        prefix + "_" + std::to_string(name_counters_->next[prefix]++);
    if (FindVarDesc(main_->blocks(0), name) == nullptr &&
        FindVarDesc(startup_->blocks(0), name) == nullptr)
      return name;
  }
}

uint64_t ProgramBuilder::NextSeed() {
  // splitmix64 over (seed, counter): distinct, well-mixed, never zero.
  uint64_t z = seed_ + 0x9E3779B97F4A7C15ull * (++seed_counter_);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  z &= 0x7FFFFFFFull;  // the op's seed attr is a positive int32
  return z == 0 ? 1 : z;
}

const proto::OpDesc& ProgramBuilder::AppendOp(proto::OpDesc op, int role) {
  if (!HasOpAttr(op, kOpRoleAttr)) SetOpAttr(&op, kOpRoleAttr, role);
  proto::BlockDesc* block = main_block();
  *block->add_ops() = std::move(op);
  const proto::OpDesc& added = block->ops(block->ops_size() - 1);
  InferShapeAtCompileTime(added, block);
  return added;
}

const proto::OpDesc& ProgramBuilder::AppendStartupOp(proto::OpDesc op) {
  if (!HasOpAttr(op, kOpRoleAttr))
    SetOpAttr(&op, kOpRoleAttr, static_cast<int32_t>(OpRole::kForward));
  proto::BlockDesc* block = startup_block();
  *block->add_ops() = std::move(op);
  const proto::OpDesc& added = block->ops(block->ops_size() - 1);
  InferShapeAtCompileTime(added, block);
  return added;
}

std::string ProgramBuilder::CreateTmpVar(const std::string& prefix,
                                         DataType dtype) {
  std::string name = UniqueName(prefix);
  AddVarDesc(main_block(), name, dtype, Shape{});
  return name;
}

std::string ProgramBuilder::CreateParameter(const std::string& name,
                                            const Shape& shape, DataType dtype,
                                            const ParamAttr& attr,
                                            const Fans& fans,
                                            const std::string& layer,
                                            const std::string& arg) {
  FLUID_ENFORCE(shape.IsFullyKnown(), "parameter '", name, "' has shape ",
                shape, ": every dim must be known");
  if (const proto::VarDesc* old = FindVarDesc(main_->blocks(0), name)) {
    // Shared by name: the same var, initialised once.
    FLUID_ENFORCE(old->persistable() && old->trainable() == attr.trainable,
                  "layer '", layer, "': argument '", arg, "' names '", name,
                  "', already a var of the program that is not a parameter "
                  "with trainable = ",
                  attr.trainable ? "true" : "false");
    FLUID_ENFORCE(VarShape(*old) == shape && VarDtype(*old) == dtype, "layer '",
                  layer, "': argument '", arg, "' shares parameter '", name,
                  "' of shape ", VarShape(*old), " (",
                  DataTypeName(VarDtype(*old)), ") but this layer needs ",
                  shape, " (", DataTypeName(dtype), ")");
    return name;
  }
  FLUID_ENFORCE(attr.learning_rate >= 0.0f, "layer '", layer, "': argument '",
                arg, "': learning_rate must be non-negative, got ",
                attr.learning_rate);
  for (proto::BlockDesc* block : {main_block(), startup_block()}) {
    proto::VarDesc* v = AddVarDesc(block, name, dtype, shape, true);
    v->set_trainable(attr.trainable);
    v->set_stop_gradient(!attr.trainable);
    if (attr.learning_rate != 1.0f) v->set_learning_rate(attr.learning_rate);
  }
  AppendInitOp(this, name, shape, dtype, attr.init, fans);
  parameters_.push_back(name);
  param_attrs_[name] = attr;
  return name;
}

const ParamAttr* ProgramBuilder::FindParamAttr(const std::string& param) const {
  auto it = param_attrs_.find(param);
  return it == param_attrs_.end() ? nullptr : &it->second;
}

bool ProgramBuilder::SetGradientClip(const std::string& param,
                                     const GradientClip& clip) {
  auto it = param_attrs_.find(param);
  if (it == param_attrs_.end()) return false;
  it->second.gradient_clip = clip;
  return true;
}

std::string ProgramBuilder::CreatePersistable(const std::string& name,
                                              const Shape& shape,
                                              DataType dtype, float value) {
  for (proto::BlockDesc* block : {main_block(), startup_block()}) {
    proto::VarDesc* v = AddVarDesc(block, name, dtype, shape, true);
    v->set_stop_gradient(true);
  }
  AppendStartupOp(MakeOp("fill_constant", {}, {{"Out", {name}}},
                         {{"shape", shape.ToVector()},
                          {"value", value},
                          {"dtype", static_cast<int32_t>(dtype)}}));
  return name;
}

}  // namespace fluid
