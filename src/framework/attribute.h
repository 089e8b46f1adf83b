// Op attributes: typed values attached to an OpDesc by name. The variant's
// alternatives follow proto::AttrType's numbering.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "proto/framework.pb.h"
#include "src/framework/enforce.h"

namespace fluid {

using Attribute =
    std::variant<int32_t, float, std::string, std::vector<int32_t>,
                 std::vector<float>, std::vector<std::string>, bool, int64_t,
                 std::vector<int64_t>, double>;
// Transparent comparator: kernels look attrs up by string literal on every
// run, and a lookup must not build a std::string (which allocates for names
// past the small-string limit).
using AttributeMap = std::map<std::string, Attribute, std::less<>>;

const char* AttrTypeName(size_t variant_index);
Attribute AttributeFromProto(const proto::OpDesc::Attr& attr);
void AttributeToProto(const std::string& name, const Attribute& value,
                      proto::OpDesc::Attr* out);
// The value as a reader would write it, for messages: 3, 0.5, "relu",
// [1, 2], true.
std::string AttributeText(const Attribute& value);
// Whether two attributes hold the same type and the same bits (NaN equals
// NaN; 0.0 does not equal -0.0).
bool SameAttribute(const Attribute& a, const Attribute& b);

// Reads `name` from `attrs` as T. A missing attribute or one of another type
// is an error naming the op and the attribute.
template <typename T>
const T& GetAttr(const AttributeMap& attrs, std::string_view name,
                 const std::string& op_type) {
  auto it = attrs.find(name);
  FLUID_ENFORCE_CODE(it != attrs.end(), ErrorCode::kNotFound, "op '", op_type,
                     "' has no attribute '", name, "'");
  const T* v = std::get_if<T>(&it->second);
  FLUID_ENFORCE(v != nullptr, "attribute '", name, "' of op '", op_type,
                "' holds ", AttrTypeName(it->second.index()),
                ", not the type requested");
  return *v;
}

}  // namespace fluid
