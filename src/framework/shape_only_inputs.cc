#include "src/framework/shape_only_inputs.h"

#include <map>
#include <set>

namespace fluid {

namespace {

// op type -> its shape-only input slots. Filled by static registrations
// before main, read afterwards.
std::map<std::string, std::set<std::string>>& Table() {
  static auto* table = new std::map<std::string, std::set<std::string>>();
  return *table;
}

}  // namespace

bool RegisterShapeOnlyInputs(const std::string& op_type,
                             std::initializer_list<const char*> slots) {
  for (const char* s : slots) Table()[op_type].insert(s);
  return true;
}

bool IsShapeOnlyInput(const std::string& op_type, const std::string& slot) {
  auto it = Table().find(op_type);
  return it != Table().end() && it->second.count(slot) > 0;
}

}  // namespace fluid
