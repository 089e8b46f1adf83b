// Helpers over the protobuf program descriptions: finding and adding vars,
// reading and writing op slots and attributes, loading and saving programs
// and jobs with a version check. The descs stay plain protobufs so that every
// layer (builder, autodiff, transpiler, Python) shares one format.
#pragma once

#include <string>
#include <vector>

#include "proto/framework.pb.h"
#include "src/framework/attribute.h"
#include "src/framework/types.h"

namespace fluid {

constexpr int64_t kProgramVersion = proto::CURRENT_VERSION;

// ---- vars ----
const proto::VarDesc* FindVarDesc(const proto::BlockDesc& block,
                                  const std::string& name);
proto::VarDesc* FindMutableVarDesc(proto::BlockDesc* block,
                                   const std::string& name);
// Like FindVarDesc, but a missing var is a kNotFound error.
const proto::VarDesc& GetVarDesc(const proto::BlockDesc& block,
                                 const std::string& name);
// Adds a var; an existing var of that name is an error.
proto::VarDesc* AddVarDesc(proto::BlockDesc* block, const std::string& name,
                           DataType dtype, const Shape& shape,
                           bool persistable = false);
Shape VarShape(const proto::VarDesc& var);
void SetVarShape(proto::VarDesc* var, const Shape& shape);
DataType VarDtype(const proto::VarDesc& var);

// ---- ops ----
// Names bound to a slot; empty when the slot is absent.
std::vector<std::string> OpInput(const proto::OpDesc& op,
                                 const std::string& slot);
std::vector<std::string> OpOutput(const proto::OpDesc& op,
                                  const std::string& slot);
void SetOpInput(proto::OpDesc* op, const std::string& slot,
                const std::vector<std::string>& names);
void SetOpOutput(proto::OpDesc* op, const std::string& slot,
                 const std::vector<std::string>& names);
std::vector<std::string> OpInputNames(const proto::OpDesc& op);
std::vector<std::string> OpOutputNames(const proto::OpDesc& op);
void RenameOpInput(proto::OpDesc* op, const std::string& from,
                   const std::string& to);
void RenameOpOutput(proto::OpDesc* op, const std::string& from,
                    const std::string& to);

bool HasOpAttr(const proto::OpDesc& op, const std::string& name);
Attribute GetOpAttr(const proto::OpDesc& op, const std::string& name);
void SetOpAttr(proto::OpDesc* op, const std::string& name,
               const Attribute& value);
template <typename T>
T GetOpAttrAs(const proto::OpDesc& op, const std::string& name) {
  Attribute a = GetOpAttr(op, name);
  const T* v = std::get_if<T>(&a);
  FLUID_ENFORCE(v != nullptr, "attribute '", name, "' of op '", op.type(),
                "' has type ", AttrTypeName(a.index()));
  return *v;
}
int OpRoleOf(const proto::OpDesc& op);
// The op's role as names: "forward" (no other phase bit), "backward",
// "optimize", "collective", "reader", plus "loss" on the ops around the
// loss. For the edges (Python), which read roles by name, never by bit.
std::vector<std::string> OpRoleNames(const proto::OpDesc& op);
std::vector<std::string> OpRoleVarOf(const proto::OpDesc& op);
// The op's op_callstack (kOpCallstackAttr): empty when it has none.
std::vector<std::string> OpCallstackOf(const proto::OpDesc& op);
// Removes the annotations (op_callstack, op_namescope) from every op of every
// block: the program as it compares with another built elsewhere.
void ClearOpAnnotations(proto::ProgramDesc* program);

// ---- programs ----
proto::ProgramDesc NewProgram();
// Refuses a program of a newer version than this build understands, or one
// with no blocks.
void CheckProgram(const proto::ProgramDesc& program, const std::string& what);
void CheckJob(const proto::TrainingJob& job, const std::string& what);

// One line per op: "type(X=[a], Y=[b]) -> (Out=[c])".
std::string ProgramToString(const proto::ProgramDesc& program);
std::string OpToString(const proto::OpDesc& op);

}  // namespace fluid
