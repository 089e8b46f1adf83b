#include "src/framework/attribute.h"

#include <sstream>
#include <type_traits>

namespace fluid {

const char* AttrTypeName(size_t index) {
  static const char* kNames[] = {"int",    "float",   "string", "ints",
                                 "floats", "strings", "bool",   "long",
                                 "longs",  "double"};
  return index < 10 ? kNames[index] : "unknown";
}

Attribute AttributeFromProto(const proto::OpDesc::Attr& a) {
  switch (a.type()) {
    case proto::INT:
      return a.i();
    case proto::FLOAT:
      return a.f();
    case proto::STRING:
      return a.s();
    case proto::INTS:
      return std::vector<int32_t>(a.ints().begin(), a.ints().end());
    case proto::FLOATS:
      return std::vector<float>(a.floats().begin(), a.floats().end());
    case proto::STRINGS:
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case proto::BOOLEAN:
      return a.b();
    case proto::LONG:
      return a.l();
    case proto::LONGS:
      return std::vector<int64_t>(a.longs().begin(), a.longs().end());
    case proto::DOUBLE:
      return a.d();
  }
  FLUID_THROW(ErrorCode::kInvalidArgument, "attribute '", a.name(),
              "' has unknown type code ", static_cast<int>(a.type()));
}

void AttributeToProto(const std::string& name, const Attribute& value,
                      proto::OpDesc::Attr* out) {
  out->Clear();
  out->set_name(name);
  out->set_type(static_cast<proto::AttrType>(value.index()));
  std::visit(
      [out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int32_t>) {
          out->set_i(v);
        } else if constexpr (std::is_same_v<T, float>) {
          out->set_f(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          out->set_s(v);
        } else if constexpr (std::is_same_v<T, std::vector<int32_t>>) {
          for (auto x : v) out->add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          for (auto x : v) out->add_floats(x);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          for (const auto& x : v) out->add_strings(x);
        } else if constexpr (std::is_same_v<T, bool>) {
          out->set_b(v);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          out->set_l(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          for (auto x : v) out->add_longs(x);
        } else {
          out->set_d(v);
        }
      },
      value);
}

namespace {

template <typename T>
void AppendValue(std::ostringstream& os, const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    os << Quote(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    os << (v ? "true" : "false");
  } else {
    os << v;
  }
}

}  // namespace

std::string AttributeText(const Attribute& value) {
  std::ostringstream os;
  std::visit(
      [&os](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::vector<int32_t>> ||
                      std::is_same_v<T, std::vector<float>> ||
                      std::is_same_v<T, std::vector<std::string>> ||
                      std::is_same_v<T, std::vector<int64_t>>) {
          os << "[";
          for (size_t i = 0; i < v.size(); ++i) {
            if (i > 0) os << ", ";
            AppendValue(os, v[i]);
          }
          os << "]";
        } else {
          AppendValue(os, v);
        }
      },
      value);
  return os.str();
}

bool SameAttribute(const Attribute& a, const Attribute& b) {
  if (a.index() != b.index()) return false;
  proto::OpDesc::Attr pa, pb;
  AttributeToProto("", a, &pa);
  AttributeToProto("", b, &pb);
  return pa.SerializeAsString() == pb.SerializeAsString();
}

}  // namespace fluid
