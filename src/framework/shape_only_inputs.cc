#include "src/framework/shape_only_inputs.h"

#include <map>
#include <set>
#include <utility>

#include "src/framework/program_desc.h"

namespace fluid {

namespace {

// op type -> its shape-only input slots. Filled by static registrations
// before main, read afterwards.
std::map<std::string, std::set<std::string>>& Table() {
  static auto* table = new std::map<std::string, std::set<std::string>>();
  return *table;
}

// (op type, slot) -> the output whose absence makes the slot shape-only.
std::map<std::pair<std::string, std::string>, const char*>& WithoutTable() {
  static auto* table =
      new std::map<std::pair<std::string, std::string>, const char*>();
  return *table;
}

}  // namespace

bool RegisterShapeOnlyInputs(const std::string& op_type,
                             std::initializer_list<const char*> slots) {
  for (const char* s : slots) Table()[op_type].insert(s);
  return true;
}

bool RegisterShapeOnlyInputWithout(const std::string& op_type, const char* slot,
                                   const char* output) {
  WithoutTable()[{op_type, slot}] = output;
  return true;
}

const char* ShapeOnlyInputWithout(const std::string& op_type,
                                  const std::string& slot) {
  auto it = WithoutTable().find({op_type, slot});
  return it == WithoutTable().end() ? nullptr : it->second;
}

bool IsShapeOnlyInput(const std::string& op_type, const std::string& slot) {
  auto it = Table().find(op_type);
  return it != Table().end() && it->second.count(slot) > 0;
}

bool ReadsShapeOnly(const proto::OpDesc& op, const std::string& slot) {
  return ReadsShapeOnly(op.type(), slot, [&op](const char* output) {
    return !OpOutput(op, output).empty();
  });
}

}  // namespace fluid
